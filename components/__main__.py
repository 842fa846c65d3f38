"""`python -m components render|plan|reference ...`: what would be deployed, does it fit,
and what can be configured.

Imports no pulumi: it answers in a fraction of a second on a machine without a host.
"""

from __future__ import annotations

import argparse
import sys

from components.cli import plan, reference, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    render.add_parser(commands)
    plan.add_parser(commands)
    reference.add_parser(commands)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
