"""The vLLM server process: its full argv and its (non-secret) environment.

Every flag is derived from the typed config; the SM70 choices are explained where they
are made. The API key is not here: the entrypoint reads it from the mounted env file.
"""

from __future__ import annotations

import json
from typing import Any

from components.config.model import StackConfig
from components.config.releases import ENGINE_RELEASES
from components.config.serving import SamplingProfile
from components.render.layout import (
    API_KEY_ENV_VAR,
    API_KEY_PLACEHOLDER,
    HF_CACHE_MOUNT,
    SERVER_MODULE,
    VENV_PYTHON,
    model_snapshot_dir,
    snapshot_dir,
)

# The switch each checkpoint format needs on SM70, and the error it fixes.
TURBOMIND_SWITCH = {
    # compressed-tensors W4A16 otherwise fails: "Quantization scheme is not supported ...
    # Min capability: 75".
    "awq_w4a16": "VLLM_SM70_COMPRESSED_TENSORS_TURBOMIND",
    # NVFP4 runs as TurboMind W4A16 on SM70 (on by default; pinned so it cannot drift).
    "nvfp4": "VLLM_SM70_NVFP4_TURBOMIND",
}


def server_environment(cfg: StackConfig) -> dict[str, str]:
    release = ENGINE_RELEASES[cfg.engine.version]
    env = {
        TURBOMIND_SWITCH[cfg.model.format]: "1",
        "TORCH_CUDA_ARCH_LIST": "7.0",  # the JIT target: Volta
        "HF_HOME": HF_CACHE_MOUNT,
        "HF_HUB_OFFLINE": "1",  # the snapshot is local; the server never downloads
    }
    if release.needs_gdn_full_forward:
        env["VLLM_SM70_QWEN_GDN_FULL_FORWARD"] = "1"  # GDN layers crashed on SM70 without it
    return dict(sorted(env.items()))


def rendered_env_file(cfg: StackConfig) -> str:
    """vllm.env as `render` shows it: the environment, the secret as a placeholder."""
    env = {**server_environment(cfg), API_KEY_ENV_VAR: API_KEY_PLACEHOLDER}
    return "".join(f"{key}={value}\n" for key, value in env.items())


def server_argv(cfg: StackConfig) -> list[str]:
    """The full argv of the server process inside the container."""
    return [
        VENV_PYTHON,
        "-m",
        SERVER_MODULE,
        *_model_args(cfg),
        *_memory_args(cfg),
        *_sm70_args(cfg),
        *_api_args(cfg),
        *cfg.serving.extra_args,
    ]


def _model_args(cfg: StackConfig) -> list[str]:
    serving = cfg.serving
    args = [
        "--model",
        model_snapshot_dir(cfg.model),
        "--served-model-name",
        serving.served_model_name,
    ]
    if serving.trust_remote_code:
        args.append("--trust-remote-code")
    args += ["--tensor-parallel-size", str(serving.tensor_parallel_size)]
    if cfg.model.drafter is not None:
        args += ["--speculative-config", _json(_speculative_config(cfg))]
    return args


def _speculative_config(cfg: StackConfig) -> dict[str, Any]:
    drafter = cfg.model.drafter
    assert drafter is not None
    return {
        "method": drafter.method,
        "model": snapshot_dir(drafter.repo, drafter.revision),
        "num_speculative_tokens": drafter.num_speculative_tokens,
    }


def _memory_args(cfg: StackConfig) -> list[str]:
    serving = cfg.serving
    args = [
        "--gpu-memory-utilization", _number(serving.gpu_memory_utilization),
        "--max-model-len", str(serving.max_model_len),
        "--max-num-seqs", str(serving.max_num_seqs),
        "--max-num-batched-tokens", str(serving.max_num_batched_tokens),
        "--kv-cache-dtype", serving.kv_cache_dtype,
    ]  # fmt: skip
    if serving.kv_cache_memory_bytes is not None:
        args += ["--kv-cache-memory-bytes", str(serving.kv_cache_memory_bytes)]
    # Prefix caching also decides how many Gated DeltaNet state pages a request holds
    # (mamba cache mode "align": two), so it is always stated, never left to a default.
    args.append(
        "--enable-prefix-caching" if serving.enable_prefix_caching else "--no-enable-prefix-caching"
    )
    return args


def _sm70_args(cfg: StackConfig) -> list[str]:
    serving = cfg.serving
    args = [
        "--dtype", serving.dtype,  # V100 has no bf16
        "--attention-backend", serving.attention_backend,  # stock FlashAttention lacks SM70
    ]  # fmt: skip
    if serving.enforce_eager:
        args.append("--enforce-eager")  # CUDA graphs are unstable on V100 with this fork
    return args


def _api_args(cfg: StackConfig) -> list[str]:
    serving = cfg.serving
    args: list[str] = []
    if serving.tool_call_parser:
        args += ["--enable-auto-tool-choice", "--tool-call-parser", serving.tool_call_parser]
    if serving.reasoning_parser:
        args += ["--reasoning-parser", serving.reasoning_parser]
    args += [
        "--limit-mm-per-prompt", _json(serving.limit_mm_per_prompt),
        "--default-chat-template-kwargs", _json({"enable_thinking": serving.enable_thinking}),
        "--override-generation-config", _json(_sampling(cfg)),
        "--host", serving.host,
        "--port", str(serving.port),
    ]  # fmt: skip
    return args


def _sampling(cfg: StackConfig) -> dict[str, float | int]:
    """The recommended sampling for the server's default mode (thinking or instruct)."""
    sampling = cfg.serving.sampling
    profile: SamplingProfile = (
        sampling.thinking if cfg.serving.enable_thinking else sampling.instruct
    )
    values = profile.model_dump()
    if not values["presence_penalty"]:
        del values["presence_penalty"]
    return values


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _number(value: float) -> str:
    return f"{value:g}"
