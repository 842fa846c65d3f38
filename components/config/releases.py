"""The 1Cat-vLLM releases this project knows, and what differs between them.

One wheel per release: `1cat_vllm-<ver>-cp312-cp312-linux_x86_64.whl`, built for
Python 3.12 / CUDA 12.8 / PyTorch 2.10 / SM70. A digest is built in only where it was
corroborated by independent public deployment records; for any other release the stack
must pin `engine.wheel_sha256` itself (from the release's SHA256SUMS).
"""

from __future__ import annotations

from dataclasses import dataclass

RELEASE_BASE_URL = "https://github.com/1CatAI/1Cat-vLLM/releases/download"
PYTORCH_CU128_INDEX = "https://download.pytorch.org/whl/cu128"


def wheel_url(version: str) -> str:
    return f"{RELEASE_BASE_URL}/v{version}/1cat_vllm-{version}-cp312-cp312-linux_x86_64.whl"


@dataclass(frozen=True)
class EngineRelease:
    version: str
    wheel_sha256: str | None
    # CUDA graphs were unstable on V100 in the field with this fork: --enforce-eager.
    requires_eager: bool
    # GatedDeltaNet layers crashed on SM70 without VLLM_SM70_QWEN_GDN_FULL_FORWARD=1
    # (seen on 1.2.2); the switch still exists and is still off by default later on.
    needs_gdn_full_forward: bool

    @property
    def wheel_url(self) -> str:
        return wheel_url(self.version)


ENGINE_RELEASES: dict[str, EngineRelease] = {
    "1.2.2": EngineRelease(
        version="1.2.2",
        wheel_sha256="8a628983ad9d675559910372643220c418b307ddc7fd52ac65a7f5fbcb104bc6",
        requires_eager=True,
        needs_gdn_full_forward=True,
    ),
    "1.5.0": EngineRelease(
        version="1.5.0",
        wheel_sha256="2a4d6bee4e19d315b142f2c563059f3064ddeeca563a6bdc828c33e1073c825b",
        requires_eager=True,
        needs_gdn_full_forward=True,
    ),
    "1.5.1": EngineRelease(
        version="1.5.1",
        wheel_sha256=None,
        requires_eager=True,
        needs_gdn_full_forward=True,
    ),
}
