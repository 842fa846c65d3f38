"""Download one pinned model snapshot into the Hugging Face cache and check it is whole.

Runs in the engine image as `python - --repo ORG/NAME --revision COMMIT --max-workers 4`,
fed on stdin by download-model.sh; HF_HOME, HF_ENDPOINT and HF_HUB_DISABLE_XET come from
the container's environment. Stdlib and huggingface_hub only.

The snapshot goes into the default cache layout (HF_HOME/hub/models--ORG--NAME/
snapshots/COMMIT/), the directory vLLM is pointed at. The large (LFS) files - one of them
is 18.7 GB - are fetched here, not by huggingface_hub: into blobs/<sha256>.part, resumed
with an HTTP Range request after a cut connection and after a killed or failed run (recent
huggingface_hub restarts a half-finished file from zero), checked against the sha256 the
hub lists, then linked into the snapshot as huggingface_hub itself would. snapshot_download
then fetches the small files and finds the large ones in place. Prints the snapshot
directory as the only stdout line; on failure one line on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import os
import re
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from huggingface_hub import HfApi, constants, hf_hub_url, snapshot_download
from huggingface_hub.file_download import repo_folder_name
from huggingface_hub.utils import HfHubHTTPError, build_hf_headers, disable_progress_bars

COMMIT = re.compile(r"^[0-9a-f]{40}$")
# How a 401 reads in the hub's errors and in hf_xet's ("CAS Client Error: 401 Unauthorized").
UNAUTHORIZED = re.compile(r"\b401\b.*unauthorized|unauthorized.*\b401\b", re.IGNORECASE)
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
# vLLM is pointed at the snapshot directory: without config.json it is not a model.
REQUIRED_FILE = "config.json"
HTTP_UNAUTHORIZED = 401
HTTP_PARTIAL_CONTENT = 206
HTTP_RANGE_NOT_SATISFIABLE = 416
CHUNK_BYTES = 8 << 20
# Attempts in a row that add no byte before the run gives up (it can be re-run later).
STALLED_ATTEMPTS = 5
RETRY_PAUSE_SECONDS = 2.0
REQUEST_TIMEOUT_SECONDS = 60
PROGRESS_EVERY_BYTES = 1 << 30


class DownloadError(Exception):
    """A failure explained in one line for the Pulumi error message."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="download_model.py", description="Download and verify one pinned model snapshot."
    )
    parser.add_argument("--repo", required=True, help="ORG/NAME on the hub")
    parser.add_argument("--revision", required=True, help="the pinned 40-hex commit")
    parser.add_argument("--max-workers", type=int, default=4, help="files downloaded at once")
    args = parser.parse_args(argv)
    if not REPO_ID.match(args.repo):
        parser.error(f"--repo must be ORG/NAME, got {args.repo!r}")
    # A commit, not a branch: the snapshot directory is then known before the download and
    # a re-run cannot drift to newer files.
    if not COMMIT.match(args.revision):
        parser.error(f"--revision must be a 40-hex commit, got {args.revision!r}")
    if args.max_workers < 1:
        parser.error(f"--max-workers must be at least 1, got {args.max_workers}")
    return args


def is_unauthorized(error: Exception) -> bool:
    """A 401 from the hub API, or from the xet transfer ("CAS Client Error: 401")."""
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None)
    return status == HTTP_UNAUTHORIZED or UNAUTHORIZED.search(str(error)) is not None


def unauthorized_hint() -> str:
    endpoint = constants.ENDPOINT
    if os.environ.get("HF_HUB_DISABLE_XET") != "1":
        return (
            f"401 Unauthorized from {endpoint}: set HF_HUB_DISABLE_XET=1 (the xet protocol "
            "fails behind the firewall with 'CAS Client Error: 401') and point HF_ENDPOINT "
            "at the mirror"
        )
    return (
        f"401 Unauthorized from {endpoint} with HF_HUB_DISABLE_XET=1 already set: check that "
        "HF_ENDPOINT is the mirror and that the repository is public"
    )


def describe(error: Exception, repo: str, revision: str) -> str:
    if is_unauthorized(error):
        return unauthorized_hint()
    first_line = (str(error).strip().splitlines() or [""])[0]
    where = f"{repo}@{revision} from {constants.ENDPOINT}"
    if isinstance(error, HfHubHTTPError):
        return f"the hub failed {where}: {first_line}"
    return (
        f"download of {where} failed ({type(error).__name__}: {first_line}); "
        "run it again: complete files are kept"
    )


@dataclass(frozen=True)
class LargeFile:
    """An LFS file as the hub lists it: the cache stores it as blobs/<sha256>."""

    name: str
    size: int
    sha256: str


@dataclass(frozen=True)
class HubListing:
    sizes: dict[str, int | None]
    large_files: list[LargeFile]


def hub_listing(repo: str, revision: str) -> HubListing:
    info = HfApi().model_info(repo, revision=revision, files_metadata=True)
    siblings = info.siblings or []
    return HubListing(
        sizes={sibling.rfilename: sibling.size for sibling in siblings},
        large_files=[
            LargeFile(sibling.rfilename, sibling.lfs.size, sibling.lfs.sha256)
            for sibling in siblings
            if sibling.lfs is not None
        ],
    )


def repo_cache(repo: str) -> Path:
    return Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo, repo_type="model")


def fetch_large_file(repo: str, revision: str, large: LargeFile) -> None:
    """blobs/<sha256>, resumed from blobs/<sha256>.part, then the snapshot's link to it."""
    cache = repo_cache(repo)
    pointer = cache / "snapshots" / revision / large.name
    blob = cache / "blobs" / large.sha256
    if pointer.exists():
        return
    if not blob.is_file():
        part = blob.with_name(blob.name + ".part")
        part.parent.mkdir(parents=True, exist_ok=True)
        fill_part(hf_hub_url(repo, large.name, revision=revision), part, large)
        check_sha256(part, large)
        part.rename(blob)
    pointer.parent.mkdir(parents=True, exist_ok=True)
    if pointer.is_symlink():
        pointer.unlink()  # dangling: its blob was removed
    pointer.symlink_to(os.path.relpath(blob, pointer.parent))


def fill_part(url: str, part: Path, large: LargeFile) -> None:
    stalled = 0
    while (have := part.stat().st_size if part.exists() else 0) < large.size:
        try:
            append_from(url, part, have, large)
            stalled = 0
        except (OSError, http.client.HTTPException) as error:
            grown = part.exists() and part.stat().st_size > have
            stalled = 0 if grown else stalled + 1
            if stalled >= STALLED_ATTEMPTS:
                raise DownloadError(
                    f"{large.name}: no progress in {STALLED_ATTEMPTS} attempts at byte {have} "
                    f"of {large.size} ({error}); run it again: it resumes from there"
                ) from None
            time.sleep(RETRY_PAUSE_SECONDS)


def append_from(url: str, part: Path, offset: int, large: LargeFile) -> None:
    """One request: bytes from `offset` appended to the part file (or all, if no Range)."""
    headers = dict(build_hf_headers())
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS)
    except urllib.error.HTTPError as error:
        if error.code == HTTP_RANGE_NOT_SATISFIABLE and offset >= large.size:
            return
        raise
    with response:
        resumed = offset and response.status == HTTP_PARTIAL_CONTENT
        with part.open("ab" if resumed else "wb") as sink:
            copy_with_progress(response, sink, offset if resumed else 0, large)


def copy_with_progress(source: BinaryIO, sink: BinaryIO, start: int, large: LargeFile) -> None:
    done, reported = start, start
    while chunk := source.read(CHUNK_BYTES):
        sink.write(chunk)
        done += len(chunk)
        if done - reported >= PROGRESS_EVERY_BYTES:
            print(f"download_model: {large.name} {done}/{large.size} bytes", file=sys.stderr)
            reported = done
    if done < large.size:
        raise http.client.IncompleteRead(b"", large.size - done)


def check_sha256(part: Path, large: LargeFile) -> None:
    digest = hashlib.sha256()
    with part.open("rb") as source:
        while chunk := source.read(CHUNK_BYTES):
            digest.update(chunk)
    if digest.hexdigest() != large.sha256:
        part.unlink()
        raise DownloadError(
            f"{large.name}: sha256 {digest.hexdigest()} does not match the hub's {large.sha256}; "
            "the partial file was removed, run it again"
        )


def snapshot_problems(snapshot: Path, expected: dict[str, int | None]) -> list[str]:
    """What in the snapshot differs from the hub's file list: missing files, wrong sizes."""
    problems = []
    for name, size in sorted(expected.items()):
        path = snapshot / name
        if not path.is_file():
            problems.append(f"{name} missing")
        elif size is not None and path.stat().st_size != size:
            problems.append(f"{name} has {path.stat().st_size} bytes, the hub lists {size}")
    if REQUIRED_FILE not in expected and not (snapshot / REQUIRED_FILE).is_file():
        problems.append(f"{REQUIRED_FILE} missing (not a model repository?)")
    return problems


def verify_snapshot(snapshot: Path, repo: str, revision: str, listing: HubListing) -> None:
    problems = snapshot_problems(snapshot, listing.sizes)
    if problems:
        raise DownloadError(
            f"snapshot {snapshot} does not match the hub's file list for {repo}@{revision}: "
            + "; ".join(problems)
            + " (remove those files' snapshot links and blobs, then run the download again)"
        )


def download(repo: str, revision: str, max_workers: int) -> Path:
    print(
        f"download_model: {repo}@{revision} from {constants.ENDPOINT} into "
        f"{constants.HF_HUB_CACHE} ({max_workers} workers)",
        file=sys.stderr,
    )
    listing = hub_listing(repo, revision)
    for large in listing.large_files:
        fetch_large_file(repo, revision, large)
    snapshot = Path(snapshot_download(repo, revision=revision, max_workers=max_workers))
    verify_snapshot(snapshot, repo, revision, listing)
    return snapshot


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    # Progress bars would flood the captured output of a ~20 GB download.
    disable_progress_bars()
    try:
        snapshot = download(args.repo, args.revision, args.max_workers)
    except DownloadError as error:
        print(f"download_model: {error}", file=sys.stderr)
        return 1
    except Exception as error:
        # The boundary of the program: one line for the Pulumi error, not a traceback.
        print(f"download_model: {describe(error, args.repo, args.revision)}", file=sys.stderr)
        return 1
    print(snapshot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
