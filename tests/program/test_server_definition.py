"""The server container each stack file registers: argv, environment, mounts, options.

The expected argv is written out here by hand from the field's launch command in
DEPLOYMENT-NOTES.md (plus what the managed service adds: the reasoning parser, the
thinking default and the recommended sampling), not computed by the code under test.
"""

from __future__ import annotations

import pytest

from tests.program.harness import ProgramRun

CONTAINER = "docker:index/container:Container"
SNAPSHOT = (
    "/root/.cache/huggingface/hub/models--philbert440--Qwen3.8-27B-W4A16-AWQ/snapshots/"
    "7908d42a71077a5e4dc458f273682b12dfe384a0"
)


def expected_argv(max_model_len: str, utilization: str, batched: str) -> list[str]:
    return [
        "/opt/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server",
        "--model", SNAPSHOT,
        "--served-model-name", "qwen3.8-27b",
        "--trust-remote-code",
        "--tensor-parallel-size", "1",
        "--gpu-memory-utilization", utilization,
        "--max-model-len", max_model_len,
        "--max-num-seqs", "1",
        "--max-num-batched-tokens", batched,
        "--kv-cache-dtype", "fp8_e5m2",
        "--enable-prefix-caching",
        "--dtype", "half",
        "--attention-backend", "FLASH_ATTN_V100",
        "--enforce-eager",
        "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder",
        "--reasoning-parser", "qwen3",
        "--limit-mm-per-prompt", '{"image":8}',
        "--default-chat-template-kwargs", '{"enable_thinking":true}',
        "--override-generation-config", '{"temperature":1.0,"top_k":20,"top_p":0.95}',
        "--host", "0.0.0.0",
        "--port", "8000",
    ]  # fmt: skip


EXPECTED_ARGV = {
    "dev": expected_argv("65536", "0.9", "8192"),
    "ctx180k": expected_argv("180000", "0.95", "8192"),
    "ctx256k": expected_argv("262144", "0.98", "2048"),
}

EXPECTED_ENV = [
    "HF_HOME=/root/.cache/huggingface",
    "HF_HUB_OFFLINE=1",
    "TORCH_CUDA_ARCH_LIST=7.0",
    "VLLM_SM70_COMPRESSED_TENSORS_TURBOMIND=1",
    "VLLM_SM70_QWEN_GDN_FULL_FORWARD=1",
]


def container(run: ProgramRun) -> dict:
    return run.one(CONTAINER).plain


def test_argv_is_the_field_command_for_each_profile(any_stack: tuple[str, ProgramRun]) -> None:
    stack, run = any_stack
    got = container(run)["command"]
    assert got == EXPECTED_ARGV[stack], f"{stack}: argv differs:\n{got}"


def test_environment_carries_the_sm70_switches_and_no_key(
    any_stack: tuple[str, ProgramRun],
) -> None:
    stack, run = any_stack
    assert container(run)["envs"] == EXPECTED_ENV, stack


def test_entrypoint_loads_the_key_from_the_mounted_file(ctx180k: ProgramRun) -> None:
    props = container(ctx180k)
    assert props["entrypoints"] == ["/usr/local/bin/with-api-key"]
    mounts = {m["target"]: m for m in props["mounts"]}
    assert mounts["/run/secrets/qwen38.env"] == {
        "target": "/run/secrets/qwen38.env",
        "type": "bind",
        "source": "/etc/qwen38/vllm.env",
        "readOnly": True,
    }
    assert mounts["/root/.cache/huggingface"] == {
        "target": "/root/.cache/huggingface",
        "type": "volume",
        "source": "qwen38-hf-cache",
        "readOnly": True,
    }, "the model cache must be mounted read-only"


def test_container_is_left_to_systemd(ctx180k: ProgramRun) -> None:
    props = container(ctx180k)
    assert props["start"] is False and props["mustRun"] is False, "systemd starts the container"
    assert props["restart"] == "no", "Docker must not restart what systemd restarts"
    assert props["gpus"] == "all"
    assert props["name"] == "qwen38"


def test_network_mode_is_explicit_so_previews_stay_quiet(ctx180k: ProgramRun) -> None:
    # An unset network_mode diffs on every preview against Docker >= 26 ("bridge" vs
    # "default"); host networking also keeps vLLM's own --host/--port meaningful.
    props = container(ctx180k)
    assert props["networkMode"] == "host"
    assert props["ipcMode"] == "host"


def test_container_replacement_deletes_first(ctx180k: ProgramRun) -> None:
    request = ctx180k.one(CONTAINER).request
    assert request.deleteBeforeReplace, "a fixed container name needs delete-before-replace"


@pytest.mark.parametrize(
    ("overrides", "present", "absent"),
    [
        ({"serving.enable_thinking": False}, '{"enable_thinking":false}', 'top_p":0.95'),
        ({"serving.tool_call_parser": None}, "--reasoning-parser", "--enable-auto-tool-choice"),
        ({"serving.enable_prefix_caching": False}, "--no-enable-prefix-caching", None),
        ({"serving.kv_cache_memory_bytes": 8_000_000_000}, "8000000000", None),
    ],
)
def test_flags_follow_the_typed_config(overrides: dict, present: str, absent: str | None) -> None:
    from tests.program.harness import run_program

    argv = container(run_program("ctx180k", overrides))["command"]
    joined = " ".join(argv)
    assert present in joined, f"{present!r} missing from {argv}"
    if absent:
        assert absent not in joined, f"{absent!r} should be gone from {argv}"


def test_instruct_mode_uses_the_instruct_sampling() -> None:
    from tests.program.harness import run_program

    argv = container(run_program("ctx180k", {"serving.enable_thinking": False}))["command"]
    value = argv[argv.index("--override-generation-config") + 1]
    assert value == '{"presence_penalty":1.5,"temperature":0.7,"top_k":20,"top_p":0.8}'


def test_nvfp4_on_1_5_0_switches_turbomind_for_nvfp4() -> None:
    from tests.program.harness import run_program

    run = run_program(
        "ctx180k",
        {
            "engine.version": "1.5.0",
            "model.repo": "QUASAR-QAT/Qwen3.8-27B-QUASAR-NVFP4",
            "model.format": "nvfp4",
            "serving.max_model_len": 65536,
        },
    )
    envs = container(run)["envs"]
    assert "VLLM_SM70_NVFP4_TURBOMIND=1" in envs
    assert "VLLM_SM70_COMPRESSED_TENSORS_TURBOMIND=1" not in envs


def test_the_registered_unit_verifies_and_is_installed_from_stdin(ctx180k: ProgramRun) -> None:
    from tests.host.systemd import verify_unit

    install = ctx180k.one("command:remote:Command", "qwen38-unit-install").plain
    verify_unit(install["stdin"])
    assert "install-unit.sh qwen38.service /etc/systemd/system --restart" in install["create"]
    assert (
        "remove-unit.sh qwen38.service /etc/systemd/system /etc/qwen38/vllm.env"
        in install["delete"]
    )


def test_the_registered_image_build(ctx180k: ProgramRun) -> None:
    image = ctx180k.one("docker:index/image:Image").plain
    assert image["build"]["context"] == "./image"
    assert image["build"]["dockerfile"] == "./image/Dockerfile"
    assert image["build"]["args"] == {
        "ENGINE_VERSION": "1.2.2",
        "WHEEL_URL": "https://github.com/1CatAI/1Cat-vLLM/releases/download/v1.2.2/"
        "1cat_vllm-1.2.2-cp312-cp312-linux_x86_64.whl",
        "WHEEL_SHA256": "8a628983ad9d675559910372643220c418b307ddc7fd52ac65a7f5fbcb104bc6",
        "TORCH_INDEX_URL": "https://download.pytorch.org/whl/cu128",
    }
    assert image["skipPush"] is True
    assert image["imageName"].startswith("qwen38-vllm:1.2.2-")
    container = ctx180k.one(CONTAINER).plain
    assert container["image"] == image["imageName"], "the server runs the image just built"
