"""A local stand-in for a Hugging Face hub mirror: just what snapshot_download and the
downloader's file-list check ask for.

- GET /api/models/{repo}/revision/{rev}  model info with siblings (older huggingface_hub
  lists files this way; the downloader's check does too)
- GET /api/models/{repo}/tree/{rev}      the file list newer huggingface_hub reads
- HEAD/GET /{repo}/resolve/{rev}/{path}  X-Repo-Commit, ETag, Content-Length; Range on GET

It can cut a file's first GET half-way (the client sees a short body), refuse the retries
after such a cut, or answer everything with one status (401 for the xet/mirror case).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")
SERVICE_UNAVAILABLE = 503


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_lfs(name: str) -> bool:
    """The hub stores weights through Git LFS and lists their sha256."""
    return name.endswith(".safetensors")


def lfs_info(name: str, data: bytes) -> dict[str, object] | None:
    if not is_lfs(name):
        return None
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}


@dataclass
class FakeHub:
    repo: str
    revision: str
    files: dict[str, bytes]
    # Files whose first GET delivers half the body, then the connection is closed.
    cut_once: set[str] = field(default_factory=set)
    # After a cut, answer that file's GETs with 503 (the run then fails for good).
    refuse_after_cut: bool = False
    # Answer every request with this status (401: what the firewall does to xet).
    status: int | None = None
    requests: list[Request] = field(default_factory=list)
    url: str = ""
    _cut_done: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def gets(self, path: str) -> list[Request]:
        return [r for r in self.requests if r.method == "GET" and r.path.endswith("/" + path)]

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def take_cut(self, path: str) -> bool:
        """True for the one GET of `path` that is to be cut."""
        with self._lock:
            if path in self.cut_once and path not in self._cut_done:
                self._cut_done.add(path)
                return True
            return False

    def refused(self, path: str) -> bool:
        with self._lock:
            return self.refuse_after_cut and path in self._cut_done

    def model_info(self) -> dict[str, object]:
        siblings = [
            {
                "rfilename": name,
                "size": len(data),
                "blobId": git_blob_id(data),
                "lfs": lfs_info(name, data),
            }
            for name, data in sorted(self.files.items())
        ]
        return {"id": self.repo, "modelId": self.repo, "sha": self.revision, "siblings": siblings}

    def tree(self) -> list[dict[str, object]]:
        return [
            {"type": "file", "path": name, "size": len(data), "oid": git_blob_id(data)}
            for name, data in sorted(self.files.items())
        ]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HubServer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test asserts on hub.requests instead."""

    def do_HEAD(self) -> None:
        self.route(body=False)

    def do_GET(self) -> None:
        self.route(body=True)

    def route(self, *, body: bool) -> None:
        hub = self.server.hub
        path = unquote(urlsplit(self.path).path)
        hub.record(Request(self.command, path, self.headers.get("Range")))
        if hub.status is not None:
            return self.send_json(hub.status, {"error": "Unauthorized"})
        api = f"/api/models/{hub.repo}/"
        resolve = f"/{hub.repo}/resolve/{hub.revision}/"
        if path == f"{api}revision/{hub.revision}":
            return self.send_json(200, hub.model_info())
        if path == f"{api}tree/{hub.revision}":
            return self.send_json(200, hub.tree())
        if path.startswith(resolve) and path[len(resolve) :] in hub.files:
            return self.send_file(path[len(resolve) :], body=body)
        return self.send_json(404, {"error": f"not found: {path}"}, error_code="EntryNotFound")

    def send_json(self, status: int, payload: object, error_code: str | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if error_code:
            self.send_header("X-Error-Code", error_code)
        self.end_headers()
        self.wfile.write(data)

    def send_file(self, name: str, *, body: bool) -> None:
        hub = self.server.hub
        data = hub.files[name]
        if body and hub.refused(name):
            return self.send_json(SERVICE_UNAVAILABLE, {"error": "mirror overloaded"})
        start, end = self.requested_range(len(data))
        partial = (start, end) != (0, len(data))
        self.send_response(206 if partial else 200)
        self.send_header("X-Repo-Commit", hub.revision)
        self.send_header("ETag", f'"{git_blob_id(data)}"')
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start))
        if partial:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.end_headers()
        if not body:
            return None
        if hub.take_cut(name):
            self.wfile.write(data[start : start + (end - start) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return None
        self.wfile.write(data[start:end])
        return None

    def requested_range(self, size: int) -> tuple[int, int]:
        match = RANGE.match(self.headers.get("Range") or "")
        if not match:
            return 0, size
        last = int(match.group(2)) + 1 if match.group(2) else size
        return int(match.group(1)), min(last, size)


class _HubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, hub: FakeHub) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hub = hub


@contextmanager
def serve(hub: FakeHub) -> Iterator[FakeHub]:
    server = _HubServer(hub)
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
