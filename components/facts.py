"""Facts derived from a validated StackConfig: what the planner, rules and renderers read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from components.config.checkpoints import KNOWN_CHECKPOINTS, KNOWN_DRAFTERS, checkpoint_bytes
from components.config.model import StackConfig
from components.config.releases import ENGINE_RELEASES
from components.planner.architecture import load_architecture
from components.planner.inputs import GIB, PlanInput, WeightsSize
from components.render.layout import API_KEY_ENV_VAR, ENV_FILE
from components.render.server import server_argv, server_environment


def weights_size(cfg: StackConfig) -> WeightsSize:
    """Loaded weight size: configured, else measured in the field, else estimated."""
    if cfg.model.loaded_weights_gib is not None:
        return WeightsSize(cfg.model.loaded_weights_gib, "configured")
    known = KNOWN_CHECKPOINTS.get(cfg.model.repo)
    if known and known.measured_weights_gib is not None:
        source = "measured" if known.measured_on_engine == cfg.engine.version else "estimated"
        return WeightsSize(known.measured_weights_gib, source)
    return WeightsSize(round(checkpoint_bytes(cfg.model.repo) / GIB, 2), "estimated")


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


@dataclass(frozen=True)
class ApiKeyFacts:
    """How the bearer key reaches the server; never the key itself."""

    # "generated" (pulumi-random), "config" (api_key) or "none".
    source: str
    # A configured key must be stored encrypted (`pulumi config set --secret api_key`).
    stored_as_secret: bool
    env_file: str = ENV_FILE
    env_var: str = API_KEY_ENV_VAR


@dataclass(frozen=True)
class ServerFacts:
    """What the server component registers as props, for the rules and the policy pack."""

    plan: PlanInput
    engine_version: str
    requires_eager: bool
    checkpoint_format: str
    dtype: str
    kv_cache_dtype: str
    attention_backend: str
    enforce_eager: bool
    listen_host: str
    argv: list[str]
    environment: dict[str, str]
    api_key: ApiKeyFacts

    def to_props(self) -> dict[str, Any]:
        props = asdict(self)
        props["plan"] = self.plan.to_props()
        return props

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> ServerFacts:
        data = dict(props)
        data["plan"] = PlanInput.from_props(dict(data["plan"]))
        data["api_key"] = ApiKeyFacts(**dict(data["api_key"]))
        data["argv"] = [str(arg) for arg in data["argv"]]
        data["environment"] = {str(k): str(v) for k, v in dict(data["environment"]).items()}
        return cls(**data)


def server_facts(cfg: StackConfig, api_key: ApiKeyFacts) -> ServerFacts:
    return ServerFacts(
        plan=plan_input(cfg),
        engine_version=cfg.engine.version,
        requires_eager=ENGINE_RELEASES[cfg.engine.version].requires_eager,
        checkpoint_format=cfg.model.format,
        dtype=cfg.serving.dtype,
        kv_cache_dtype=cfg.serving.kv_cache_dtype,
        attention_backend=cfg.serving.attention_backend,
        enforce_eager=cfg.serving.enforce_eager,
        listen_host=cfg.serving.host,
        argv=server_argv(cfg),
        environment=server_environment(cfg),
        api_key=api_key,
    )
