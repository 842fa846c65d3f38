"""vLLM's capacity rules against the numbers vLLM logged in the field, to the token."""

from __future__ import annotations

import pytest

from components.planner.architecture import ArchitectureError, parse_architecture
from components.planner.capacity import (
    KVLayout,
    gated_delta_net_state,
    group_size_layers,
    kv_layout,
    largest_fitting,
)
from components.planner.report import format_gib
from tests.planner.conftest import FIELD_BLOCK_BYTES

GDN_STATE_BYTES = 61_440 + 3_145_728  # conv (10,240 x 3 x 2 B) + temporal (48 x 128 x 128 x 4 B)


def layout(architecture, **changes) -> KVLayout:
    settings = {
        "kv_cache_dtype": "fp8_e5m2",
        "model_dtype": "half",
        "tensor_parallel_size": 1,
        "enable_prefix_caching": True,
    }
    return kv_layout(architecture, **{**settings, **changes})


def test_gdn_state_page_matches_vllm_shapes(qwen_architecture):
    state = gated_delta_net_state(qwen_architecture.linear_attention, model_bytes=2, tp_size=1)
    assert state.bytes == GDN_STATE_BYTES, f"expected {GDN_STATE_BYTES} B, got {state.bytes}"


def test_field_layout_is_1568_token_blocks_in_four_groups_of_16(qwen_architecture):
    got = layout(qwen_architecture)
    expected = KVLayout(
        block_size_tokens=1568,
        page_bytes=1568 * 2048,
        group_size_layers=16,
        attention_groups=1,
        state_groups=3,
        state_pages_per_request=2,
    )
    assert got == expected, f"expected {expected}, got {got}"
    assert got.page_bytes >= GDN_STATE_BYTES, "the attention page must hold a whole GDN state"


@pytest.mark.parametrize(
    ("blocks", "max_model_len", "expected_tokens"),
    [
        (161, 180_000, 239_504),  # field report 1, 0.95 / 8192
        (181, 262_144, 272_690),  # field report 1, 0.98 / 2048
        (170, 254_976, 256_484),  # field report 2 (engine 1.5.0, NVFP4)
    ],
)
def test_kv_cache_size_matches_the_field_log(
    qwen_architecture, blocks, max_model_len, expected_tokens
):
    rules = layout(qwen_architecture)
    lowest, highest = blocks * FIELD_BLOCK_BYTES, (blocks + 1) * FIELD_BLOCK_BYTES - 1
    for available in (lowest, highest):
        got = rules.kv_capacity_tokens(available, max_model_len)
        assert got == expected_tokens, f"{available} B: expected {expected_tokens}, got {got}"
    one_byte_short = rules.kv_capacity_tokens(lowest - 1, max_model_len)
    assert one_byte_short < expected_tokens, f"one byte below {blocks} blocks must lose a block"


def test_262144_needs_8_33_gib_and_fits_to_the_byte(qwen_architecture):
    rules = layout(qwen_architecture)
    needed = rules.kv_needed_bytes(262_144)
    assert needed == 174 * FIELD_BLOCK_BYTES, f"expected 168 + 6 blocks, got {needed} B"
    assert format_gib(needed) == "8.33", f"vLLM printed 8.33 GiB, got {format_gib(needed)}"
    assert rules.fits(needed, 262_144), "exactly the needed bytes must fit"
    assert not rules.fits(needed - 1, 262_144), "one byte less must not fit"


@pytest.mark.parametrize(
    ("available", "expected_len"),
    [
        (127 * FIELD_BLOCK_BYTES, 189_728),  # field: estimate from 6.12 GiB
        (128 * FIELD_BLOCK_BYTES - 1, 189_728),
        (127 * FIELD_BLOCK_BYTES - 1, 188_160),  # one block fewer: 120 x 1,568
        (128 * FIELD_BLOCK_BYTES, 191_296),
    ],
)
def test_estimated_max_model_len_is_vllms_binary_search(qwen_architecture, available, expected_len):
    got = layout(qwen_architecture).estimate_max_model_len(available, 262_144)
    assert got == expected_len, f"{available} B: expected {expected_len}, got {got}"


def test_one_token_past_the_estimate_does_not_fit(qwen_architecture):
    rules = layout(qwen_architecture)
    available = 127 * FIELD_BLOCK_BYTES
    assert rules.fits(available, 189_728), "189,728 tokens must fit in 127 blocks"
    assert not rules.fits(available, 189_729), "189,729 tokens need a 122nd attention block"


def test_fp16_kv_halves_the_block_and_doubles_the_need(qwen_architecture):
    fp8, fp16 = layout(qwen_architecture), layout(qwen_architecture, kv_cache_dtype="auto")
    assert (fp16.block_size_tokens, fp16.page_bytes) == (784, fp8.page_bytes), (
        f"fp16 KV: expected 784-token blocks of the same page, got {fp16}"
    )
    assert fp16.blocks_per_request(180_000) == 230 + 6, "fp16: 230 attention blocks + 6 states"
    assert not fp16.fits(161 * FIELD_BLOCK_BYTES, 180_000), "the 180K profile needs fp8 KV"


def test_tensor_parallel_2_halves_pages_and_keeps_the_block(qwen_architecture):
    tp2 = layout(qwen_architecture, tensor_parallel_size=2)
    assert (tp2.block_size_tokens, tp2.page_bytes) == (1568, 1568 * 1024), (
        f"TP 2: expected 2 KV heads x 256 x 2 x 1 B per token, 1,568-token blocks, got {tp2}"
    )


@pytest.mark.parametrize("tp_size", [3, 5])
def test_tensor_parallel_must_split_the_gdn_layers(qwen_architecture, tp_size):
    with pytest.raises(ArchitectureError, match="not divisible by tensor_parallel_size"):
        layout(qwen_architecture, tensor_parallel_size=tp_size)


def test_without_prefix_caching_each_gdn_group_keeps_one_page(qwen_architecture):
    rules = layout(qwen_architecture, enable_prefix_caching=False)
    assert rules.blocks_per_request(180_000) == 115 + 3, "expected 115 attention + 3 state pages"
    got = rules.kv_capacity_tokens(161 * FIELD_BLOCK_BYTES, 180_000)
    assert got == 245_593, f"expected int(161 / 118 x 180,000) = 245,593, got {got}"


LLAMA3_8B = {
    "architectures": ["LlamaForCausalLM"],
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "hidden_size": 4096,
    "max_position_embeddings": 8192,
}
QWEN3_8B = {
    "architectures": ["Qwen3ForCausalLM"],
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 4096,
    "max_position_embeddings": 40960,
}


def test_dense_llama_is_one_group_of_16_token_blocks():
    rules = layout(parse_architecture(LLAMA3_8B), kv_cache_dtype="auto")
    assert (rules.block_size_tokens, rules.page_bytes, rules.group_size_layers) == (16, 65536, 32)
    ten_gib = 10 * 1024**3
    assert rules.num_blocks(ten_gib) == 5120, "10 GiB / (32 layers x 64 KiB) = 5,120 blocks"
    got = rules.kv_capacity_tokens(ten_gib, 8192)
    assert got == 81_920, f"10 GiB / 128 KiB per token = 81,920 tokens, got {got}"


def test_dense_qwen3_fp8_needs_one_block_per_16_tokens_of_all_layers():
    rules = layout(parse_architecture(QWEN3_8B))
    per_block = 36 * 16 * 2 * 8 * 128  # layers x tokens x K,V x heads x dim x 1 B
    assert rules.kv_needed_bytes(40960) == 2560 * per_block, "40,960 tokens = 2,560 blocks"
    assert rules.fits(2560 * per_block, 40960), "exactly 2,560 blocks must fit"
    assert not rules.fits(2560 * per_block - 1, 40960), "one byte less must not"
    assert rules.estimate_max_model_len(2560 * per_block - 1, 40960) == 2559 * 16


@pytest.mark.parametrize(
    ("counts", "expected"),
    [([16, 48], 16), ([13, 12], 13), ([10, 25], 10), ([32], 32)],
)
def test_group_size_follows_vllms_padding_heuristic(counts, expected):
    assert group_size_layers(counts) == expected, f"{counts}: expected group size {expected}"


def test_uneven_hybrid_pads_the_last_group(qwen_architecture):
    document = {
        "architectures": ["Hybrid"],
        "num_hidden_layers": 35,
        "layer_types": ["full_attention"] * 10 + ["linear_attention"] * 25,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 65536,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 48,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
    }
    rules = layout(parse_architecture(document))
    assert (rules.group_size_layers, rules.attention_groups, rules.state_groups) == (10, 1, 3)


def test_no_memory_fits_nothing(qwen_architecture):
    rules = layout(qwen_architecture)
    assert not rules.fits(0, 1), "vLLM refuses when no memory is left for the cache"
    assert rules.num_blocks(-5) == 0, "a negative budget holds no blocks"
    assert rules.estimate_max_model_len(0, 262_144) == 0


@pytest.mark.parametrize("limit", [0, 1, 7, 64, 100])
def test_binary_search_finds_the_largest_fitting_value(limit):
    got = largest_fitting(lambda value: value <= limit, 80)
    assert got == min(limit, 80), f"limit {limit}: expected {min(limit, 80)}, got {got}"
