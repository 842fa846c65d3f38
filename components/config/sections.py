"""Where it runs and what it serves: the host, GPU, engine and model sections."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from components.config.base import HEX_COMMIT, HEX_SHA256, SHIPPED_MODEL_CONFIG, Strict
from components.config.checkpoints import KNOWN_CHECKPOINTS, KNOWN_DRAFTERS, CheckpointFormat
from components.config.releases import ENGINE_RELEASES, PYTORCH_CU128_INDEX

EngineVersion = Literal["1.2.2", "1.5.0", "1.5.1"]


class HostConfig(Strict):
    """The GPU host, reached over SSH by pulumi-command and by the Docker provider."""

    address: str = Field(min_length=1, description="Host name or IP address of the GPU host.")
    user: str = Field(default="root", min_length=1, description="SSH user (root, or a sudoer).")
    port: int = Field(default=22, ge=1, le=65535, description="SSH port.")
    ssh_identity_file: str | None = Field(
        default=None,
        description=(
            "Key file for the system ssh client that the Docker provider and the journal "
            "fetch use (it takes no key material); else the ssh agent or ~/.ssh/config."
        ),
    )


class GpuConfig(Strict):
    name: str = Field(
        default="Tesla V100-SXM2-32GB", description="GPU name as nvidia-smi prints it."
    )
    total_memory_gib: float = Field(
        default=31.74, gt=0, le=1024, description="Memory per GPU as PyTorch reports it, in GiB."
    )
    count: int = Field(default=1, ge=1, le=16, description="Number of GPUs the server uses.")


class EngineConfig(Strict):
    version: EngineVersion = Field(default="1.2.2", description="1Cat-vLLM release.")
    wheel_url: str | None = Field(default=None, description="Override of the release wheel URL.")
    wheel_sha256: str | None = Field(default=None, description="sha256 of the wheel (64 hex).")
    torch_index_url: str = Field(default=PYTORCH_CU128_INDEX, description="PyTorch cu128 index.")

    @field_validator("wheel_sha256")
    @classmethod
    def check_sha256_shape(cls, value: str | None) -> str | None:
        if value is not None and not HEX_SHA256.match(value):
            raise ValueError("must be 64 lowercase hex characters")
        return value

    @model_validator(mode="after")
    def check_digest_known(self) -> EngineConfig:
        release = ENGINE_RELEASES[self.version]
        if self.wheel_sha256 is None and (
            self.wheel_url is not None or release.wheel_sha256 is None
        ):
            raise ValueError(
                f"engine.wheel_sha256 is required for engine.version {self.version!r}"
                + (" with a custom wheel_url" if self.wheel_url else " (no digest is built in)")
                + ": copy it from the release's SHA256SUMS, e.g. "
                "pulumi config set --path engine.wheel_sha256 <64 hex>"
            )
        return self

    @property
    def resolved_wheel_url(self) -> str:
        return self.wheel_url or ENGINE_RELEASES[self.version].wheel_url

    @property
    def resolved_wheel_sha256(self) -> str:
        digest = self.wheel_sha256 or ENGINE_RELEASES[self.version].wheel_sha256
        assert digest is not None  # guaranteed by check_digest_known
        return digest


class DrafterConfig(Strict):
    """A speculative-decoding drafter (e.g. DFlash2), served through --speculative-config."""

    repo: str = Field(min_length=3, description="Hugging Face repo of the drafter.")
    revision: str = Field(description="Pinned commit of the drafter repo.")
    method: str = Field(default="dflash", description="vLLM speculative method.")
    num_speculative_tokens: int = Field(
        default=4, ge=1, le=16, description="Tokens the drafter proposes per step."
    )
    loaded_weights_gib: float | None = Field(
        default=None, gt=0, description="Drafter size on the GPU."
    )

    @field_validator("revision")
    @classmethod
    def check_revision(cls, value: str) -> str:
        if not HEX_COMMIT.match(value):
            raise ValueError("must be a 40-hex commit")
        return value

    @model_validator(mode="after")
    def check_size_known(self) -> DrafterConfig:
        if self.loaded_weights_gib is None and self.repo not in KNOWN_DRAFTERS:
            raise ValueError(
                f"model.drafter.loaded_weights_gib is required for {self.repo!r}: its size on the "
                f"GPU is not on record (known drafters: {', '.join(sorted(KNOWN_DRAFTERS))})"
            )
        return self


class ModelConfig(Strict):
    repo: str = Field(
        default="philbert440/Qwen3.8-27B-W4A16-AWQ",
        min_length=3,
        description="Hugging Face repo of the checkpoint.",
    )
    revision: str | None = Field(
        default=None, description="Pinned commit; defaults to the known one for known repos."
    )
    format: CheckpointFormat = Field(default="awq_w4a16", description="Checkpoint format.")
    hf_endpoint: str = Field(
        default="https://hf-mirror.com",
        description="Hugging Face endpoint or mirror (HF_ENDPOINT).",
    )
    config_path: str = Field(
        default=str(SHIPPED_MODEL_CONFIG), description="The model's config.json (read offline)."
    )
    loaded_weights_gib: float | None = Field(
        default=None, gt=0, description="Override of the loaded weight size vLLM reports, in GiB."
    )
    download_max_workers: int = Field(
        default=4, ge=1, le=32, description="Files downloaded at once (the field used 4)."
    )
    cache_volume: str = Field(
        default="qwen38-hf-cache",
        pattern=r"^[a-zA-Z0-9][a-zA-Z0-9_.-]+$",
        description="Docker volume that holds the Hugging Face cache.",
    )
    delete_cache_on_destroy: bool = Field(
        default=False, description="Delete the ~19 GB cache volume on destroy (off by default)."
    )
    drafter: DrafterConfig | None = Field(
        default=None, description="Speculative-decoding drafter; none by default."
    )

    @field_validator("hf_endpoint")
    @classmethod
    def check_endpoint(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")

    @model_validator(mode="after")
    def check_revision_pinned(self) -> ModelConfig:
        if self.revision is None and self.repo not in KNOWN_CHECKPOINTS:
            raise ValueError(
                f"model.revision is required for {self.repo!r} (no pinned commit is built in): "
                "pulumi config set --path model.revision <40-hex commit>"
            )
        if self.revision is not None and not HEX_COMMIT.match(self.revision):
            raise ValueError(f"model.revision must be a 40-hex commit, got {self.revision!r}")
        return self

    @property
    def resolved_revision(self) -> str:
        return self.revision or KNOWN_CHECKPOINTS[self.repo].revision
