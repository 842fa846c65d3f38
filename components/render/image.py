"""The engine image: build context, build arguments, tag, and the Dockerfile as rendered.

The Dockerfile is a file (image/Dockerfile) parameterised by build arguments; `render`
shows it with the stack's values filled in as ARG defaults, which builds the same image.
"""

from __future__ import annotations

import hashlib
import re

from components.config.load import PROJECT_DIR
from components.config.sections import EngineConfig
from components.render.layout import IMAGE_REPOSITORY

BUILD_CONTEXT = PROJECT_DIR / "image"
DOCKERFILE = BUILD_CONTEXT / "Dockerfile"
CONTEXT_FILES = ("Dockerfile", "with-api-key")


def build_args(engine: EngineConfig) -> dict[str, str]:
    return {
        "ENGINE_VERSION": engine.version,
        "WHEEL_URL": engine.resolved_wheel_url,
        "WHEEL_SHA256": engine.resolved_wheel_sha256,
        "TORCH_INDEX_URL": engine.torch_index_url,
    }


def image_tag(engine: EngineConfig) -> str:
    """A tag that changes whenever anything that goes into the image changes."""
    digest = hashlib.sha256()
    for name in CONTEXT_FILES:
        digest.update((BUILD_CONTEXT / name).read_bytes())
    for key, value in sorted(build_args(engine).items()):
        digest.update(f"{key}={value}\n".encode())
    return f"{IMAGE_REPOSITORY}:{engine.version}-{digest.hexdigest()[:12]}"


def rendered_dockerfile(engine: EngineConfig) -> str:
    """image/Dockerfile with each build argument's value written in as its default."""
    values = build_args(engine)

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"ARG {name}={values[name]}" if name in values else match.group(0)

    return re.sub(r"^ARG (\w+)(?:=.*)?$", fill, DOCKERFILE.read_text(), flags=re.MULTILINE)
