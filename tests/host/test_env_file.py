"""host/install-env-file.sh over SSH: the API key lands root-only and nowhere else."""

from __future__ import annotations

import json
import secrets
import stat

import pytest

from tests.host.conftest import FakeHost, Result

VAR = "VLLM_API_KEY"


def new_key() -> str:
    return "sk-qwen38-" + secrets.token_urlsafe(24)


def install(host: FakeHost, key: str, var: str = VAR) -> Result:
    return host.run("install-env-file", str(host.env_file), var, stdin=key + "\n")


def assert_key_not_leaked(host: FakeHost, result: Result, key: str) -> None:
    assert key not in result.command, "the key is in the command string sent over SSH"
    assert key not in result.stdout + result.stderr, "the key was printed"
    assert key not in json.dumps([call["argv"] for call in host.calls()]), "the key is in an argv"


def test_installs_the_key_root_only(gpu_host: FakeHost) -> None:
    key = new_key()
    result = install(gpu_host, key)
    assert (result.returncode, result.stdout) == (0, "changed\n"), result.stderr
    info = gpu_host.env_file.stat()
    assert gpu_host.env_file.read_text() == f"{VAR}={key}\n"
    assert stat.S_IMODE(info.st_mode) == 0o600, oct(info.st_mode)
    assert (info.st_uid, info.st_gid) == (0, 0)
    assert stat.S_IMODE(gpu_host.env_file.parent.stat().st_mode) == 0o700
    # The temp file was renamed into place, not left behind.
    assert [p.name for p in gpu_host.env_file.parent.iterdir()] == ["vllm.env"]
    assert_key_not_leaked(gpu_host, result, key)


def test_same_key_twice_leaves_the_file_untouched(gpu_host: FakeHost) -> None:
    key = new_key()
    assert install(gpu_host, key).stdout == "changed\n"
    before = gpu_host.files_state()
    again = install(gpu_host, key)
    assert (again.returncode, again.stdout) == (0, "unchanged\n"), again.stderr
    assert gpu_host.files_state() == before, "bytes, inode or mtime changed on a re-run"
    assert [p.name for p in gpu_host.env_file.parent.iterdir()] == ["vllm.env"]
    assert_key_not_leaked(gpu_host, again, key)


def test_a_new_key_replaces_the_old_one(gpu_host: FakeHost) -> None:
    install(gpu_host, new_key())
    key = new_key()
    result = install(gpu_host, key)
    assert result.stdout == "changed\n"
    assert gpu_host.env_file.read_text() == f"{VAR}={key}\n"


def test_a_loosened_mode_is_repaired(gpu_host: FakeHost) -> None:
    key = new_key()
    install(gpu_host, key)
    gpu_host.env_file.chmod(0o644)
    result = install(gpu_host, key)
    assert result.stdout == "changed\n"
    assert stat.S_IMODE(gpu_host.env_file.stat().st_mode) == 0o600


@pytest.mark.parametrize("stdin", ["", "\n"], ids=["empty", "newline-only"])
def test_an_empty_key_is_refused(gpu_host: FakeHost, stdin: str) -> None:
    result = gpu_host.run("install-env-file", str(gpu_host.env_file), VAR, stdin=stdin)
    assert result.returncode == 1
    assert result.stderr.startswith("install-env-file: no value for VLLM_API_KEY on stdin")
    assert not gpu_host.env_file.exists()


@pytest.mark.parametrize("key", ["two\nlines", "with space", "$(id)"])
def test_a_key_the_readers_would_mangle_is_refused_unechoed(gpu_host: FakeHost, key: str) -> None:
    result = install(gpu_host, key)
    assert result.returncode == 1
    assert "must be one line of the characters" in result.stderr
    assert key not in result.stderr
    assert not gpu_host.env_file.exists()


@pytest.mark.parametrize(
    "args",
    [(), ("relative/vllm.env", VAR), ("/etc/qwen38/vllm.env", "VLLM-API-KEY")],
    ids=["none", "relative-path", "bad-varname"],
)
def test_bad_arguments_print_usage(gpu_host: FakeHost, args: tuple[str, ...]) -> None:
    result = gpu_host.run("install-env-file", *args, stdin="key\n")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith("usage: install-env-file.sh PATH VARNAME")
