"""SystemdUnit: qwen38.service, which owns the server container's lifecycle.

`up` installs, reloads, enables and starts it; a new container (any change to the server
definition) or a new key restarts it; `destroy` stops, disables and removes it together
with the key file.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from components.render.layout import ENV_FILE, UNIT_DIR, UNIT_NAME
from components.resources.gpu_host import GpuHost
from components.resources.remote import host_command


class SystemdUnit(pulumi.ComponentResource):
    install: pulumi.Resource
    generation: pulumi.Input[str]

    def __init__(
        self,
        name: str,
        *,
        unit_text: str,
        host: GpuHost,
        generation: pulumi.Input[str],
        needs: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(
            "qwen38:systemd:SystemdUnit", name, {"unitName": UNIT_NAME, "unit": unit_text}, opts
        )
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
            stdin=unit_text,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(needs)),
        )
        self.register_outputs({"unitName": UNIT_NAME})
