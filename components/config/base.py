"""What every part of the typed stack config shares."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

PROJECT = "qwen38"
SHIPPED_MODEL_CONFIG = Path(__file__).resolve().parent.parent / "data" / "qwen3.8-27b.config.json"

HEX_COMMIT = re.compile(r"^[0-9a-f]{40}$")
HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class Strict(BaseModel):
    """Unknown keys are errors (a typo must not be ignored); values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)
