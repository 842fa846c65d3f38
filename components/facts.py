"""Facts derived from a validated StackConfig: what the planner, rules and renderers read."""

from __future__ import annotations

from components.config.checkpoints import GB, KNOWN_CHECKPOINTS, KNOWN_DRAFTERS
from components.config.model import StackConfig
from components.planner.architecture import load_architecture
from components.planner.inputs import GIB, PlanInput, WeightsSize


def weights_size(cfg: StackConfig) -> WeightsSize:
    """Loaded weight size: configured, else measured in the field, else estimated."""
    if cfg.model.loaded_weights_gib is not None:
        return WeightsSize(cfg.model.loaded_weights_gib, "configured")
    known = KNOWN_CHECKPOINTS.get(cfg.model.repo)
    if known and known.measured_weights_gib is not None:
        source = "measured" if known.measured_on_engine == cfg.engine.version else "estimated"
        return WeightsSize(known.measured_weights_gib, source)
    size_bytes = known.safetensors_bytes if known else None
    if size_bytes is None:
        # No measurement and no size on record: assume a 4-bit 27B checkpoint (~20 GB).
        size_bytes = 20 * GB
    return WeightsSize(round(size_bytes / GIB, 2), "estimated")


def drafter_weights_gib(cfg: StackConfig) -> float:
    drafter = cfg.model.drafter
    if drafter is None:
        return 0.0
    if drafter.loaded_weights_gib is not None:
        return drafter.loaded_weights_gib
    return KNOWN_DRAFTERS[drafter.repo].loaded_weights_gib  # known: checked by DrafterConfig


def plan_input(cfg: StackConfig) -> PlanInput:
    serving = cfg.serving
    return PlanInput(
        architecture=load_architecture(cfg.model.config_path),
        weights=weights_size(cfg),
        checkpoint_repo=cfg.model.repo,
        engine_version=cfg.engine.version,
        gpu_total_memory_gib=cfg.gpu.total_memory_gib,
        gpu_count=cfg.gpu.count,
        gpu_memory_utilization=serving.gpu_memory_utilization,
        max_model_len=serving.max_model_len,
        max_num_batched_tokens=serving.max_num_batched_tokens,
        max_num_seqs=serving.max_num_seqs,
        kv_cache_dtype=serving.kv_cache_dtype,
        model_dtype=serving.dtype,
        tensor_parallel_size=serving.tensor_parallel_size,
        enable_prefix_caching=serving.enable_prefix_caching,
        kv_cache_memory_bytes=serving.kv_cache_memory_bytes,
        image_limit=int(serving.limit_mm_per_prompt.get("image", 0)),
        drafter_weights_gib=drafter_weights_gib(cfg),
    )
