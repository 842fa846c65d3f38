"""Read the stack's configuration from the Pulumi engine, through the shared parser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.runtime.config as runtime_config

from components.config.base import PROJECT
from components.config.load import ConfigError, decode_engine_value, parse_stack_config
from components.config.model import StackConfig

SSH_KEY_FIX = (
    "ssh_private_key: required, not set: "
    "pulumi config set --secret ssh_private_key < ~/.ssh/id_ed25519"
)
HOST_FIX = (
    "host.address: required, not set: "
    "pulumi config set --path host.address <ip or name of the GPU host>"
)


@dataclass(frozen=True)
class ProgramConfig:
    stack: StackConfig
    ssh_private_key: pulumi.Output[str]
    api_key: pulumi.Output[str] | None
    api_key_stored_as_secret: bool


def project_config() -> dict[str, Any]:
    """Every `qwen38:*` key the engine passed in, typos included, so they can be refused.

    pulumi.Config reads one named key at a time; the whole map is only available from the
    runtime's config store, which the Python executor fills from the engine.
    """
    entries = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    raw = {}
    for key, value in entries.items():
        namespace, _, name = key.partition(":")
        if namespace == PROJECT and name:
            raw[name] = decode_engine_value(value)
    return raw


def read_program_config() -> ProgramConfig:
    """Validate everything before any resource is declared; all problems at once."""
    raw = project_config()
    problems: list[str] = []
    try:
        stack = parse_stack_config(raw)
    except ConfigError as error:
        problems += error.problems
        stack = None
    if stack is not None and stack.host is None:
        problems.append(HOST_FIX)
    if not raw.get("ssh_private_key"):
        problems.append(SSH_KEY_FIX)
    elif not runtime_config.is_config_secret(f"{PROJECT}:ssh_private_key"):
        problems.append(
            "ssh_private_key is stored in plain text in the stack file: remove it and run "
            "pulumi config set --secret ssh_private_key < ~/.ssh/id_ed25519"
        )
    if problems or stack is None:
        raise ConfigError(problems)
    config = pulumi.Config(PROJECT)
    api_key = config.get_secret("api_key") if raw.get("api_key") else None
    return ProgramConfig(
        stack=stack,
        ssh_private_key=config.require_secret("ssh_private_key"),
        api_key=api_key,
        api_key_stored_as_secret=runtime_config.is_config_secret(f"{PROJECT}:api_key"),
    )
