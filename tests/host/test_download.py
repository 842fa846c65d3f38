"""host/download_model.py against a local fake hub, and host/download-model.sh over SSH."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.host.conftest import REPO_ROOT, FakeHost
from tests.host.fakehub import FakeHub, serve

DOWNLOADER = (REPO_ROOT / "host/download_model.py").read_text(encoding="utf-8")
REPO = "philbert440/Qwen3.8-27B-W4A16-AWQ"
REVISION = "7908d42a71077a5e4dc458f273682b12dfe384a0"
IMAGE = "qwen38-vllm:1.2.2"
VOLUME = "qwen38-hf-cache"
CONTAINER_SNAPSHOT = (
    "/root/.cache/huggingface/hub/models--philbert440--Qwen3.8-27B-W4A16-AWQ/snapshots/" + REVISION
)
# Larger than huggingface_hub's 10 MiB download chunk, so that a cut half-way leaves a whole
# chunk on disk and the retry has something to resume from.
BIG_FILE_BYTES = 24 << 20


def model_files() -> dict[str, bytes]:
    rng = random.Random(38)
    return {
        "config.json": json.dumps({"architectures": ["Qwen3_8ForConditionalGeneration"]}).encode(),
        "tokenizer.json": b'{"version": "1.0"}',
        "model.safetensors": rng.randbytes(BIG_FILE_BYTES),
        "model-mtp.safetensors": rng.randbytes(1 << 20),
    }


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with serve(FakeHub(REPO, REVISION, model_files())) as running:
        yield running


def download(
    hub: FakeHub, hf_home: Path, revision: str = REVISION, xet_disabled: bool = True
) -> subprocess.CompletedProcess[str]:
    """Runs the downloader as the container does: `python - ARGS`, the program on stdin."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env |= {"HF_HOME": str(hf_home), "HF_ENDPOINT": hub.url}
    if xet_disabled:
        env["HF_HUB_DISABLE_XET"] = "1"
    return subprocess.run(
        [sys.executable, "-", "--repo", REPO, "--revision", revision, "--max-workers", "4"],
        input=DOWNLOADER, capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def snapshot_dir(hf_home: Path) -> Path:
    return hf_home / "hub/models--philbert440--Qwen3.8-27B-W4A16-AWQ/snapshots" / REVISION


def part_file(hf_home: Path, name: str) -> Path:
    """Where the downloader keeps a large file while it is incomplete: blobs/<sha256>.part."""
    sha256 = hashlib.sha256(model_files()[name]).hexdigest()
    return hf_home / "hub/models--philbert440--Qwen3.8-27B-W4A16-AWQ/blobs" / f"{sha256}.part"


def assert_snapshot_matches(hub: FakeHub, snapshot: Path) -> None:
    for name, data in hub.files.items():
        assert (snapshot / name).read_bytes() == data, f"{name} differs from the hub's bytes"


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_downloads_verifies_and_prints_the_snapshot(hub: FakeHub, tmp_path: Path) -> None:
    done = download(hub, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{snapshot_dir(tmp_path)}\n"
    assert_snapshot_matches(hub, snapshot_dir(tmp_path))


def test_a_cut_connection_is_resumed_with_a_range_request(hub: FakeHub, tmp_path: Path) -> None:
    hub.cut_once = {"model.safetensors"}
    done = download(hub, tmp_path)
    assert done.returncode == 0, done.stderr
    first, retry = hub.gets("model.safetensors")
    match = re.fullmatch(r"bytes=(\d+)-", retry.range or "")
    assert first.range is None and match, f"expected a Range retry, got {retry.range!r}"
    assert 0 < int(match.group(1)) < BIG_FILE_BYTES
    assert_snapshot_matches(hub, snapshot_dir(tmp_path))


def test_a_failed_run_is_resumed_by_the_next(hub: FakeHub, tmp_path: Path) -> None:
    """The mirror gives out half-way through the 18.7 GB file: the run fails, and the next
    run continues from the byte where it stopped instead of starting over."""
    hub.cut_once, hub.refuse_after_cut = {"model.safetensors"}, True
    failed = download(hub, tmp_path)
    assert failed.returncode == 1 and failed.stdout == ""
    assert last_line(failed.stderr).startswith("download_model: model.safetensors: no progress")
    assert "503" in last_line(failed.stderr) and "run it again" in last_line(failed.stderr)
    kept = part_file(tmp_path, "model.safetensors").stat().st_size
    assert 0 < kept < BIG_FILE_BYTES
    hub.refuse_after_cut = False
    seen = len(hub.requests)
    done = download(hub, tmp_path)
    assert done.returncode == 0, done.stderr
    again = [
        r
        for r in hub.requests[seen:]
        if r.method == "GET" and r.path.endswith("/model.safetensors")
    ]
    assert [r.range for r in again] == [f"bytes={kept}-"], "resumed at the byte it stopped"
    assert not hub.gets("model-mtp.safetensors")[1:], "a complete file is not fetched again"
    assert_snapshot_matches(hub, snapshot_dir(tmp_path))


def test_a_killed_run_leaves_a_part_file_that_is_resumed(hub: FakeHub, tmp_path: Path) -> None:
    data = hub.files["model.safetensors"]
    part = part_file(tmp_path, "model.safetensors")
    part.parent.mkdir(parents=True)
    part.write_bytes(data[: len(data) // 3])
    done = download(hub, tmp_path)
    assert done.returncode == 0, done.stderr
    assert [r.range for r in hub.gets("model.safetensors")] == [f"bytes={len(data) // 3}-"]
    assert_snapshot_matches(hub, snapshot_dir(tmp_path))
    assert not part.exists(), "the part file becomes the blob"


def test_a_corrupt_part_file_fails_its_sha256_and_is_removed(hub: FakeHub, tmp_path: Path) -> None:
    data = hub.files["model.safetensors"]
    part = part_file(tmp_path, "model.safetensors")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"\0" * (len(data) // 2))
    done = download(hub, tmp_path)
    assert done.returncode == 1
    assert "does not match the hub's" in last_line(done.stderr)
    assert not part.exists(), "a corrupt partial download must not be resumed again"
    assert download(hub, tmp_path).returncode == 0, "the next run starts clean and succeeds"
    assert_snapshot_matches(hub, snapshot_dir(tmp_path))


def test_a_damaged_file_is_reported_against_the_hub_list(hub: FakeHub, tmp_path: Path) -> None:
    assert download(hub, tmp_path).returncode == 0
    blob = (snapshot_dir(tmp_path) / "model.safetensors").resolve()
    os.truncate(blob, BIG_FILE_BYTES // 2)
    done = download(hub, tmp_path)
    assert done.returncode == 1
    assert f"model.safetensors has {BIG_FILE_BYTES // 2} bytes, the hub lists {BIG_FILE_BYTES}" in (
        last_line(done.stderr)
    )


def test_a_repo_without_config_json_is_refused(tmp_path: Path) -> None:
    files = {k: v for k, v in model_files().items() if k != "config.json"}
    with serve(FakeHub(REPO, REVISION, files)) as running:
        done = download(running, tmp_path)
    assert done.returncode == 1
    assert "config.json missing" in last_line(done.stderr)


@pytest.mark.parametrize(
    ("xet_disabled", "advice"),
    [(False, "set HF_HUB_DISABLE_XET=1 (the xet protocol"), (True, "HF_HUB_DISABLE_XET=1 already")],
    ids=["xet-on", "xet-off"],
)
def test_unauthorized_names_the_xet_switch_and_the_endpoint(
    hub: FakeHub, tmp_path: Path, xet_disabled: bool, advice: str
) -> None:
    hub.status = 401
    done = download(hub, tmp_path, xet_disabled=xet_disabled)
    line = last_line(done.stderr)
    assert done.returncode == 1
    assert f"401 Unauthorized from {hub.url}" in line and advice in line, line
    assert "HF_ENDPOINT" in line, line


def test_a_branch_is_not_a_pinned_revision(hub: FakeHub, tmp_path: Path) -> None:
    done = download(hub, tmp_path, revision="main")
    assert done.returncode == 2
    assert "--revision must be a 40-hex commit" in done.stderr
    assert hub.requests == []


def download_sh(host: FakeHost, revision: str = REVISION) -> list[str]:
    return [
        "--image", IMAGE, "--volume", VOLUME, "--endpoint", "https://hf-mirror.example",
        "--repo", REPO, "--revision", revision, "--max-workers", "4",
    ]  # fmt: skip


def test_download_sh_runs_the_downloader_in_the_engine_image(gpu_host: FakeHost) -> None:
    gpu_host.set_scenario(run={"stdout": f"{CONTAINER_SNAPSHOT}\n", "stderr": "", "exit": 0})
    result = gpu_host.run("download-model", *download_sh(gpu_host), stdin=DOWNLOADER)
    assert result.returncode == 0, result.stderr
    assert last_line(result.stdout) == CONTAINER_SNAPSHOT
    [call] = gpu_host.calls("docker")
    assert call["argv"] == [
        "run", "--rm", "-i", "--entrypoint", "/opt/venv/bin/python",
        "-v", f"{VOLUME}:/root/.cache/huggingface",
        "-e", "HF_HOME=/root/.cache/huggingface",
        "-e", "HF_ENDPOINT=https://hf-mirror.example",
        "-e", "HF_HUB_DISABLE_XET=1",
        IMAGE, "-", "--repo", REPO, "--revision", REVISION, "--max-workers", "4",
    ]  # fmt: skip
    assert call["stdin"] == DOWNLOADER, "the downloader did not arrive on the container's stdin"


def test_download_sh_passes_the_downloader_failure_on(gpu_host: FakeHost) -> None:
    error = "download_model: 401 Unauthorized from https://hf-mirror.example: set ...\n"
    gpu_host.set_scenario(run={"stdout": "", "stderr": error, "exit": 1})
    result = gpu_host.run("download-model", *download_sh(gpu_host), stdin=DOWNLOADER)
    assert result.returncode == 1
    assert result.stderr == error


def test_download_sh_refuses_an_unpinned_revision(gpu_host: FakeHost) -> None:
    result = gpu_host.run("download-model", *download_sh(gpu_host, "main"), stdin=DOWNLOADER)
    assert result.returncode == 2
    assert "--revision must be a 40-hex commit" in result.stderr
    assert gpu_host.calls() == []
