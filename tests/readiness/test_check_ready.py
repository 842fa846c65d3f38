"""scripts/check-ready.sh: the gate as pulumi-command's local.Command runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.readiness.fake_vllm import TEST_API_KEY, FakeVllm

PROJECT_DIR = Path(__file__).resolve().parents[2]


def check_ready(
    url: str, key: str, *, max_model_len: int = 180000
) -> subprocess.CompletedProcess[str]:
    command = [
        "scripts/check-ready.sh",
        "--ssh", "root@127.0.0.1", "--ssh-port", "1",  # nothing listens: journal unreadable
        "--unit", "qwen38.service", "--generation", "c1/k1", "--",
        "--url", url, "--model", "qwen3.8-27b", "--max-model-len", str(max_model_len),
        "--timeout", "5", "--interval", "0.05",
    ]  # fmt: skip
    return subprocess.run(
        command,
        input=key + "\n",
        capture_output=True,
        text=True,
        cwd=PROJECT_DIR,
        env={**os.environ, "QWEN38_PYTHON": sys.executable},
        timeout=60,
        check=False,
    )


def test_ready_server_passes(start_fake_vllm: Callable[..., FakeVllm]) -> None:
    # Loading answers, not a start delay: the script's own start-up time would race a delay.
    server = start_fake_vllm(loading_answers=3)
    done = check_ready(server.base_url, TEST_API_KEY)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ready: 'qwen3.8-27b'")
    assert "waiting for" in done.stderr, "progress lines while the server starts"
    assert TEST_API_KEY not in done.stdout + done.stderr


def test_failure_fetches_the_journal_and_keeps_the_exit_status(
    start_fake_vllm: Callable[..., FakeVllm],
) -> None:
    server = start_fake_vllm(models=[("qwen3.8-27b", 65536)])
    done = check_ready(server.base_url, TEST_API_KEY)
    assert done.returncode == 1
    assert "the server lists max_model_len 65536" in done.stdout
    assert "last 50 lines of the qwen38.service journal:" in done.stderr
    assert "(could not read the journal over ssh from root@127.0.0.1)" in done.stderr


def test_bad_usage() -> None:
    done = subprocess.run(
        ["scripts/check-ready.sh", "--unit", "qwen38.service"],
        capture_output=True, text=True, cwd=PROJECT_DIR, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.startswith("usage:")
