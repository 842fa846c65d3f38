"""The typed stack configuration: the single definition of every option.

Keys live under the project namespace (`qwen38:`), are snake_case, and the serving keys
carry vLLM's own engine-argument names so that values can be copied from vLLM's docs.
The sections (sections.py, serving.py) check their own structure, types and ranges; the
rules across sections are here. What depends on the GPU (SM70 rules, the KV-cache budget)
is checked by `components.rules` on the facts derived from this config.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from components.config.base import Strict
from components.config.checkpoints import KNOWN_CHECKPOINTS, version_tuple
from components.config.sections import EngineConfig, GpuConfig, HostConfig, ModelConfig
from components.config.serving import ReadinessConfig, ServingConfig
from components.planner.architecture import ArchitectureError, load_architecture


class StackConfig(Strict):
    host: HostConfig | None = Field(default=None, description="The GPU host (required to deploy).")
    gpu: GpuConfig = Field(default=GpuConfig(), description="The GPU the server runs on.")
    engine: EngineConfig = Field(default=EngineConfig(), description="The 1Cat-vLLM release.")
    model: ModelConfig = Field(default=ModelConfig(), description="The checkpoint.")
    serving: ServingConfig = Field(default=ServingConfig(), description="The vLLM server.")
    readiness: ReadinessConfig = Field(default=ReadinessConfig(), description="The readiness gate.")

    @model_validator(mode="after")
    def check_engine_supports_checkpoint(self) -> StackConfig:
        known = KNOWN_CHECKPOINTS.get(self.model.repo)
        if known and version_tuple(self.engine.version) < version_tuple(known.min_engine_version):
            raise ValueError(
                f"engine.version {self.engine.version!r} cannot serve {known.repo}: "
                f"it needs {known.min_engine_version} or newer"
            )
        if known and known.format != self.model.format:
            raise ValueError(
                f"model.format {self.model.format!r} does not match {known.repo}, "
                f"which is {known.format!r}"
            )
        return self

    @model_validator(mode="after")
    def check_context_within_model(self) -> StackConfig:
        try:
            native = load_architecture(self.model.config_path).max_position_embeddings
        except ArchitectureError as error:
            raise ValueError(f"model.config_path: {error}") from None
        if self.serving.max_model_len > native:
            raise ValueError(
                f"serving.max_model_len {self.serving.max_model_len} exceeds the model's "
                f"max_position_embeddings ({native}); allowed: 1 to {native}"
            )
        return self

    @model_validator(mode="after")
    def check_parallelism_fits_gpus(self) -> StackConfig:
        if self.serving.tensor_parallel_size > self.gpu.count:
            raise ValueError(
                f"serving.tensor_parallel_size {self.serving.tensor_parallel_size} exceeds "
                f"gpu.count {self.gpu.count}"
            )
        return self
