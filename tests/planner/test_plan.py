"""Planning the stack files end to end, the refusal, the suggestions, the grid, the report."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from components.config.load import load_stack
from components.facts import plan_input
from components.planner.inputs import PlanInput
from components.planner.plan import (
    SUGGESTION_MARGIN_BYTES,
    evaluate,
    fit_grid,
    make_plan,
)
from components.planner.report import (
    BAR_WIDTH,
    memory_bar,
    plan_to_json,
    refusal_message,
    render_grid,
    render_text,
)
from tests.planner.conftest import FIELD_BLOCK_BYTES


def stack_plan(stack: str, *overrides: str):
    return make_plan(plan_input(load_stack(stack, overrides)))


@pytest.mark.parametrize(("stack", "expected_tokens"), [("ctx180k", 239_504), ("ctx256k", 272_690)])
def test_stack_files_reproduce_the_logged_kv_cache_size(stack, expected_tokens):
    plan = stack_plan(stack)
    assert plan.fits, f"{stack} started in the field"
    assert plan.kv_capacity_tokens == expected_tokens, (
        f"{stack}: expected {expected_tokens} tokens, got {plan.kv_capacity_tokens}"
    )
    assert not plan.estimated, f"{stack} is the calibrated setup: {plan.budget.estimate_reasons}"
    assert plan.suggestions == (), "a plan that fits needs no suggestions"


def test_262144_at_0_90_is_refused_like_vllm_refused_it():
    plan = stack_plan("dev", "serving.max_model_len=262144")
    assert not plan.fits, "vLLM refused 262,144 at 0.90 / 8192"
    assert plan.max_model_len_fit == 189_728, f"expected 189,728, got {plan.max_model_len_fit}"
    message = refusal_message(plan)
    for fragment in ("8.33 GiB of KV cache is needed", "(6.12 GiB at", "is 189728."):
        assert fragment in message, f"expected {fragment!r} in: {message}"
    last = plan.suggestions[-1]
    assert last.changes == (("serving.max_model_len", 189_728),), f"got {last.changes}"


def test_each_suggested_setting_fits_when_planned_again(make_input):
    inp = make_input(gpu_memory_utilization=0.90, max_model_len=262_144)
    plan = make_plan(inp)
    assert len(plan.suggestions) >= 2, f"expected a knob and a length, got {plan.suggestions}"
    for suggestion in plan.suggestions:
        changed = apply(inp, suggestion.changes)
        assert evaluate(changed).fits, f"{suggestion.set_flags} must fit"
    knobs = [s for s in plan.suggestions if s.changes[0][0] != "serving.max_model_len"]
    assert all(s.headroom_bytes >= SUGGESTION_MARGIN_BYTES for s in knobs), "knobs keep a margin"
    assert "serving.gpu_memory_utilization=0.98" in refusal_message(plan)


def test_lowering_batched_tokens_is_suggested_when_it_is_enough(make_input):
    plan = make_plan(make_input(max_num_batched_tokens=32768))
    flags = [s.set_flags for s in plan.suggestions]
    assert "--set serving.max_num_batched_tokens=16384" in flags, f"got {flags}"


def test_both_knobs_together_when_neither_alone_is_enough(make_input):
    inp = make_input(
        gpu_memory_utilization=0.90, max_num_batched_tokens=32768, max_model_len=262_144
    )
    plan = make_plan(inp)
    # 0.98 at 32768 holds 112,896 tokens and 0.90 at 2048 holds 191,296: only both together.
    assert plan.suggestions[0].changes == (
        ("serving.gpu_memory_utilization", 0.98),
        ("serving.max_num_batched_tokens", 8192),
    ), f"got {plan.suggestions[0].changes}"


def test_fp16_kv_is_told_to_use_fp8(make_input):
    plan = make_plan(make_input(kv_cache_dtype="auto"))
    assert not plan.fits, "180,000 tokens of 16-bit KV do not fit at 0.95"
    flags = [s.set_flags for s in plan.suggestions]
    assert "--set serving.kv_cache_dtype=fp8_e5m2" in flags, f"got {flags}"


def test_the_dflash2_drafter_does_not_fit_the_180k_profile(make_input):
    plan = make_plan(make_input(drafter_weights_gib=2.37))
    assert not plan.fits, "the field found that DFlash2 does not fit on one V100 at 180K"
    assert plan.estimated, "a drafter is outside the calibration"
    message = refusal_message(plan)
    assert "model.drafter=null" in message, f"expected dropping the drafter in: {message}"
    assert "estimate" in message, "the message must say the budget is estimated"


def test_pinned_kv_memory_is_planned_exactly(make_input):
    pinned = make_plan(make_input(kv_cache_memory_bytes=161 * FIELD_BLOCK_BYTES))
    assert pinned.kv_capacity_tokens == 239_504, f"got {pinned.kv_capacity_tokens}"
    small = make_plan(make_input(kv_cache_memory_bytes=100 * FIELD_BLOCK_BYTES))
    assert small.suggestions[0].changes == (
        ("serving.kv_cache_memory_bytes", 121 * FIELD_BLOCK_BYTES),
    ), f"expected the exact need, got {small.suggestions[0].changes}"


def test_pinning_more_than_the_gpu_holds_warns(make_input):
    plan = make_plan(make_input(kv_cache_memory_bytes=300 * FIELD_BLOCK_BYTES))
    assert plan.fits and plan.overcommit_bytes > 0, "vLLM accepts it, the GPU may not"
    assert "WARNING" in render_text(plan), "the text must warn about the overcommit"


def test_nothing_fits_when_the_weights_exceed_the_request(make_input):
    plan = make_plan(make_input(gpu_memory_utilization=0.5))
    assert (plan.fits, plan.max_model_len_fit, plan.num_blocks) == (False, 0, 0)
    assert "Not even one token fits" in refusal_message(plan)


def test_refusal_message_is_only_for_plans_that_do_not_fit():
    with pytest.raises(ValueError, match="fits"):
        refusal_message(stack_plan("ctx180k"))


def test_grid_agrees_with_single_plans(make_input):
    inp = make_input()
    grid = fit_grid(inp)
    for i, utilization in enumerate(grid.utilizations):
        for j, tokens in enumerate(grid.batched_tokens):
            point = replace(inp, gpu_memory_utilization=utilization, max_num_batched_tokens=tokens)
            expected = evaluate(point).max_model_len_fit
            got = grid.max_model_len_fit[i][j]
            assert got == expected, f"{utilization}/{tokens}: expected {expected}, got {got}"
    assert "243,040*" in render_grid(grid, (0.95, 8192)), "the current cell is marked"


def test_json_has_the_documented_fields():
    document = json.loads(json.dumps(plan_to_json(stack_plan("ctx256k"))))
    expected = {
        "fits": True,
        "block_size_tokens": 1568,
        "kv_capacity_tokens": 272_690,
        "max_model_len_fit": 262_144,
        "kv_needed_gib": 8.33,
        "available_kv_gib": 8.67,
        "weights_gib": 20.44,
        "estimated": False,
    }
    got = {key: document.get(key) for key in expected}
    assert got == expected, f"expected {expected}, got {got}"
    for key in ("max_concurrency", "activation_gib", "headroom_gib", "suggestions", "message"):
        assert key in document, f"missing {key}"


def test_text_report_draws_the_budget_to_scale():
    plan = stack_plan("ctx180k")
    bar = memory_bar(plan)
    assert len(bar) == BAR_WIDTH, f"expected {BAR_WIDTH} columns, got {len(bar)}"
    assert bar.index("A") == round(20.44 / 31.74 * BAR_WIDTH), "weights end at their share"
    assert "!" not in bar, "nothing is missing when it fits"
    text = render_text(plan)
    assert "239,504 tokens" in text and "ESTIMATED" not in text, text


def apply(inp, changes):
    fields = {
        "serving.gpu_memory_utilization": "gpu_memory_utilization",
        "serving.max_num_batched_tokens": "max_num_batched_tokens",
        "serving.max_model_len": "max_model_len",
        "serving.kv_cache_dtype": "kv_cache_dtype",
        "serving.kv_cache_memory_bytes": "kv_cache_memory_bytes",
    }
    return replace(inp, **{fields[key]: value for key, value in changes})


def test_the_verdict_survives_the_policy_packs_props_roundtrip(make_input):
    inp = make_input(max_model_len=262_144, gpu_memory_utilization=0.90)
    # Pulumi carries every number as a double.
    props = json.loads(json.dumps(inp.to_props()), parse_int=float)
    assert make_plan(PlanInput.from_props(props)) == make_plan(inp), "same input, same plan"


def test_an_estimated_plan_says_so_in_the_text(make_input):
    text = render_text(make_plan(make_input(engine_version="1.5.0")))
    assert "(estimated)" in text and "ESTIMATED: " in text and "engine 1.5.0" in text, text
