"""A real HTTP server on 127.0.0.1 that behaves like vLLM's OpenAI server, scenario by scenario."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Long and random-looking, so that a leaked fragment of it is found by the tests.
TEST_API_KEY = "tk-Q7vX2mZ9pL4wR8nBc3Yd"
SERVED_MODEL = "qwen3.8-27b"
SERVED_MAX_MODEL_LEN = 180000


@dataclass
class Scenario:
    api_key: str = TEST_API_KEY
    enforce_key: bool = True
    # (id, max_model_len) pairs that GET /v1/models lists once loaded.
    models: list[tuple[str, int]] = field(
        default_factory=lambda: [(SERVED_MODEL, SERVED_MAX_MODEL_LEN)]
    )
    # How many GET /v1/models answer 503 "loading" before the list is served.
    loading_answers: int = 0
    content: str | None = "2"
    reasoning_content: str | None = None
    # Stop listening right after the first model list is served, as a crashing engine does.
    crash_after_listing: bool = False
    # Quote the request's Authorization header in the 503 body, as some error pages do.
    echo_authorization: bool = False


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    authorization: str | None
    body: Any


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        fake = self.server.fake
        fake.record(self._seen(body=None))
        if self.path != "/v1/models":
            self._send(404, {"detail": "Not Found"})
        elif fake.take_loading_answer():
            self._send(503, {"error": self._loading_text()})
        elif not self._authorized():
            self._send(401, {"error": "Unauthorized"})
        else:
            if fake.scenario.crash_after_listing:
                fake.crash()  # the accepted connection still gets this answer
            self._send(200, fake.model_list())

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length", "0"))
        fake.record(self._seen(body=json.loads(self.rfile.read(length) or b"null")))
        if self.path != "/v1/chat/completions":
            self._send(404, {"detail": "Not Found"})
        elif not self._authorized():
            self._send(401, {"error": "Unauthorized"})
        else:
            self._send(200, fake.chat_completion())

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: pytest output stays readable."""

    def _seen(self, body: Any) -> SeenRequest:
        return SeenRequest(self.command, self.path, self.headers.get("Authorization"), body)

    def _authorized(self) -> bool:
        scenario = self.server.fake.scenario
        expected = f"Bearer {scenario.api_key}"
        return not scenario.enforce_key or self.headers.get("Authorization") == expected

    def _loading_text(self) -> str:
        if self.server.fake.scenario.echo_authorization:
            return f"model loading; request had Authorization: {self.headers.get('Authorization')}"
        return "model loading"

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    # Handler threads must not be joined on close: the crash scenario closes from one of them.
    daemon_threads = True
    fake: FakeVllm


class FakeVllm:
    """Binds a port at once; listens only after `listen_after_seconds` (refused until then)."""

    def __init__(self, scenario: Scenario, listen_after_seconds: float = 0.0) -> None:
        self.scenario = scenario
        self.seen: list[SeenRequest] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._serving = False
        self._server = _Server(("127.0.0.1", 0), _Handler, bind_and_activate=False)
        self._server.fake = self
        self._server.server_bind()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        if listen_after_seconds <= 0:
            self._listen()  # before the test's first request, not whenever the thread runs
        self._thread = threading.Thread(
            target=self._listen_then_serve, args=(listen_after_seconds,)
        )
        self._thread.start()

    def _listen(self) -> bool:
        with self._lock:
            if self._stopped.is_set():
                return False
            if not self._serving:
                self._server.server_activate()
                self._serving = True
            return True

    def _listen_then_serve(self, delay_seconds: float) -> None:
        if self._stopped.wait(delay_seconds) or not self._listen():
            return
        self._server.serve_forever(poll_interval=0.01)

    def record(self, request: SeenRequest) -> None:
        with self._lock:
            self.seen.append(request)

    def take_loading_answer(self) -> bool:
        with self._lock:
            if self.scenario.loading_answers <= 0:
                return False
            self.scenario.loading_answers -= 1
            return True

    def model_list(self) -> dict[str, Any]:
        entries = [
            {"id": name, "object": "model", "owned_by": "vllm", "max_model_len": length}
            for name, length in self.scenario.models
        ]
        return {"object": "list", "data": entries}

    def chat_completion(self) -> dict[str, Any]:
        message = {
            "role": "assistant",
            "content": self.scenario.content,
            "reasoning_content": self.scenario.reasoning_content,
        }
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return {"object": "chat.completion", "model": SERVED_MODEL, "choices": [choice]}

    def crash(self) -> None:
        """Stop accepting; later connections are refused."""
        self._server.shutdown()
        self._server.server_close()

    def close(self) -> None:
        with self._lock:
            self._stopped.set()
            serving = self._serving
        if serving:
            self._server.shutdown()
        self._thread.join(timeout=5)
        self._server.server_close()
