"""Run the repo's host scripts over the GPU host's SSH connection."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
from pulumi_command import remote

from components.hostscripts import remote_command


def host_command(
    name: str,
    connection: remote.ConnectionArgs,
    *,
    sudo: bool,
    create: Sequence[pulumi.Input[str]],
    delete: Sequence[str] | None = None,
    stdin: pulumi.Input[str] | None = None,
    opts: pulumi.ResourceOptions,
) -> remote.Command:
    """A remote.Command running host/<script>.sh; `create`/`delete` are [script, *args].

    Parameters travel as quoted arguments, because pulumi-command's `environment` needs
    AcceptEnv on the server; secrets travel only through stdin. A change of any argument
    re-runs `create` on the next `up` (an update, never a delete). The previous output is
    kept out of the environment for the same AcceptEnv reason.
    """
    return remote.Command(
        name,
        connection=connection,
        create=pulumi.Output.all(*create).apply(
            lambda words: remote_command(words[0], *words[1:], sudo=sudo)
        ),
        delete=remote_command(delete[0], *delete[1:], sudo=sudo) if delete else None,
        stdin=stdin,
        add_previous_output_in_env=False,
        opts=opts,
    )
