"""The README states what the code defines: its configuration reference is generated."""

from __future__ import annotations

import re
from pathlib import Path

from components.config.reference import markdown

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(
    r"<!-- config-reference:start -->\n(.*?)<!-- config-reference:end -->", re.DOTALL
)


def test_config_reference_matches_the_typed_config() -> None:
    found = BLOCK.search(README.read_text())
    assert found, "README lacks the config-reference markers"
    assert found.group(1) == markdown(), (
        "README's configuration reference is stale: replace the block between the markers "
        "with the output of `python -m components reference`"
    )
