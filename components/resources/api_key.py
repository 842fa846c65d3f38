"""ApiKey: the bearer key (configured or generated), installed on the host through stdin."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_random as random

from components.facts import ApiKeyFacts
from components.render.layout import API_KEY_ENV_VAR, ENV_FILE
from components.resources.gpu_host import GpuHost
from components.resources.remote import host_command

GENERATED_KEY_LENGTH = 48


@dataclass(frozen=True)
class ApiKeyArgs:
    configured: pulumi.Output[str] | None  # None: generate one
    facts: ApiKeyFacts
    host: GpuHost


class ApiKey(pulumi.ComponentResource):
    value: pulumi.Output[str]
    env_file: pulumi.CustomResource

    def __init__(self, name: str, args: ApiKeyArgs, opts: pulumi.ResourceOptions | None = None):
        configured, host = args.configured, args.host
        super().__init__(
            "qwen38:secrets:ApiKey",
            name,
            {"source": args.facts.source, "envFile": ENV_FILE, "envVar": API_KEY_ENV_VAR},
            opts,
        )
        child = pulumi.ResourceOptions(parent=self)
        if configured is None:
            generated = random.RandomPassword(
                f"{name}-generated", length=GENERATED_KEY_LENGTH, special=False, opts=child
            )
            configured = generated.result
        self.value = pulumi.Output.secret(configured)
        self.env_file = host_command(
            f"{name}-env-file",
            host.connection,
            sudo=host.sudo,
            create=["install-env-file", ENV_FILE, API_KEY_ENV_VAR],
            stdin=self.value,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[host.preflight],
                # A new key makes a new resource id, which restarts the server unit. The
                # file itself is removed with the unit on destroy (remove-unit).
                replace_on_changes=["stdin"],
            ),
        )
        self.register_outputs({"value": self.value})
