"""Readiness gate: wait until a vLLM OpenAI-compatible server really serves the model.

It polls GET /v1/models until the server answers, then checks that the served model is
listed with the configured max_model_len, that a request without the API key is refused
with 401, and that a chat completion to "1+1=?" comes back non-empty.

This file is also a standalone script (stdlib + requests only, Python >= 3.11). It is shipped
as source text and run inside the engine container when the server listens on loopback only:

    python3 -c "$SOURCE" --url http://127.0.0.1:8000 --model qwen3.8-27b \\
        --max-model-len 180000 --timeout 1200 --interval 10  <<< "$API_KEY"

so it must never import from the rest of the project. The API key comes from stdin only
(argv shows up in `ps`). Progress goes to stderr, one verdict line to stdout; exit status
0 ready, 1 not ready, 2 bad usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

DEFAULT_TIMEOUT_SECONDS = 1200.0
DEFAULT_INTERVAL_SECONDS = 10.0
# Listing the models is instant on a serving vLLM; a slower answer means "not up yet".
DEFAULT_REQUEST_TIMEOUT_SECONDS = 10.0
# The first completion after start-up may JIT-compile SM70 kernels before it answers.
DEFAULT_ANSWER_TIMEOUT_SECONDS = 300.0

MODELS_PATH = "/v1/models"
CHAT_PATH = "/v1/chat/completions"
PROBE_QUESTION = "1+1=?"
PROBE_MAX_TOKENS = 64
SNIPPET_CHARS = 200
ANSWER_CHARS = 60
REDACTED = "[redacted]"

EXIT_READY = 0
EXIT_NOT_READY = 1

# requests wraps the socket error several layers deep; only its text names the cause.
# Each marker maps to a fixed phrase so that no server- or exception-supplied text is shown.
CONNECTION_ERROR_PHRASES = (
    ("Connection refused", "connection refused"),
    ("Connection reset", "connection reset"),
    ("RemoteDisconnected", "connection closed without an answer"),
    ("No route to host", "no route to host"),
    ("Network is unreachable", "network unreachable"),
    ("NameResolutionError", "host name does not resolve"),
)

Clock = Callable[[], float]
Sleep = Callable[[float], None]
Report = Callable[[str], None]


@dataclass(frozen=True)
class ReadinessTarget:
    """Where the server is (its root, without /v1) and what it must serve."""

    base_url: str
    served_model_name: str
    max_model_len: int

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {self.base_url!r}")
        if self.base_url.rstrip("/").endswith("/v1"):
            raise ValueError(f"url must be the server root without /v1, got {self.base_url!r}")
        if not self.served_model_name:
            raise ValueError("the served model name must not be empty")
        if self.max_model_len <= 0:
            raise ValueError(f"max_model_len must be > 0, got {self.max_model_len!r}")

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path


@dataclass(frozen=True)
class ReadinessPolicy:
    """How long to wait overall, how often to poll, and how long one request may take."""

    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    interval_seconds: float = DEFAULT_INTERVAL_SECONDS
    request_timeout_seconds: float = DEFAULT_REQUEST_TIMEOUT_SECONDS
    answer_timeout_seconds: float = DEFAULT_ANSWER_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        for option in dataclasses.fields(self):
            value = getattr(self, option.name)
            if not value > 0:  # written this way round so that NaN is rejected too
                raise ValueError(f"{option.name} must be > 0, got {value!r}")


@dataclass(frozen=True)
class ReadinessResult:
    ready: bool
    message: str
    elapsed_seconds: float
    listed_max_model_len: int | None = None
    answer: str | None = None


DEFAULT_POLICY = ReadinessPolicy()


class _NotReady(Exception):
    """A check failed for good; carries the reason. Never escapes check_readiness."""


def print_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def check_readiness(
    target: ReadinessTarget,
    api_key: str,
    policy: ReadinessPolicy = DEFAULT_POLICY,
    *,
    session: requests.Session | None = None,
    clock: Clock = time.monotonic,
    sleep: Sleep = time.sleep,
    report: Report = print_progress,
) -> ReadinessResult:
    """Wait for the server, then check it. What the server does is reported, never raised.

    Raises ValueError only for a malformed api_key (its value is never shown). Without a
    session, one is made that ignores proxy variables and ~/.netrc (see _isolated_session).
    """
    _require_valid_api_key(api_key)
    http = session if session is not None else _isolated_session()
    gate = _Gate(
        target=target,
        api_key=api_key,
        policy=policy,
        session=http,
        clock=clock,
        sleep=sleep,
        report=lambda line: report(_redact(line, api_key)),
    )
    try:
        return gate.run()
    finally:
        if session is None:
            http.close()


def verdict_line(result: ReadinessResult) -> str:
    return f"{'ready' if result.ready else 'not ready'}: {result.message}"


@dataclass
class _Gate:
    target: ReadinessTarget
    api_key: str = field(repr=False)
    policy: ReadinessPolicy
    session: requests.Session
    clock: Clock
    sleep: Sleep
    report: Report
    started: float = 0.0
    listed_max_model_len: int | None = None
    answer: str | None = None

    def run(self) -> ReadinessResult:
        self.started = self.clock()
        try:
            self._check_listing(self._wait_for_model_list())
            self._check_key_enforced()
            self.answer = self._ask_probe_question()
        except _NotReady as failure:
            return self._result(ready=False, message=str(failure))
        return self._result(ready=True, message=self._ready_message())

    def _wait_for_model_list(self) -> Any:
        url = self.target.url(MODELS_PATH)
        limit = self.policy.timeout_seconds
        while True:
            seen = self._poll_models_once()
            elapsed = self._elapsed()
            if isinstance(seen, requests.Response):
                # Says why nothing moves while the first completion may take minutes.
                self.report(f"{url} answered after {_seconds(elapsed)}: checking the server")
                return _json_body(seen, f"GET {url}")
            self.report(f"waiting for {url} ({_seconds(elapsed)}/{_seconds(limit)}): {seen}")
            if elapsed >= limit:
                raise _NotReady(f"timed out after {_seconds(elapsed)}, last seen: {seen}")
            self.sleep(min(self.policy.interval_seconds, limit - elapsed))

    def _poll_models_once(self) -> requests.Response | str:
        """The 200 answer, or what was seen instead; fails at once where waiting cannot help."""
        url = self.target.url(MODELS_PATH)
        try:
            response = self._get_models(with_key=True)
        except requests.RequestException as error:
            return _describe_request_error(error, self.policy.request_timeout_seconds)
        status = response.status_code
        if status == 200:
            return response
        if status >= 500:
            return f"HTTP {status}: {_snippet(response)}"
        if status in (401, 403):
            raise _NotReady(f"GET {url} with the API key answered HTTP {status}: wrong API key")
        raise _NotReady(f"GET {url} answered HTTP {status}: {_snippet(response)} (not vLLM?)")

    def _check_listing(self, body: Any) -> None:
        listed = _listed_max_model_lens(body)
        name, expected = self.target.served_model_name, self.target.max_model_len
        wanted = f"model {name!r} with max_model_len {expected}"
        if name not in listed:
            raise _NotReady(f"expected {wanted}, {MODELS_PATH} lists {_describe(listed)}")
        self.listed_max_model_len = listed[name]
        if listed[name] != expected:
            raise _NotReady(f"expected {wanted}, the server lists max_model_len {listed[name]}")

    def _check_key_enforced(self) -> None:
        what = f"GET {MODELS_PATH} without the API key"
        try:
            response = self._get_models(with_key=False)
        except requests.RequestException as error:
            timeout = self.policy.request_timeout_seconds
            raise self._stopped_answering(what, error, timeout) from None
        if response.status_code == 200:
            raise _NotReady(f"the API key is not enforced: {what} answered HTTP 200")
        if response.status_code != 401:
            status, snippet = response.status_code, _snippet(response)
            raise _NotReady(f"{what} answered HTTP {status}, expected 401: {snippet}")

    def _ask_probe_question(self) -> str:
        what = f"POST {CHAT_PATH}"
        try:
            response = self.session.post(
                self.target.url(CHAT_PATH),
                headers=self._auth_headers(),
                json=_probe_request(self.target.served_model_name),
                timeout=self.policy.answer_timeout_seconds,
            )
        except requests.RequestException as error:
            timeout = self.policy.answer_timeout_seconds
            raise self._stopped_answering(what, error, timeout) from None
        if response.status_code != 200:
            status, snippet = response.status_code, _snippet(response)
            raise _NotReady(f"{what} answered HTTP {status}, expected 200: {snippet}")
        answer = _answer_text(_json_body(response, what))
        if not answer:
            raise _NotReady(f"{what} returned an empty answer to {PROBE_QUESTION!r}")
        return answer

    def _get_models(self, *, with_key: bool) -> requests.Response:
        return self.session.get(
            self.target.url(MODELS_PATH),
            headers=self._auth_headers() if with_key else {},
            timeout=self.policy.request_timeout_seconds,
        )

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def _stopped_answering(
        self, what: str, error: requests.RequestException, timeout_seconds: float
    ) -> _NotReady:
        cause = _describe_request_error(error, timeout_seconds)
        return _NotReady(
            f"the server listed the model, then stopped answering (crashed? see the engine log): "
            f"{what}: {cause}"
        )

    def _ready_message(self) -> str:
        answer = _shorten(" ".join((self.answer or "").split()), ANSWER_CHARS)
        return (
            f"{self.target.served_model_name!r} at {self.target.base_url} lists max_model_len "
            f"{self.listed_max_model_len}, enforces the API key and answered {answer!r} "
            f"after {_seconds(self._elapsed())}"
        )

    def _result(self, *, ready: bool, message: str) -> ReadinessResult:
        return ReadinessResult(
            ready=ready,
            message=_redact(message, self.api_key),
            elapsed_seconds=self._elapsed(),
            listed_max_model_len=self.listed_max_model_len,
            answer=None if self.answer is None else _redact(self.answer, self.api_key),
        )

    def _elapsed(self) -> float:
        return self.clock() - self.started


def _isolated_session() -> requests.Session:
    session = requests.Session()
    # requests would replace the Bearer header with Basic auth from a matching ~/.netrc entry,
    # and a firewalled host's proxy variables must not catch loopback traffic. A caller that
    # needs a proxy passes its own session.
    session.trust_env = False
    return session


def _require_valid_api_key(api_key: str) -> None:
    # The value is never quoted: these messages end up in logs.
    if not api_key:
        raise ValueError("the API key is empty")
    if not (api_key.isascii() and api_key.isprintable()) or " " in api_key:
        raise ValueError(
            "the API key must be printable ASCII without spaces or line breaks (value not shown)"
        )


def _probe_request(model: str) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": PROBE_QUESTION}],
        "max_tokens": PROBE_MAX_TOKENS,
        "temperature": 0,
        # Qwen3.x thinks by default and would spend the few tokens allowed on reasoning.
        "chat_template_kwargs": {"enable_thinking": False},
    }


def _listed_max_model_lens(body: Any) -> dict[str, int | None]:
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        raise _NotReady(f"GET {MODELS_PATH} answered 200 without a 'data' list (not vLLM?)")
    return {
        str(entry.get("id")): _int_or_none(entry.get("max_model_len"))
        for entry in entries
        if isinstance(entry, dict)
    }


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _describe(listed: dict[str, int | None]) -> str:
    if not listed:
        return "no model"
    return ", ".join(f"{name!r} (max_model_len {length})" for name, length in listed.items())


def _answer_text(body: Any) -> str:
    try:
        message = body["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        message = None
    if not isinstance(message, dict):
        raise _NotReady(f"POST {CHAT_PATH} answered 200 without choices[0].message")
    # With a reasoning parser a short answer may sit in reasoning_content, which newer
    # vLLM releases call reasoning.
    for key in ("content", "reasoning_content", "reasoning"):
        text = message.get(key)
        if isinstance(text, str) and text.strip():
            return text.strip()
    return ""


def _json_body(response: requests.Response, what: str) -> Any:
    try:
        return response.json()
    except ValueError:
        raise _NotReady(f"{what} answered 200 with a body that is not JSON") from None


def _describe_request_error(error: requests.RequestException, timeout_seconds: float) -> str:
    # The exception's own text is never shown: a fixed phrase is enough and cannot leak.
    if isinstance(error, requests.ConnectTimeout):
        return f"no connection within {_seconds(timeout_seconds)}"
    if isinstance(error, requests.ReadTimeout):
        return f"no answer within {_seconds(timeout_seconds)}"
    text = str(error)
    for marker, phrase in CONNECTION_ERROR_PHRASES:
        if marker in text:
            return phrase
    return f"request failed ({type(error).__name__})"


def _snippet(response: requests.Response) -> str:
    return _shorten(" ".join(response.text.split()), SNIPPET_CHARS) or "(empty body)"


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _redact(text: str, secret: str) -> str:
    # Servers and proxies sometimes quote the request headers back in error pages.
    return text.replace(secret, REDACTED)


def _seconds(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"


def _argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        # Run as `python -c SOURCE`, argv[0] would be "-c".
        prog="readiness.py",
        description="Wait until a vLLM OpenAI-compatible server serves the model. "
        "The API key is read from stdin, never from the command line or the environment.",
    )
    parser.add_argument("--url", required=True, help="server root, e.g. http://127.0.0.1:8000")
    parser.add_argument("--model", required=True, help="served model name")
    parser.add_argument("--max-model-len", type=int, required=True, help="expected context")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS, help="seconds")
    parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_SECONDS, help="seconds")
    return parser


def main() -> int:
    parser = _argument_parser()
    args = parser.parse_args()
    try:
        target = ReadinessTarget(args.url, args.model, args.max_model_len)
        policy = ReadinessPolicy(timeout_seconds=args.timeout, interval_seconds=args.interval)
        api_key = sys.stdin.read().strip()
        _require_valid_api_key(api_key)
    except ValueError as error:
        parser.error(str(error))  # exits with status 2
    result = check_readiness(target, api_key, policy)
    print(verdict_line(result), flush=True)
    return EXIT_READY if result.ready else EXIT_NOT_READY


if __name__ == "__main__":
    sys.exit(main())
