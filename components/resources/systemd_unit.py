"""SystemdUnit: qwen38.service, which owns the server container's lifecycle.

`up` installs, reloads, enables and starts it; a new container (any change to the server
definition) or a new key restarts it; `destroy` stops, disables and removes it together
with the key file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.render.layout import ENV_FILE, UNIT_DIR, UNIT_NAME
from components.resources.gpu_host import GpuHost
from components.resources.remote import host_command


@dataclass(frozen=True)
class SystemdUnitArgs:
    unit_text: str
    host: GpuHost
    # What the unit runs (container and key ids): a new generation restarts it.
    generation: pulumi.Input[str]
    needs: Sequence[pulumi.Resource]


class SystemdUnit(pulumi.ComponentResource):
    install: pulumi.Resource
    generation: pulumi.Input[str]

    def __init__(
        self, name: str, args: SystemdUnitArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(
            "qwen38:systemd:SystemdUnit",
            name,
            {"unitName": UNIT_NAME, "unit": args.unit_text},
            opts,
        )
        generation, host = args.generation, args.host
        self.generation = generation
        # The generation (container id, key file id) is an argument rather than a
        # trigger: a trigger would replace this command, and replacing runs the delete
        # (stop, disable, remove unit and key) - an argument change merely re-runs create,
        # which restarts the unit.
        self.install = host_command(
            f"{name}-install",
            host.connection,
            sudo=host.sudo,
            create=["install-unit", UNIT_NAME, UNIT_DIR, "--restart", "--generation", generation],
            delete=["remove-unit", UNIT_NAME, UNIT_DIR, ENV_FILE],
            stdin=args.unit_text,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.needs)),
        )
        self.register_outputs({"unitName": UNIT_NAME})
