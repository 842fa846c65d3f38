"""`render --stack NAME --out DIR`: the files that would be deployed, without a host.

Writes Dockerfile, qwen38.service, vllm-args.json (the server's full argv) and vllm.env
(its environment, the key as a placeholder). A stack the program would refuse is
reported with the same messages and nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from components.config.load import (
    ConfigError,
    apply_overrides,
    is_ciphertext,
    parse_stack_config,
    read_stack_file,
    stack_file,
)
from components.config.model import StackConfig
from components.facts import ApiKeyFacts, server_facts
from components.planner.architecture import ArchitectureError
from components.render.image import rendered_dockerfile
from components.render.layout import UNIT_NAME
from components.render.server import rendered_env_file, server_argv
from components.render.unit import render_unit
from components.rules import Violation, evaluate

EXIT_REFUSED = 1
EXIT_BAD_CONFIG = 2


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("render", help="write the files that would be deployed")
    parser.add_argument("--stack", required=True, help="stack name: reads Pulumi.NAME.yaml")
    parser.add_argument("--out", required=True, type=Path, help="directory to write into")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="override a config key by its dotted path (repeatable)",
    )  # fmt: skip
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        raw = apply_overrides(read_stack_file(stack_file(args.stack)), args.overrides)
        cfg = parse_stack_config(raw)
        violations = evaluate(server_facts(cfg, api_key_facts(raw)))
    except (ConfigError, ArchitectureError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    for violation in violations:
        print(describe(violation), file=sys.stderr)
    if any(v.mandatory for v in violations):
        print("nothing written: the program would refuse this stack", file=sys.stderr)
        return EXIT_REFUSED
    for path in write_files(cfg, args.out):
        print(path)
    return 0


def api_key_facts(raw: dict[str, Any]) -> ApiKeyFacts:
    """How the stack file holds api_key: absent (generated), encrypted, or plain text."""
    value = raw.get("api_key")
    if value is None:
        return ApiKeyFacts(source="generated", stored_as_secret=True)
    return ApiKeyFacts(source="config", stored_as_secret=is_ciphertext(value))


def describe(violation: Violation) -> str:
    level = "refused" if violation.mandatory else "warning"
    return f"{level} [{violation.policy}]: {violation.message}"


def write_files(cfg: StackConfig, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "Dockerfile": rendered_dockerfile(cfg.engine),
        UNIT_NAME: render_unit(cfg),
        "vllm-args.json": json.dumps(server_argv(cfg), indent=2) + "\n",
        "vllm.env": rendered_env_file(cfg),
    }
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        written.append(path)
    return written
