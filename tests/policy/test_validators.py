"""Each policy called directly, with ResourceValidationArgs built from a stack's facts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pulumi_policy import ResourceValidationArgs, ResourceValidationPolicy
from pulumi_policy.policy import PolicyCustomTimeouts, PolicyResourceOptions

from components.config.load import load_stack
from components.facts import ApiKeyFacts, ServerFacts, server_facts
from policy.validators import POLICIES, SERVER_TYPE

GENERATED = ApiKeyFacts(source="generated", stored_as_secret=True)


def facts(stack: str = "ctx180k", *overrides: str) -> ServerFacts:
    return server_facts(load_stack(stack, overrides), GENERATED)


def args(
    subject: ServerFacts | dict[str, Any],
    config: dict[str, Any] | None = None,
    resource_type: str = SERVER_TYPE,
) -> ResourceValidationArgs:
    props = subject.to_props() if isinstance(subject, ServerFacts) else subject
    options = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    return ResourceValidationArgs(
        resource_type, props, "urn:pulumi:s::qwen38::t::n", "n", options, None, config
    )


def violations(name: str, validation_args: ResourceValidationArgs) -> list[str]:
    policy = next(p for p in POLICIES if p.name == name)
    assert isinstance(policy, ResourceValidationPolicy)
    found: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        found.append(message)

    policy.validate(validation_args, report)
    return found


def test_every_policy_is_named_and_described() -> None:
    assert [p.name for p in POLICIES] == [
        "kv-cache-budget",
        "kv-cache-headroom",
        "concurrency-below-max-num-seqs",
        "sm70-compatibility",
        "api-key-secret",
    ]
    for policy in POLICIES:
        assert policy.description and policy.description.endswith("."), policy.name


@pytest.mark.parametrize("name", [p.name for p in POLICIES])
def test_other_resource_types_are_ignored(name: str) -> None:
    bad = facts("ctx180k", "serving.max_model_len=262144").to_props()
    assert violations(name, args(bad, resource_type="docker:index/container:Container")) == []


def test_kv_cache_budget_passes_ctx180k_and_refuses_262144() -> None:
    assert violations("kv-cache-budget", args(facts("ctx180k"))) == []
    found = violations("kv-cache-budget", args(facts("ctx180k", "serving.max_model_len=262144")))
    assert len(found) == 1
    assert "8.33 GiB of KV cache is needed" in found[0] and "(7.71 GiB" in found[0]
    assert "serving.gpu_memory_utilization=0.98" in found[0], "names a setting that fits"


def test_kv_cache_budget_at_the_boundary() -> None:
    """243,040 fits at 0.95/8192 (the planner's largest length); one block more does not."""
    assert (
        violations("kv-cache-budget", args(facts("ctx180k", "serving.max_model_len=243040"))) == []
    )
    assert violations("kv-cache-budget", args(facts("ctx180k", "serving.max_model_len=243041")))


def test_kv_cache_budget_respects_a_pinned_kv_size() -> None:
    pinned = facts(
        "ctx180k", "serving.max_model_len=262144", "serving.kv_cache_memory_bytes=9000000000"
    )
    assert violations("kv-cache-budget", args(pinned)) == []


def test_kv_cache_budget_with_config() -> None:
    assert violations("kv-cache-budget", args(facts("ctx256k"), {"minHeadroomGib": 0.5}))
    assert violations("kv-cache-budget", args(facts("ctx180k"), {"gpuMemoryGib": 29.0}))
    assert not violations("kv-cache-budget", args(facts("ctx180k"), {"minHeadroomGib": 1.0}))


def test_kv_cache_headroom_is_advisory_below_the_threshold() -> None:
    assert violations("kv-cache-headroom", args(facts("ctx180k"))) == []
    found = violations("kv-cache-headroom", args(facts("ctx256k")))
    assert len(found) == 1 and "0.34 GiB to spare" in found[0]
    assert violations("kv-cache-headroom", args(facts("ctx256k"), {"warnHeadroomGib": 0.3})) == []


def test_concurrency_below_max_num_seqs() -> None:
    assert violations("concurrency-below-max-num-seqs", args(facts("ctx180k"))) == []
    found = violations(
        "concurrency-below-max-num-seqs", args(facts("ctx180k", "serving.max_num_seqs=4"))
    )
    assert len(found) == 1 and "holds only 1.33 requests of 180,000 tokens" in found[0]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (("serving.dtype=bfloat16",), "serving.dtype 'bfloat16' cannot run on SM70"),
        (("serving.dtype=auto",), "'auto' takes the checkpoint's bfloat16"),
        (("serving.kv_cache_dtype=fp8_e4m3",), "serving.kv_cache_dtype 'fp8_e4m3'"),
        (("serving.kv_cache_dtype=fp8",), "serving.kv_cache_dtype 'fp8'"),
        (("serving.attention_backend=TRITON_ATTN",), "serving.attention_backend 'TRITON_ATTN'"),
        (("serving.enforce_eager=false",), "CUDA graphs are unstable on V100"),
        (
            (
                'model.drafter={"repo": "incoai/Qwen3.8-27B-DFlash2", "revision": "'
                + "b" * 40
                + '"}',
            ),
            "the speculative drafter (2.37 GiB) does not fit",
        ),
    ],
)
def test_sm70_compatibility_refusals(overrides: tuple[str, ...], expected: str) -> None:
    found = violations("sm70-compatibility", args(facts("ctx180k", *overrides)))
    assert len(found) == 1 and expected in found[0], found


def test_sm70_compatibility_passes_the_profiles() -> None:
    for stack in ("dev", "ctx180k", "ctx256k"):
        assert violations("sm70-compatibility", args(facts(stack))) == [], stack


def test_sm70_compatibility_needs_the_turbomind_switch() -> None:
    subject = facts("ctx180k")
    environment = {k: v for k, v in subject.environment.items() if "TURBOMIND" not in k}
    found = violations("sm70-compatibility", args(replace(subject, environment=environment)))
    assert len(found) == 1 and "VLLM_SM70_COMPRESSED_TENSORS_TURBOMIND=1 is missing" in found[0]


def test_sm70_compatibility_reads_the_argv_that_runs() -> None:
    subject = facts("ctx180k")
    argv = [a for a in subject.argv if a != "--enforce-eager"]
    found = violations("sm70-compatibility", args(replace(subject, argv=argv)))
    assert len(found) == 1 and "CUDA graphs" in found[0]


def test_api_key_secret() -> None:
    subject = facts("ctx180k")
    assert violations("api-key-secret", args(subject)) == []
    in_argv = replace(subject, argv=[*subject.argv, "--api-key=sk-123"])
    assert "visible to anyone running ps" in violations("api-key-secret", args(in_argv))[0]
    in_env = replace(subject, environment={**subject.environment, "VLLM_API_KEY": "sk-123"})
    assert "plain environment" in violations("api-key-secret", args(in_env))[0]
    plain = replace(subject, api_key=ApiKeyFacts(source="config", stored_as_secret=False))
    assert "stored in plain text" in violations("api-key-secret", args(plain))[0]
    open_server = replace(subject, api_key=ApiKeyFacts(source="none", stored_as_secret=True))
    assert "without an API key" in violations("api-key-secret", args(open_server))[0]
    loopback = facts("ctx180k", "serving.host=127.0.0.1")
    keyless_local = replace(loopback, api_key=ApiKeyFacts(source="none", stored_as_secret=True))
    assert violations("api-key-secret", args(keyless_local)) == []
    for found in (
        violations("api-key-secret", args(in_argv)),
        violations("api-key-secret", args(in_env)),
    ):
        assert "sk-123" not in found[0], "a refusal must not repeat the key"
