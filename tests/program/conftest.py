from __future__ import annotations

import pytest

from tests.program.harness import ProgramRun, run_program

STACKS = ("dev", "ctx180k", "ctx256k")
_RUNS: dict[str, ProgramRun] = {}


def stack_run(stack: str) -> ProgramRun:
    """One preview run per stack file, shared by the tests that only read it."""
    if stack not in _RUNS:
        _RUNS[stack] = run_program(stack)
    return _RUNS[stack]


@pytest.fixture(params=STACKS)
def any_stack(request: pytest.FixtureRequest) -> tuple[str, ProgramRun]:
    return request.param, stack_run(request.param)


@pytest.fixture
def ctx180k() -> ProgramRun:
    return stack_run("ctx180k")


@pytest.fixture
def ctx256k() -> ProgramRun:
    return stack_run("ctx256k")
