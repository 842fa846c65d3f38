"""The memory budget: how much GPU memory vLLM will find for the KV cache.

vLLM (vllm/v1/worker/gpu_worker.py, determine_available_memory) computes, per GPU:

    available KV = ceil(total x gpu_memory_utilization) - loaded weights
                   - peak activation of the profiling run - non-torch memory
                   (- CUDA graph memory: zero under --enforce-eager)

The weights are known (measured in the field or configured). The profiling peak and the
non-torch memory cannot be computed offline, and the field rows cannot tell them apart,
so they are calibrated together as one "profile overhead" from the four start-ups of
field report 1, as a function of max_num_batched_tokens:

    overhead(tokens) = max(floor, intercept + slope x tokens)

The floor is the fixed cost of the profiling run (the vision encoder's dummy images and
the CUDA context); above ~8K batched tokens the language model's dummy batch dominates.
`serving.kv_cache_memory_bytes` bypasses all of this, as vLLM's --kv-cache-memory-bytes does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from components.config.base import SHIPPED_MODEL_CONFIG
from components.config.checkpoints import AWQ_W4A16
from components.planner.architecture import load_architecture
from components.planner.capacity import kv_layout
from components.planner.inputs import GIB, PlanInput

# The field's setup (report 1): engine 1.2.2, the AWQ checkpoint, fp8_e5m2 KV, dtype half,
# max_num_seqs 1, image limit 8, eager, one V100-SXM2-32GB.
# The checkpoint record holds the measurement itself ("Model loading took 20.44 GiB").
assert AWQ_W4A16.measured_weights_gib is not None and AWQ_W4A16.measured_on_engine is not None
FIELD_ENGINE_VERSION = AWQ_W4A16.measured_on_engine
FIELD_CHECKPOINT_REPO = AWQ_W4A16.repo
FIELD_WEIGHTS_GIB = AWQ_W4A16.measured_weights_gib
FIELD_GPU_TOTAL_GIB = 31.74  # memory as PyTorch reports it on the field's V100
FIELD_IMAGE_LIMIT = 8
FIELD_MAX_NUM_SEQS = 1
FIELD_MODEL_DTYPES = ("half", "float16", "auto")  # "auto" is half on SM70
# The field ran the model whose config.json ships with this project.
FIELD_ARCHITECTURE = load_architecture(SHIPPED_MODEL_CONFIG)
# One block of the shared pool (16 layers x 3,211,264 B): the unit the block counts below
# are in.
FIELD_POOL_BLOCK_BYTES = kv_layout(
    FIELD_ARCHITECTURE,
    kv_cache_dtype="fp8_e5m2",
    model_dtype="half",
    tensor_parallel_size=1,
    enable_prefix_caching=True,
).pool_block_bytes

# vLLM prints GiB rounded to two decimals: the true value is within half a hundredth.
PRINT_HALF_STEP_GIB = 0.005


def gib_to_bytes(gib: float) -> int:
    return round(gib * GIB)


@dataclass(frozen=True)
class FieldRow:
    """One measured start-up: "Available KV cache memory: <printed> GiB"."""

    gpu_memory_utilization: float
    max_num_batched_tokens: int
    printed_available_kv_gib: float
    # Whole pool blocks the available memory held, read off what vLLM logged next; this
    # pins the value far tighter than the printed rounding does. None: nothing logged.
    pool_blocks: int | None

    @property
    def requested_bytes(self) -> int:
        return math.ceil(gib_to_bytes(FIELD_GPU_TOTAL_GIB) * self.gpu_memory_utilization)

    def available_kv_bounds_bytes(self) -> tuple[int, int]:
        """[low, high): every available-KV value consistent with what vLLM logged."""
        low = math.ceil((self.printed_available_kv_gib - PRINT_HALF_STEP_GIB) * GIB)
        high = math.ceil((self.printed_available_kv_gib + PRINT_HALF_STEP_GIB) * GIB)
        if self.pool_blocks is not None:
            low = max(low, self.pool_blocks * FIELD_POOL_BLOCK_BYTES)
            high = min(high, (self.pool_blocks + 1) * FIELD_POOL_BLOCK_BYTES)
        return low, high

    def overhead_bounds_bytes(self) -> tuple[int, int]:
        """(low, high]: the profile overhead this row allows."""
        low, high = self.available_kv_bounds_bytes()
        spent = self.requested_bytes - gib_to_bytes(FIELD_WEIGHTS_GIB)
        return spent - high, spent - low


FIELD_ROWS = (
    # Refused 262,144; its estimate 189,728 = 121 x 1,568 means 127 blocks fit, 128 do not.
    FieldRow(0.90, 8192, 6.12, pool_blocks=127),
    # Started 180,000: "GPU KV cache size: 239,504 tokens" = 161 blocks / 121 per request.
    FieldRow(0.95, 8192, 7.71, pool_blocks=161),
    # Started 262,144: "GPU KV cache size: 272,690 tokens" = 181 blocks / 174 per request.
    FieldRow(0.98, 2048, 8.67, pool_blocks=181),
    # Failed to start at 180,000 (121 blocks needed, 58 available): no count logged.
    FieldRow(0.95, 32768, 2.81, pool_blocks=None),
)
CALIBRATED_BATCHED_TOKENS = (
    min(row.max_num_batched_tokens for row in FIELD_ROWS),
    max(row.max_num_batched_tokens for row in FIELD_ROWS),
)


@dataclass(frozen=True)
class OverheadModel:
    floor_bytes: int
    intercept_bytes: int
    bytes_per_batched_token: int

    def overhead_bytes(self, max_num_batched_tokens: int) -> int:
        linear = self.intercept_bytes + self.bytes_per_batched_token * max_num_batched_tokens
        return max(self.floor_bytes, linear)


def overhead_by_batched_tokens(rows: tuple[FieldRow, ...]) -> dict[int, tuple[int, int]]:
    """Overhead bounds per batched-token count: rows with the same count must agree."""
    bounds: dict[int, tuple[int, int]] = {}
    for row in rows:
        low, high = row.overhead_bounds_bytes()
        old_low, old_high = bounds.get(row.max_num_batched_tokens, (low, high))
        low, high = max(low, old_low), min(high, old_high)
        if low >= high:
            raise ValueError(f"field rows at {row.max_num_batched_tokens} tokens contradict")
        bounds[row.max_num_batched_tokens] = (low, high)
    return bounds


def fit_overhead_model(rows: tuple[FieldRow, ...]) -> OverheadModel:
    """Floor at the fewest batched tokens, line through the two most: each at the middle
    of the interval its rows allow."""
    middle = {
        tokens: (low + high) // 2
        for tokens, (low, high) in overhead_by_batched_tokens(rows).items()
    }
    fewest, *_, second, most = sorted(middle)
    slope = (middle[most] - middle[second]) // (most - second)
    return OverheadModel(
        floor_bytes=middle[fewest],
        intercept_bytes=middle[second] - slope * second,
        bytes_per_batched_token=slope,
    )


# From FIELD_ROWS: floor ~1.995 GiB (0.98/2048), line through ~2.0045 GiB at 8192 (the two
# 8192 rows intersected) and ~6.903 GiB at 32768: ~209 KiB per batched token.
PROFILE_OVERHEAD = fit_overhead_model(FIELD_ROWS)


def estimate_reasons(inp: PlanInput) -> tuple[str, ...]:
    """Why the budget is an extrapolation for these inputs; empty inside the field's domain."""
    low, high = CALIBRATED_BATCHED_TOKENS
    checks = (
        (inp.checkpoint_repo != FIELD_CHECKPOINT_REPO, f"checkpoint {inp.checkpoint_repo}"),
        (inp.weights.source != "measured", f"loaded weights {inp.weights.source}"),
        (inp.engine_version != FIELD_ENGINE_VERSION, f"engine {inp.engine_version}"),
        (inp.architecture != FIELD_ARCHITECTURE, f"architecture {inp.architecture.architecture}"),
        (inp.image_limit != FIELD_IMAGE_LIMIT, f"image limit {inp.image_limit}"),
        (
            not low <= inp.max_num_batched_tokens <= high,
            f"max_num_batched_tokens {inp.max_num_batched_tokens} outside [{low}, {high}]",
        ),
        (inp.tensor_parallel_size != 1, f"tensor_parallel_size {inp.tensor_parallel_size}"),
        (inp.drafter_weights_gib > 0, "a speculative drafter"),
        (inp.max_num_seqs != FIELD_MAX_NUM_SEQS, f"max_num_seqs {inp.max_num_seqs}"),
        (inp.model_dtype not in FIELD_MODEL_DTYPES, f"dtype {inp.model_dtype}"),
        (inp.gpu_total_memory_gib != FIELD_GPU_TOTAL_GIB, f"{inp.gpu_total_memory_gib} GiB GPU"),
    )
    return tuple(reason for outside, reason in checks if outside)


@dataclass(frozen=True)
class MemoryBudget:
    """One GPU's memory as vLLM divides it at start-up."""

    total_bytes: int
    gpu_memory_utilization: float
    max_num_batched_tokens: int
    weights_bytes: int
    drafter_bytes: int
    activation_bytes: int  # profile peak and non-torch memory together (see module doc)
    kv_cache_memory_bytes: int | None
    estimate_reasons: tuple[str, ...]

    @property
    def requested_bytes(self) -> int:
        return math.ceil(self.total_bytes * self.gpu_memory_utilization)

    @property
    def pinned(self) -> bool:
        return self.kv_cache_memory_bytes is not None

    @property
    def profiled_kv_bytes(self) -> int:
        """What profiling would leave for the KV cache (ignores a pinned size)."""
        return (
            self.requested_bytes - self.weights_bytes - self.drafter_bytes - self.activation_bytes
        )

    @property
    def available_kv_bytes(self) -> int:
        if self.kv_cache_memory_bytes is not None:
            return self.kv_cache_memory_bytes
        return self.profiled_kv_bytes

    @property
    def estimated(self) -> bool:
        # A pinned size is taken as is: only the exact capacity rules apply to it.
        return not self.pinned and bool(self.estimate_reasons)


def memory_budget(inp: PlanInput) -> MemoryBudget:
    tp = inp.tensor_parallel_size
    return MemoryBudget(
        total_bytes=gib_to_bytes(inp.gpu_total_memory_gib),
        gpu_memory_utilization=inp.gpu_memory_utilization,
        max_num_batched_tokens=inp.max_num_batched_tokens,
        # Tensor parallelism splits the weights across GPUs (roughly: some stay replicated).
        weights_bytes=gib_to_bytes(inp.weights.gib) // tp,
        drafter_bytes=gib_to_bytes(inp.drafter_weights_gib) // tp,
        activation_bytes=PROFILE_OVERHEAD.overhead_bytes(inp.max_num_batched_tokens),
        kv_cache_memory_bytes=inp.kv_cache_memory_bytes,
        estimate_reasons=estimate_reasons(inp),
    )
