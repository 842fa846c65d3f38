"""Run the real __main__.py under Pulumi's own mocks and record every registration.

The recording monitor keeps the raw RegisterResourceRequest of each resource: its
serialized properties (with secrets still marked as secrets), parent, dependencies and
options - what the Pulumi engine, and a policy pack, would receive from a real run.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import runpy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

PROJECT_DIR = Path(__file__).resolve().parents[2]
MAIN = PROJECT_DIR / "__main__.py"
PROJECT = "qwen38"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"

# Throwaway credentials for the mocked runs: never a real key, never written to disk.
TEST_SSH_KEY = "-----TEST ONLY: not a key-----"
TEST_HOST = {"address": "192.0.2.10", "user": "root", "port": 22}


@dataclass
class Registration:
    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    properties: dict[str, Any]  # serialized form, secrets marked
    dependencies: list[str]
    request: Any  # the raw RegisterResourceRequest

    @property
    def plain(self) -> dict[str, Any]:
        """Properties with secret markers unwrapped."""
        return unwrap_secrets(self.properties)


@dataclass
class ProgramRun:
    registrations: list[Registration] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)

    def of_type(self, type_: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> Registration:
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        assert len(found) == 1, (
            f"expected one {type_} {name or ''}, found {[r.name for r in found]}"
        )
        return found[0]

    def by_urn(self, urn: str) -> Registration:
        return next(r for r in self.registrations if r.urn == urn)


class _Mocks(pulumi.runtime.Mocks):
    """Resource ids derived from names, and outputs equal to inputs, as a provider would."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        state = dict(args.inputs)
        if args.typ == "random:index/randomPassword:RandomPassword":
            state["result"] = "generated-test-key-0123456789"
        if args.typ == "command:remote:Command":
            state.setdefault("stdout", _fake_stdout(args.name))
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]] | None]:
        return {}, None


def _fake_stdout(name: str) -> str:
    if name.endswith("-preflight"):
        return "gpu_name=Tesla V100-SXM2-32GB\ngpu_memory_mib=32768\ndriver_version=525.105.17"
    return ""


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    def __init__(self, mocks: pulumi.runtime.Mocks, run: ProgramRun) -> None:
        super().__init__(mocks)
        self.run = run

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        self.run.registrations.append(
            Registration(
                type=request.type,
                name=request.name,
                urn=response.urn,
                parent=request.parent,
                custom=request.custom,
                properties=json_format.MessageToDict(request.object),
                dependencies=list(request.dependencies),
                request=request,
            )
        )
        return response


class _Engine(pulumi_mocks.MockEngine):
    def __init__(self, run: ProgramRun) -> None:
        super().__init__(None)
        self.run = run

    def Log(self, request: Any) -> Any:
        if request.severity == 2:  # warning
            self.run.warnings.append(request.message)
        return super().Log(request)


def stack_config(stack: str) -> dict[str, Any]:
    """The `qwen38:*` config of Pulumi.<stack>.yaml, as the engine passes it (JSON text)."""
    document = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())
    return dict(document.get("config") or {})


def engine_config(
    stack: str,
    overrides: Mapping[str, Any] | None = None,
    *,
    with_host: bool = True,
    with_ssh_key: bool = True,
) -> tuple[dict[str, str], list[str]]:
    """Config map and secret keys for a stack, with the test host and key added."""
    config = stack_config(stack)
    if with_host:
        config[f"{PROJECT}:host"] = dict(TEST_HOST)
    secret_keys = []
    if with_ssh_key:
        config[f"{PROJECT}:ssh_private_key"] = TEST_SSH_KEY
        secret_keys.append(f"{PROJECT}:ssh_private_key")
    for dotted, value in (overrides or {}).items():
        _set_dotted(config, dotted, value)
    encoded = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    return encoded, secret_keys


def _set_dotted(config: dict[str, Any], dotted: str, value: Any) -> None:
    top, _, rest = dotted.partition(".")
    key = f"{PROJECT}:{top}"
    if not rest:
        config[key] = value
        return
    node = config.setdefault(key, {})
    parts = rest.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def run_program(
    stack: str,
    overrides: Mapping[str, Any] | None = None,
    *,
    preview: bool = True,
    extra_secret_keys: tuple[str, ...] = (),
    with_host: bool = True,
    with_ssh_key: bool = True,
    record: ProgramRun | None = None,
) -> ProgramRun:
    """Run __main__.py for a stack; raises what the program raises (e.g. RunError).

    Pass `record` to keep what was registered even when the program raises.
    """
    config, secret_keys = engine_config(
        stack, overrides, with_host=with_host, with_ssh_key=with_ssh_key
    )
    run = record if record is not None else ProgramRun()
    context = contextvars.Context()  # fresh runtime globals: no state leaks between runs
    context.run(_run_in_context, stack, config, [*secret_keys, *extra_secret_keys], preview, run)
    return run


def _run_in_context(
    stack: str, config: dict[str, str], secret_keys: list[str], preview: bool, run: ProgramRun
) -> None:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        mocks = _Mocks()
        pulumi.runtime.set_mocks(
            mocks, project=PROJECT, stack=stack, preview=preview,
            monitor=_RecordingMonitor(mocks, run),
        )  # fmt: skip
        pulumi.runtime.settings.SETTINGS.engine = _Engine(run)
        pulumi.runtime.set_all_config(config, secret_keys)
        _sync_await(run_pulumi_func(_run_main))
        _resolve_stack_outputs(run)
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def _run_main() -> None:
    runpy.run_path(str(MAIN), run_name="__main__")


def _resolve_stack_outputs(run: ProgramRun) -> None:
    root = pulumi.runtime.settings.get_root_resource()
    for name, value in dict(getattr(root, "outputs", {}) or {}).items():
        output = pulumi.Output.from_input(value)
        run.outputs[name] = _sync_await(output.future())
        if _sync_await(output.is_secret()):
            run.secret_outputs.add(name)


def stack_output_is_secret(run: ProgramRun, name: str) -> bool:
    return name in run.secret_outputs


def unwrap_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get("4dabf18193072939515e22adb298388d") == SECRET_SIG:
            return unwrap_secrets(value.get("value"))
        return {k: unwrap_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap_secrets(v) for v in value]
    return value


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get("4dabf18193072939515e22adb298388d") == SECRET_SIG


def plain_strings(value: Any) -> list[str]:
    """Every string in a serialized value that is not inside a secret."""
    if is_secret(value):
        return []
    if isinstance(value, dict):
        return [s for v in value.values() for s in plain_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in plain_strings(v)]
    return [value] if isinstance(value, str) else []
