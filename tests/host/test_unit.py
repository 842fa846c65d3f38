"""host/install-unit.sh and host/remove-unit.sh over SSH, and the unit text under
`systemd-analyze verify`."""

from __future__ import annotations

import stat

import pytest

from tests.host.conftest import FakeHost, Result
from tests.host.standins import SYSTEMD_STATE_DIR
from tests.host.systemd import UnitVerifyError, verify_unit

UNIT = "qwen38.service"
# Shaped like the unit the program deploys: systemd owns an existing container.
SAMPLE_UNIT = """\
[Unit]
Description=Qwen3.8-27B served by 1Cat-vLLM (OpenAI API on port 8000)
Requires=docker.service
After=docker.service network-online.target
Wants=network-online.target

[Service]
ExecStart=/usr/bin/docker start --attach qwen38
ExecStop=/usr/bin/docker stop --time 30 qwen38
Restart=on-failure
RestartSec=10

[Install]
WantedBy=multi-user.target
"""
CHANGED_UNIT = SAMPLE_UNIT.replace("RestartSec=10", "RestartSec=30")


def install(host: FakeHost, text: str, *flags: str) -> Result:
    return host.run("install-unit", UNIT, str(host.unit_dir), *flags, stdin=text)


def remove(host: FakeHost) -> Result:
    return host.run("remove-unit", UNIT, str(host.unit_dir), str(host.env_file))


def systemctl_since(host: FakeHost, start: int) -> list[list[str]]:
    return host.argvs("systemctl")[start:]


def running_text(host: FakeHost) -> str | None:
    running = host.root / SYSTEMD_STATE_DIR / "running" / UNIT
    return running.read_text() if running.exists() else None


def is_enabled(host: FakeHost) -> bool:
    return (host.root / SYSTEMD_STATE_DIR / "enabled" / UNIT).exists()


def test_first_install_writes_reloads_enables_and_starts(gpu_host: FakeHost) -> None:
    result = install(gpu_host, SAMPLE_UNIT)
    assert (result.returncode, result.stdout) == (0, "changed\n"), result.stderr
    unit_file = gpu_host.unit_dir / UNIT
    assert unit_file.read_text() == SAMPLE_UNIT
    assert stat.S_IMODE(unit_file.stat().st_mode) == 0o644
    assert gpu_host.argvs("systemctl") == [["daemon-reload"], ["enable", UNIT], ["restart", UNIT]]
    assert running_text(gpu_host) == SAMPLE_UNIT and is_enabled(gpu_host)


def test_same_text_again_only_starts(gpu_host: FakeHost) -> None:
    install(gpu_host, SAMPLE_UNIT)
    before, calls = gpu_host.files_state(), len(gpu_host.calls("systemctl"))
    again = install(gpu_host, SAMPLE_UNIT)
    assert (again.returncode, again.stdout) == (0, "unchanged\n"), again.stderr
    assert systemctl_since(gpu_host, calls) == [["enable", UNIT], ["start", UNIT]]
    assert gpu_host.files_state() == before, "a re-run with the same text changed the host"


def test_changed_text_is_reloaded_and_restarted(gpu_host: FakeHost) -> None:
    install(gpu_host, SAMPLE_UNIT)
    calls = len(gpu_host.calls("systemctl"))
    result = install(gpu_host, CHANGED_UNIT)
    assert result.stdout == "changed\n"
    assert systemctl_since(gpu_host, calls) == [
        ["daemon-reload"],
        ["enable", UNIT],
        ["restart", UNIT],
    ]
    assert running_text(gpu_host) == CHANGED_UNIT


def test_restart_flag_restarts_an_unchanged_unit(gpu_host: FakeHost) -> None:
    install(gpu_host, SAMPLE_UNIT)
    calls = len(gpu_host.calls("systemctl"))
    result = install(gpu_host, SAMPLE_UNIT, "--restart")
    assert result.stdout == "unchanged\n"
    assert systemctl_since(gpu_host, calls) == [["enable", UNIT], ["restart", UNIT]]


def test_empty_unit_text_is_refused(gpu_host: FakeHost) -> None:
    result = install(gpu_host, "")
    assert result.returncode == 1
    assert result.stderr.startswith("install-unit: no unit text on stdin")
    assert list(gpu_host.unit_dir.iterdir()) == [], "a file was left in the unit dir"
    assert gpu_host.calls("systemctl") == []


def test_remove_takes_unit_and_env_file_away_but_no_volume(gpu_host: FakeHost) -> None:
    gpu_host.run("install-env-file", str(gpu_host.env_file), "VLLM_API_KEY", stdin="k3y\n")
    install(gpu_host, SAMPLE_UNIT)
    calls = len(gpu_host.calls("systemctl"))
    result = remove(gpu_host)
    assert (result.returncode, result.stdout) == (0, "changed\n"), result.stderr
    assert not (gpu_host.unit_dir / UNIT).exists() and not gpu_host.env_file.exists()
    assert systemctl_since(gpu_host, calls) == [
        ["is-active", UNIT],
        ["stop", UNIT],
        ["disable", UNIT],
        ["daemon-reload"],
    ]
    assert running_text(gpu_host) is None and not is_enabled(gpu_host)
    assert gpu_host.calls("docker") == [], "remove-unit.sh must leave Docker (and volumes) alone"


def test_remove_twice_succeeds_when_already_gone(gpu_host: FakeHost) -> None:
    install(gpu_host, SAMPLE_UNIT)
    assert remove(gpu_host).stdout == "changed\n"
    calls = len(gpu_host.calls("systemctl"))
    again = remove(gpu_host)
    assert (again.returncode, again.stdout) == (0, "unchanged\n"), again.stderr
    assert systemctl_since(gpu_host, calls) == [["is-active", UNIT]]


def test_remove_stops_a_unit_still_running_without_its_file(gpu_host: FakeHost) -> None:
    install(gpu_host, SAMPLE_UNIT)
    (gpu_host.unit_dir / UNIT).unlink()  # an earlier destroy got this far
    calls = len(gpu_host.calls("systemctl"))
    result = remove(gpu_host)
    assert (result.returncode, result.stdout) == (0, "changed\n"), result.stderr
    assert systemctl_since(gpu_host, calls) == [["is-active", UNIT], ["stop", UNIT]]
    assert running_text(gpu_host) is None


def test_remove_of_a_never_installed_unit_succeeds(gpu_host: FakeHost) -> None:
    result = remove(gpu_host)
    assert (result.returncode, result.stdout) == (0, "unchanged\n"), result.stderr


@pytest.mark.parametrize(
    ("script", "args"),
    [
        ("install-unit", (UNIT,)),
        ("install-unit", (UNIT, "/etc/systemd/system", "--now")),
        ("install-unit", ("qwen38", "/etc/systemd/system")),
        ("remove-unit", (UNIT, "/etc/systemd/system")),
    ],
    ids=["install-too-few", "install-unknown-flag", "install-no-suffix", "remove-too-few"],
)
def test_bad_arguments_print_usage(gpu_host: FakeHost, script: str, args: tuple[str, ...]) -> None:
    result = gpu_host.run(script, *args, stdin=SAMPLE_UNIT)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith(f"usage: {script}.sh UNIT_NAME UNIT_DIR")
    assert gpu_host.calls() == []


def test_the_sample_unit_verifies() -> None:
    verify_unit(SAMPLE_UNIT)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        (SAMPLE_UNIT.replace("Restart=on-failure", "Restart=on-flailure"), "on-flailure"),
        (SAMPLE_UNIT.replace("Requires=docker.service", "Requires=dokcer.service"), "dokcer"),
        (SAMPLE_UNIT.replace("RestartSec=10", "RestartSecs=10"), "RestartSecs"),
    ],
    ids=["bad-restart-value", "unknown-dependency", "misspelt-key"],
)
def test_verify_rejects_a_broken_unit(text: str, complaint: str) -> None:
    with pytest.raises(UnitVerifyError, match=complaint):
        verify_unit(text)
