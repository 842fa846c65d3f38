"""Every shell script of the project is shellcheck-clean and runs in strict mode."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from components.hostscripts import HOST_SCRIPTS_DIR

PROJECT_DIR = HOST_SCRIPTS_DIR.parent
HOST_SCRIPTS = sorted(HOST_SCRIPTS_DIR.glob("*.sh"))
# Run where pulumi runs (check-ready.sh), by people and CI (test, .ci/run).
OTHER_SCRIPTS = [
    PROJECT_DIR / "scripts" / "check-ready.sh",
    PROJECT_DIR / "scripts" / "test",
    PROJECT_DIR / ".ci" / "run",
]
SCRIPTS = HOST_SCRIPTS + OTHER_SCRIPTS


def test_there_are_scripts_to_check() -> None:
    assert len(HOST_SCRIPTS) >= 6, HOST_SCRIPTS
    assert all(path.is_file() for path in OTHER_SCRIPTS), OTHER_SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_shellcheck_passes(script: Path) -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.fail("shellcheck is missing: apt-get install -y shellcheck")
    done = subprocess.run(
        [shellcheck, "-x", "--severity=style", "--shell=bash", str(script)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_starts_with_shebang_and_strict_mode(script: Path) -> None:
    lines = script.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    assert "set -euo pipefail" in lines[:12], "strict mode must come before any command"
