"""The rules a deployable stack must pass, on the facts the server registers.

The program evaluates them before it declares any resource (mandatory ones refuse the
stack, advisory ones warn); the CrossGuard policy pack evaluates the very same functions
on the props a real `pulumi preview` hands it. One definition, two enforcement points.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from components.facts import ServerFacts
from components.planner.inputs import GIB, PlanInput
from components.planner.plan import Plan, make_plan
from components.planner.report import refusal_message
from components.render.server import TURBOMIND_SWITCH

# The field called 0.4 GiB of KV headroom unsafe: warn below half a GiB.
DEFAULT_WARN_HEADROOM_GIB = 0.5
SM70_DTYPES = ("half", "float16", "float", "float32")
SM70_KV_CACHE_DTYPES = ("auto", "float16", "fp8_e5m2")
SM70_ATTENTION_BACKEND = "FLASH_ATTN_V100"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
SECRET_NAME_MARKERS = ("API_KEY", "TOKEN", "SECRET", "PASSWORD")


@dataclass(frozen=True)
class Violation:
    policy: str
    message: str
    mandatory: bool


@dataclass(frozen=True)
class RuleSettings:
    """Knobs of the policy pack's config; the program uses the defaults."""

    min_headroom_gib: float = 0.0
    warn_headroom_gib: float = DEFAULT_WARN_HEADROOM_GIB
    gpu_memory_gib: float | None = None


def planned(facts: ServerFacts, settings: RuleSettings) -> tuple[PlanInput, Plan]:
    inp = facts.plan
    if settings.gpu_memory_gib is not None:
        inp = dataclasses.replace(inp, gpu_total_memory_gib=settings.gpu_memory_gib)
    return inp, _plan(inp)


@functools.lru_cache(maxsize=16)
def _plan(inp: PlanInput) -> Plan:
    """Several rules read the same plan: it is made once per input."""
    return make_plan(inp)


def kv_cache_budget(facts: ServerFacts, settings: RuleSettings) -> list[Violation]:
    _, plan = planned(facts, settings)
    short_bytes = plan.kv_needed_bytes + settings.min_headroom_gib * GIB - plan.available_kv_bytes
    if plan.fits and short_bytes <= 0:
        return []
    message = refusal_message(plan) if not plan.fits else ""
    if plan.fits:
        message = (
            f"the KV cache fits with {plan.headroom_bytes / GIB:.2f} GiB to spare, below the "
            f"required {settings.min_headroom_gib:.2f} GiB of headroom; lower "
            f"serving.max_model_len or serving.max_num_batched_tokens, or raise "
            f"serving.gpu_memory_utilization"
        )
    return [Violation("kv-cache-budget", message, mandatory=True)]


def kv_cache_headroom(facts: ServerFacts, settings: RuleSettings) -> list[Violation]:
    _, plan = planned(facts, settings)
    headroom_gib = plan.headroom_bytes / GIB
    if not plan.fits or headroom_gib >= settings.warn_headroom_gib:
        return []
    return [
        Violation(
            "kv-cache-headroom",
            f"the KV cache fits with only {headroom_gib:.2f} GiB to spare (below "
            f"{settings.warn_headroom_gib:.2f} GiB): a small change in activation memory or "
            "engine version can make the server refuse to start; lower serving.max_model_len "
            "or serving.max_num_batched_tokens to gain room",
            mandatory=False,
        )
    ]


def concurrency_below_max_num_seqs(facts: ServerFacts, settings: RuleSettings) -> list[Violation]:
    inp, plan = planned(facts, settings)
    if not plan.fits or plan.max_concurrency >= inp.max_num_seqs:
        return []
    return [
        Violation(
            "concurrency-below-max-num-seqs",
            f"serving.max_num_seqs is {inp.max_num_seqs}, but the KV pool holds only "
            f"{plan.max_concurrency:.2f} requests of {inp.max_model_len:,} tokens: the extra "
            f"sequences queue; set serving.max_num_seqs to {max(1, int(plan.max_concurrency))}",
            mandatory=False,
        )
    ]


def sm70_compatibility(facts: ServerFacts, settings: RuleSettings) -> list[Violation]:
    flags = parse_flags(facts.argv)
    problems = [
        *_dtype_problems(flags),
        *_kv_dtype_problems(flags),
        *_backend_problems(flags),
        *_eager_problems(facts, flags),
        *_turbomind_problems(facts),
        *_drafter_problems(facts, settings),
    ]
    return [Violation("sm70-compatibility", p, mandatory=True) for p in problems]


def api_key_secret(facts: ServerFacts, settings: RuleSettings) -> list[Violation]:
    flags = parse_flags(facts.argv)
    problems = []
    if "--api-key" in flags:
        problems.append(
            "the API key is on the server's command line (--api-key), visible to anyone "
            f"running ps: it belongs in {facts.api_key.env_file} ({facts.api_key.env_var})"
        )
    exposed = sorted(
        k for k in facts.environment if any(m in k.upper() for m in SECRET_NAME_MARKERS)
    )
    if exposed:
        problems.append(
            f"{', '.join(exposed)} is set in the container's plain environment (docker inspect "
            f"shows it): secrets reach the server only through {facts.api_key.env_file}"
        )
    if facts.api_key.source == "config" and not facts.api_key.stored_as_secret:
        problems.append(
            "api_key is stored in plain text in the stack file: "
            "pulumi config set --secret api_key <key>"
        )
    if facts.api_key.source == "none" and flags.get("--host") not in LOOPBACK_HOSTS:
        problems.append(
            f"the server listens on {flags.get('--host')!r} without an API key: set api_key "
            "(or leave it unset to have one generated), or set serving.host to 127.0.0.1"
        )
    return [Violation("api-key-secret", p, mandatory=True) for p in problems]


Rule = Callable[[ServerFacts, RuleSettings], list[Violation]]

RULES: dict[str, Rule] = {
    "kv-cache-budget": kv_cache_budget,
    "kv-cache-headroom": kv_cache_headroom,
    "concurrency-below-max-num-seqs": concurrency_below_max_num_seqs,
    "sm70-compatibility": sm70_compatibility,
    "api-key-secret": api_key_secret,
}


def evaluate(facts: ServerFacts, settings: RuleSettings | None = None) -> list[Violation]:
    chosen = settings or RuleSettings()
    return [violation for rule in RULES.values() for violation in rule(facts, chosen)]


def parse_flags(argv: Sequence[str]) -> dict[str, str]:
    """`--flag value`, `--flag=value` and bare `--flag` (value "") from an argv."""
    flags: dict[str, str] = {}
    for index, word in enumerate(argv):
        if not word.startswith("--"):
            continue
        name, sep, value = word.partition("=")
        if sep:
            flags[name] = value
            continue
        following = argv[index + 1] if index + 1 < len(argv) else ""
        flags[name] = "" if following.startswith("--") else following
    return flags


def _dtype_problems(flags: dict[str, str]) -> list[str]:
    dtype = flags.get("--dtype", "auto")
    if dtype in SM70_DTYPES:
        return []
    reason = (
        "'auto' takes the checkpoint's bfloat16" if dtype == "auto" else "V100 (SM70) has no bf16"
    )
    return [
        f"serving.dtype {dtype!r} cannot run on SM70: {reason}; allowed: {', '.join(SM70_DTYPES)}"
    ]


def _kv_dtype_problems(flags: dict[str, str]) -> list[str]:
    kv = flags.get("--kv-cache-dtype", "auto")
    if kv in SM70_KV_CACHE_DTYPES:
        return []
    return [
        f"serving.kv_cache_dtype {kv!r} is not usable on SM70 (no bf16; fp8_e4m3 is not the "
        f"V100 path): use fp8_e5m2 (8-bit, half the memory) or float16; allowed: "
        f"{', '.join(SM70_KV_CACHE_DTYPES)}"
    ]


def _backend_problems(flags: dict[str, str]) -> list[str]:
    backend = flags.get("--attention-backend")
    if backend == SM70_ATTENTION_BACKEND:
        return []
    return [
        f"serving.attention_backend {backend!r}: the stock FlashAttention backend does not "
        f"support SM70; allowed: {SM70_ATTENTION_BACKEND}"
    ]


def _eager_problems(facts: ServerFacts, flags: dict[str, str]) -> list[str]:
    if not facts.requires_eager or "--enforce-eager" in flags:
        return []
    return [
        f"serving.enforce_eager is false: CUDA graphs are unstable on V100 with 1Cat-vLLM "
        f"{facts.engine_version}; set serving.enforce_eager true"
    ]


def _turbomind_problems(facts: ServerFacts) -> list[str]:
    switch = TURBOMIND_SWITCH.get(facts.checkpoint_format)
    if switch is None or facts.environment.get(switch) == "1":
        return []
    return [
        f"the {facts.checkpoint_format} checkpoint is compressed-tensors, which SM70 serves only "
        f"through TurboMind: {switch}=1 is missing (otherwise 'Quantization scheme is not "
        "supported ... Min capability: 75')"
    ]


def _drafter_problems(facts: ServerFacts, settings: RuleSettings) -> list[str]:
    inp, plan = planned(facts, settings)
    if inp.drafter_weights_gib <= 0 or plan.fits:
        return []
    return [
        f"the speculative drafter ({inp.drafter_weights_gib:.2f} GiB) does not fit next to the "
        f"target on {inp.gpu_count} GPU(s) with these settings: drop model.drafter, or add a "
        "second V100 (serving.tensor_parallel_size 2), or use a quantized drafter"
    ]
