"""Plan inputs for the planner tests: the field's setup (report 1), changed one knob at a time."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from components.config.base import SHIPPED_MODEL_CONFIG
from components.planner.architecture import ModelArchitecture, load_architecture
from components.planner.inputs import PlanInput, WeightsSize

# One block of the field's pool: 16 layers x (1,568 tokens x 2,048 B). Written out here,
# not imported, so the tests check the code instead of repeating it.
FIELD_BLOCK_BYTES = 16 * 1568 * 2048


@pytest.fixture(scope="session")
def qwen_architecture() -> ModelArchitecture:
    return load_architecture(SHIPPED_MODEL_CONFIG)


def field_input(architecture: ModelArchitecture, **changes: Any) -> PlanInput:
    """Engine 1.2.2, AWQ checkpoint, fp8_e5m2 KV, 0.95 / 8192, 180,000 tokens, eager."""
    base = PlanInput(
        architecture=architecture,
        weights=WeightsSize(20.44, "measured"),
        checkpoint_repo="philbert440/Qwen3.8-27B-W4A16-AWQ",
        engine_version="1.2.2",
        gpu_total_memory_gib=31.74,
        gpu_count=1,
        gpu_memory_utilization=0.95,
        max_model_len=180000,
        max_num_batched_tokens=8192,
        max_num_seqs=1,
        kv_cache_dtype="fp8_e5m2",
        model_dtype="half",
        tensor_parallel_size=1,
        enable_prefix_caching=True,
        image_limit=8,
    )
    return replace(base, **changes)


@pytest.fixture()
def make_input(qwen_architecture: ModelArchitecture) -> Any:
    def build(**changes: Any) -> PlanInput:
        return field_input(qwen_architecture, **changes)

    return build
