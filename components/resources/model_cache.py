"""ModelCache: the Hugging Face cache volume and the resumable, verified download job."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_docker as docker

from components.config.sections import ModelConfig
from components.hostscripts import HOST_SCRIPTS_DIR, flags
from components.render.layout import model_snapshot_dir
from components.resources.gpu_host import GpuHost
from components.resources.remote import host_command
from components.resources.vllm_image import VllmImage

DOWNLOADER = Path(HOST_SCRIPTS_DIR) / "download_model.py"


@dataclass(frozen=True)
class ModelCacheArgs:
    model: ModelConfig
    host: GpuHost
    # The download job runs in the engine image, which brings huggingface_hub.
    image: VllmImage


class ModelCache(pulumi.ComponentResource):
    volume: docker.Volume
    downloads: list[pulumi.Resource]
    snapshot_dir: str

    def __init__(self, name: str, args: ModelCacheArgs, opts: pulumi.ResourceOptions | None = None):
        model, host, image = args.model, args.host, args.image
        super().__init__(
            "qwen38:model:ModelCache",
            name,
            {"repo": model.repo, "revision": model.resolved_revision, "volume": model.cache_volume},
            opts,
        )
        self.snapshot_dir = model_snapshot_dir(model)
        self.volume = docker.Volume(
            f"{name}-volume",
            name=model.cache_volume,
            # ~19 GB of checkpoint must not vanish with `pulumi destroy` unless the stack
            # opted in; a later `up` adopts the volume again (docker volume create is
            # idempotent for an existing name).
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=host.docker_provider,
                retain_on_delete=not model.delete_cache_on_destroy,
            ),
        )
        downloads = [(model.repo, model.resolved_revision)]
        if model.drafter is not None:
            downloads.append((model.drafter.repo, model.drafter.revision))
        self.downloads = [
            self._download(
                f"{name}-download-{index}",
                model=model,
                repo=repo,
                revision=revision,
                host=host,
                image=image,
            )
            for index, (repo, revision) in enumerate(downloads)
        ]
        self.register_outputs({"volumeName": self.volume.name, "snapshotDir": self.snapshot_dir})

    def _download(
        self,
        name: str,
        *,
        model: ModelConfig,
        repo: str,
        revision: str,
        host: GpuHost,
        image: VllmImage,
    ) -> pulumi.Resource:
        return host_command(
            name,
            host.connection,
            sudo=host.sudo,
            create=[
                "download-model",
                *flags(
                    image=image.tag,
                    volume=model.cache_volume,
                    endpoint=model.hf_endpoint,
                    repo=repo,
                    revision=revision,
                    max_workers=str(model.download_max_workers),
                ),
            ],
            stdin=DOWNLOADER.read_text(),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[self.volume, image.image, host.preflight]
            ),
        )
