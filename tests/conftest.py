"""Fixtures shared by several test packages."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.readiness.fake_vllm import FakeVllm, Scenario


@pytest.fixture
def start_fake_vllm() -> Iterator[Callable[..., FakeVllm]]:
    """start_fake_vllm(listen_after_seconds=0.0, **Scenario fields) -> a running FakeVllm."""
    servers: list[FakeVllm] = []

    def start(listen_after_seconds: float = 0.0, **scenario: Any) -> FakeVllm:
        server = FakeVllm(Scenario(**scenario), listen_after_seconds)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
