"""The configuration reference, derived from the typed config (the README embeds it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, get_args

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from components.config.base import PROJECT, SHIPPED_MODEL_CONFIG
from components.config.load import SECRET_KEYS
from components.config.model import StackConfig

SECRET_ROWS = {
    "ssh_private_key": "SSH private key of the host user (secret, required).",
    "api_key": "Bearer key of the API (secret); generated when unset.",
}
# Structured values listed as one key: their parts are documented in the description.
LEAF_MODELS = ("sampling",)


def rows(model: type[BaseModel] = StackConfig, prefix: str = "") -> Iterator[tuple[str, str, str]]:
    """(dotted key, default, description) for every option, depth first."""
    for name, field in model.model_fields.items():
        nested = _nested_model(field)
        if nested is not None and name not in LEAF_MODELS:
            yield from rows(nested, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", _default_text(field), field.description or ""


def _nested_model(field: FieldInfo) -> type[BaseModel] | None:
    for candidate in (field.annotation, *get_args(field.annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _default_text(field: FieldInfo) -> str:
    if field.default_factory is not None:
        return _shown(field.default_factory())  # type: ignore[call-arg]
    if field.default is PydanticUndefined:
        return "required"
    return _shown(field.default)


def _shown(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if value == str(SHIPPED_MODEL_CONFIG):
        return "the shipped Qwen3.8-27B config.json"
    return json.dumps(value)


def markdown() -> str:
    lines = [
        f"| key (under `{PROJECT}:`) | default | meaning |",
        "|---|---|---|",
    ]
    lines += [f"| `{key}` | `{default}` | {text} |" for key, default, text in rows()]
    lines += [f"| `{key}` | - | {SECRET_ROWS[key]} |" for key in SECRET_KEYS]
    return "\n".join(lines) + "\n"
