"""The command strings that run the scripts in host/ over SSH.

pulumi-command's remote.Command opens one SSH session and runs one command string; sshd
hands it to the user's login shell as `$SHELL -c '<string>'`. The program sends every
script as its text (`bash -c '<text>' <name>.sh <args...>`), so nothing has to be copied to
the host first and a script never depends on where it lives. Environment variables are not
used (they need AcceptEnv on the server): parameters go as arguments, secrets on stdin.
"""

from __future__ import annotations

import shlex
from pathlib import Path

HOST_SCRIPTS_DIR = Path(__file__).resolve().parent.parent / "host"


def available_scripts() -> list[str]:
    return sorted(path.stem for path in HOST_SCRIPTS_DIR.glob("*.sh"))


def script_text(name: str) -> str:
    """The text of host/<name>.sh."""
    path = HOST_SCRIPTS_DIR / f"{name}.sh"
    if "/" in name or not path.is_file():
        raise ValueError(f"unknown host script {name!r}, expected one of {available_scripts()}")
    return path.read_text(encoding="utf-8")


def remote_command(name: str, *args: str, sudo: bool) -> str:
    """The command string for remote.Command's `create`/`delete`: the script as `bash -c`.

    `sudo -n` (never prompt: a prompt would hang the session) when the SSH user is not root.
    """
    words = ["bash", "-c", script_text(name), f"{name}.sh", *args]
    command = shlex.join(words)
    return f"sudo -n {command}" if sudo else command


def flags(**values: str) -> list[str]:
    """`flags(gpu_name="x", need_bytes="1")` -> ["--gpu-name", "x", "--need-bytes", "1"]."""
    return [word for key, value in values.items() for word in (f"--{key.replace('_', '-')}", value)]
