"""Fixtures of the readiness tests (the fake vLLM server fixture is in tests/conftest.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.readiness.fake_vllm import TEST_API_KEY


@pytest.fixture
def api_key() -> str:
    return TEST_API_KEY


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]
