"""The calibrated budget against every measured row, and where it stops being calibrated."""

from __future__ import annotations

import pytest

from components.planner.budget import (
    FIELD_ARCHITECTURE,
    FIELD_POOL_BLOCK_BYTES,
    FIELD_ROWS,
    PROFILE_OVERHEAD,
    FieldRow,
    fit_overhead_model,
    memory_budget,
)
from components.planner.inputs import GIB, WeightsSize
from tests.planner.conftest import FIELD_BLOCK_BYTES

MIB = 1024**2


def test_field_constants_describe_the_field_model():
    full, linear = FIELD_ARCHITECTURE.full_attention, FIELD_ARCHITECTURE.linear_attention
    assert (full.num_layers, full.num_kv_heads, full.head_dim) == (16, 4, 256)
    assert linear is not None and linear.num_layers == 48, "48 Gated DeltaNet layers"
    assert FIELD_POOL_BLOCK_BYTES == FIELD_BLOCK_BYTES, "one pool block is 16 x 3,211,264 B"


@pytest.mark.parametrize(
    "row", FIELD_ROWS, ids=lambda r: f"{r.gpu_memory_utilization}/{r.max_num_batched_tokens}"
)
def test_every_measured_row_is_reproduced_within_its_rounding(make_input, row):
    budget = memory_budget(
        make_input(
            gpu_memory_utilization=row.gpu_memory_utilization,
            max_num_batched_tokens=row.max_num_batched_tokens,
        )
    )
    available = budget.available_kv_bytes
    error_mib = (available / GIB - row.printed_available_kv_gib) * 1024
    print(f"{row}: model {available / GIB:.4f} GiB, error {error_mib:+.2f} MiB")
    low, high = row.available_kv_bounds_bytes()
    assert low <= available < high, (
        f"expected available KV in [{low / GIB:.4f}, {high / GIB:.4f}) GiB, "
        f"got {available / GIB:.4f}"
    )
    assert round(available / GIB, 2) == row.printed_available_kv_gib, "vLLM's printed value"
    if row.pool_blocks is not None:
        blocks = available // FIELD_BLOCK_BYTES
        assert blocks == row.pool_blocks, f"expected {row.pool_blocks} blocks, got {blocks}"


def test_overhead_has_a_floor_then_grows_about_0_2_mib_per_batched_token():
    floor = PROFILE_OVERHEAD.overhead_bytes(1024)
    assert floor == PROFILE_OVERHEAD.overhead_bytes(2048) == PROFILE_OVERHEAD.floor_bytes
    slope_mib = PROFILE_OVERHEAD.bytes_per_batched_token / MIB
    assert 0.15 < slope_mib < 0.25, f"expected ~0.2 MiB per batched token, got {slope_mib:.3f}"
    growth = PROFILE_OVERHEAD.overhead_bytes(32768) - PROFILE_OVERHEAD.overhead_bytes(8192)
    assert growth > 4 * GIB, f"8192 -> 32768 tokens costs ~4.9 GiB, got {growth / GIB:.2f}"


def test_contradicting_rows_are_rejected():
    rows = (FieldRow(0.90, 8192, 6.12, None), FieldRow(0.95, 8192, 6.12, None))
    with pytest.raises(ValueError, match="contradict"):
        fit_overhead_model((*rows, FieldRow(0.98, 2048, 8.67, None)))


def test_the_field_setup_is_not_an_estimate(make_input):
    budget = memory_budget(make_input())
    assert not budget.estimated, f"expected calibrated, got reasons {budget.estimate_reasons}"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"checkpoint_repo": "QUASAR-QAT/Qwen3.8-27B-QUASAR-NVFP4"}, "checkpoint"),
        ({"weights": WeightsSize(20.44, "configured")}, "weights configured"),
        ({"engine_version": "1.5.0"}, "engine 1.5.0"),
        ({"image_limit": 0}, "image limit 0"),
        ({"max_num_batched_tokens": 1024}, "outside [2048, 32768]"),
        ({"max_num_batched_tokens": 65536}, "outside [2048, 32768]"),
        ({"tensor_parallel_size": 2, "gpu_count": 2}, "tensor_parallel_size 2"),
        ({"drafter_weights_gib": 2.37}, "drafter"),
        ({"max_num_seqs": 8}, "max_num_seqs 8"),
    ],
)
def test_leaving_the_calibrated_domain_marks_an_estimate(make_input, changes, reason):
    budget = memory_budget(make_input(**changes))
    assert budget.estimated, f"{changes} must be an estimate"
    assert any(reason in text for text in budget.estimate_reasons), (
        f"expected a reason mentioning {reason!r}, got {budget.estimate_reasons}"
    )


def test_a_drafter_takes_its_weights_out_of_the_kv_budget(make_input):
    without = memory_budget(make_input()).available_kv_bytes
    with_drafter = memory_budget(make_input(drafter_weights_gib=2.37)).available_kv_bytes
    assert without - with_drafter == round(2.37 * GIB), "2.37 GiB less KV memory"


def test_pinned_kv_memory_bypasses_the_budget(make_input):
    pinned = 161 * FIELD_BLOCK_BYTES
    budget = memory_budget(
        make_input(kv_cache_memory_bytes=pinned, gpu_memory_utilization=0.5, engine_version="1.5.0")
    )
    assert budget.available_kv_bytes == pinned, "kv_cache_memory_bytes is taken as is"
    assert not budget.estimated, "only exact capacity rules apply to a pinned size"
