"""GpuHost: the SSH connection, the Docker provider over ssh://, and the preflight check."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_docker as docker
from pulumi_command import remote

from components.config.sections import HostConfig
from components.hostscripts import flags
from components.resources.remote import host_command

# CUDA 12.x minor-version compatibility floor: the image's CUDA 12.8 runtime runs on a
# driver from 525.60.13 on (525.105.17 in the field), not on anything older.
MIN_DRIVER_VERSION = "525.60.13"


@dataclass(frozen=True)
class GpuHostArgs:
    host: HostConfig
    private_key: pulumi.Input[str]
    gpu_name: str
    need_bytes: int
    cache_volume: str
    # Counted as already on the host when present, so a re-run passes the disk check.
    image_tag: str


class GpuHost(pulumi.ComponentResource):
    connection: remote.ConnectionArgs
    docker_provider: docker.Provider
    preflight: remote.Command
    sudo: bool
    gpu_name: pulumi.Output[str]
    gpu_memory_mib: pulumi.Output[int]
    driver_version: pulumi.Output[str]

    def __init__(self, name: str, args: GpuHostArgs, opts: pulumi.ResourceOptions | None = None):
        host = args.host
        super().__init__(
            "qwen38:host:GpuHost",
            name,
            {
                "address": host.address,
                "user": host.user,
                "port": host.port,
                "gpuName": args.gpu_name,
            },
            opts,
        )
        child = pulumi.ResourceOptions(parent=self)
        self.sudo = host.user != "root"
        self.connection = remote.ConnectionArgs(
            host=host.address,
            port=host.port,
            user=host.user,
            private_key=pulumi.Output.secret(args.private_key),
        )
        self.docker_provider = docker.Provider(
            f"{name}-docker",
            host=f"ssh://{host.user}@{host.address}:{host.port}",
            ssh_opts=_docker_ssh_opts(host),
            opts=child,
        )
        self.preflight = host_command(
            f"{name}-preflight",
            self.connection,
            sudo=self.sudo,
            create=[
                "preflight",
                *flags(
                    gpu_name=args.gpu_name,
                    min_driver=MIN_DRIVER_VERSION,
                    need_bytes=str(args.need_bytes),
                    cache_volume=args.cache_volume,
                    image=args.image_tag,
                ),
            ],
            opts=child,
        )
        facts = self.preflight.stdout.apply(parse_key_values)
        self.gpu_name = facts.apply(lambda f: f.get("gpu_name", ""))
        self.gpu_memory_mib = facts.apply(lambda f: int(f.get("gpu_memory_mib", "0") or 0))
        self.driver_version = facts.apply(lambda f: f.get("driver_version", ""))
        self.register_outputs(
            {
                "gpuName": self.gpu_name,
                "gpuMemoryMib": self.gpu_memory_mib,
                "driverVersion": self.driver_version,
            }
        )


def _docker_ssh_opts(host: HostConfig) -> list[str]:
    # The Docker provider runs the system ssh binary: it cannot take key material, so it
    # uses the agent, ~/.ssh/config, or the identity file named in the stack config.
    opts = ["-o", "BatchMode=yes", "-o", "ServerAliveInterval=30"]
    if host.ssh_identity_file:
        opts += ["-i", host.ssh_identity_file, "-o", "IdentitiesOnly=yes"]
    return opts


def parse_key_values(text: str | None) -> dict[str, str]:
    """The preflight's stdout: one key=value per line."""
    pairs = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            pairs[key.strip()] = value.strip()
    return pairs
