"""Does it fit, and what would: the budget and the capacity rules put together.

`make_plan` answers for one PlanInput what vLLM will decide at start-up (refuse, or the KV
cache size it logs) and, when it refuses, which settings would make the requested length
fit. `fit_grid` tabulates the largest fitting length over utilization x batched tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from components.planner.budget import MemoryBudget, memory_budget
from components.planner.capacity import KV_CACHE_DTYPE_BYTES, KVLayout, layout_for
from components.planner.inputs import GIB, PlanInput

# The highest utilization and the fewest batched tokens the field ran with; suggestions
# stay inside what has been seen to work.
MAX_SUGGESTED_UTILIZATION = 0.98
MIN_SUGGESTED_BATCHED_TOKENS = 2048
# Knob suggestions keep this much KV memory spare beyond vLLM's strict need: the field
# rows pin the profile overhead to a few MiB, but not its drift between runs and drivers.
SUGGESTION_MARGIN_BYTES = GIB // 4
SUGGESTED_KV_CACHE_DTYPE = "fp8_e5m2"  # the 8-bit KV the field runs on SM70

DEFAULT_GRID_UTILIZATIONS = (0.85, 0.90, 0.92, 0.95, 0.97, 0.98)
DEFAULT_GRID_BATCHED_TOKENS = (2048, 4096, 8192, 16384, 32768)


@dataclass(frozen=True)
class Suggestion:
    """Stack settings that would make the requested max_model_len fit."""

    changes: tuple[tuple[str, Any], ...]  # (dotted stack key, value), as for --set
    available_kv_bytes: int
    kv_needed_bytes: int

    @property
    def headroom_bytes(self) -> int:
        return self.available_kv_bytes - self.kv_needed_bytes

    @property
    def set_flags(self) -> str:
        return " ".join(f"--set {key}={as_set_value(value)}" for key, value in self.changes)


def as_set_value(value: Any) -> str:
    """A value as `--set` reads it (a YAML scalar)."""
    return "null" if value is None else str(value)


@dataclass(frozen=True)
class Plan:
    max_model_len: int
    fits: bool
    block_size_tokens: int
    num_blocks: int
    blocks_per_request: int
    kv_capacity_tokens: int  # vLLM's "GPU KV cache size"
    max_model_len_fit: int  # largest length that fits, up to the model's native context
    max_concurrency: float
    kv_needed_bytes: int
    budget: MemoryBudget
    suggestions: tuple[Suggestion, ...] = ()

    @property
    def available_kv_bytes(self) -> int:
        return self.budget.available_kv_bytes

    @property
    def weights_bytes(self) -> int:
        return self.budget.weights_bytes

    @property
    def activation_bytes(self) -> int:
        return self.budget.activation_bytes

    @property
    def headroom_bytes(self) -> int:
        return self.available_kv_bytes - self.kv_needed_bytes

    @property
    def estimated(self) -> bool:
        return self.budget.estimated

    @property
    def overcommit_bytes(self) -> int:
        """With a pinned KV size vLLM does not check the GPU: how far past it this goes."""
        if not self.budget.pinned:
            return 0
        return max(0, self.available_kv_bytes - self.budget.profiled_kv_bytes)


def search_upper_tokens(inp: PlanInput) -> int:
    return max(inp.max_model_len, inp.architecture.max_position_embeddings)


def evaluate(inp: PlanInput) -> Plan:
    """The verdict for exactly these inputs, without suggestions."""
    layout = layout_for(inp)
    budget = memory_budget(inp)
    return plan_from(layout, budget, inp.max_model_len, search_upper_tokens(inp))


def plan_from(
    layout: KVLayout, budget: MemoryBudget, max_model_len: int, upper_tokens: int
) -> Plan:
    available = budget.available_kv_bytes
    return Plan(
        max_model_len=max_model_len,
        fits=layout.fits(available, max_model_len),
        block_size_tokens=layout.block_size_tokens,
        num_blocks=layout.num_blocks(available),
        blocks_per_request=layout.blocks_per_request(max_model_len),
        kv_capacity_tokens=layout.kv_capacity_tokens(available, max_model_len),
        max_model_len_fit=layout.estimate_max_model_len(available, upper_tokens),
        max_concurrency=layout.max_concurrency(available, max_model_len),
        kv_needed_bytes=layout.kv_needed_bytes(max_model_len),
        budget=budget,
    )


def make_plan(inp: PlanInput) -> Plan:
    plan = evaluate(inp)
    if plan.fits:
        return plan
    return replace(plan, suggestions=suggest(inp, plan))


def suggest(inp: PlanInput, plan: Plan) -> tuple[Suggestion, ...]:
    """Each way found to make the requested length fit, most targeted first; the last
    one keeps the settings and shortens the context instead."""
    found: list[Suggestion | None] = []
    if inp.kv_cache_memory_bytes is not None:
        found.append(_pinned_size(inp, plan))  # the budget knobs do not move a pinned size
    else:
        found += _budget_knobs(inp)
        found.append(_first_fitting(_without_drafter(inp)))
    found.append(_first_fitting(_fp8_kv(inp)))
    suggestions = [s for s in found if s is not None]
    if plan.max_model_len_fit > 0:
        shorter = replace(inp, max_model_len=plan.max_model_len_fit)
        suggestions.append(_suggestion(shorter, (_key("max_model_len", plan.max_model_len_fit),)))
    return tuple(suggestions)


def _suggestion(inp: PlanInput, changes: tuple[tuple[str, Any], ...]) -> Suggestion:
    verdict = evaluate(inp)
    return Suggestion(changes, verdict.available_kv_bytes, verdict.kv_needed_bytes)


Candidate = tuple[PlanInput, tuple[tuple[str, Any], ...]]


def _first_fitting(candidates: list[Candidate]) -> Suggestion | None:
    """The first candidate that fits with the margin to spare."""
    for candidate, changes in candidates:
        suggestion = _suggestion(candidate, changes)
        if suggestion.headroom_bytes >= SUGGESTION_MARGIN_BYTES:
            return suggestion
    return None


def _budget_knobs(inp: PlanInput) -> list[Suggestion | None]:
    """Raise utilization alone; else lower batched tokens alone; else both."""
    by_utilization = _first_fitting(_utilizations(inp))
    by_tokens = _first_fitting(_batched_tokens(inp))
    if by_utilization or by_tokens:
        return [by_utilization, by_tokens]
    both = [
        (replace(raised, max_num_batched_tokens=lowered.max_num_batched_tokens), (*up, *down))
        for lowered, down in _batched_tokens(inp)
        for raised, up in _utilizations(inp)
    ]
    return [_first_fitting(sorted(both, key=_least_disruptive))]


def _least_disruptive(candidate: Candidate) -> tuple[float, int]:
    # Prefer the lowest utilization, then the most batched tokens (faster prefill).
    inp = candidate[0]
    return inp.gpu_memory_utilization, -inp.max_num_batched_tokens


def _utilizations(inp: PlanInput) -> list[Candidate]:
    start = math.floor(round(inp.gpu_memory_utilization * 100, 6)) + 1  # next whole percent
    stop = round(MAX_SUGGESTED_UTILIZATION * 100)
    return [
        (
            replace(inp, gpu_memory_utilization=percent / 100),
            (_key("gpu_memory_utilization", percent / 100),),
        )
        for percent in range(start, stop + 1)
    ]


def _batched_tokens(inp: PlanInput) -> list[Candidate]:
    """Halvings of the current count, ending at the field's smallest."""
    counts: list[int] = []
    tokens = inp.max_num_batched_tokens
    while tokens > MIN_SUGGESTED_BATCHED_TOKENS:
        tokens = max(tokens // 2, MIN_SUGGESTED_BATCHED_TOKENS)
        counts.append(tokens)
    return [
        (replace(inp, max_num_batched_tokens=count), (_key("max_num_batched_tokens", count),))
        for count in counts
    ]


def _fp8_kv(inp: PlanInput) -> list[Candidate]:
    if KV_CACHE_DTYPE_BYTES.get(inp.kv_cache_dtype) == 1:
        return []
    changed = replace(inp, kv_cache_dtype=SUGGESTED_KV_CACHE_DTYPE)
    return [(changed, (_key("kv_cache_dtype", SUGGESTED_KV_CACHE_DTYPE),))]


def _without_drafter(inp: PlanInput) -> list[Candidate]:
    if not inp.drafter_weights_gib:
        return []
    return [(replace(inp, drafter_weights_gib=0.0), (("model.drafter", None),))]


def _pinned_size(inp: PlanInput, plan: Plan) -> Suggestion:
    """The smallest pinned KV size that fits: exactly what one request needs."""
    changed = replace(inp, kv_cache_memory_bytes=plan.kv_needed_bytes)
    return _suggestion(changed, (_key("kv_cache_memory_bytes", plan.kv_needed_bytes),))


def _key(name: str, value: Any) -> tuple[str, Any]:
    return f"serving.{name}", value


@dataclass(frozen=True)
class FitGrid:
    """Largest fitting max_model_len per (utilization, batched tokens)."""

    utilizations: tuple[float, ...]
    batched_tokens: tuple[int, ...]
    max_model_len_fit: tuple[tuple[int, ...], ...]  # [utilization][batched tokens]
    estimated: bool


def fit_grid(
    inp: PlanInput,
    utilizations: tuple[float, ...] = DEFAULT_GRID_UTILIZATIONS,
    batched_tokens: tuple[int, ...] = DEFAULT_GRID_BATCHED_TOKENS,
) -> FitGrid:
    layout = layout_for(inp)
    upper = search_upper_tokens(inp)
    rows: list[tuple[int, ...]] = []
    estimated = False
    for utilization in utilizations:
        row = []
        for tokens in batched_tokens:
            point = replace(inp, gpu_memory_utilization=utilization, max_num_batched_tokens=tokens)
            budget = memory_budget(point)
            estimated = estimated or budget.estimated
            row.append(layout.estimate_max_model_len(budget.available_kv_bytes, upper))
        rows.append(tuple(row))
    return FitGrid(utilizations, batched_tokens, tuple(rows), estimated)
