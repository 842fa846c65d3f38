"""`python -m components plan`: does the stack's context fit on the GPU, and what would.

Exit status: 0 when it fits, 1 when vLLM would refuse it, 2 for a configuration mistake.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from components.config.load import ConfigError, load_stack
from components.facts import plan_input
from components.planner.architecture import ArchitectureError
from components.planner.plan import fit_grid, make_plan
from components.planner.report import plan_to_json, render_grid, render_text

EXIT_FITS = 0
EXIT_DOES_NOT_FIT = 1
EXIT_CONFIG_ERROR = 2

EPILOG = """examples:
  python -m components plan --stack ctx180k
  python -m components plan --stack dev --set serving.max_model_len=262144 --grid
  python -m components plan --stack ctx256k --json
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        help="check that the KV cache fits, and what would make it fit",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stack", required=True, help="reads Pulumi.<STACK>.yaml")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="DOTTED.KEY=VALUE",
        help="override one config key, e.g. serving.max_model_len=262144 (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--grid",
        action="store_true",
        help="also show the largest fitting context over utilization x batched tokens",
    )
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        inp = plan_input(load_stack(args.stack, args.overrides))
        plan = make_plan(inp)
        grid = fit_grid(inp) if args.grid else None
    except (ConfigError, ArchitectureError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    if args.json:
        print(json.dumps(plan_to_json(plan, grid), indent=2))
    else:
        print(render_text(plan, title=f"stack {args.stack}"), end="")
        if grid is not None:
            current = (inp.gpu_memory_utilization, inp.max_num_batched_tokens)
            print()
            print(render_grid(grid, current), end="")
    return EXIT_FITS if plan.fits else EXIT_DOES_NOT_FIT


def main(argv: list[str] | None = None) -> int:
    """The subcommand on its own (tests, benchmarks): `plan` is implied."""
    parser = argparse.ArgumentParser(prog="python -m components")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["plan", *(sys.argv[1:] if argv is None else argv)])
    return int(args.run(args))
