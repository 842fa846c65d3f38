"""The texts deployed to the host, checked as text and with the tools that read them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from components.config.load import load_stack
from components.render.image import BUILD_CONTEXT, image_tag, rendered_dockerfile
from components.render.unit import render_unit
from tests.host.systemd import verify_unit

PROJECT_DIR = Path(__file__).resolve().parents[2]
STACKS = ("dev", "ctx180k", "ctx256k")


@pytest.mark.parametrize("stack", STACKS)
def test_unit_passes_systemd_analyze_verify(stack: str) -> None:
    verify_unit(render_unit(load_stack(stack)))


def test_unit_owns_the_container_lifecycle() -> None:
    unit = render_unit(load_stack("ctx180k"))
    for line in (
        "Requires=docker.service",
        "After=docker.service network-online.target",
        "ExecStart=/usr/bin/docker start --attach qwen38",
        "ExecStop=/usr/bin/docker stop --time 30 qwen38",
        "Restart=on-failure",
        "WantedBy=multi-user.target",
    ):
        assert re.search(rf"^{re.escape(line)}$", unit, re.MULTILINE), f"unit lacks {line!r}"


def test_dockerfile_encodes_every_container_fix() -> None:
    text = rendered_dockerfile(load_stack("ctx180k").engine)
    for needle in (
        "FROM ubuntu:24.04",  # glibc >= 2.38 for flash_attn_v100_cuda
        "build-essential",  # Triton: Failed to find C compiler
        "python3.12-dev",  # Python.h: No such file
        "python3.12-venv",
        "gcc-13",  # tilelang's nvcc host compiler; gcc 16 failed
        "cuda-nvcc-12-8",
        "cuda-cudart-dev-12-8",
        "CUDA_HOME=/usr/local/cuda-12.8",
        "TORCH_CUDA_ARCH_LIST=7.0",
        "sha256sum --check --strict",
        'ENTRYPOINT ["/usr/local/bin/with-api-key"]',
        "ARG WHEEL_SHA256=8a628983ad9d675559910372643220c418b307ddc7fd52ac65a7f5fbcb104bc6",
        "ARG WHEEL_URL=https://github.com/1CatAI/1Cat-vLLM/releases/download/v1.2.2/"
        "1cat_vllm-1.2.2-cp312-cp312-linux_x86_64.whl",
        "--extra-index-url",
    ):
        assert needle in text, f"Dockerfile lacks {needle!r}"


def test_sha_check_happens_before_install() -> None:
    text = rendered_dockerfile(load_stack("ctx180k").engine)
    assert text.index("sha256sum --check") < text.index("pip install")


def test_image_tag_changes_with_the_engine_only() -> None:
    ctx180k, ctx256k = load_stack("ctx180k"), load_stack("ctx256k")
    assert image_tag(ctx180k.engine) == image_tag(ctx256k.engine)
    bumped = load_stack("ctx180k", ["engine.version=1.5.0"])
    assert image_tag(bumped.engine) != image_tag(ctx180k.engine)
    assert image_tag(bumped.engine).startswith("qwen38-vllm:1.5.0-")


def test_entrypoint_script_is_shellcheck_clean() -> None:
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck is required (apt-get install -y shellcheck)"
    done = subprocess.run(
        [shellcheck, "-x", str(BUILD_CONTEXT / "with-api-key")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout


def test_entrypoint_loads_the_key_file_without_exposing_it(tmp_path: Path) -> None:
    """Run the entrypoint's logic with the secret path pointed at a temp file."""
    script = (BUILD_CONTEXT / "with-api-key").read_text()
    secret = tmp_path / "qwen38.env"
    secret.write_text("VLLM_API_KEY=sk-entrypoint-test\n")
    script = script.replace("/run/secrets/qwen38.env", str(secret))
    done = subprocess.run(
        ["sh", "-c", script, "with-api-key", "sh", "-c", 'printf %s "$VLLM_API_KEY"'],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "sk-entrypoint-test", "the key reaches the server's environment"


def render(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "components", "render", "--out", str(tmp_path), *args],
        capture_output=True,
        text=True,
        cwd=PROJECT_DIR,
        check=False,
    )


def test_render_writes_the_four_files(tmp_path: Path) -> None:
    done = render(tmp_path, "--stack", "ctx180k")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "Dockerfile",
        "qwen38.service",
        "vllm-args.json",
        "vllm.env",
    ]
    argv = json.loads((tmp_path / "vllm-args.json").read_text())
    assert argv[argv.index("--max-model-len") + 1] == "180000"
    env = (tmp_path / "vllm.env").read_text()
    assert "VLLM_API_KEY=<secret:" in env, "the key is a placeholder"
    assert "VLLM_SM70_COMPRESSED_TENSORS_TURBOMIND=1" in env
    verify_unit((tmp_path / "qwen38.service").read_text())


def test_render_refuses_what_the_program_refuses(tmp_path: Path) -> None:
    done = render(tmp_path / "out", "--stack", "ctx180k", "--set", "serving.max_model_len=262144")
    assert done.returncode == 1
    assert "refused [kv-cache-budget]" in done.stderr and "8.33 GiB" in done.stderr
    assert not (tmp_path / "out").exists(), "nothing is written for a refused stack"


def test_render_reports_bad_config_without_traceback(tmp_path: Path) -> None:
    done = render(tmp_path, "--stack", "ctx180k", "--set", "serving.port=0")
    assert done.returncode == 2
    assert "serving.port: must be at least 1, got 0" in done.stderr
    assert "Traceback" not in done.stderr


def test_render_unknown_stack(tmp_path: Path) -> None:
    done = render(tmp_path, "--stack", "nope")
    assert done.returncode == 2 and "Pulumi.nope.yaml" in done.stderr
