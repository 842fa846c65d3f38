"""VllmServer: the engine container with its SM70 environment and every vLLM flag.

The container is created, not started: the systemd unit owns its lifecycle. Its props
carry the facts the policy pack checks (plan input, argv, environment, key handling).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_docker as docker

from components.facts import ServerFacts
from components.render.layout import (
    CONTAINER_NAME,
    ENTRYPOINT,
    ENV_FILE,
    HF_CACHE_MOUNT,
    SECRET_MOUNT,
)


@dataclass(frozen=True)
class VllmServerArgs:
    facts: ServerFacts
    image: pulumi.Resource
    image_tag: str
    cache_volume: str
    provider: docker.Provider
    # Everything the container needs on the host before it can be created.
    needs: list[pulumi.Resource]


class VllmServer(pulumi.ComponentResource):
    container: docker.Container
    container_id: pulumi.Output[str]

    def __init__(self, name: str, args: VllmServerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("qwen38:server:VllmServer", name, args.facts.to_props(), opts)
        facts = args.facts
        self.container = docker.Container(
            f"{name}-container",
            name=CONTAINER_NAME,
            image=args.image_tag,
            entrypoints=[ENTRYPOINT],
            command=facts.argv,
            envs=[f"{key}={value}" for key, value in facts.environment.items()],
            mounts=[
                docker.ContainerMountArgs(
                    type="volume", source=args.cache_volume, target=HF_CACHE_MOUNT, read_only=True
                ),
                docker.ContainerMountArgs(
                    type="bind", source=ENV_FILE, target=SECRET_MOUNT, read_only=True
                ),
            ],
            gpus="all",
            # vLLM binds --host/--port itself, exactly as on a bare host. Stating the mode
            # also avoids the provider's perpetual network_mode diff (Docker >= 26 reports
            # "bridge" where the provider remembers "default": kreuzwerker #603).
            network_mode="host",
            # vLLM's engine processes share tensors through /dev/shm.
            ipc_mode="host",
            # systemd restarts and starts it; Docker must not, and the provider must not
            # treat a stopped container as drift.
            restart="no",
            start=False,
            must_run=False,
            stop_timeout=30,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[args.image, *args.needs],
                # The container name is fixed, so the old one must go before the new one.
                delete_before_replace=True,
            ),
        )
        self.container_id = self.container.id
        self.register_outputs({"containerId": self.container_id})
