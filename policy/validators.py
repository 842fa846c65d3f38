"""The pack's policies: thin adapters from CrossGuard to the rules in components.rules.

Each validator reads the facts the VllmServer component registers as its props (the
plan input, argv, environment, key handling) and runs the same rule function the program
runs before it declares anything. This module builds no PolicyPack (that would start a
server), so tests can import it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from components import rules
from components.facts import ServerFacts

SERVER_TYPE = "qwen38:server:VllmServer"
PACK_NAME = "qwen38-policies"

GPU_MEMORY_GIB = {
    "type": "number",
    "exclusiveMinimum": 0,
    "description": "Memory per GPU in GiB as PyTorch reports it; overrides what the stack says "
    "(31.74 for a V100-SXM2-32GB).",
}
MIN_HEADROOM_GIB = {
    "type": "number",
    "minimum": 0,
    "default": 0,
    "description": "KV memory that must stay free beyond one request of max_model_len, in GiB.",
}
WARN_HEADROOM_GIB = {
    "type": "number",
    "minimum": 0,
    "default": rules.DEFAULT_WARN_HEADROOM_GIB,
    "description": "Warn when less KV memory than this stays free, in GiB.",
}


def settings_from(config: Mapping[str, Any] | None) -> rules.RuleSettings:
    config = config or {}
    gpu = config.get("gpuMemoryGib")
    return rules.RuleSettings(
        min_headroom_gib=float(config.get("minHeadroomGib", 0.0)),
        warn_headroom_gib=float(config.get("warnHeadroomGib", rules.DEFAULT_WARN_HEADROOM_GIB)),
        gpu_memory_gib=None if gpu is None else float(gpu),
    )


def plain(value: Any) -> Any:
    """CrossGuard hands props over behind read-only proxies; the rules want plain data."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    return value


def validator_for(rule: str) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.resource_type != SERVER_TYPE:
            return
        facts = ServerFacts.from_props(plain(args.props))
        for violation in rules.RULES[rule](facts, settings_from(args.get_config())):
            report_violation(violation.message, None)

    validate.__name__ = f"{rule.replace('-', '_')}_validator"
    return validate


def policy(
    rule: str, description: str, level: EnforcementLevel, schema: dict[str, Any]
) -> ResourceValidationPolicy:
    return ResourceValidationPolicy(
        name=rule,
        description=description,
        validate=validator_for(rule),
        enforcement_level=level,
        config_schema=PolicyConfigSchema(properties=schema) if schema else None,
    )


MANDATORY, ADVISORY = EnforcementLevel.MANDATORY, EnforcementLevel.ADVISORY

POLICIES: list[Policy] = [
    policy(
        "kv-cache-budget",
        "Refuses a stack whose KV cache for one request of max_model_len exceeds the memory "
        "vLLM will have for it.",
        MANDATORY,
        {"minHeadroomGib": MIN_HEADROOM_GIB, "gpuMemoryGib": GPU_MEMORY_GIB},
    ),
    policy(
        "kv-cache-headroom",
        "Warns when the KV cache fits with less headroom than configured.",
        ADVISORY,
        {"warnHeadroomGib": WARN_HEADROOM_GIB, "gpuMemoryGib": GPU_MEMORY_GIB},
    ),
    policy(
        "concurrency-below-max-num-seqs",
        "Warns when max_num_seqs exceeds the requests of full length the KV pool can hold.",
        ADVISORY,
        {"gpuMemoryGib": GPU_MEMORY_GIB},
    ),
    policy(
        "sm70-compatibility",
        "Refuses settings a V100 (SM70) cannot run: bf16, fp8_e4m3 KV, a non-V100 attention "
        "backend, compressed-tensors without TurboMind, CUDA graphs, an oversized drafter.",
        MANDATORY,
        {"gpuMemoryGib": GPU_MEMORY_GIB},
    ),
    policy(
        "api-key-secret",
        "Refuses an API key outside Pulumi secrets or on a command line, and an open server "
        "without a key.",
        MANDATORY,
        {},
    ),
]
