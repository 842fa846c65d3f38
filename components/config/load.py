"""Turn raw stack configuration into a validated StackConfig, or into clear problems.

The raw form is a plain dict keyed by the names under the project namespace (`serving`,
`model`, ...). It comes from a `Pulumi.<stack>.yaml` file (the command line) or from the
Pulumi engine's config (the program); both go through `parse_stack_config`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from components.config.base import PROJECT
from components.config.model import StackConfig

SECRET_KEYS = ("ssh_private_key", "api_key")
PROJECT_DIR = Path(__file__).resolve().parent.parent.parent


class ConfigError(Exception):
    """One or more problems with the stack configuration, each naming key, value and rule."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(f"  - {p}" for p in self.problems))

    def __str__(self) -> str:
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        body = "\n".join(f"  - {p}" for p in self.problems)
        return f"stack configuration has {count} {noun}:\n{body}"


def stack_file(stack: str, project_dir: Path = PROJECT_DIR) -> Path:
    return project_dir / f"Pulumi.{stack}.yaml"


def read_stack_file(path: Path) -> dict[str, Any]:
    """Raw config of one stack file: project keys without namespace, secure values left out."""
    if not path.is_file():
        raise ConfigError([f"stack file {str(path)!r} does not exist"])
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ConfigError([f"{path.name} is not valid YAML: {error}"]) from None
    return strip_namespace(document.get("config") or {})


def strip_namespace(config: Mapping[str, Any]) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    for key, value in config.items():
        namespace, _, name = str(key).partition(":")
        if namespace != PROJECT or not name:
            continue
        if is_ciphertext(value) and name not in SECRET_KEYS:
            continue  # only the Pulumi engine can read it; the secret keys keep the marker
        raw[name] = value
    return raw


def is_ciphertext(value: Any) -> bool:
    """A `secure:` value of a stack file, as opposed to plain text."""
    return isinstance(value, dict) and set(value) == {"secure"}


def decode_engine_value(value: Any) -> Any:
    """The engine hands structured config over as JSON text."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def apply_overrides(raw: Mapping[str, Any], assignments: Iterable[str]) -> dict[str, Any]:
    """Apply `dotted.key=value` assignments; values are parsed as YAML scalars/flow values."""
    result = json.loads(json.dumps(raw))  # deep copy of plain data
    problems: list[str] = []
    for assignment in assignments:
        path, sep, text = assignment.partition("=")
        keys = path.strip().split(".")
        if not sep or not all(keys):
            problems.append(f"--set {assignment!r}: expected dotted.key=value")
            continue
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            value = text
        _set_path(result, keys, value)
    if problems:
        raise ConfigError(problems)
    return result


def _set_path(target: dict[str, Any], keys: list[str], value: Any) -> None:
    node = target
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[keys[-1]] = value


def parse_stack_config(raw: Mapping[str, Any]) -> StackConfig:
    data = {k: v for k, v in raw.items() if k not in SECRET_KEYS}
    try:
        return StackConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(format_validation_error(error)) from None


def format_validation_error(error: ValidationError) -> list[str]:
    return [_format_one(item) for item in error.errors(include_url=False)]


RANGE_WORDS = {
    "greater_than": "must be greater than {gt}",
    "greater_than_equal": "must be at least {ge}",
    "less_than": "must be less than {lt}",
    "less_than_equal": "must be at most {le}",
}


def _format_one(item: Mapping[str, Any]) -> str:
    key = ".".join(str(part) for part in item["loc"])
    kind = item["type"]
    context = item.get("ctx") or {}
    message = str(item["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        message = f"must be one of {context.get('expected', '')}"
    elif kind in RANGE_WORDS:
        message = RANGE_WORDS[kind].format(**{k: _number(v) for k, v in context.items()})
    elif kind == "extra_forbidden":
        return f"{key}: unknown key; check the spelling against the README"
    elif kind == "missing":
        return f"{key}: required, not set"
    if key and message.startswith(key.split(".")[0]):
        return message  # a cross-field rule that names its keys itself
    return f"{key}: {message}{_shown(item.get('input'))}"


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _shown(value: Any) -> str:
    """Echo scalars only: a list or mapping may hold something that must not be printed."""
    if isinstance(value, (str, int, float, bool)) and not isinstance(value, dict):
        return f", got {value!r}"
    return ""


def load_stack(
    stack: str, overrides: Iterable[str] = (), project_dir: Path = PROJECT_DIR
) -> StackConfig:
    raw = read_stack_file(stack_file(stack, project_dir))
    return parse_stack_config(apply_overrides(raw, overrides))
