"""VllmImage: the engine image, built by the GPU host's own Docker daemon over ssh://."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_docker as docker

from components.config.sections import EngineConfig
from components.render.image import build_args, image_tag
from components.resources.gpu_host import GpuHost

# Relative to the project directory (where pulumi runs the provider), so that state does
# not change when the project is checked out somewhere else.
CONTEXT = "./image"
DOCKERFILE = "./image/Dockerfile"


@dataclass(frozen=True)
class VllmImageArgs:
    engine: EngineConfig
    host: GpuHost


class VllmImage(pulumi.ComponentResource):
    image: docker.Image
    tag: str

    def __init__(self, name: str, args: VllmImageArgs, opts: pulumi.ResourceOptions | None = None):
        engine, host = args.engine, args.host
        self.tag = tag = image_tag(engine)
        super().__init__(
            "qwen38:image:VllmImage",
            name,
            {"engineVersion": engine.version, "imageName": tag},
            opts,
        )
        self.image = docker.Image(
            f"{name}-build",
            image_name=tag,
            build=docker.DockerBuildArgs(
                context=CONTEXT,
                dockerfile=DOCKERFILE,
                args=build_args(engine),
                platform="linux/amd64",
            ),
            # The image stays on the host's daemon: there is no registry in this design.
            skip_push=True,
            opts=pulumi.ResourceOptions(
                parent=self, provider=host.docker_provider, depends_on=[host.preflight]
            ),
        )
        self.register_outputs({"imageName": self.image.image_name})
