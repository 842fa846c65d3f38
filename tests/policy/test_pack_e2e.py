"""End to end, the way `pulumi preview --policy-pack policy` runs: the real program under
mocks, every registered resource through pulumi_policy's analyzer.

The program refuses a bad stack itself before declaring anything (see
tests/program/test_bad_config.py). To show that the pack stops the same stacks on its own -
as it must for a program that skipped the check or a hand-edited registration - the
refusing cases run the program with its own guard switched off.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.policy.analyzer import Verdict, analyze, mandatory
from tests.program.harness import run_program

SERVER = "vllm-server"


@pytest.fixture
def without_program_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """The program's own refusal off: registrations reach the analyzer as they would from a
    program that did not check."""
    monkeypatch.setattr("components.resources.stack.evaluate", lambda facts: [])


def refusals(verdicts: list[Verdict], policy: str) -> list[str]:
    return [v.message for v in mandatory(verdicts) if v.policy == policy]


@pytest.mark.parametrize("stack", ["dev", "ctx180k", "ctx256k"])
def test_the_stack_files_pass(stack: str) -> None:
    verdicts = analyze(run_program(stack))
    assert mandatory(verdicts) == [], f"{stack} refused: {mandatory(verdicts)}"


def test_ctx256k_gets_the_headroom_advisory() -> None:
    verdicts = analyze(run_program("ctx256k"))
    advisories = [v for v in verdicts if v.level == "advisory"]
    assert [v.policy for v in advisories] == ["kv-cache-headroom"]
    assert "0.34 GiB to spare" in advisories[0].message


def test_the_server_component_carries_the_facts() -> None:
    run = run_program("ctx180k")
    server = run.one("qwen38:server:VllmServer", SERVER).plain
    assert server["plan"]["max_model_len"] == 180000
    assert server["argv"][:3] == [
        "/opt/venv/bin/python",
        "-m",
        "vllm.entrypoints.openai.api_server",
    ]
    assert server["api_key"] == {
        "source": "generated",
        "stored_as_secret": True,
        "env_file": "/etc/qwen38/vllm.env",
        "env_var": "VLLM_API_KEY",
    }


@pytest.mark.usefixtures("without_program_guard")
@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            {"serving.max_model_len": 262144},
            "To serve one request of max_model_len 262144, 8.33 GiB of KV cache is needed, "
            "which is larger than the available KV cache memory (7.71 GiB",
        ),
        (
            {"serving.max_num_batched_tokens": 32768},
            "5.79 GiB of KV cache is needed, which is larger than the available KV cache memory "
            "(2.81 GiB",
        ),
    ],
    ids=["262144 at 0.95/8192", "180000 at 0.95/32768"],
)
def test_kv_cache_that_cannot_fit_is_refused(overrides: dict[str, Any], expected: str) -> None:
    messages = refusals(analyze(run_program("ctx180k", overrides)), "kv-cache-budget")
    assert len(messages) == 1 and expected in messages[0], messages
    assert "Settings that would fit" in messages[0], "the refusal names settings that fit"


@pytest.mark.usefixtures("without_program_guard")
def test_a_bfloat16_stack_is_refused() -> None:
    messages = refusals(
        analyze(run_program("ctx180k", {"serving.dtype": "bfloat16"})), "sm70-compatibility"
    )
    assert messages == [
        "serving.dtype 'bfloat16' cannot run on SM70: V100 (SM70) has no bf16; "
        "allowed: half, float16, float, float32"
    ]


@pytest.mark.usefixtures("without_program_guard")
def test_cuda_graphs_and_other_backends_are_refused() -> None:
    run = run_program(
        "ctx180k", {"serving.enforce_eager": False, "serving.attention_backend": "FLASH_ATTN"}
    )
    messages = refusals(analyze(run), "sm70-compatibility")
    assert len(messages) == 2, messages


def test_a_key_in_argv_is_refused() -> None:
    """The config refuses --api-key in extra_args, so the tampered registration is made
    here: the server's registered argv with the key appended, as a modified program
    would register it."""
    run = run_program("ctx180k")
    server = run.one("qwen38:server:VllmServer", SERVER)
    tampered = dict(server.properties)
    tampered["argv"] = [*server.properties["argv"], "--api-key", "sk-visible-in-ps"]
    messages = refusals(analyze(run, replace={SERVER: tampered}), "api-key-secret")
    assert len(messages) == 1 and "--api-key" in messages[0], messages
    assert "sk-visible-in-ps" not in messages[0], "the refusal must not repeat the key"


@pytest.mark.usefixtures("without_program_guard")
def test_a_plain_text_key_in_the_stack_file_is_refused() -> None:
    run = run_program("ctx180k", {"api_key": "sk-plain"})
    messages = refusals(analyze(run), "api-key-secret")
    assert messages == [
        "api_key is stored in plain text in the stack file: "
        "pulumi config set --secret api_key <key>"
    ]


def test_an_open_server_without_a_key_is_refused() -> None:
    run = run_program("ctx180k")
    server = run.one("qwen38:server:VllmServer", SERVER)
    tampered = dict(server.properties)
    tampered["api_key"] = {**server.properties["api_key"], "source": "none"}
    messages = refusals(analyze(run, replace={SERVER: tampered}), "api-key-secret")
    assert len(messages) == 1 and "without an API key" in messages[0]


def test_gpu_memory_override_in_the_pack_config() -> None:
    """The pack's view of the card wins over the stack's: 29 GiB cannot hold ctx180k."""
    config = {"kv-cache-budget": {"gpuMemoryGib": 29.0}}
    messages = refusals(analyze(run_program("ctx180k"), config=config), "kv-cache-budget")
    assert len(messages) == 1 and "180000" in messages[0]


def test_required_headroom_in_the_pack_config() -> None:
    config = {"kv-cache-budget": {"minHeadroomGib": 0.5}}
    messages = refusals(analyze(run_program("ctx256k"), config=config), "kv-cache-budget")
    assert len(messages) == 1 and "below the required 0.50 GiB" in messages[0]


def test_enforcement_level_from_the_pack_config() -> None:
    config = {"kv-cache-budget": {"enforcementLevel": "advisory", "minHeadroomGib": 0.5}}
    verdicts = analyze(run_program("ctx256k"), config=config)
    assert refusals(verdicts, "kv-cache-budget") == []
    assert any(v.policy == "kv-cache-budget" and v.level == "advisory" for v in verdicts)
