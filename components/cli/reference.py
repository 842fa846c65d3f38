"""`reference`: the configuration reference as a Markdown table (the README embeds it)."""

from __future__ import annotations

import argparse
from typing import Any

from components.config.reference import markdown


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("reference", help="print the configuration reference")
    parser.set_defaults(run=run)


def run(_args: argparse.Namespace) -> int:
    print(markdown(), end="")
    return 0
