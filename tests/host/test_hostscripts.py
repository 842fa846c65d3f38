"""components/hostscripts.py: the command strings, and that every script answers bad
arguments with its usage line over SSH."""

from __future__ import annotations

import shlex

import pytest

from components.hostscripts import available_scripts, remote_command, script_text
from tests.host.conftest import FakeHost

SCRIPTS = available_scripts()


def test_the_command_is_bash_c_with_the_script_text_and_quoted_args() -> None:
    args = ("--gpu-name", "Tesla V100-SXM2-32GB", "--code", "print('it''s $HOME')")
    words = shlex.split(remote_command("preflight", *args, sudo=False))
    assert words == ["bash", "-c", script_text("preflight"), "preflight.sh", *args]


def test_sudo_never_prompts() -> None:
    command = remote_command("remove-unit", "a", sudo=True)
    assert command.startswith("sudo -n bash -c ")
    assert shlex.split(command)[:3] == ["sudo", "-n", "bash"]


@pytest.mark.parametrize("name", ["nope", "../host/preflight", "preflight.sh"])
def test_an_unknown_script_is_rejected_with_the_known_ones(name: str) -> None:
    with pytest.raises(ValueError, match=r"unknown host script .*'preflight'"):
        script_text(name)


@pytest.mark.parametrize("script", SCRIPTS)
def test_no_arguments_prints_usage_and_exits_2(gpu_host: FakeHost, script: str) -> None:
    result = gpu_host.run(script)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"usage: {script}.sh ")
    assert result.stdout == ""
    assert gpu_host.calls() == []
