"""Checkpoints known from the field, with what was measured about them.

A checkpoint not listed here still works: its loaded size is then estimated from its
safetensors bytes (or taken from `model.loaded_weights_gib`) and every number the planner
derives from it is labelled an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CheckpointFormat = Literal["awq_w4a16", "nvfp4"]
CHECKPOINT_FORMATS: tuple[CheckpointFormat, ...] = ("awq_w4a16", "nvfp4")

GB = 10**9


@dataclass(frozen=True)
class Checkpoint:
    repo: str
    revision: str
    format: CheckpointFormat
    safetensors_bytes: int
    # What vLLM logged as loaded weights; None when nobody measured it.
    measured_weights_gib: float | None
    measured_on_engine: str | None
    min_engine_version: str


@dataclass(frozen=True)
class Drafter:
    repo: str
    loaded_weights_gib: float


AWQ_W4A16 = Checkpoint(
    repo="philbert440/Qwen3.8-27B-W4A16-AWQ",
    # Revision of a qualified public deployment of this checkpoint.
    revision="7908d42a71077a5e4dc458f273682b12dfe384a0",
    format="awq_w4a16",
    # model.safetensors ~18.7 GB + model-mtp.safetensors ~0.85 GB (14 files in all).
    safetensors_bytes=19_550_000_000,
    # Field report 1 (engine 1.2.2): vision tower, embeddings, lm_head and MTP head stay 16-bit.
    measured_weights_gib=20.44,
    measured_on_engine="1.2.2",
    min_engine_version="1.2.2",
)

QUASAR_NVFP4 = Checkpoint(
    repo="QUASAR-QAT/Qwen3.8-27B-QUASAR-NVFP4",
    revision="cfd1460322b9d8367a4ab13564a2182d50852d60",
    format="nvfp4",
    safetensors_bytes=23_000_000_000,
    measured_weights_gib=None,
    measured_on_engine=None,
    # Recommended by the fork for one card from 1.5.0 on; runs as TurboMind W4A16 on SM70.
    min_engine_version="1.5.0",
)

KNOWN_CHECKPOINTS: dict[str, Checkpoint] = {c.repo: c for c in (AWQ_W4A16, QUASAR_NVFP4)}

# The DFlash2 drafter keeps a 16-bit lm_head: 2.37 GiB loaded (field report 2).
KNOWN_DRAFTERS: dict[str, Drafter] = {
    "incoai/Qwen3.8-27B-DFlash2": Drafter("incoai/Qwen3.8-27B-DFlash2", 2.37),
}


# A checkpoint with nothing on record is assumed to be a 4-bit 27B one (~20 GB on disk).
UNKNOWN_CHECKPOINT_BYTES = 20 * GB


def checkpoint_bytes(repo: str) -> int:
    known = KNOWN_CHECKPOINTS.get(repo)
    return known.safetensors_bytes if known else UNKNOWN_CHECKPOINT_BYTES


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))
