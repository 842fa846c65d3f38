"""Where things live on the host and in the container: one place for every path and name."""

from __future__ import annotations

from components.config.sections import ModelConfig

CONTAINER_NAME = "qwen38"
UNIT_NAME = "qwen38.service"
UNIT_DIR = "/etc/systemd/system"
ENV_DIR = "/etc/qwen38"
ENV_FILE = f"{ENV_DIR}/vllm.env"
# vLLM reads its bearer key from VLLM_API_KEY; the key never goes on a command line.
API_KEY_ENV_VAR = "VLLM_API_KEY"
API_KEY_PLACEHOLDER = "<secret: VLLM_API_KEY, installed in /etc/qwen38/vllm.env (mode 0600)>"

# In the container: the HF cache volume, mounted read-only for the server, read-write for
# the download job; and the key file, bind-mounted read-only and sourced by the entrypoint.
HF_CACHE_MOUNT = "/root/.cache/huggingface"
SECRET_MOUNT = "/run/secrets/qwen38.env"
VENV_PYTHON = "/opt/venv/bin/python"
ENTRYPOINT = "/usr/local/bin/with-api-key"
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
IMAGE_REPOSITORY = "qwen38-vllm"

# The engine image (Ubuntu 24.04, CUDA 12.8 compiler, torch 2.10, the wheel) is far
# larger than the checkpoint's share of the disk budget; a generous estimate keeps the
# preflight honest on a fresh host.
IMAGE_SIZE_BYTES_ESTIMATE = 25 * 10**9


def repo_cache_dir(repo: str) -> str:
    return "models--" + repo.replace("/", "--")


def snapshot_dir(repo: str, revision: str) -> str:
    """The directory vLLM is pointed at: the snapshot that holds config.json."""
    return f"{HF_CACHE_MOUNT}/hub/{repo_cache_dir(repo)}/snapshots/{revision}"


def model_snapshot_dir(model: ModelConfig) -> str:
    return snapshot_dir(model.repo, model.resolved_revision)
