"""`inductheory toy`: closed-form quantities of the two-head toy (docs/theory.md §8)."""

from __future__ import annotations

import dataclasses

from ..internal._records import field_values
from ..toy._toy import ToyConfig, corner_losses, escape_rates, split_advantage, toy_loss
from ._common import (
    EXACT_FLOAT_INT,
    TASK_DEFAULTS,
    TASK_OPTIONS,
    add_json_argument,
    float_type,
    format_table,
    int_type,
    print_json,
    require_finite,
)
from ._declare import Option, add_options, prose

HELP = "closed forms of the two-head toy: corner losses, split advantage, escape rates"
DESCRIPTION = prose(
    """
    Closed-form quantities of the two-head toy of docs/theory.md §8: the loss with both
    heads on the same offset and with the heads split, the split advantage (their
    difference, > 0), and the escape rates of the logit gradient flow from p = (1/2,
    1/2) along (1, 1) and (1, -1).
    """
)


def register(sub) -> None:
    p = sub.add_parser("toy", help=HELP, description=DESCRIPTION)
    g = p.add_argument_group("toy")
    for name in ("beta", "gamma"):  # the task's, with the task's defaults
        TASK_OPTIONS[name].add(g, TASK_DEFAULTS[name])
    add_options(
        g,
        Option("--L", "blocks, >= 2 (default 8)", int_type("L", 2, EXACT_FLOAT_INT), 8),
        Option(
            "--K",
            "competing mass in log(1 + K e^-m), > 0 (default 100.0)",
            float_type("K", 0, low_open=True),
            100.0,
        ),
    )
    add_json_argument(p)
    p.set_defaults(func=run)


@dataclasses.dataclass(frozen=True)
class ToyResult:
    """The closed forms of the two-head toy that `inductheory toy` reports.

    **Fields:** `config` (the `ToyConfig`), `loss_center` (at p = (1/2, 1/2)),
    `loss_same_corner`, `loss_opposite_corners`, `split_advantage` (same - opposite),
    `escape_rate_symmetric`, `escape_rate_antisymmetric` (along (1, 1) and (1, -1)).

    **Example:** `toy_result(ToyConfig()).split_advantage > 0`.
    """

    config: ToyConfig
    loss_center: float
    loss_same_corner: float
    loss_opposite_corners: float
    split_advantage: float
    escape_rate_symmetric: float
    escape_rate_antisymmetric: float

    def to_dict(self) -> dict:
        """The JSON report: `config` (its `to_dict()`) and every closed form."""
        out = field_values(self)
        out["config"] = self.config.to_dict()
        return out


def toy_result(config: ToyConfig) -> ToyResult:
    """Every closed form of the toy at `config`.

    **Returns:** a `ToyResult`.
    """
    same, opposite = corner_losses(config)
    symmetric, antisymmetric = escape_rates(config)
    return ToyResult(
        config=config,
        loss_center=float(toy_loss(config, [0.5, 0.5])),
        loss_same_corner=float(same),
        loss_opposite_corners=float(opposite),
        split_advantage=float(split_advantage(config)),
        escape_rate_symmetric=float(symmetric),
        escape_rate_antisymmetric=float(antisymmetric),
    )


def run(args) -> int:
    config = ToyConfig(beta=args.beta, gamma=args.gamma, L=args.L, K=args.K)
    result = toy_result(config).to_dict()
    require_finite(result, "the toy's closed forms")
    if args.json:
        print_json(result)
        return 0
    print(f"two-head toy: {config.to_dict()}")
    rows = [
        ("loss at p = (1/2, 1/2)", f"{result['loss_center']:.10g}"),
        ("loss, same corner", f"{result['loss_same_corner']:.10g}"),
        ("loss, opposite corners", f"{result['loss_opposite_corners']:.10g}"),
        ("split advantage (same - opposite)", f"{result['split_advantage']:.6g}"),
        ("escape rate along (1, 1)", f"{result['escape_rate_symmetric']:.6g}"),
        ("escape rate along (1, -1)", f"{result['escape_rate_antisymmetric']:.6g}"),
    ]
    print(format_table(["quantity", "value"], rows))
    return 0
