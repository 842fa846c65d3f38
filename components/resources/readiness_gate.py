"""ReadinessGate: `pulumi up` ends only when the server really serves the model.

The check is components/readiness.py, one pure module run in one of two places:
- "local": from where pulumi runs, with requests (scripts/check-ready.sh, through
  pulumi-command's local.Command, which streams the progress lines to the CLI);
- "host": on the GPU host over the SSH connection (host/readiness.sh), in a throwaway
  container of the engine image on the host network - for a server on loopback only.
Either way the key travels on stdin, and a failure carries the unit's journal tail.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import pulumi
from pulumi_command import local

from components import readiness
from components.config.model import StackConfig
from components.config.sections import HostConfig
from components.hostscripts import flags
from components.render.image import image_tag
from components.render.layout import UNIT_NAME
from components.resources.gpu_host import GpuHost
from components.resources.remote import host_command
from components.resources.systemd_unit import SystemdUnit
from components.rules import LOOPBACK_HOSTS

READINESS_SOURCE = Path(readiness.__file__).read_text()
# Relative to the project directory, where pulumi runs local commands.
CHECK_READY = "scripts/check-ready.sh"


@dataclass(frozen=True)
class ReadinessGateArgs:
    cfg: StackConfig
    host: GpuHost
    api_key: pulumi.Output[str]
    unit: SystemdUnit


class ReadinessGate(pulumi.ComponentResource):
    check: pulumi.Resource

    def __init__(
        self, name: str, args: ReadinessGateArgs, opts: pulumi.ResourceOptions | None = None
    ):
        cfg, host, api_key, unit = args.cfg, args.host, args.api_key, args.unit
        via = check_location(cfg)
        super().__init__("qwen38:readiness:ReadinessGate", name, {"via": via}, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=[unit.install])
        # Each restart of the unit (new container or key) runs the check again.
        generation = pulumi.Output.from_input(unit.generation)
        if via == "host":
            self.check = _on_host(
                name, cfg=cfg, host=host, api_key=api_key, generation=generation, opts=child
            )
        else:
            self.check = _from_here(
                name, cfg=cfg, api_key=api_key, generation=generation, opts=child
            )
        self.register_outputs({"via": via})


def check_location(cfg: StackConfig) -> str:
    if cfg.readiness.via != "auto":
        return cfg.readiness.via
    return "host" if cfg.serving.host in LOOPBACK_HOSTS else "local"


def check_args(cfg: StackConfig, url: str) -> list[str]:
    """Arguments of components/readiness.py (the key is not among them: it is on stdin)."""
    return flags(
        url=url,
        model=cfg.serving.served_model_name,
        max_model_len=str(cfg.serving.max_model_len),
        timeout=str(cfg.readiness.timeout_seconds),
        interval=str(cfg.readiness.interval_seconds),
    )


def _on_host(
    name: str,
    *,
    cfg: StackConfig,
    host: GpuHost,
    api_key: pulumi.Output[str],
    generation: pulumi.Output[str],
    opts: pulumi.ResourceOptions,
) -> pulumi.Resource:
    return host_command(
        f"{name}-on-host",
        host.connection,
        sudo=host.sudo,
        create=[
            "readiness",
            *flags(image=image_tag(cfg.engine), unit=UNIT_NAME),
            *("--generation", generation),
            *flags(code=READINESS_SOURCE),
            "--",
            *check_args(cfg, f"http://127.0.0.1:{cfg.serving.port}"),
        ],
        stdin=api_key,
        opts=opts,
    )


def _from_here(
    name: str,
    *,
    cfg: StackConfig,
    api_key: pulumi.Output[str],
    generation: pulumi.Output[str],
    opts: pulumi.ResourceOptions,
) -> pulumi.Resource:
    assert cfg.host is not None
    url = f"http://{cfg.host.address}:{cfg.serving.port}"
    create = generation.apply(
        lambda gen: shlex.join(
            [
                CHECK_READY,
                *ssh_args(cfg.host),
                *("--unit", UNIT_NAME, "--generation", gen, "--"),
                *check_args(cfg, url),
            ]
        )
    )
    return local.Command(
        f"{name}-from-here",
        create=create,
        stdin=api_key,
        add_previous_output_in_env=False,
        opts=opts,
    )


def ssh_args(host: HostConfig | None) -> list[str]:
    """How check-ready.sh reaches the host for the journal (the Docker provider's access)."""
    assert host is not None
    args = ["--ssh", f"{host.user}@{host.address}", "--ssh-port", str(host.port)]
    if host.ssh_identity_file:
        args += ["--ssh-identity", host.ssh_identity_file]
    if host.user != "root":
        args.append("--sudo")
    return args
