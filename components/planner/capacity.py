"""vLLM v1's KV-cache capacity rules, reproduced to the token (1Cat-vLLM 1.2.2).

Where each rule comes from (read with `git show v1.2.2:<path>` in 1CatAI/1Cat-vLLM):
- page sizes: vllm/v1/kv_cache_interface.py (FullAttentionSpec, MambaSpec) and
  vllm/model_executor/layers/mamba/mamba_utils.py (gated_delta_net_state_shape/_dtype);
- the attention block size of hybrid models: vllm/platforms/interface.py
  (_align_hybrid_block_size), with the V100/Triton kernels' MultipleOf(16);
- grouping, block count, per-request need, concurrency and the max-length search:
  vllm/v1/core/kv_cache_utils.py (_get_kv_cache_groups_uniform_page_size, get_num_blocks,
  _max_memory_usage_bytes_from_groups, get_max_concurrency_for_kv_cache_config,
  _estimate_max_model_len_from_groups, _report_kv_cache_config).

Everything here is exact integer arithmetic on plain numbers; how much memory is
available is the budget's business (components.planner.budget).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from components.planner.architecture import (
    ArchitectureError,
    FullAttention,
    GatedDeltaNet,
    ModelArchitecture,
)
from components.planner.inputs import PlanInput

# vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE: the block size before any alignment.
DEFAULT_BLOCK_SIZE_TOKENS = 16
# FLASH_ATTN_V100 defers to Triton's supported kernel block sizes: [MultipleOf(16)].
KERNEL_BLOCK_ALIGNMENT_TOKENS = 16

# Bytes per stored KV element. fp8 variants store one byte and dequantize on read; "auto"
# follows the model dtype (see kv_bytes_per_element).
KV_CACHE_DTYPE_BYTES = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "float16": 2, "bfloat16": 2}
# "auto" is 16-bit: SM70 has no bf16 and vLLM casts to half; float32 is 4.
MODEL_DTYPE_BYTES = {"auto": 2, "half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4}

MambaCacheMode = Literal["none", "align"]
# MambaSpec.max_memory_usage_bytes: "align" keeps a second state page per request so a
# prefix-cache hit can resume from a block boundary; "none" keeps only the running state.
STATE_PAGES_PER_REQUEST: dict[MambaCacheMode, int] = {"none": 1, "align": 2}


def cdiv(numerator: int, denominator: int) -> int:
    return -(numerator // -denominator)


def model_dtype_bytes(model_dtype: str) -> int:
    if model_dtype not in MODEL_DTYPE_BYTES:
        raise ValueError(
            f"model dtype must be one of {sorted(MODEL_DTYPE_BYTES)}, got {model_dtype!r}"
        )
    return MODEL_DTYPE_BYTES[model_dtype]


def kv_bytes_per_element(kv_cache_dtype: str, model_dtype: str) -> int:
    if kv_cache_dtype == "auto":
        return model_dtype_bytes(model_dtype)
    if kv_cache_dtype not in KV_CACHE_DTYPE_BYTES:
        allowed = sorted([*KV_CACHE_DTYPE_BYTES, "auto"])
        raise ValueError(f"kv_cache_dtype must be one of {allowed}, got {kv_cache_dtype!r}")
    return KV_CACHE_DTYPE_BYTES[kv_cache_dtype]


def mamba_cache_mode(enable_prefix_caching: bool) -> MambaCacheMode:
    """The SM70 OpenAI server turns prefix caching on for linear-attention models and then
    picks "align" (arg_utils._maybe_apply_sm70_mtp_defaults); without it, "none"."""
    return "align" if enable_prefix_caching else "none"


@dataclass(frozen=True)
class AttentionPage:
    """One full-attention layer's cache on one GPU."""

    num_kv_heads: int
    head_dim: int
    bytes_per_element: int

    @property
    def bytes_per_token(self) -> int:
        return 2 * self.num_kv_heads * self.head_dim * self.bytes_per_element  # K and V


@dataclass(frozen=True)
class GatedDeltaNetState:
    """One Gated DeltaNet layer's recurrent state for one request on one GPU."""

    conv_elements: int
    conv_bytes_per_element: int
    temporal_elements: int
    temporal_bytes_per_element: int

    @property
    def bytes(self) -> int:
        return (
            self.conv_elements * self.conv_bytes_per_element
            + self.temporal_elements * self.temporal_bytes_per_element
        )


def attention_page(full: FullAttention, bytes_per_element: int, tp_size: int) -> AttentionPage:
    # ModelConfig.get_num_kv_heads: heads are replicated when there are fewer than GPUs.
    heads = max(1, full.num_kv_heads // tp_size)
    return AttentionPage(heads, full.head_dim, bytes_per_element)


def gated_delta_net_state(gdn: GatedDeltaNet, model_bytes: int, tp_size: int) -> GatedDeltaNetState:
    for name, count in (("conv dim", gdn.conv_dim), ("linear value heads", gdn.num_value_heads)):
        if count % tp_size:
            raise ArchitectureError(
                f"the model's {name} ({count}) is not divisible by tensor_parallel_size "
                f"{tp_size}: vLLM cannot split its Gated DeltaNet layers that way"
            )
    # Conv state is kept in the model dtype (mamba_cache_dtype "auto"); the temporal state
    # in mamba_ssm_dtype, which 1Cat keeps at float32 by default.
    return GatedDeltaNetState(
        conv_elements=gdn.conv_dim // tp_size * (gdn.conv_kernel - 1),
        conv_bytes_per_element=model_bytes,
        temporal_elements=gdn.num_value_heads // tp_size * gdn.value_head_dim * gdn.key_head_dim,
        temporal_bytes_per_element=gdn.ssm_state_bytes_per_element,
    )


def hybrid_block_size_tokens(attention_bytes_per_token: int, state_bytes: int) -> int:
    """Smallest aligned block whose attention page holds a whole GDN state, so that one
    page size serves both kinds of layer; the state page is then padded up to it."""
    alignment = max(KERNEL_BLOCK_ALIGNMENT_TOKENS, DEFAULT_BLOCK_SIZE_TOKENS)
    aligned = alignment * cdiv(state_bytes, alignment * attention_bytes_per_token)
    return max(DEFAULT_BLOCK_SIZE_TOKENS, aligned)


def group_size_layers(layer_counts: list[int]) -> int:
    """Layers per KV-cache group: the rarest layer type's count (a model repeats an n:1
    pattern), unless the counts are close, where padding to the largest wastes less."""
    smallest, largest = min(layer_counts), max(layer_counts)
    return largest if largest < smallest * 1.5 else smallest


@dataclass(frozen=True)
class KVLayout:
    """How vLLM lays out the KV cache of one GPU: equal pages shared by group_size_layers
    layers each, per block; attention groups take blocks per token, state groups a fixed
    number of pages per request."""

    block_size_tokens: int
    page_bytes: int
    group_size_layers: int
    attention_groups: int
    state_groups: int
    state_pages_per_request: int

    @property
    def pool_block_bytes(self) -> int:
        return self.page_bytes * self.group_size_layers

    def num_blocks(self, available_kv_bytes: int) -> int:
        return max(0, available_kv_bytes // self.page_bytes // self.group_size_layers)

    def blocks_per_request(self, max_model_len: int) -> int:
        attention = self.attention_groups * cdiv(max_model_len, self.block_size_tokens)
        return attention + self.state_groups * self.state_pages_per_request

    def kv_needed_bytes(self, max_model_len: int) -> int:
        """KV memory one request of max_model_len tokens needs (vLLM's start-up check)."""
        return self.pool_block_bytes * self.blocks_per_request(max_model_len)

    def fits(self, available_kv_bytes: int, max_model_len: int) -> bool:
        needed = self.kv_needed_bytes(max_model_len)
        return available_kv_bytes > 0 and needed <= available_kv_bytes

    def max_concurrency(self, available_kv_bytes: int, max_model_len: int) -> float:
        return self.num_blocks(available_kv_bytes) / self.blocks_per_request(max_model_len)

    def kv_capacity_tokens(self, available_kv_bytes: int, max_model_len: int) -> int:
        """What vLLM logs as "GPU KV cache size": max concurrency x max_model_len."""
        return int(self.max_concurrency(available_kv_bytes, max_model_len) * max_model_len)

    def estimate_max_model_len(self, available_kv_bytes: int, upper_tokens: int) -> int:
        """Largest length in [1, upper_tokens] whose request fits; 0 if none does."""
        return largest_fitting(lambda tokens: self.fits(available_kv_bytes, tokens), upper_tokens)


def largest_fitting(fits: Callable[[int], bool], upper: int) -> int:
    """vLLM's binary search over [1, upper] for a monotone predicate; 0 if 1 fails."""
    if upper < 1 or not fits(1):
        return 0
    low, high, best = 1, upper, 1
    while low <= high:
        middle = (low + high) // 2
        if fits(middle):
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return best


def kv_layout(
    architecture: ModelArchitecture,
    *,
    kv_cache_dtype: str,
    model_dtype: str,
    tensor_parallel_size: int,
    enable_prefix_caching: bool,
) -> KVLayout:
    full = architecture.full_attention
    if full.num_layers == 0:
        raise ArchitectureError(
            f"{architecture.architecture} has no full-attention layers; the planner needs one"
        )
    model_bytes = model_dtype_bytes(model_dtype)
    page = attention_page(
        full, kv_bytes_per_element(kv_cache_dtype, model_dtype), tensor_parallel_size
    )
    gdn = architecture.linear_attention
    if gdn is None:
        # Every layer has the same spec: one group of all layers, the default block size.
        return KVLayout(
            block_size_tokens=DEFAULT_BLOCK_SIZE_TOKENS,
            page_bytes=DEFAULT_BLOCK_SIZE_TOKENS * page.bytes_per_token,
            group_size_layers=full.num_layers,
            attention_groups=1,
            state_groups=0,
            state_pages_per_request=0,
        )
    state = gated_delta_net_state(gdn, model_bytes, tensor_parallel_size)
    block_size = hybrid_block_size_tokens(page.bytes_per_token, state.bytes)
    group_size = group_size_layers([full.num_layers, gdn.num_layers])
    return KVLayout(
        block_size_tokens=block_size,
        page_bytes=block_size * page.bytes_per_token,
        group_size_layers=group_size,
        attention_groups=cdiv(full.num_layers, group_size),
        state_groups=cdiv(gdn.num_layers, group_size),
        state_pages_per_request=STATE_PAGES_PER_REQUEST[mamba_cache_mode(enable_prefix_caching)],
    )


def layout_for(inp: PlanInput) -> KVLayout:
    return kv_layout(
        inp.architecture,
        kv_cache_dtype=inp.kv_cache_dtype,
        model_dtype=inp.model_dtype,
        tensor_parallel_size=inp.tensor_parallel_size,
        enable_prefix_caching=inp.enable_prefix_caching,
    )
