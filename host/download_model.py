"""Download one pinned model snapshot into the Hugging Face cache and check it is whole.

Runs in the engine image as `python - --repo ORG/NAME --revision COMMIT --max-workers 4`,
fed on stdin by download-model.sh; HF_HOME, HF_ENDPOINT and HF_HUB_DISABLE_XET come from
the container's environment. Stdlib and huggingface_hub only.

The snapshot goes into the default cache layout (HF_HOME/hub/models--ORG--NAME/
snapshots/COMMIT/), the directory vLLM is pointed at. A re-run keeps every file already
complete; within a run, a connection cut mid-file is resumed with an HTTP Range request.
(A partial file left by a killed run is resumed by huggingface_hub up to 1.17 only; from
1.18 on that file starts over.) Prints the snapshot directory as the only stdout line; on
failure one line on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from huggingface_hub import HfApi, constants, snapshot_download
from huggingface_hub.utils import HfHubHTTPError, disable_progress_bars

COMMIT = re.compile(r"^[0-9a-f]{40}$")
# How a 401 reads in the hub's errors and in hf_xet's ("CAS Client Error: 401 Unauthorized").
UNAUTHORIZED = re.compile(r"\b401\b.*unauthorized|unauthorized.*\b401\b", re.IGNORECASE)
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
# vLLM is pointed at the snapshot directory: without config.json it is not a model.
REQUIRED_FILE = "config.json"
HTTP_UNAUTHORIZED = 401


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


def hub_file_sizes(repo: str, revision: str) -> dict[str, int | None]:
    info = HfApi().model_info(repo, revision=revision, files_metadata=True)
    return {sibling.rfilename: sibling.size for sibling in info.siblings or []}


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


def verify_snapshot(snapshot: Path, repo: str, revision: str) -> None:
    problems = snapshot_problems(snapshot, hub_file_sizes(repo, revision))
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
    snapshot = Path(snapshot_download(repo, revision=revision, max_workers=max_workers))
    verify_snapshot(snapshot, repo, revision)
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
