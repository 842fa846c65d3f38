"""Bad input is refused before any resource is declared, one message per problem."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from tests.program.harness import ProgramRun, run_program

CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "utilization above 1",
        {"serving.gpu_memory_utilization": 1.5},
        "serving.gpu_memory_utilization: must be at most 1, got 1.5",
    ),
    (
        "utilization zero",
        {"serving.gpu_memory_utilization": 0},
        "serving.gpu_memory_utilization: must be greater than 0, got 0",
    ),
    (
        "context beyond the model",
        {"serving.max_model_len": 300000},
        "serving.max_model_len 300000 exceeds the model's max_position_embeddings (262144)",
    ),
    (
        "bfloat16",
        {"serving.dtype": "bfloat16"},
        "serving.dtype 'bfloat16' cannot run on SM70: V100 (SM70) has no bf16; "
        "allowed: half, float16, float, float32",
    ),
    (
        "auto dtype resolves to bf16",
        {"serving.dtype": "auto"},
        "serving.dtype 'auto' cannot run on SM70: 'auto' takes the checkpoint's bfloat16",
    ),
    (
        "fp8_e4m3 KV",
        {"serving.kv_cache_dtype": "fp8_e4m3"},
        "serving.kv_cache_dtype 'fp8_e4m3' is not usable on SM70",
    ),
    (
        "unknown engine version",
        {"engine.version": "1.4.0"},
        "engine.version: must be one of '1.2.2', '1.5.0' or '1.5.1', got '1.4.0'",
    ),
    (
        "engine without a built-in digest",
        {"engine.version": "1.5.1"},
        "engine.wheel_sha256 is required for engine.version '1.5.1'",
    ),
    (
        "port out of range",
        {"serving.port": 70000},
        "serving.port: must be at most 65535, got 70000",
    ),
    ("ssh port zero", {"host.port": 0}, "host.port: must be at least 1, got 0"),
    (
        "attention backend without SM70 support",
        {"serving.attention_backend": "FLASH_ATTN"},
        "serving.attention_backend 'FLASH_ATTN': the stock FlashAttention backend does not "
        "support SM70",
    ),
    (
        "CUDA graphs",
        {"serving.enforce_eager": False},
        "serving.enforce_eager is false: CUDA graphs are unstable on V100",
    ),
    (
        "misspelt key",
        {"servng": {"max_model_len": 1}},
        "servng: unknown key",
    ),
    (
        "key on the command line",
        {"serving.extra_args": ["--api-key", "sk-visible-in-ps"]},
        "--api-key may not be given in serving.extra_args",
    ),
    (
        "262144 at 0.95 / 8192",
        {"serving.max_model_len": 262144},
        "8.33 GiB of KV cache is needed, which is larger than the available KV cache memory "
        "(7.71 GiB",
    ),
    (
        "180000 at 0.95 / 32768",
        {"serving.max_num_batched_tokens": 32768},
        "5.79 GiB of KV cache is needed, which is larger than the available KV cache memory (2.81",
    ),
    (
        "DFlash2 drafter on one card",
        {"model.drafter": {"repo": "incoai/Qwen3.8-27B-DFlash2", "revision": "a" * 40}},
        "the speculative drafter (2.37 GiB) does not fit next to the target on 1 GPU(s)",
    ),
]


def refusal(overrides: dict[str, Any], **kwargs: Any) -> tuple[str, ProgramRun]:
    """Run the program expecting a refusal; return the message and what got registered."""
    run = ProgramRun()
    with pytest.raises(pulumi.RunError) as raised:
        run_program("ctx180k", overrides, record=run, **kwargs)
    return str(raised.value), run


@pytest.mark.parametrize(
    ("overrides", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refused_before_any_resource(overrides: dict[str, Any], expected: str) -> None:
    message, run = refusal(overrides)
    assert expected in message, f"expected {expected!r} in:\n{message}"
    declared = [r.name for r in run.registrations if r.type != "pulumi:pulumi:Stack"]
    assert declared == [], f"resources declared before the refusal: {declared}"


def test_all_problems_are_reported_at_once() -> None:
    message, _ = refusal(
        {"serving.port": 0, "serving.gpu_memory_utilization": 2, "engine.version": "9"}
    )
    assert "stack configuration has 3 problems" in message
    for key in ("serving.port", "serving.gpu_memory_utilization", "engine.version"):
        assert key in message


def test_missing_host_address_names_the_fix() -> None:
    message, _ = refusal({}, with_host=False)
    assert "host.address: required, not set: pulumi config set --path host.address" in message


def test_missing_ssh_key_gives_the_exact_command() -> None:
    message, _ = refusal({}, with_ssh_key=False)
    assert (
        "ssh_private_key: required, not set: "
        "pulumi config set --secret ssh_private_key < ~/.ssh/id_ed25519"
    ) in message


def test_plain_text_ssh_key_is_refused() -> None:
    message, _ = refusal({"ssh_private_key": "plain"}, with_ssh_key=False)
    assert "ssh_private_key is stored in plain text" in message


def test_plain_text_api_key_is_refused() -> None:
    message, _ = refusal({"api_key": "sk-plain-in-the-stack-file"})
    assert "api_key is stored in plain text in the stack file" in message
    assert "sk-plain-in-the-stack-file" not in message, "the refusal must not echo the key"


def test_no_traceback_for_a_user_mistake() -> None:
    message, _ = refusal({"serving.port": 0})
    assert "Traceback" not in message
