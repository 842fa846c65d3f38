"""The few numbers of a Hugging Face config.json that decide KV-cache memory.

Standard decoders (Llama, Qwen2, Qwen3) have only full-attention layers. Hybrid models
(Qwen3.5 / Qwen3.8) interleave Gated DeltaNet linear-attention layers, named by
`layer_types` or placed by `full_attention_interval`; each of those keeps a fixed-size
recurrent state per request instead of a KV cache. Multimodal configs nest the language
model under `text_config`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2}


class ArchitectureError(ValueError):
    """The config.json lacks a number the planner needs."""


@dataclass(frozen=True)
class FullAttention:
    num_layers: int
    num_kv_heads: int
    head_dim: int


@dataclass(frozen=True)
class GatedDeltaNet:
    num_layers: int
    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    ssm_state_bytes_per_element: int

    @property
    def conv_dim(self) -> int:
        return (
            2 * self.key_head_dim * self.num_key_heads + self.value_head_dim * self.num_value_heads
        )


@dataclass(frozen=True)
class ModelArchitecture:
    full_attention: FullAttention
    linear_attention: GatedDeltaNet | None
    max_position_embeddings: int
    architecture: str

    @property
    def is_hybrid(self) -> bool:
        return self.linear_attention is not None


def load_architecture(path: str | Path) -> ModelArchitecture:
    file = Path(path)
    try:
        document = json.loads(file.read_text())
    except FileNotFoundError:
        raise ArchitectureError(f"model config {str(file)!r} does not exist") from None
    except json.JSONDecodeError as error:
        raise ArchitectureError(f"model config {str(file)!r} is not valid JSON: {error}") from None
    return parse_architecture(document)


def parse_architecture(document: Mapping[str, Any]) -> ModelArchitecture:
    text = {**document, **(document.get("text_config") or {})}
    num_layers = _require_int(text, "num_hidden_layers")
    kinds = _layer_kinds(text, num_layers)
    num_full = kinds.count("full_attention")
    num_linear = kinds.count("linear_attention")
    heads = _require_int(text, "num_attention_heads")
    full = FullAttention(
        num_layers=num_full,
        num_kv_heads=int(text.get("num_key_value_heads") or heads),
        head_dim=int(text.get("head_dim") or _require_int(text, "hidden_size") // heads),
    )
    return ModelArchitecture(
        full_attention=full,
        linear_attention=_gated_delta_net(text, num_linear) if num_linear else None,
        max_position_embeddings=_require_int(text, "max_position_embeddings"),
        architecture=str((document.get("architectures") or ["unknown"])[0]),
    )


def _layer_kinds(text: Mapping[str, Any], num_layers: int) -> list[str]:
    layer_types = text.get("layer_types")
    if layer_types:
        if len(layer_types) != num_layers:
            raise ArchitectureError(
                f"layer_types lists {len(layer_types)} layers, num_hidden_layers says {num_layers}"
            )
        unknown = sorted(set(layer_types) - {"full_attention", "linear_attention"})
        if unknown:
            raise ArchitectureError(f"unsupported layer types {unknown}")
        return list(layer_types)
    interval = text.get("full_attention_interval")
    if interval:
        return [
            "full_attention" if (i + 1) % int(interval) == 0 else "linear_attention"
            for i in range(num_layers)
        ]
    return ["full_attention"] * num_layers


def _gated_delta_net(text: Mapping[str, Any], num_layers: int) -> GatedDeltaNet:
    ssm_dtype = str(text.get("mamba_ssm_dtype") or "float32")
    if ssm_dtype not in DTYPE_BYTES:
        raise ArchitectureError(f"unsupported mamba_ssm_dtype {ssm_dtype!r}")
    return GatedDeltaNet(
        num_layers=num_layers,
        num_key_heads=_require_int(text, "linear_num_key_heads"),
        num_value_heads=_require_int(text, "linear_num_value_heads"),
        key_head_dim=_require_int(text, "linear_key_head_dim"),
        value_head_dim=_require_int(text, "linear_value_head_dim"),
        conv_kernel=_require_int(text, "linear_conv_kernel_dim"),
        ssm_state_bytes_per_element=DTYPE_BYTES[ssm_dtype],
    )


def _require_int(text: Mapping[str, Any], key: str) -> int:
    value = text.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ArchitectureError(f"config.json: {key} must be a positive integer, got {value!r}")
    return value
