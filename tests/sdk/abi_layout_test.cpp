// Pins the ABI 1.x layout (x86-64 / aarch64 LP64): a change here is a breaking change and needs
// ATTNRT_ABI_VERSION_MAJOR to move, or fields appended at the end with the minor bumped
// (sdk/ABI_CHANGELOG.md). The numbers are written out, not computed, so they cannot follow a
// change of the header; plugin_abi.h asserts the same values at compile time.
#include <attnrt/plugin_abi.h>

#include <gtest/gtest.h>

#include <cstddef>

extern "C" size_t attnrt_test_c_layout(int which);

namespace {

TEST(AbiLayout, EveryStructStartsWithStructSize) {
  EXPECT_EQ(offsetof(attnrt_message, struct_size), 0u);
  EXPECT_EQ(offsetof(attnrt_capabilities, struct_size), 0u);
  EXPECT_EQ(offsetof(attnrt_attention_desc, struct_size), 0u);
  EXPECT_EQ(offsetof(attnrt_exec, struct_size), 0u);
  EXPECT_EQ(offsetof(attnrt_forward_args, struct_size), 0u);
  EXPECT_EQ(offsetof(attnrt_backward_args, struct_size), 0u);
  EXPECT_EQ(offsetof(attnrt_host_info, struct_size), 0u);
  EXPECT_EQ(offsetof(attnrt_plugin_api, struct_size), 0u);
}

TEST(AbiLayout, FrozenHeadOfTheFunctionTable) {
  // Readable by every host of every major: the version check depends on it.
  EXPECT_EQ(offsetof(attnrt_plugin_api, abi_major), 8u);
  EXPECT_EQ(offsetof(attnrt_plugin_api, abi_minor), 12u);
  EXPECT_EQ(offsetof(attnrt_plugin_api, name), 16u);
}

TEST(AbiLayout, Version1Sizes) {
  EXPECT_EQ(sizeof(attnrt_message), 24u);
  EXPECT_EQ(sizeof(attnrt_capabilities), 40u);
  EXPECT_EQ(sizeof(attnrt_attention_desc), 128u);  // 1.0: 120, 1.1: + extensions
  EXPECT_EQ(sizeof(attnrt_exec), 40u);
  EXPECT_EQ(sizeof(attnrt_forward_args), 96u);
  EXPECT_EQ(sizeof(attnrt_backward_args), 136u);
  EXPECT_EQ(sizeof(attnrt_host_info), 32u);
  EXPECT_EQ(sizeof(attnrt_plugin_api), 112u);  // 1.0: 96, 1.2: + append_kv, 1.4: + create_block_mask
}

TEST(AbiLayout, Version1Offsets) {
  EXPECT_EQ(offsetof(attnrt_attention_desc, dtype), 8u);
  EXPECT_EQ(offsetof(attnrt_attention_desc, softmax_scale), 40u);
  EXPECT_EQ(offsetof(attnrt_attention_desc, deterministic), 84u);
  EXPECT_EQ(offsetof(attnrt_attention_desc, dropout_seed), 88u);
  EXPECT_EQ(offsetof(attnrt_attention_desc, device), 108u);
  EXPECT_EQ(offsetof(attnrt_attention_desc, cuda_arch), 116u);
  EXPECT_EQ(offsetof(attnrt_forward_args, q), 8u);
  EXPECT_EQ(offsetof(attnrt_forward_args, block_table), 88u);
  EXPECT_EQ(offsetof(attnrt_backward_args, dsinks), 80u);
  EXPECT_EQ(offsetof(attnrt_plugin_api, create), 48u);
  EXPECT_EQ(offsetof(attnrt_plugin_api, backward), 88u);
}

TEST(AbiLayout, CAndCxxAgree) {
  EXPECT_EQ(attnrt_test_c_layout(0), sizeof(attnrt_attention_desc));
  EXPECT_EQ(attnrt_test_c_layout(1), sizeof(attnrt_forward_args));
  EXPECT_EQ(attnrt_test_c_layout(2), sizeof(attnrt_backward_args));
  EXPECT_EQ(attnrt_test_c_layout(3), sizeof(attnrt_plugin_api));
  EXPECT_EQ(attnrt_test_c_layout(4), sizeof(attnrt_capabilities));
  EXPECT_EQ(attnrt_test_c_layout(5), sizeof(attnrt_exec));
  EXPECT_EQ(attnrt_test_c_layout(6), offsetof(attnrt_attention_desc, device));
  EXPECT_EQ(attnrt_test_c_layout(7), offsetof(attnrt_plugin_api, backward));
  EXPECT_EQ(attnrt_test_c_layout(8), offsetof(attnrt_attention_desc, return_lse));
  EXPECT_EQ(attnrt_test_c_layout(9), offsetof(attnrt_attention_desc, extensions));
  EXPECT_EQ(attnrt_test_c_layout(10), sizeof(attnrt_extension));
  EXPECT_EQ(attnrt_test_c_layout(11), offsetof(attnrt_extension, next));
  EXPECT_EQ(attnrt_test_c_layout(12), static_cast<size_t>(ATTNRT_ATTENTION_DESC_SIZE_V1_0));
  EXPECT_EQ(attnrt_test_c_layout(13), static_cast<size_t>(ATTNRT_ATTENTION_DESC_SIZE_V1_1));
  EXPECT_EQ(attnrt_test_c_layout(14), static_cast<size_t>(ATTNRT_EXEC_SIZE_V1_0));
  EXPECT_EQ(attnrt_test_c_layout(15), static_cast<size_t>(ATTNRT_ABI_VERSION_MINOR));
  EXPECT_EQ(attnrt_test_c_layout(16), sizeof(attnrt_flex_attention));
  EXPECT_EQ(attnrt_test_c_layout(17), offsetof(attnrt_flex_attention, kv_num_blocks));
  EXPECT_EQ(attnrt_test_c_layout(18), sizeof(attnrt_block_mask_args));
  EXPECT_EQ(attnrt_test_c_layout(19), offsetof(attnrt_plugin_api, create_block_mask));
}

TEST(AbiLayout, HasFieldReadsStructSize) {
  attnrt_attention_desc d{};
  d.struct_size = ATTNRT_STRUCT_SIZE(attnrt_attention_desc, return_lse);
  EXPECT_TRUE(ATTNRT_HAS_FIELD(&d, attnrt_attention_desc, return_lse));
  EXPECT_FALSE(ATTNRT_HAS_FIELD(&d, attnrt_attention_desc, device));
}

// ---------------------------------------------------------------- ABI 1.1

TEST(AbiLayout, VersionIsOnePointFour) {
  EXPECT_EQ(ATTNRT_ABI_VERSION_MAJOR, 1);
  EXPECT_EQ(ATTNRT_ABI_VERSION_MINOR, 4);
}

TEST(AbiLayout, NamedSizesPerVersion) {
  // What a 1.0 writer sent: unchanged by 1.1 (the 1.0 descriptor was 120 bytes).
  EXPECT_EQ(ATTNRT_PLUGIN_API_HEAD_SIZE, 16u);
  EXPECT_EQ(ATTNRT_MESSAGE_SIZE_V1_0, 24u);
  EXPECT_EQ(ATTNRT_CAPABILITIES_SIZE_V1_0, 40u);
  EXPECT_EQ(ATTNRT_ATTENTION_DESC_SIZE_V1_0, 120u);
  EXPECT_EQ(ATTNRT_EXEC_SIZE_V1_0, 36u);  // sizeof is 40: tail padding after num_threads
  EXPECT_EQ(ATTNRT_FORWARD_ARGS_SIZE_V1_0, 96u);
  EXPECT_EQ(ATTNRT_BACKWARD_ARGS_SIZE_V1_0, 136u);
  EXPECT_EQ(ATTNRT_HOST_INFO_SIZE_V1_0, 32u);
  EXPECT_EQ(ATTNRT_PLUGIN_API_SIZE_V1_0, 96u);
  // 1.1
  EXPECT_EQ(ATTNRT_EXTENSION_SIZE_V1_1, 24u);
  EXPECT_EQ(ATTNRT_ATTENTION_DESC_SIZE_V1_1, 128u);
  // 1.2: the function table's append_kv, attnrt_append_kv_args
  EXPECT_EQ(ATTNRT_PLUGIN_API_SIZE_V1_2, 104u);
  EXPECT_EQ(offsetof(attnrt_plugin_api, append_kv), 96u);
  EXPECT_EQ(ATTNRT_APPEND_KV_ARGS_SIZE_V1_2, 48u);
  EXPECT_EQ(offsetof(attnrt_append_kv_args, slot_mapping), 24u);
  EXPECT_EQ(ATTNRT_APPEND_KV_ARGS_SIZE_V1_2, sizeof(attnrt_append_kv_args));
  EXPECT_EQ(ATTNRT_FEATURE_APPEND_KV, 1ull << 13);
  EXPECT_EQ(ATTNRT_FEATURE_PAGED_VARLEN_Q, 1ull << 14);
  // 1.3: the flex_attention extension block (an extension: the descriptor did not grow)
  EXPECT_EQ(ATTNRT_FLEX_ATTENTION_SIZE_V1_3, 152u);
  EXPECT_EQ(ATTNRT_FLEX_ATTENTION_SIZE_V1_3, sizeof(attnrt_flex_attention));
  EXPECT_EQ(offsetof(attnrt_flex_attention, header), 0u);
  EXPECT_EQ(offsetof(attnrt_flex_attention, score_mod), 24u);
  EXPECT_EQ(offsetof(attnrt_flex_attention, num_aux), 56u);
  EXPECT_EQ(offsetof(attnrt_flex_attention, aux), 64u);
  EXPECT_EQ(offsetof(attnrt_flex_attention, q_block_size), 80u);
  EXPECT_EQ(offsetof(attnrt_flex_attention, kv_num_blocks), 88u);
  EXPECT_EQ(static_cast<uint32_t>(ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION), 1u);
  EXPECT_EQ(ATTNRT_FEATURE_FLEX_ATTENTION, 1ull << 15);
  // 1.4: the function table's create_block_mask, attnrt_block_mask_args
  EXPECT_EQ(ATTNRT_PLUGIN_API_SIZE_V1_4, 112u);
  EXPECT_EQ(offsetof(attnrt_plugin_api, create_block_mask), 104u);
  EXPECT_EQ(ATTNRT_BLOCK_MASK_ARGS_SIZE_V1_4, 72u);
  EXPECT_EQ(ATTNRT_BLOCK_MASK_ARGS_SIZE_V1_4, sizeof(attnrt_block_mask_args));
  EXPECT_EQ(offsetof(attnrt_block_mask_args, kv_num_blocks), 8u);
  EXPECT_EQ(offsetof(attnrt_block_mask_args, q_num_blocks), 40u);
  EXPECT_EQ(ATTNRT_FEATURE_CREATE_BLOCK_MASK, 1ull << 16);
  // The newest size of each struct is its sizeof: nothing was added without a named size.
  EXPECT_EQ(ATTNRT_ATTENTION_DESC_SIZE_V1_1, sizeof(attnrt_attention_desc));
  EXPECT_EQ(ATTNRT_PLUGIN_API_SIZE_V1_4, sizeof(attnrt_plugin_api));
  EXPECT_EQ(ATTNRT_CAPABILITIES_SIZE_V1_0, sizeof(attnrt_capabilities));
  EXPECT_EQ(ATTNRT_FORWARD_ARGS_SIZE_V1_0, sizeof(attnrt_forward_args));
  EXPECT_EQ(ATTNRT_BACKWARD_ARGS_SIZE_V1_0, sizeof(attnrt_backward_args));
  EXPECT_EQ(ATTNRT_HOST_INFO_SIZE_V1_0, sizeof(attnrt_host_info));
  EXPECT_EQ(ATTNRT_MESSAGE_SIZE_V1_0, sizeof(attnrt_message));
  EXPECT_EQ(ATTNRT_EXTENSION_SIZE_V1_1, sizeof(attnrt_extension));
  EXPECT_EQ((ATTNRT_EXEC_SIZE_V1_0 + 7) / 8 * 8, sizeof(attnrt_exec));
}

TEST(AbiLayout, ExtensionHeaderAndDescriptorField) {
  EXPECT_EQ(offsetof(attnrt_extension, struct_size), 0u);
  EXPECT_EQ(offsetof(attnrt_extension, type), 8u);
  EXPECT_EQ(offsetof(attnrt_extension, flags), 12u);
  EXPECT_EQ(offsetof(attnrt_extension, next), 16u);
  EXPECT_EQ(sizeof(attnrt_extension), 24u);
  // Appended after the whole 1.0 descriptor: no 1.0 writer's struct_size can claim it.
  EXPECT_EQ(offsetof(attnrt_attention_desc, extensions), 120u);
  EXPECT_EQ(offsetof(attnrt_attention_desc, cuda_arch), 116u);  // 1.0 fields did not move
  EXPECT_EQ(static_cast<uint32_t>(ATTNRT_EXTENSION_OPTIONAL), 1u);
  EXPECT_EQ(static_cast<uint32_t>(ATTNRT_EXTENSION_TYPE_NONE), 0u);
  EXPECT_EQ(ATTNRT_EXTENSION_TYPE_VENDOR_FIRST, 0x80000000u);
  EXPECT_EQ(ATTNRT_EXTENSION_CHAIN_MAX, 64);
}

TEST(AbiLayout, HasFieldTellsA10DescriptorFromA11One) {
  attnrt_attention_desc d{};
  d.struct_size = 120;  // what an ABI 1.0 host sends
  EXPECT_TRUE(ATTNRT_HAS_FIELD(&d, attnrt_attention_desc, cuda_arch));
  EXPECT_FALSE(ATTNRT_HAS_FIELD(&d, attnrt_attention_desc, extensions));
  d.struct_size = 128;
  EXPECT_TRUE(ATTNRT_HAS_FIELD(&d, attnrt_attention_desc, extensions));
}

}  // namespace
