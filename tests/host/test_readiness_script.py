"""host/readiness.sh over SSH: the check runs in the image on the host network, the key
travels on stdin only, and a failure brings the unit's journal tail along."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path

from tests.host.conftest import FakeHost, Result
from tests.readiness.fake_vllm import TEST_API_KEY, FakeVllm

READINESS_SOURCE = (Path(__file__).resolve().parents[2] / "components/readiness.py").read_text()

IMAGE = "qwen38-vllm:1.2.2"
UNIT = "qwen38.service"
CHECK_ARGS = ("--base-url", "http://127.0.0.1:8000/v1", "--model", "qwen3.8-27b")
# Stand-ins for components/readiness.py: the docker stand-in runs them with this Python.
PASSING_CHECK = """\
import sys
key = sys.stdin.read().strip()
if not key:
    sys.exit("readiness: no API key on stdin")
print("OK", " ".join(sys.argv[1:]))
"""
FAILING_CHECK = """\
import sys
sys.stdin.read()
sys.exit("readiness: GET /v1/models did not list qwen3.8-27b")
"""
JOURNAL = [f"Nov 30 02:00:{n:02d} gpu vllm[4242]: line {n}" for n in range(60)]


def readiness(host: FakeHost, code: str, key: str) -> Result:
    return host.run(
        "readiness", "--image", IMAGE, "--unit", UNIT, "--code", code, "--", *CHECK_ARGS,
        stdin=key + "\n",
    )  # fmt: skip


def test_the_key_reaches_the_check_on_stdin_only(gpu_host: FakeHost) -> None:
    key = secrets.token_urlsafe(32)
    result = readiness(gpu_host, PASSING_CHECK, key)
    assert (result.returncode, result.stdout) == (0, "OK " + " ".join(CHECK_ARGS) + "\n"), (
        result.stderr
    )
    [call] = gpu_host.calls("docker")
    assert call["argv"] == [
        "run", "--rm", "-i", "--network", "host", "--entrypoint", "/opt/venv/bin/python",
        IMAGE, "-c", PASSING_CHECK, *CHECK_ARGS,
    ]  # fmt: skip
    assert call["stdin"] == key + "\n"
    assert key not in json.dumps([c["argv"] for c in gpu_host.calls()])
    assert key not in result.command + result.stdout + result.stderr
    assert gpu_host.calls("journalctl") == []


def test_a_failed_check_is_followed_by_the_journal_tail(gpu_host: FakeHost) -> None:
    gpu_host.set_scenario(journal=JOURNAL)
    result = readiness(gpu_host, FAILING_CHECK, secrets.token_urlsafe(32))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "readiness: GET /v1/models did not list qwen3.8-27b"
    assert lines[1].startswith("readiness: the check failed (exit 1)")
    assert lines[2:] == JOURNAL[-50:]
    assert gpu_host.argvs("journalctl") == [["-u", UNIT, "-n", "50", "--no-pager"]]


def test_bad_arguments_print_usage(gpu_host: FakeHost) -> None:
    result = gpu_host.run("readiness", "--image", IMAGE, "--unit", UNIT, "--code", "pass")
    assert result.returncode == 2
    assert "missing -- before the check's arguments" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("usage: readiness.sh --image IMAGE")
    assert gpu_host.calls() == []


def test_the_real_check_runs_on_the_host_against_a_vllm_like_server(
    gpu_host: FakeHost, start_fake_vllm: Callable[..., FakeVllm]
) -> None:
    """host/readiness.sh with components/readiness.py itself, over SSH, as the program sends
    it: the docker stand-in runs the check's source with this Python on the host network
    (here: loopback), against a server that behaves like vLLM."""
    server = start_fake_vllm(loading_answers=2)
    args = ["--url", server.base_url, "--model", "qwen3.8-27b", "--max-model-len", "180000",
            "--timeout", "10", "--interval", "0.05"]  # fmt: skip
    result = gpu_host.run(
        "readiness", "--image", IMAGE, "--unit", UNIT, "--generation", "c1/k1",
        "--code", READINESS_SOURCE, "--", *args, stdin=TEST_API_KEY + "\n",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ready: 'qwen3.8-27b'"), result.stdout
    assert "HTTP 503" in result.stderr, "progress lines show the server loading"
    assert TEST_API_KEY not in result.command + result.stdout + result.stderr
    assert TEST_API_KEY not in json.dumps([c["argv"] for c in gpu_host.calls()])


def test_the_real_check_on_the_host_reports_a_wrong_length_with_the_journal(
    gpu_host: FakeHost, start_fake_vllm: Callable[..., FakeVllm]
) -> None:
    gpu_host.set_scenario(journal=JOURNAL)
    server = start_fake_vllm(models=[("qwen3.8-27b", 65536)])
    args = ["--url", server.base_url, "--model", "qwen3.8-27b", "--max-model-len", "180000",
            "--timeout", "5", "--interval", "0.05"]  # fmt: skip
    result = gpu_host.run(
        "readiness", "--image", IMAGE, "--unit", UNIT, "--code", READINESS_SOURCE, "--", *args,
        stdin=TEST_API_KEY + "\n",
    )  # fmt: skip
    assert result.returncode == 1
    assert "the server lists max_model_len 65536" in result.stdout
    assert result.stderr.splitlines()[-50:] == JOURNAL[-50:]
