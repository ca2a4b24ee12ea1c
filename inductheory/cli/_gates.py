"""`inductheory gates FILE`: per head of gate tensors read from a file (npz, npy or
safetensors), the argmax slot, the effective number of offsets and the query phase a hard
selection there answers, and the phases the sharp heads cover (`analyze_gates`)."""

from __future__ import annotations

from ..experiments._gate_files import (
    BRANCHES,
    SHARP_BELOW,
    analyze_gates,
    load_gate_tensors,
)
from ..experiments._paper_gates import read_paper_gates
from ._common import (
    add_json_argument,
    float_type,
    format_table,
    int_type,
    print_json,
)
from ._declare import Option, add_options, prose, switch

HELP = "analyse gate logits or probabilities read from an npz or safetensors file"
DESCRIPTION = prose(
    """
    Read gate logits (or probabilities) over the W window slots, shape (..., W) with any
    leading axes such as layer and head, from an .npz, .npy or .safetensors file, and
    report per head the argmax slot, the effective number of offsets exp(H), and the
    query phase (0..S-1) a hard selection there answers (docs/theory.md §9, §10), then
    the phases covered by at least one sharp head.
    """
)


def register(sub) -> None:
    p = sub.add_parser("gates", help=HELP, description=DESCRIPTION)
    add_options(
        p,
        Option("file", "an .npz, .npy or .safetensors file"),
        Option(
            "--tensor",
            "the tensor's name, or a glob (*, ?, [...]) selecting several with the same W "
            "(default: every tensor of the file)",
            metavar="NAME_OR_GLOB",
        ),
        switch(
            "--probabilities",
            "the values are probabilities (>= 0, each slot vector summing to 1 within "
            "1e-6); default: logits, softmax over the last axis",
        ),
        Option(
            "--stride",
            "the stride S, 2 <= S <= W (default W; W > S are overlapping windows; with "
            "--paper the stride the file's windows advance by, and no other)",
            int_type("stride", 2),
            metavar="S",
        ),
        Option(
            "--branch",
            "the gate's role: key (default; value one slot later), value (key one slot "
            "earlier) or tied (one gate for both: answers no phase)",
            default="key",
            choices=BRANCHES,
        ),
        Option(
            "--window-axis",
            "a leading axis indexing windows or contexts, reduced to the static and the "
            "average effective offsets (default none)",
            int_type("window-axis", -(2**31), 2**31 - 1),
            metavar="AXIS",
        ),
        Option(
            "--sharp",
            f"a head is sharp when its effective offsets are <= X, X >= 1 (default "
            f"{SHARP_BELOW}: the argmax slot then holds >= 2/3 of the mass)",
            float_type("sharp", 1),
            SHARP_BELOW,
            metavar="X",
        ),
        switch(
            "--paper",
            "the file holds the paper's gate parameterization (written by `inductheory "
            "matrix --export-gates`): per layer PREFIX.BRANCH.gate_map Z (kv, W, channels, "
            "d), optional PREFIX.BRANCH.gate_bias b (kv, W, channels) and the inputs "
            "PREFIX.windows h (windows, W, d); the gates softmax(Z h + b) of --branch are "
            "analysed per KV head and channel over the windows (static and average "
            "effective offsets)",
        ),
    )
    add_json_argument(p)
    p.set_defaults(func=run)


def _phase(p) -> str:
    return "-" if p is None else str(p)


def run(args) -> int:
    if args.paper:
        for option in ("tensor", "window_axis"):
            if getattr(args, option) is not None:
                raise ValueError(
                    f"--{option.replace('_', '-')} does not apply with --paper (the "
                    "gates and their window axis come from the parameterization)"
                )
        if args.probabilities:
            raise ValueError(
                "--probabilities does not apply with --paper (logits Z h + b)"
            )
        paper = read_paper_gates(args.file, args.branch, args.stride)
        tensors, args.stride = paper.logits, paper.stride  # the stride the file proves
        window_axis = 0
    else:
        tensors = load_gate_tensors(args.file, args.tensor)
        window_axis = args.window_axis
    analysis = analyze_gates(
        tensors,
        probabilities=args.probabilities,
        stride=args.stride,
        branch=args.branch,
        window_axis=window_axis,
        sharp_below=args.sharp,
    )
    if args.json:
        out = analysis.to_dict()
        out["file"] = str(args.file)
        print_json(out)
        return 0
    a = analysis
    print(
        f"{args.file}: {len(a.heads)} head(s) in {len(a.shapes)} tensor(s), W = {a.window} "
        f"slots, stride S = {a.stride}, {a.branch} gates"
    )
    rows = [
        (
            h.tensor,
            ",".join(map(str, h.index)) or "-",
            h.argmax_slot,
            f"{h.peak:.4f}",
            f"{h.effective_offsets:.4f}",
            f"{h.average_offsets:.4f}",
            "yes" if h.sharp else "no",
            _phase(h.phase),
        )
        for h in a.heads
    ]
    headers = ["tensor", "index", "argmax slot", "peak", "eff. offsets"]
    headers += ["avg offsets", "sharp", "phase"]
    print(format_table(headers, rows))
    print(
        f"sharp (effective offsets <= {a.sharp_below:g}) heads per phase 0..{a.stride - 1}: "
        f"{' '.join(map(str, a.heads_per_phase))}"
    )
    covered = " ".join(map(str, a.covered_phases)) or "none"
    uncovered = " ".join(map(str, a.uncovered_phases)) or "none"
    print(f"covered phases: {covered}; uncovered: {uncovered}")
    print(
        f"boundary phase {a.boundary_phase}: "
        + (
            "covered"
            if a.boundary_phase in a.covered_phases
            else "not covered"
            + (" (no gate answers it with W = S)" if a.window == a.stride else "")
        )
    )
    return 0
