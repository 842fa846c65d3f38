"""The typed stack configuration: the single definition of every option.

Keys live under the project namespace (`qwen38:`), are snake_case, and the serving keys
carry vLLM's own engine-argument names so that values can be copied from vLLM's docs.
Structure, types and ranges are checked here; what depends on the GPU (SM70 rules, the
KV-cache budget) is checked by `components.rules` on the facts derived from this model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from components.config.checkpoints import (
    KNOWN_CHECKPOINTS,
    KNOWN_DRAFTERS,
    CheckpointFormat,
    version_tuple,
)
from components.config.releases import ENGINE_RELEASES, PYTORCH_CU128_INDEX
from components.planner.architecture import ArchitectureError, load_architecture

PROJECT = "qwen38"
SHIPPED_MODEL_CONFIG = Path(__file__).resolve().parent.parent / "data" / "qwen3.8-27b.config.json"

EngineVersion = Literal["1.2.2", "1.5.0", "1.5.1"]
ModelDType = Literal["auto", "half", "float16", "bfloat16", "float", "float32"]
KVCacheDType = Literal["auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"]
ReadinessVia = Literal["auto", "local", "host"]

HEX_COMMIT = re.compile(r"^[0-9a-f]{40}$")
HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")

# Flags that a typed option owns: setting them again in extra_args would make two
# definitions of one option (and --api-key would put the key on the command line).
FLAGS_OWNED_BY_OPTIONS = (
    "--model",
    "--served-model-name",
    "--host",
    "--port",
    "--max-model-len",
    "--gpu-memory-utilization",
    "--max-num-batched-tokens",
    "--max-num-seqs",
    "--kv-cache-dtype",
    "--kv-cache-memory-bytes",
    "--dtype",
    "--attention-backend",
    "--limit-mm-per-prompt",
    "--tool-call-parser",
    "--reasoning-parser",
    "--enforce-eager",
    "--tensor-parallel-size",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--speculative-config",
    "--trust-remote-code",
    "--override-generation-config",
    "--default-chat-template-kwargs",
    "--enable-auto-tool-choice",
    "--api-key",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HostConfig(_Strict):
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


class GpuConfig(_Strict):
    name: str = Field(
        default="Tesla V100-SXM2-32GB", description="GPU name as nvidia-smi prints it."
    )
    total_memory_gib: float = Field(
        default=31.74, gt=0, le=1024, description="Memory per GPU as PyTorch reports it, in GiB."
    )
    count: int = Field(default=1, ge=1, le=16, description="Number of GPUs the server uses.")


class EngineConfig(_Strict):
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


class DrafterConfig(_Strict):
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


class ModelConfig(_Strict):
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


class SamplingProfile(_Strict):
    temperature: float = Field(ge=0, le=2, description="Sampling temperature.")
    top_p: float = Field(gt=0, le=1, description="Nucleus sampling probability mass.")
    top_k: int = Field(ge=-1, description="Top-k cut-off (-1: off).")
    presence_penalty: float = Field(default=0.0, ge=-2, le=2, description="Presence penalty.")


class SamplingDefaults(_Strict):
    """Recommended sampling, applied as the server's generation-config override."""

    thinking: SamplingProfile = Field(
        default=SamplingProfile(temperature=1.0, top_p=0.95, top_k=20),
        description="Server default sampling when thinking is on.",
    )
    instruct: SamplingProfile = Field(
        default=SamplingProfile(temperature=0.7, top_p=0.8, top_k=20, presence_penalty=1.5),
        description="Server default sampling when thinking is off.",
    )


class ServingConfig(_Strict):
    """The vLLM server; each key is the vLLM engine argument of the same name."""

    served_model_name: str = Field(
        default="qwen3.8-27b",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$",
        description="Model id the API serves.",
    )
    host: str = Field(
        default="0.0.0.0",
        min_length=1,
        description="Address vLLM binds on the host (127.0.0.1: reachable from the host only).",
    )
    port: int = Field(default=8000, ge=1, le=65535, description="API port.")
    max_model_len: int = Field(default=65536, gt=0, description="Context length, in tokens.")
    gpu_memory_utilization: float = Field(
        default=0.9, gt=0, le=1, description="Share of GPU memory vLLM may use, in (0, 1]."
    )
    max_num_batched_tokens: int = Field(
        default=8192, ge=16, description="Tokens per scheduler step; sizes the profiling peak."
    )
    max_num_seqs: int = Field(default=1, ge=1, le=1024, description="Requests run at once.")
    kv_cache_dtype: KVCacheDType = Field(
        default="fp8_e5m2", description="KV storage type; fp8_e5m2 halves KV memory on SM70."
    )
    kv_cache_memory_bytes: int | None = Field(
        default=None, gt=0, description="Pins the KV memory (bypasses the memory budget)."
    )
    dtype: ModelDType = Field(default="half", description="Activation dtype; no bf16 on SM70.")
    attention_backend: str = Field(
        default="FLASH_ATTN_V100", description="Attention backend; FLASH_ATTN_V100 on SM70."
    )
    tensor_parallel_size: int = Field(default=1, ge=1, le=16, description="GPUs per model.")
    limit_mm_per_prompt: dict[str, Annotated[int, Field(ge=0)]] = Field(
        default_factory=lambda: {"image": 8}, description="Multimodal items per prompt."
    )
    tool_call_parser: str | None = Field(
        default="qwen3_coder", description="Tool-call parser; null disables auto tool choice."
    )
    reasoning_parser: str | None = Field(
        default="qwen3", description="Puts the reasoning into reasoning_content."
    )
    enable_thinking: bool = Field(
        default=True, description="Thinking by default (per request: chat_template_kwargs)."
    )
    sampling: SamplingDefaults = Field(
        default=SamplingDefaults(), description="Recommended sampling, as generation config."
    )
    enforce_eager: bool = Field(default=True, description="No CUDA graphs (unstable on V100).")
    enable_prefix_caching: bool = Field(
        default=True, description="Prefix caching; also 2 GDN state pages per request."
    )
    trust_remote_code: bool = Field(default=True, description="Load the model's own code.")
    extra_args: list[str] = Field(
        default_factory=list, description="More vLLM flags, for options without a key here."
    )

    @field_validator("extra_args")
    @classmethod
    def check_extra_args(cls, args: list[str]) -> list[str]:
        owned = sorted({a.split("=", 1)[0] for a in args} & set(FLAGS_OWNED_BY_OPTIONS))
        if owned:
            raise ValueError(
                f"{', '.join(owned)} may not be given in serving.extra_args: each is set by its "
                "own typed key (serving.<name>), and the API key only through api_key"
            )
        return args


class ReadinessConfig(_Strict):
    """The gate at the end of `pulumi up`."""

    timeout_seconds: int = Field(
        default=1200, ge=30, le=7200, description="How long `up` waits for the server."
    )
    interval_seconds: int = Field(default=10, ge=1, le=300, description="Seconds between polls.")
    via: ReadinessVia = Field(
        default="auto", description="Where the check runs: auto, local or host."
    )


class StackConfig(_Strict):
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
