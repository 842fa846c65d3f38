"""`python -m components plan`: exit codes, outputs, and user mistakes without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.cli.plan import main

PROJECT_DIR = Path(__file__).resolve().parents[2]


def run_plan(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_fitting_stack_exits_0_with_the_kv_cache_size(capsys):
    status, out, _ = run_plan(capsys, "--stack", "ctx180k")
    assert status == 0, f"ctx180k fits: expected exit 0, got {status}"
    assert "GPU KV cache size: 239,504 tokens" in out, out


def test_refused_length_exits_1_with_the_message_and_settings(capsys):
    status, out, _ = run_plan(capsys, "--stack", "dev", "--set", "serving.max_model_len=262144")
    assert status == 1, f"262,144 at 0.90 does not fit: expected exit 1, got {status}"
    assert "8.33 GiB of KV cache is needed" in out and "189728" in out, out
    assert "--set serving.gpu_memory_utilization=0.98" in out, out


def test_json_is_one_object(capsys):
    status, out, _ = run_plan(
        capsys,
        "--stack",
        "ctx256k",
        "--json",
        "--grid",
        "--set",
        "serving.gpu_memory_utilization=0.95",
    )
    document = json.loads(out)
    assert status == 1 and document["fits"] is False, "262,144 at 0.95 does not fit"
    assert document["max_model_len_fit"] == 243_040, f"got {document['max_model_len_fit']}"
    assert len(document["grid"]["max_model_len_fit"]) == len(document["grid"]["utilizations"])


def test_grid_marks_the_current_settings(capsys):
    _, out, _ = run_plan(capsys, "--stack", "ctx180k", "--grid")
    assert "243,040*" in out, out


def test_pinned_kv_memory_from_the_command_line(capsys):
    status, out, _ = run_plan(
        capsys,
        "--stack",
        "ctx180k",
        "--json",
        "--set",
        f"serving.kv_cache_memory_bytes={161 * 51380224}",
    )
    document = json.loads(out)
    assert (status, document["kv_capacity_tokens"]) == (0, 239_504), document
    assert document["kv_cache_memory_pinned"] is True


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--stack", "no-such-stack"], "does not exist"),
        (["--stack", "dev", "--set", "serving.max_model_len=abc"], "serving.max_model_len"),
        (["--stack", "dev", "--set", "serving.nonsense=1"], "unknown key"),
        (["--stack", "dev", "--set", "novalue"], "expected dotted.key=value"),
        (
            ["--stack", "dev", "--set", "model.config_path=/nonexistent/config.json"],
            "does not exist",
        ),
    ],
)
def test_user_mistakes_exit_2_with_a_message(capsys, argv, expected):
    status, _, err = run_plan(capsys, *argv)
    assert status == 2, f"{argv}: expected exit 2, got {status}"
    assert expected in err and "Traceback" not in err, err


def test_a_config_json_without_layer_counts_exits_2(capsys, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["X"], "num_attention_heads": 8}))
    status, _, err = run_plan(capsys, "--stack", "dev", "--set", f"model.config_path={config}")
    assert status == 2 and "num_hidden_layers" in err, err


@pytest.mark.skipif(
    not (PROJECT_DIR / "components" / "cli" / "render.py").exists(),
    reason="components/cli/render.py is not written yet: python -m components cannot import",
)
def test_python_dash_m_components_plan_runs_in_a_fresh_process():
    result = subprocess.run(
        [sys.executable, "-m", "components", "plan", "--stack", "ctx180k", "--json"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["kv_capacity_tokens"] == 239_504
