"""Fixtures: a real OpenSSH server on 127.0.0.1 in front of a fake GPU host.

The host scripts are run exactly as the Pulumi program runs them: the string that
components.hostscripts.remote_command() builds goes through an SSH session, which the
server's login shell runs with `$SHELL -c`; secrets and texts go on stdin, nothing in the
environment. Behind the server, a per-test "host root" directory holds the unit dir, the
env file dir, the Docker root dir and the stand-ins' state (see standins.py); the session's
PATH holds the stand-ins first, then the system's commands without the real versions of
the stand-ins, so that removing a stand-in removes the tool.

Needs root (sshd runs as root; the env file is chowned to root) and the Debian packages
openssh-server, openssh-client. A missing sshd fails the tests: it must not skip them.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from components.hostscripts import remote_command
from tests.host.standins import CALLS_FILE, SCENARIO_FILE, TOOLS, default_scenario

REPO_ROOT = Path(__file__).resolve().parents[2]
SSHD = Path("/usr/sbin/sshd")
# sshd refuses to start without its privilege separation directory.
PRIVSEP_DIR = Path("/run/sshd")
SYSTEM_BIN_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
SSH_TIMEOUT_S = 120
START_ATTEMPTS = 3
LISTEN_WAIT_S = 10.0

SSHD_CONFIG = """\
Port {port}
ListenAddress 127.0.0.1
HostKey {dir}/host_key
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
# No PAM: root logs in with the throwaway key alone, no PAM stack to configure.
UsePAM no
# The keys live under /tmp, which is world-writable: StrictModes would refuse them.
StrictModes no
PrintMotd no
# The session's PATH: stand-ins first (the only environment this test server sets).
SetEnv PATH={path}
"""

SSH_CLIENT_CONFIG = """\
Host *
  IdentitiesOnly yes
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 10
"""

STANDIN_LAUNCHER = """\
#!{python}
import sys
sys.path.insert(0, {repo!r})
from tests.host.standins import main
sys.exit(main({tool!r}, {root!r}))
"""


@dataclass(frozen=True)
class Result:
    command: str
    returncode: int
    stdout: str
    stderr: str


@dataclass
class SshServer:
    port: int
    key: Path
    client_config: Path
    process: subprocess.Popen[bytes]

    def ssh_argv(self, command: str) -> list[str]:
        return [
            "ssh", "-F", str(self.client_config), "-p", str(self.port), "-i", str(self.key),
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-T", "root@127.0.0.1", command,
        ]  # fmt: skip

    def run(self, command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            self.ssh_argv(command),
            input=stdin,
            capture_output=True,
            timeout=SSH_TIMEOUT_S,
            check=False,
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class FakeHost:
    server: SshServer
    root: Path
    standins: Path

    @property
    def unit_dir(self) -> Path:
        return self.root / "etc/systemd/system"

    @property
    def env_file(self) -> Path:
        return self.root / "etc/qwen38/vllm.env"

    @property
    def docker_root(self) -> Path:
        return self.root / "var/lib/docker"

    def reset(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        for directory in (self.unit_dir, self.docker_root):
            directory.mkdir(parents=True)
        (self.root / CALLS_FILE).touch()
        self.set_scenario()
        for tool in TOOLS:
            self.install_standin(tool)

    def set_scenario(self, **changes: Any) -> None:
        scenario = default_scenario(self.root) | changes
        (self.root / SCENARIO_FILE).write_text(json.dumps(scenario), encoding="utf-8")

    def install_standin(self, tool: str) -> None:
        launcher = self.standins / tool
        launcher.write_text(
            STANDIN_LAUNCHER.format(
                python=sys.executable, repo=str(REPO_ROOT), tool=tool, root=str(self.root)
            ),
            encoding="utf-8",
        )
        launcher.chmod(0o755)

    def remove_standin(self, tool: str) -> None:
        (self.standins / tool).unlink()

    def run(self, script: str, *args: str, stdin: str | bytes = b"") -> Result:
        """Runs host/<script>.sh as the Pulumi program does: one command string over SSH."""
        command = remote_command(script, *args, sudo=False)
        data = stdin.encode() if isinstance(stdin, str) else stdin
        done = self.server.run(command, data)
        return Result(command, done.returncode, done.stdout.decode(), done.stderr.decode())

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        lines = (self.root / CALLS_FILE).read_text(encoding="utf-8").splitlines()
        calls = [json.loads(line) for line in lines]
        return [c for c in calls if tool is None or c["tool"] == tool]

    def argvs(self, tool: str) -> list[list[str]]:
        return [c["argv"] for c in self.calls(tool)]

    def files_state(self) -> dict[str, tuple[int, int, int, bytes]]:
        """Every file under the host root but the calls log: mode, inode, mtime, content."""
        state = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and path.name != CALLS_FILE:
                info = path.stat()
                key = str(path.relative_to(self.root))
                state[key] = (info.st_mode, info.st_ino, info.st_mtime_ns, path.read_bytes())
        return state


def require_tools() -> None:
    if os.geteuid() != 0:
        pytest.fail("the host script tests need root: sshd runs as root and files are chowned")
    missing = [tool for tool in ("ssh", "ssh-keygen") if shutil.which(tool) is None]
    if not SSHD.is_file() or missing:
        pytest.fail(
            f"OpenSSH is missing ({SSHD if not SSHD.is_file() else ', '.join(missing)}): "
            "apt-get install -y openssh-server openssh-client"
        )


def keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True, capture_output=True,
    )  # fmt: skip


def system_bin_without_standins(target: Path) -> Path:
    """Links to the system's commands except the real nvidia-smi, docker, systemctl and
    journalctl: a test that removes a stand-in must not find the real tool instead."""
    target.mkdir()
    for directory in SYSTEM_BIN_DIRS:
        for entry in Path(directory).iterdir():
            link = target / entry.name
            if entry.name not in TOOLS and not link.is_symlink():
                link.symlink_to(entry)
    return target


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(process: subprocess.Popen[bytes], port: int) -> bool:
    deadline = time.monotonic() + LISTEN_WAIT_S
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def start_sshd(ssh_dir: Path, path: str) -> tuple[subprocess.Popen[bytes], int]:
    """sshd on a free port; another port is tried when the chosen one was taken meanwhile."""
    PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
    log = ssh_dir / "sshd.log"
    for _ in range(START_ATTEMPTS):
        port = free_port()
        config = ssh_dir / "sshd_config"
        config.write_text(SSHD_CONFIG.format(port=port, dir=ssh_dir, path=path), encoding="utf-8")
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(SSHD), "-D", "-e", "-f", str(config)], stdout=out, stderr=subprocess.STDOUT
            )
        if wait_listening(process, port):
            return process, port
        process.kill()
        process.wait()
    pytest.fail(f"sshd did not start: {log.read_text(errors='replace')}")


@pytest.fixture(scope="session")
def host_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Holds ssh/ (keys, configs, log), standins/, sysbin/ and root/ (the host root)."""
    return tmp_path_factory.mktemp("gpuhost")


@pytest.fixture(scope="session")
def ssh_server(host_base: Path) -> Iterator[SshServer]:
    require_tools()
    ssh_dir = host_base / "ssh"
    ssh_dir.mkdir()
    keygen(ssh_dir / "host_key")
    keygen(ssh_dir / "client_key")
    shutil.copy(ssh_dir / "client_key.pub", ssh_dir / "authorized_keys")
    (ssh_dir / "client_config").write_text(SSH_CLIENT_CONFIG, encoding="utf-8")
    (host_base / "standins").mkdir()
    path = f"{host_base / 'standins'}:{system_bin_without_standins(host_base / 'sysbin')}"
    process, port = start_sshd(ssh_dir, path)
    server = SshServer(port, ssh_dir / "client_key", ssh_dir / "client_config", process)
    try:
        probe = server.run("true")
        if probe.returncode != 0:
            log = (ssh_dir / "sshd.log").read_text(errors="replace")
            pytest.fail(f"ssh to the test sshd failed: {probe.stderr.decode()}\n{log}")
        yield server
    finally:
        server.stop()


@pytest.fixture
def gpu_host(ssh_server: SshServer, host_base: Path) -> FakeHost:
    host = FakeHost(ssh_server, host_base / "root", host_base / "standins")
    host.reset()
    return host
