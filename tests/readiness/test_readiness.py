"""The readiness gate against a real local HTTP server that behaves like vLLM."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from components.readiness import (
    ReadinessPolicy,
    ReadinessResult,
    ReadinessTarget,
    check_readiness,
)

READINESS_PY = Path(__file__).resolve().parents[2] / "components" / "readiness.py"
FAST = ReadinessPolicy(
    timeout_seconds=5, interval_seconds=0.05, request_timeout_seconds=1, answer_timeout_seconds=2
)
WAITING_LINE = re.compile(r"^waiting for http://127\.0\.0\.1:\d+/v1/models \((.+)/(.+)\): (.+)$")


@dataclass
class GateRun:
    result: ReadinessResult
    progress: list[str]

    @property
    def waiting_lines(self) -> list[str]:
        return [line for line in self.progress if line.startswith("waiting for ")]


def assert_key_absent(text: str, api_key: str) -> None:
    """Not even a fragment: no 6-character slice of the key may appear."""
    fragments = {api_key[i : i + 6] for i in range(len(api_key) - 5)}
    leaked = sorted(fragment for fragment in fragments if fragment in text)
    assert not leaked, f"expected no part of the API key in the output, found {leaked} in {text!r}"


def run_gate(
    target: ReadinessTarget, api_key: str, policy: ReadinessPolicy = FAST, **kw
) -> GateRun:
    progress: list[str] = []
    result = check_readiness(target, api_key, policy, report=progress.append, **kw)
    assert_key_absent("\n".join([*progress, result.message, result.answer or ""]), api_key)
    return GateRun(result, progress)


def target_of(server, max_model_len: int | None = None) -> ReadinessTarget:
    """Expects what the fake serves first, unless told otherwise."""
    name, served_length = server.scenario.models[0]
    return ReadinessTarget(server.base_url, name, max_model_len or served_length)


def test_slow_start_waits_through_refused_and_loading_then_is_ready(start_fake_vllm, api_key):
    server = start_fake_vllm(listen_after_seconds=0.3, loading_answers=3)

    run = run_gate(target_of(server), api_key)

    assert run.result.ready, f"expected ready after a slow start, got {run.result.message!r}"
    seen = [WAITING_LINE.match(line) for line in run.waiting_lines]
    assert all(seen), f"expected every waiting line in the documented format: {run.waiting_lines}"
    causes = [match.group(3) for match in seen if match]
    assert causes[0] == "connection refused", f"expected refused first, saw {causes}"
    loading = [cause for cause in causes if cause.startswith("HTTP 503")]
    assert len(loading) == 3, f"expected the 3 loading answers reported, saw {causes}"
    assert run.result.elapsed_seconds >= 0.3, "expected to have waited for the port to open"
    assert (run.result.listed_max_model_len, run.result.answer) == (180000, "2")


def test_ready_server_is_asked_with_the_key_and_refuses_without_it(start_fake_vllm, api_key):
    server = start_fake_vllm()

    run = run_gate(target_of(server), api_key)

    assert run.result.ready, f"expected ready, got {run.result.message!r}"
    assert run.waiting_lines == [], f"expected no waiting on a ready server: {run.progress}"
    bearer = f"Bearer {api_key}"
    requests_seen = [(r.method, r.path, r.authorization) for r in server.seen]
    assert requests_seen == [
        ("GET", "/v1/models", bearer),
        ("GET", "/v1/models", None),
        ("POST", "/v1/chat/completions", bearer),
    ], "expected: list with key, list without key (401), then one chat completion"
    probe = server.seen[-1].body
    assert probe["model"] == "qwen3.8-27b", f"expected the served name, sent {probe['model']!r}"
    assert probe["messages"] == [{"role": "user", "content": "1+1=?"}]
    assert probe["temperature"] == 0, "expected a deterministic probe"
    assert 0 < probe["max_tokens"] <= 64, f"expected a small max_tokens, sent {probe['max_tokens']}"
    assert probe["chat_template_kwargs"] == {"enable_thinking": False}
    assert "answered '2'" in run.result.message, run.result.message


def test_key_not_enforced_fails(start_fake_vllm, api_key):
    server = start_fake_vllm(enforce_key=False)

    result = run_gate(target_of(server), api_key).result

    assert not result.ready, "expected a server that answers without the key to fail"
    assert "the API key is not enforced" in result.message, result.message
    chats = [r for r in server.seen if r.method == "POST"]
    assert chats == [], "expected no chat completion once the key check failed"


def test_wrong_max_model_len_fails_at_once_naming_both_numbers(start_fake_vllm, api_key):
    server = start_fake_vllm(models=[("qwen3.8-27b", 131072)])

    run = run_gate(target_of(server, max_model_len=180000), api_key)

    assert not run.result.ready, "expected a wrong max_model_len to fail"
    assert "180000" in run.result.message, f"expected the configured length: {run.result.message}"
    assert "131072" in run.result.message, f"expected the listed length: {run.result.message}"
    assert run.result.listed_max_model_len == 131072
    assert len(server.seen) == 1, f"expected no retry on a wrong answer, saw {len(server.seen)}"


def test_missing_model_id_fails_listing_what_is_served(start_fake_vllm, api_key):
    server = start_fake_vllm(models=[("other-model", 180000)])

    target = ReadinessTarget(server.base_url, "qwen3.8-27b", 180000)
    result = run_gate(target, api_key).result

    assert not result.ready, "expected a missing model id to fail"
    assert "'qwen3.8-27b'" in result.message, f"expected the wanted id: {result.message}"
    assert "'other-model'" in result.message, f"expected the listed id: {result.message}"


def test_empty_chat_answer_fails(start_fake_vllm, api_key):
    server = start_fake_vllm(content="", reasoning_content=None)

    result = run_gate(target_of(server), api_key).result

    assert not result.ready, "expected an empty answer to fail"
    assert "empty answer" in result.message, result.message


def test_answer_falls_back_to_reasoning_content(start_fake_vllm, api_key):
    server = start_fake_vllm(content=None, reasoning_content="1+1 equals 2.")

    result = run_gate(target_of(server), api_key).result

    assert result.ready, f"expected the reasoning text to count, got {result.message!r}"
    assert result.answer == "1+1 equals 2."


def test_server_that_stops_during_the_checks_is_reported_as_stopped(start_fake_vllm, api_key):
    server = start_fake_vllm(crash_after_listing=True)

    result = run_gate(target_of(server), api_key).result

    assert not result.ready, "expected a crash during the checks to fail"
    assert "stopped answering" in result.message, result.message
    assert "connection refused" in result.message, result.message


def test_timeout_reports_the_last_thing_seen(start_fake_vllm, api_key):
    server = start_fake_vllm(loading_answers=10**6)
    policy = ReadinessPolicy(timeout_seconds=0.3, interval_seconds=0.05)

    run = run_gate(target_of(server), api_key, policy)

    assert not run.result.ready, "expected a server that never loads to time out"
    assert run.result.message.startswith("timed out after "), run.result.message
    assert 'HTTP 503: {"error": "model loading"}' in run.result.message, run.result.message
    assert 0.3 <= run.result.elapsed_seconds < 2, f"took {run.result.elapsed_seconds:.2f}s"


def test_hung_server_counts_as_not_ready_until_the_timeout(silent_port, api_key):
    target = ReadinessTarget(f"http://127.0.0.1:{silent_port}", "qwen3.8-27b", 180000)
    policy = ReadinessPolicy(
        timeout_seconds=0.3, interval_seconds=0.05, request_timeout_seconds=0.1
    )

    result = run_gate(target, api_key, policy).result

    assert not result.ready, "expected a silent server to time out"
    assert result.message.endswith("last seen: no answer within 0.1s"), result.message


def test_wrong_key_fails_without_waiting(start_fake_vllm, api_key):
    server = start_fake_vllm(api_key="the-server-has-another-key")

    run = run_gate(target_of(server), api_key)

    assert not run.result.ready, "expected a rejected key to fail"
    assert "wrong API key" in run.result.message, run.result.message
    assert run.waiting_lines == [], f"expected no retry, got {run.waiting_lines}"


def test_progress_counts_against_the_clock_it_is_given(start_fake_vllm, api_key):
    server = start_fake_vllm(loading_answers=10**6)
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    policy = ReadinessPolicy(timeout_seconds=1200, interval_seconds=10)
    run = run_gate(target_of(server), api_key, policy, clock=lambda: now[0], sleep=sleep)

    assert len(run.waiting_lines) == 121, "expected one attempt every 10 s from 0 s to 1200 s"
    assert "(0.0s/1200s)" in run.waiting_lines[0], run.waiting_lines[0]
    assert "(1200s/1200s)" in run.waiting_lines[-1], run.waiting_lines[-1]
    assert set(sleeps) == {10}, f"expected only 10 s sleeps, got {sorted(set(sleeps))}"
    assert run.result.message.startswith("timed out after 1200s, last seen: HTTP 503")


def test_key_echoed_back_by_the_server_is_redacted(start_fake_vllm, api_key):
    server = start_fake_vllm(loading_answers=2, echo_authorization=True)

    run = run_gate(target_of(server), api_key)  # run_gate asserts the key is absent

    assert run.result.ready, run.result.message
    echoed = [line for line in run.waiting_lines if "Bearer [redacted]" in line]
    assert len(echoed) == 2, f"expected both echoes redacted, got {run.waiting_lines}"


def test_proxy_variables_and_netrc_are_ignored(start_fake_vllm, api_key, monkeypatch, tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password something\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens on the discard port
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = start_fake_vllm()

    result = run_gate(target_of(server), api_key).result

    assert result.ready, f"expected proxy and netrc settings not to interfere: {result.message}"


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda: ReadinessTarget("127.0.0.1:8000", "m", 1), "must start with http"),
        (lambda: ReadinessTarget("http://h:8000/v1/", "m", 1), "without /v1"),
        (lambda: ReadinessTarget("http://h:8000", "", 1), "must not be empty"),
        (lambda: ReadinessTarget("http://h:8000", "m", 0), "max_model_len must be > 0, got 0"),
        (lambda: ReadinessPolicy(interval_seconds=0), "interval_seconds must be > 0, got 0"),
        (lambda: ReadinessPolicy(timeout_seconds=math.nan), "timeout_seconds must be > 0"),
    ],
)
def test_bad_target_or_policy_is_rejected(build, error):
    with pytest.raises(ValueError, match=error):
        build()


@pytest.mark.parametrize("bad_key", ["", "two\nlines", "has space", "non-ascii-é"])
def test_bad_api_key_is_rejected_without_quoting_it(bad_key):
    target = ReadinessTarget("http://127.0.0.1:9", "m", 1)
    with pytest.raises(ValueError, match="API key") as raised:
        check_readiness(target, bad_key)
    if bad_key:
        assert bad_key not in str(raised.value), "expected the key value not to be quoted"


def run_cli(args: list[str], stdin: str, cwd: Path, env: dict[str, str] | None = None):
    # -I: no cwd, PYTHONPATH or user site on sys.path, as when shipped into the container.
    return subprocess.run(
        [sys.executable, "-I", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
    )


def cli_args(url: str) -> list[str]:
    return ["--url", url, "--model", "qwen3.8-27b", "--max-model-len", "180000"]


@pytest.mark.parametrize("launch", ["script", "source-text"])
def test_cli_ready_exits_0(start_fake_vllm, api_key, tmp_path, launch):
    server = start_fake_vllm(loading_answers=2)
    program = [str(READINESS_PY)] if launch == "script" else ["-c", READINESS_PY.read_text()]
    timing = ["--timeout", "10", "--interval", "0.05"]

    done = run_cli([*program, *cli_args(server.base_url), *timing], f"{api_key}\n", tmp_path)

    assert done.returncode == 0, f"expected exit 0, got {done.returncode}: {done.stderr}"
    assert done.stdout.count("\n") == 1, f"expected one verdict line, got {done.stdout!r}"
    assert done.stdout.startswith("ready: 'qwen3.8-27b' at http://127.0.0.1:"), done.stdout
    assert done.stderr.count("waiting for ") == 2, f"expected progress on stderr: {done.stderr}"
    assert_key_absent(done.stdout + done.stderr, api_key)


def test_cli_not_ready_exits_1(start_fake_vllm, api_key, tmp_path):
    server = start_fake_vllm(enforce_key=False)

    done = run_cli([str(READINESS_PY), *cli_args(server.base_url)], api_key, tmp_path)

    assert done.returncode == 1, f"expected exit 1, got {done.returncode}: {done.stderr}"
    assert done.stdout.startswith("not ready: the API key is not enforced"), done.stdout
    assert_key_absent(done.stdout + done.stderr, api_key)


@dataclass(frozen=True)
class UsageCase:
    args: list[str]
    stdin: str
    error: str
    key_in_env: bool = False


NOWHERE = "http://127.0.0.1:9"
USAGE_CASES = {
    "missing option": UsageCase(["--url", NOWHERE, "--model", "m"], "k", "--max-model-len"),
    "key on argv": UsageCase([*cli_args(NOWHERE), "--api-key", "k"], "k", "unrecognized"),
    "zero timeout": UsageCase([*cli_args(NOWHERE), "--timeout", "0"], "k", "timeout_seconds"),
    "url with /v1": UsageCase(cli_args(f"{NOWHERE}/v1"), "k", "without /v1"),
    "key only in env": UsageCase(cli_args(NOWHERE), "", "the API key is empty", key_in_env=True),
}


@pytest.mark.parametrize("case", USAGE_CASES.values(), ids=USAGE_CASES.keys())
def test_cli_bad_usage_exits_2(tmp_path, api_key, case):
    env = {"PATH": "/usr/bin:/bin", **({"VLLM_API_KEY": api_key} if case.key_in_env else {})}

    done = run_cli([str(READINESS_PY), *case.args], case.stdin, tmp_path, env)

    assert done.returncode == 2, f"expected exit 2, got {done.returncode}: {done.stderr}"
    assert case.error in done.stderr, f"expected {case.error!r} in {done.stderr!r}"
    assert done.stdout == "", f"expected no verdict on bad usage, got {done.stdout!r}"
    assert_key_absent(done.stderr, api_key)
