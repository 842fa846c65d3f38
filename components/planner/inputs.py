"""What the planner needs to know, as plain data.

`PlanInput` is what the program derives from the stack config, what the server component
registers for the policy pack, and what the policy pack rebuilds from those props: the
same numbers in all three places, so the verdicts cannot drift apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from components.planner.architecture import FullAttention, GatedDeltaNet, ModelArchitecture

GIB = 1024**3


@dataclass(frozen=True)
class WeightsSize:
    gib: float
    # "measured" (field measurement of this checkpoint on this engine), "configured"
    # (model.loaded_weights_gib) or "estimated" (from safetensors bytes).
    source: str

    @property
    def estimated(self) -> bool:
        return self.source == "estimated"


@dataclass(frozen=True)
class PlanInput:
    architecture: ModelArchitecture
    weights: WeightsSize
    checkpoint_repo: str
    engine_version: str
    gpu_total_memory_gib: float
    gpu_count: int
    gpu_memory_utilization: float
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    kv_cache_dtype: str
    model_dtype: str
    tensor_parallel_size: int
    enable_prefix_caching: bool
    kv_cache_memory_bytes: int | None = None
    image_limit: int = 0
    drafter_weights_gib: float = 0.0

    def to_props(self) -> dict[str, Any]:
        """JSON-safe form, for a resource's registered props."""
        return asdict(self)

    @classmethod
    def from_props(cls, props: dict[str, Any]) -> PlanInput:
        """Inverse of to_props. Pulumi carries every number as a double: ints come back."""
        data = _with_ints(cls, props)
        arch = dict(data.pop("architecture"))
        linear = arch.get("linear_attention")
        data["architecture"] = ModelArchitecture(
            full_attention=FullAttention(**_with_ints(FullAttention, arch["full_attention"])),
            linear_attention=GatedDeltaNet(**_with_ints(GatedDeltaNet, linear)) if linear else None,
            max_position_embeddings=int(arch["max_position_embeddings"]),
            architecture=str(arch["architecture"]),
        )
        data["weights"] = WeightsSize(**data["weights"])
        return cls(**data)


def _with_ints(kind: type, values: dict[str, Any]) -> dict[str, Any]:
    integer_fields = {f.name for f in fields(kind) if f.type in ("int", "int | None")}
    return {
        key: int(value) if key in integer_fields and value is not None else value
        for key, value in values.items()
    }
