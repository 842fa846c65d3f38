"""host/preflight.sh, run over SSH against the fake GPU host."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.host.conftest import FakeHost, Result
from tests.host.standins import DEFAULT_GPU

V100 = "Tesla V100-SXM2-32GB"
VOLUME = "qwen38-hf-cache"
IMAGE = "qwen38-vllm:1.2.2"
GIB = 1 << 30
EXPECTED_OUTPUT = (
    "gpu_name=Tesla V100-SXM2-32GB\n"
    "gpu_memory_mib=32768\n"
    "driver_version=525.105.17\n"
    "compute_cap=7.0\n"
    "gpu_count=1\n"
)


def preflight(host: FakeHost, need_bytes: int = 1 << 20, *extra: str) -> Result:
    return host.run(
        "preflight",
        "--gpu-name", V100, "--min-driver", "525.60.13",
        "--need-bytes", str(need_bytes), "--cache-volume", VOLUME, *extra,
    )  # fmt: skip


def gpu(**changes: str) -> dict[str, str]:
    return DEFAULT_GPU | changes


def assert_fails_with(result: Result, message: str) -> None:
    lines = result.stderr.splitlines()
    assert result.returncode == 1, f"expected exit 1, got {result.returncode}: {result.stderr}"
    assert result.stdout == "", f"expected nothing on stdout, got {result.stdout!r}"
    assert len(lines) == 1, f"expected one line on stderr, got {lines}"
    assert lines[0].startswith("preflight: ") and message in lines[0], lines[0]


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(path).free


def fill_volume(host: FakeHost, size: int) -> None:
    """A volume holding `size` bytes (sparse: `du -sb` counts them, the disk does not)."""
    mountpoint = host.root / "var/lib/docker/volumes" / VOLUME / "_data"
    blob = mountpoint / "hub/models--org--name/blobs/0123"
    blob.parent.mkdir(parents=True)
    subprocess.run(["truncate", "-s", str(size), str(blob)], check=True)
    host.set_scenario(volumes={VOLUME: str(mountpoint)})


def test_passes_on_the_v100_and_prints_its_facts(gpu_host: FakeHost) -> None:
    result = preflight(gpu_host)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED_OUTPUT


def test_passes_at_the_driver_floor(gpu_host: FakeHost) -> None:
    gpu_host.set_scenario(gpus=[gpu(driver_version="525.60.13")])
    result = preflight(gpu_host)
    assert result.returncode == 0, result.stderr
    assert "driver_version=525.60.13\n" in result.stdout


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ({"gpus": []}, "nvidia-smi lists no GPU (No devices were found)"),
        ({"gpus": [gpu(name="Tesla T4")]}, "GPU 0 is 'Tesla T4', not the configured"),
        ({"gpus": [gpu(), gpu(name="Tesla T4")]}, "GPU 1 is 'Tesla T4'"),
        ({"gpus": [gpu(driver_version="470.182.03")]}, "driver 470.182.03 is older than 525.60.13"),
        ({"gpus": [gpu(driver_version="525.60.12")]}, "driver 525.60.12 is older than 525.60.13"),
        ({"docker_daemon": False}, "the Docker daemon does not answer (Cannot connect"),
        ({"runtimes": ["io.containerd.runc.v2", "runc"]}, "nvidia runtime is not registered"),
    ],
    ids=["no-gpu-listed", "tesla-t4", "mixed-gpus", "driver-470", "driver-below-floor",
         "docker-daemon-down", "no-nvidia-runtime"],
)  # fmt: skip
def test_fails_on_a_host_that_does_not_fit(
    gpu_host: FakeHost, scenario: dict[str, Any], message: str
) -> None:
    gpu_host.set_scenario(**scenario)
    assert_fails_with(preflight(gpu_host), message)


@pytest.mark.parametrize(
    ("tool", "message"),
    [("nvidia-smi", "nvidia-smi not found"), ("docker", "docker not found")],
)
def test_fails_when_a_tool_is_missing(gpu_host: FakeHost, tool: str, message: str) -> None:
    gpu_host.remove_standin(tool)
    assert_fails_with(preflight(gpu_host), message)


def test_fails_when_the_disk_is_too_small(gpu_host: FakeHost) -> None:
    need = free_bytes(gpu_host.docker_root) + GIB
    result = preflight(gpu_host, need)
    assert_fails_with(result, f"free at {gpu_host.docker_root}")
    assert "still needed" in result.stderr and f"by volume {VOLUME}" in result.stderr


def test_counts_what_the_cache_volume_already_holds(gpu_host: FakeHost) -> None:
    fill_volume(gpu_host, 2 * GIB)
    # Only about 1 GiB beyond the free space is needed, and the volume holds 2 GiB of it.
    result = preflight(gpu_host, free_bytes(gpu_host.docker_root) + GIB)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED_OUTPUT


def test_counts_the_engine_image_when_named(gpu_host: FakeHost) -> None:
    need = free_bytes(gpu_host.docker_root) + GIB
    gpu_host.set_scenario(images={IMAGE: str(2 * GIB)})
    assert preflight(gpu_host, need).returncode == 1
    result = preflight(gpu_host, need, "--image", IMAGE)
    assert result.returncode == 0, result.stderr


def test_writes_nothing_and_answers_the_same_twice(gpu_host: FakeHost) -> None:
    before = gpu_host.files_state()
    first, second = preflight(gpu_host), preflight(gpu_host)
    assert (first.returncode, first.stdout) == (0, EXPECTED_OUTPUT), first.stderr
    assert (second.returncode, second.stdout) == (0, EXPECTED_OUTPUT), second.stderr
    assert gpu_host.files_state() == before
    commands = {tuple(argv[:2]) for argv in gpu_host.argvs("docker")}
    assert commands == {("info", "--format"), ("volume", "inspect")}, commands
    assert gpu_host.calls("systemctl") == []


GOOD_HEAD = ("--gpu-name", V100, "--min-driver", "525")


@pytest.mark.parametrize(
    "args",
    [
        (),
        (*GOOD_HEAD, "--need-bytes", "lots", "--cache-volume", VOLUME),
        (*GOOD_HEAD, "--need-bytes", "1", "--cache-volume"),
        (*GOOD_HEAD, "--need-bytes", "1", "--volume", VOLUME),
        ("--gpu-name", V100, "--min-driver", "r525", "--need-bytes", "1", "--cache-volume", VOLUME),
    ],
    ids=["none", "bad-need-bytes", "missing-value", "unknown-option", "bad-driver-version"],
)
def test_bad_arguments_print_usage(gpu_host: FakeHost, args: tuple[str, ...]) -> None:
    result = gpu_host.run("preflight", *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1].startswith("usage: preflight.sh --gpu-name NAME")
    assert gpu_host.calls() == []
