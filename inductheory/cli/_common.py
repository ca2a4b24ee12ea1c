"""Arguments and output shared by the subcommands."""

from __future__ import annotations

import argparse

from .._config import Task
from .._io import to_json
from .._table import format_table  # noqa: F401 (re-exported for the subcommands)


def add_task_arguments(parser: argparse.ArgumentParser, *, L=8, S=4, H=2, N=4096, gamma=1.0, beta=4.0, kappa=1.0):
    """--L --S --H --N --gamma --beta --kappa and the geometry (--eps or --d, --seed)."""
    g = parser.add_argument_group("task")
    g.add_argument("--L", type=int, default=L, help=f"blocks per context (default {L})")
    g.add_argument("--S", type=int, default=S, help=f"offsets per block (default {S})")
    g.add_argument("--H", type=int, default=H, help=f"heads (default {H})")
    g.add_argument("--N", type=int, default=N, help=f"vocabulary size (default {N})")
    g.add_argument("--gamma", type=float, default=gamma, help=f"attention inverse temperature (default {gamma})")
    g.add_argument("--beta", type=float, default=beta, help=f"unembedding scale (default {beta})")
    g.add_argument("--kappa", type=float, default=kappa, help=f"shared embedding component (default {kappa})")
    geo = parser.add_argument_group("geometry (default: exact, eps = 0)")
    geo.add_argument("--eps", type=float, default=None, help="target geometry error (approximate geometry)")
    geo.add_argument("--d", type=int, default=None, help="embedding dimension (approximate geometry)")
    geo.add_argument("--seed", type=int, default=0, help="PRNG seed (default 0)")


def task_from_args(args) -> Task:
    return Task(
        L=args.L, S=args.S, H=args.H, N=args.N, gamma=args.gamma, beta=args.beta, kappa=args.kappa,
        eps=args.eps, d=args.d,
    )


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def print_json(obj) -> None:
    print(to_json(obj, indent=2, sort_keys=True))
