"""`systemd-analyze verify` for a unit text, on a machine where systemd is not PID 1.

verify_unit() builds a throwaway root: the system's unit files (for sysinit.target and the
other default dependencies), stubs for the units the text requires (docker.service), the
unit under test, and an executable stub for every absolute Exec*= path. Then it runs
`systemd-analyze verify --root=<that root> --man=no`. The stubs are there because the
binaries belong to the GPU host, not to this machine; what is verified is the unit's own
syntax and references. Any output counts as a failure: systemd-analyze reports an ignored,
misspelt setting ("Failed to parse ..., ignoring") on stderr but still exits 0.

Needs the Debian package `systemd` (systemd-analyze and /usr/lib/systemd/system).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

SYSTEM_UNIT_DIR = Path("/usr/lib/systemd/system")
STUB_UNIT = "[Unit]\nDescription=stand-in for {name}\n\n[Service]\nExecStart=/bin/true\n"
# Exec lines may prefix the path with any of "-@:+!" (see systemd.service(5)).
EXEC_PATH = re.compile(r"^\s*Exec[A-Za-z]*\s*=\s*[-@:+!]*(/\S+)", re.MULTILINE)


class UnitVerifyError(AssertionError):
    """systemd-analyze found a problem; the message is its output."""


def executable_paths(text: str) -> set[str]:
    return set(EXEC_PATH.findall(text)) | {"/bin/true"}


def build_root(root: Path, name: str, text: str, stub_units: Iterable[str]) -> None:
    unit_dir = root / "etc/systemd/system"
    unit_dir.mkdir(parents=True)
    shutil.copytree(SYSTEM_UNIT_DIR, root / SYSTEM_UNIT_DIR.relative_to("/"), symlinks=True)
    for stub in stub_units:
        (unit_dir / stub).write_text(STUB_UNIT.format(name=stub), encoding="utf-8")
    (unit_dir / name).write_text(text, encoding="utf-8")
    for path in executable_paths(text):
        binary = root / path.lstrip("/")
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_text("#!/bin/sh\n", encoding="utf-8")
        binary.chmod(0o755)


def verify_unit(
    text: str, name: str = "qwen38.service", stub_units: Iterable[str] = ("docker.service",)
) -> None:
    """Raises UnitVerifyError with systemd-analyze's output unless the unit verifies clean."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        raise UnitVerifyError("systemd-analyze not found: apt-get install -y systemd")
    with tempfile.TemporaryDirectory(prefix="unit-verify-") as tmp:
        root = Path(tmp)
        build_root(root, name, text, stub_units)
        done = subprocess.run(
            [analyze, "verify", "--man=no", f"--root={root}", name],
            capture_output=True,
            text=True,
            check=False,
        )
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0 or output:
        raise UnitVerifyError(f"systemd-analyze verify {name} (exit {done.returncode}):\n{output}")
