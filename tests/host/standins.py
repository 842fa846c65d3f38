"""Stand-ins for nvidia-smi, docker, systemctl and journalctl on the fake GPU host.

Each executable in the fake host's PATH runs `main(tool, host_root)`. It appends one JSON
line {"tool", "argv", "stdin"} to calls.jsonl in the host root, then answers like the real
tool in the formats the host scripts parse. What the host looks like (GPUs, Docker daemon,
runtimes, volumes) comes from scenario.json in the host root, written by each test: the SSH
session passes no environment. systemctl keeps its state in files, so that idempotency
(what was reloaded, started, restarted) can be observed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCENARIO_FILE = "scenario.json"
CALLS_FILE = "calls.jsonl"
SYSTEMD_STATE_DIR = "systemd-state"
STDIN_RECORD_LIMIT = 1 << 16
TOOLS = ("nvidia-smi", "docker", "systemctl", "journalctl")

DEFAULT_GPU = {
    "name": "Tesla V100-SXM2-32GB",
    "memory.total": "32768",
    "driver_version": "525.105.17",
    "compute_cap": "7.0",
}
DOCKER_DOWN = (
    "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
    "Is the docker daemon running?"
)
# docker run options that take a value (the image is the first word that is none of these).
DOCKER_RUN_VALUE_OPTIONS = {"--entrypoint", "-v", "--volume", "-e", "--env", "--network", "--name"}

Scenario = dict[str, Any]
Tool = Callable[[list[str], Scenario, Path, bytes | None], int]


def default_scenario(root: Path) -> Scenario:
    return {
        "gpus": [DEFAULT_GPU],
        "docker_daemon": True,
        "runtimes": ["io.containerd.runc.v2", "nvidia", "runc"],
        "docker_root_dir": str(root / "var/lib/docker"),
        "volumes": {},
        "images": {},
        "unit_dir": str(root / "etc/systemd/system"),
        "journal": [],
        # What `docker run` prints and returns when it is not a `python -c` check.
        "run": {"stdout": "", "stderr": "", "exit": 0},
    }


def nvidia_smi(argv: list[str], scenario: Scenario, root: Path, stdin: bytes | None) -> int:
    if not scenario["gpus"]:
        print("No devices were found")
        return 6
    query = next((a.split("=", 1)[1] for a in argv if a.startswith("--query-gpu=")), None)
    if query is None:
        print("NVIDIA-SMI 525.105.17 (stand-in table)")
        return 0
    for gpu in scenario["gpus"]:
        print(", ".join(gpu[name] for name in query.split(",")))
    return 0


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def docker_info(argv: list[str], scenario: Scenario) -> int:
    template = option(argv, "--format")
    if template == "{{.DockerRootDir}}":
        print(scenario["docker_root_dir"])
    elif template == "{{json .Runtimes}}":
        print(json.dumps({name: {"path": name} for name in scenario["runtimes"]}))
    elif template is None:
        print(f"Server:\n Server Version: 28.1.1\n Docker Root Dir: {scenario['docker_root_dir']}")
    else:
        print(f"stand-in docker: unknown template {template!r}", file=sys.stderr)
        return 2
    return 0


def docker_inspect(kind: str, argv: list[str], scenario: Scenario) -> int:
    name = argv[-1]
    table = scenario["volumes"] if kind == "volume" else scenario["images"]
    if name not in table:
        print(f"Error response from daemon: no such {kind}: {name}", file=sys.stderr)
        return 1
    print(table[name])
    return 0


def docker_run(argv: list[str], scenario: Scenario, stdin: bytes | None) -> int:
    """Runs `--entrypoint <python> IMAGE -c CODE ARGS` with this Python; else the canned run."""
    words = iter(argv[1:])
    for word in words:
        if word in DOCKER_RUN_VALUE_OPTIONS:
            next(words)
        elif not word.startswith("-"):
            break
    command = list(words)
    if command[:1] == ["-c"]:
        return subprocess.run([sys.executable, *command], input=stdin, check=False).returncode
    run = scenario["run"]
    sys.stdout.write(run["stdout"])
    sys.stderr.write(run["stderr"])
    return int(run["exit"])


def docker(argv: list[str], scenario: Scenario, root: Path, stdin: bytes | None) -> int:
    if not scenario["docker_daemon"]:
        if argv[:1] == ["info"]:
            print()  # the real client renders the template on empty info first
        print(DOCKER_DOWN, file=sys.stderr)
        return 1
    if argv[:1] == ["info"]:
        return docker_info(argv, scenario)
    if argv[:2] in (["volume", "inspect"], ["image", "inspect"]):
        return docker_inspect(argv[0], argv, scenario)
    if argv[:1] == ["run"]:
        return docker_run(argv, scenario, stdin)
    return 0


class Systemd:
    """Unit state in files: enabled/active markers, the loaded and the running unit text."""

    def __init__(self, root: Path, scenario: Scenario) -> None:
        self.unit_dir = Path(scenario["unit_dir"])
        self.state = root / SYSTEMD_STATE_DIR
        for sub in ("loaded", "running", "enabled"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)

    def daemon_reload(self) -> int:
        loaded = self.state / "loaded"
        shutil.rmtree(loaded)
        loaded.mkdir()
        for unit in self.unit_dir.iterdir():
            if unit.is_file():
                shutil.copy(unit, loaded / unit.name)
        return 0

    def is_active(self, unit: str, quiet: bool) -> int:
        active = (self.state / "running" / unit).exists()
        if not quiet:
            print("active" if active else "inactive")
        return 0 if active else 3

    def enable(self, unit: str, on: bool) -> int:
        verb = "enable" if on else "disable"
        if not (self.unit_dir / unit).is_file():
            print(f"Failed to {verb} unit: Unit file {unit} does not exist.", file=sys.stderr)
            return 1
        marker = self.state / "enabled" / unit
        if on and not marker.exists():
            marker.touch()
            print(f"Created symlink multi-user.target.wants/{unit}", file=sys.stderr)
        elif not on and marker.exists():
            marker.unlink()
            print(f"Removed multi-user.target.wants/{unit}", file=sys.stderr)
        return 0

    def start(self, unit: str, restart: bool) -> int:
        loaded = self.state / "loaded" / unit
        if not loaded.exists():
            print(f"Failed to start {unit}: Unit {unit} not found.", file=sys.stderr)
            return 5
        running = self.state / "running" / unit
        if restart or not running.exists():
            shutil.copy(loaded, running)
        return 0

    def stop(self, unit: str) -> int:
        running = self.state / "running" / unit
        if not running.exists() and not (self.state / "loaded" / unit).exists():
            print(f"Failed to stop {unit}: Unit {unit} not loaded.", file=sys.stderr)
            return 5
        running.unlink(missing_ok=True)
        return 0


def systemctl(argv: list[str], scenario: Scenario, root: Path, stdin: bytes | None) -> int:
    systemd = Systemd(root, scenario)
    words = [a for a in argv if not a.startswith("--")]
    verb, unit = words[0], (words[1] if len(words) > 1 else "")
    actions: dict[str, Callable[[], int]] = {
        "daemon-reload": systemd.daemon_reload,
        "is-active": lambda: systemd.is_active(unit, quiet="--quiet" in argv),
        "enable": lambda: systemd.enable(unit, on=True),
        "disable": lambda: systemd.enable(unit, on=False),
        "start": lambda: systemd.start(unit, restart=False),
        "restart": lambda: systemd.start(unit, restart=True),
        "stop": lambda: systemd.stop(unit),
    }
    return actions[verb]() if verb in actions else 0


def journalctl(argv: list[str], scenario: Scenario, root: Path, stdin: bytes | None) -> int:
    lines = int(option(argv, "-n") or 10)
    for line in scenario["journal"][-lines:]:
        print(line)
    return 0


HANDLERS: dict[str, Tool] = {
    "nvidia-smi": nvidia_smi,
    "docker": docker,
    "systemctl": systemctl,
    "journalctl": journalctl,
}


def reads_stdin(tool: str, argv: list[str]) -> bool:
    """Only `docker run -i` takes stdin; reading it elsewhere would steal the script's."""
    return tool == "docker" and argv[:1] == ["run"] and "-i" in argv


def record(root: Path, tool: str, argv: list[str], stdin: bytes | None) -> None:
    text = None if stdin is None else stdin[:STDIN_RECORD_LIMIT].decode("utf-8", "replace")
    with (root / CALLS_FILE).open("a", encoding="utf-8") as calls:
        calls.write(json.dumps({"tool": tool, "argv": argv, "stdin": text}) + "\n")


def main(tool: str, host_root: str) -> int:
    root = Path(host_root)
    argv = sys.argv[1:]
    scenario = json.loads((root / SCENARIO_FILE).read_text(encoding="utf-8"))
    stdin = sys.stdin.buffer.read() if reads_stdin(tool, argv) else None
    record(root, tool, argv, stdin)
    return HANDLERS[tool](argv, scenario, root, stdin)
