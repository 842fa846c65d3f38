"""How it serves: the vLLM server section and the readiness gate."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from components.config.base import Strict

ModelDType = Literal["auto", "half", "float16", "bfloat16", "float", "float32"]
KVCacheDType = Literal["auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"]
ReadinessVia = Literal["auto", "local", "host"]

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


class SamplingProfile(Strict):
    temperature: float = Field(ge=0, le=2, description="Sampling temperature.")
    top_p: float = Field(gt=0, le=1, description="Nucleus sampling probability mass.")
    top_k: int = Field(ge=-1, description="Top-k cut-off (-1: off).")
    presence_penalty: float = Field(default=0.0, ge=-2, le=2, description="Presence penalty.")


class SamplingDefaults(Strict):
    """Recommended sampling, applied as the server's generation-config override."""

    thinking: SamplingProfile = Field(
        default=SamplingProfile(temperature=1.0, top_p=0.95, top_k=20),
        description="Server default sampling when thinking is on.",
    )
    instruct: SamplingProfile = Field(
        default=SamplingProfile(temperature=0.7, top_p=0.8, top_k=20, presence_penalty=1.5),
        description="Server default sampling when thinking is off.",
    )


class ServingConfig(Strict):
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


class ReadinessConfig(Strict):
    """The gate at the end of `pulumi up`."""

    timeout_seconds: int = Field(
        default=1200, ge=30, le=7200, description="How long `up` waits for the server."
    )
    interval_seconds: int = Field(default=10, ge=1, le=300, description="Seconds between polls.")
    via: ReadinessVia = Field(
        default="auto", description="Where the check runs: auto, local or host."
    )
