"""Time `python -m components plan` as a user runs it, and `make_plan` in process.

Run from the project directory: `python -m bench.plan_bench [--runs 20] [--loops 200]`.
Prints median and p95 per stack file; asserts nothing (speed targets live here, not in tests).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from components.config.load import load_stack
from components.facts import plan_input
from components.planner.plan import make_plan

PROJECT_DIR = Path(__file__).resolve().parent.parent
STACKS = ("dev", "ctx180k", "ctx256k")
CLI = [sys.executable, "-m", "components", "plan"]


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summary(samples_seconds: list[float]) -> str:
    milliseconds = [s * 1000 for s in samples_seconds]
    median, p95 = statistics.median(milliseconds), percentile(milliseconds, 0.95)
    return f"median {median:8.3f} ms   p95 {p95:8.3f} ms   (n={len(milliseconds)})"


def timed(action: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return samples


def run_cli(stack: str) -> None:
    result = subprocess.run(
        [*CLI, "--stack", stack, "--json"],
        cwd=PROJECT_DIR,
        capture_output=True,
        check=False,
    )
    if result.returncode not in (0, 1):  # 1 is "does not fit", a valid answer
        raise SystemExit(f"{stack}: exit {result.returncode}\n{result.stderr.decode()}")


def bench_stack(stack: str, runs: int, loops: int) -> None:
    inp = plan_input(load_stack(stack))
    rows = {
        "python -m components plan --json": timed(lambda: run_cli(stack), runs),
        "load + make_plan (in process)": timed(
            lambda: make_plan(plan_input(load_stack(stack))), loops
        ),
        "make_plan (in process)": timed(lambda: make_plan(inp), loops),
    }
    print(stack)
    for name, samples in rows.items():
        print(f"  {name:<38} {summary(samples)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="fresh processes per stack")
    parser.add_argument("--loops", type=int, default=200, help="in-process calls per stack")
    args = parser.parse_args()
    for stack in STACKS:
        bench_stack(stack, args.runs, args.loops)


if __name__ == "__main__":
    main()
