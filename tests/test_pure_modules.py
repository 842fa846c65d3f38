"""Pure logic imports no pulumi: the command line answers without loading the SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
PURE_MODULES = (
    "components.__main__",
    "components.config.load",
    "components.planner.plan",
    "components.planner.report",
    "components.render.server",
    "components.render.image",
    "components.render.unit",
    "components.rules",
    "components.facts",
    "components.readiness",
    "components.hostscripts",
)


def test_pure_modules_do_not_import_pulumi() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {PURE_MODULES!r}: importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'))\n"
        "print(','.join(loaded))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_DIR, check=True
    )
    assert done.stdout.strip() == "", f"pulumi modules loaded: {done.stdout.strip()}"
