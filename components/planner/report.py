"""A Plan as people and programs read it: the refusal message, the text report, the JSON.

The refusal message is the one paragraph the policy pack, the Pulumi program and the
command line all print when a configuration does not fit.
"""

from __future__ import annotations

from typing import Any

from components.planner.inputs import GIB
from components.planner.plan import FitGrid, Plan, Suggestion, as_set_value

BAR_WIDTH = 60
BAR_LEGEND = "W weights  A activation  K KV needed  . spare KV  ! KV missing  - not requested"


def format_gib(size_bytes: int) -> str:
    """GiB as vLLM prints them (mem_utils.format_gib): rounded to two decimals."""
    return f"{round(size_bytes / GIB, 2)}"


def gib(size_bytes: int) -> float:
    return round(size_bytes / GIB, 2)


def refusal_message(plan: Plan) -> str:
    """vLLM's refusal, made useful: needed vs available, the largest length that fits,
    and concrete settings that would fit the requested one."""
    if plan.fits:
        raise ValueError("the plan fits: there is no refusal to explain")
    length = plan.max_model_len
    parts = [
        f"To serve one request of max_model_len {length}, {format_gib(plan.kv_needed_bytes)} "
        f"GiB of KV cache is needed, which is larger than the available KV cache memory "
        f"({format_gib(plan.available_kv_bytes)} GiB {_budget_source(plan)}).",
    ]
    if plan.max_model_len_fit > 0:
        parts.append(f"The largest max_model_len that fits is {plan.max_model_len_fit}.")
    else:
        parts.append("Not even one token fits.")
    if plan.suggestions:
        options = "; or ".join(_suggestion_phrase(s) for s in plan.suggestions)
        parts.append(f"Settings that would fit {length}: {options}.")
    if plan.estimated:
        parts.append(_estimate_note(plan))
    return " ".join(parts)


def _budget_source(plan: Plan) -> str:
    budget = plan.budget
    if budget.pinned:
        return "pinned by serving.kv_cache_memory_bytes"
    return (
        f"at gpu_memory_utilization {budget.gpu_memory_utilization} and "
        f"max_num_batched_tokens {budget.max_num_batched_tokens}"
    )


def _suggestion_phrase(suggestion: Suggestion) -> str:
    settings = " with ".join(f"{key}={as_set_value(value)}" for key, value in suggestion.changes)
    if suggestion.changes[0][0] == "serving.max_model_len":
        return settings
    return f"{settings} ({format_gib(suggestion.available_kv_bytes)} GiB available)"


def _estimate_note(plan: Plan) -> str:
    reasons = ", ".join(plan.budget.estimate_reasons)
    return (
        "The memory budget is an estimate: the field calibration does not cover "
        f"{reasons}; the capacity rules themselves are exact."
    )


def render_text(plan: Plan, title: str = "") -> str:
    verdict = "fits" if plan.fits else "does NOT fit"
    estimated = " (estimated)" if plan.estimated else ""
    heading = f"max_model_len {plan.max_model_len:,} {verdict}{estimated}"
    lines = [f"{title}: {heading}" if title else heading, ""]
    lines += [*_budget_lines(plan), "", *_capacity_lines(plan), ""]
    if plan.fits:
        lines.append(
            f"vLLM will start and log: GPU KV cache size: {plan.kv_capacity_tokens:,} tokens"
        )
    else:
        lines.append(refusal_message(plan))
        if plan.suggestions:
            lines += ["", "To apply one of them:"]
            lines += [f"  {suggestion.set_flags}" for suggestion in plan.suggestions]
    if plan.estimated and plan.fits:  # a refusal message carries the note itself
        lines += ["", f"ESTIMATED: {_estimate_note(plan)}"]
    if plan.overcommit_bytes:
        lines += [
            "",
            f"WARNING: the pinned KV cache exceeds what profiling would leave by "
            f"{plan.overcommit_bytes / GIB:.2f} GiB: vLLM will not refuse, but may run out of "
            "memory.",
        ]
    return "\n".join(lines) + "\n"


def _budget_lines(plan: Plan) -> list[str]:
    budget = plan.budget
    kv_note = "pinned (serving.kv_cache_memory_bytes)" if budget.pinned else "available"
    rows = [
        (
            "requested",
            budget.requested_bytes,
            f"gpu_memory_utilization {budget.gpu_memory_utilization}",
        ),
        ("weights", budget.weights_bytes, "loaded model"),
        (
            "activation",
            budget.activation_bytes,
            f"profiling peak + non-torch, {budget.max_num_batched_tokens:,} batched tokens",
        ),
        ("KV cache", plan.available_kv_bytes, kv_note),
        ("  needed", plan.kv_needed_bytes, f"one request of {plan.max_model_len:,} tokens"),
        ("  headroom", plan.headroom_bytes, ""),
    ]
    if budget.drafter_bytes:
        rows.insert(2, ("drafter", budget.drafter_bytes, "speculative drafter weights"))
    lines = [f"Memory per GPU ({budget.total_bytes / GIB:.2f} GiB)"]
    lines += [f"  {name:<11}{size / GIB:>7.2f} GiB   {note}".rstrip() for name, size, note in rows]
    lines += [f"  [{memory_bar(plan)}]", f"   {BAR_LEGEND}"]
    return lines


def _capacity_lines(plan: Plan) -> list[str]:
    if plan.fits:
        size = (
            f"{plan.kv_capacity_tokens:,} tokens (max concurrency "
            f"{plan.max_concurrency:.2f}x at {plan.max_model_len:,} tokens)"
        )
    else:
        size = "none: vLLM refuses to start"
    return [
        "KV cache",
        f"  block size        {plan.block_size_tokens:,} tokens; {plan.num_blocks:,} blocks, "
        f"{plan.blocks_per_request:,} per request",
        f"  GPU KV cache size {size}",
        f"  largest context   {plan.max_model_len_fit:,} tokens fit at these settings",
    ]


def memory_bar(plan: Plan, width: int = BAR_WIDTH) -> str:
    """The GPU drawn to scale: weights, activation, KV needed, then spare or missing KV."""
    budget = plan.budget
    used = budget.weights_bytes + budget.drafter_bytes + budget.activation_bytes
    available = max(0, plan.available_kv_bytes)
    segments = [
        ("W", budget.weights_bytes + budget.drafter_bytes),
        ("A", budget.activation_bytes),
        ("K", min(plan.kv_needed_bytes, available)),
        (".", max(0, available - plan.kv_needed_bytes)),
        ("!", max(0, plan.kv_needed_bytes - available)),
    ]
    segments.append(("-", max(0, budget.total_bytes - used - max(available, plan.kv_needed_bytes))))
    bar, end_bytes = "", 0
    for char, size in segments:
        end_bytes += size
        end = min(width, round(end_bytes / budget.total_bytes * width))
        bar += char * (end - len(bar))
    return bar.ljust(width, "-")[:width]


def render_grid(grid: FitGrid, current: tuple[float, int] | None = None) -> str:
    """Largest fitting max_model_len per utilization (rows) x batched tokens (columns)."""
    header = "utilization" + "".join(f"{tokens:>10,}" for tokens in grid.batched_tokens)
    lines = [
        "Largest max_model_len that fits, by gpu_memory_utilization (rows) and "
        "max_num_batched_tokens (columns); * marks the current settings",
        header,
    ]
    for utilization, row in zip(grid.utilizations, grid.max_model_len_fit, strict=True):
        cells = ""
        for tokens, fit in zip(grid.batched_tokens, row, strict=True):
            mark = "*" if current == (utilization, tokens) else " "
            cells += f"{fit:>9,}{mark}" if fit else f"{'-':>9}{mark}"
        lines.append(f"{utilization:<11.2f}{cells}")
    if grid.estimated:
        lines.append("(estimated: outside the field calibration)")
    return "\n".join(lines) + "\n"


def plan_to_json(plan: Plan, grid: FitGrid | None = None) -> dict[str, Any]:
    budget = plan.budget
    document: dict[str, Any] = {
        "fits": plan.fits,
        "max_model_len": plan.max_model_len,
        "block_size_tokens": plan.block_size_tokens,
        "num_blocks": plan.num_blocks,
        "blocks_per_request": plan.blocks_per_request,
        "kv_capacity_tokens": plan.kv_capacity_tokens,
        "max_model_len_fit": plan.max_model_len_fit,
        "max_concurrency": round(plan.max_concurrency, 4),
        "kv_needed_bytes": plan.kv_needed_bytes,
        "available_kv_bytes": plan.available_kv_bytes,
        "kv_needed_gib": gib(plan.kv_needed_bytes),
        "available_kv_gib": gib(plan.available_kv_bytes),
        "headroom_gib": gib(plan.headroom_bytes),
        "total_gib": gib(budget.total_bytes),
        "requested_gib": gib(budget.requested_bytes),
        "weights_gib": gib(budget.weights_bytes),
        "drafter_weights_gib": gib(budget.drafter_bytes),
        "activation_gib": gib(budget.activation_bytes),
        "kv_cache_memory_pinned": budget.pinned,
        "estimated": plan.estimated,
        "estimate_reasons": list(budget.estimate_reasons) if plan.estimated else [],
        "suggestions": [_suggestion_json(s) for s in plan.suggestions],
        "message": None if plan.fits else refusal_message(plan),
    }
    if grid is not None:
        document["grid"] = {
            "utilizations": list(grid.utilizations),
            "batched_tokens": list(grid.batched_tokens),
            "max_model_len_fit": [list(row) for row in grid.max_model_len_fit],
        }
    return document


def _suggestion_json(suggestion: Suggestion) -> dict[str, Any]:
    return {
        "set": dict(suggestion.changes),
        "available_kv_gib": gib(suggestion.available_kv_bytes),
        "headroom_gib": gib(suggestion.headroom_bytes),
    }
