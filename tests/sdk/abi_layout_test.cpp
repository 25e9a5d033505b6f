// Pins the ABI 1.0 layout (x86-64 / aarch64 LP64): a change here is a breaking change and needs
// ATTNRT_ABI_VERSION_MAJOR to move, or fields appended at the end with the minor bumped.
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
  EXPECT_EQ(sizeof(attnrt_attention_desc), 120u);
  EXPECT_EQ(sizeof(attnrt_exec), 40u);
  EXPECT_EQ(sizeof(attnrt_forward_args), 96u);
  EXPECT_EQ(sizeof(attnrt_backward_args), 136u);
  EXPECT_EQ(sizeof(attnrt_host_info), 32u);
  EXPECT_EQ(sizeof(attnrt_plugin_api), 96u);
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
}

TEST(AbiLayout, HasFieldReadsStructSize) {
  attnrt_attention_desc d{};
  d.struct_size = ATTNRT_STRUCT_SIZE(attnrt_attention_desc, return_lse);
  EXPECT_TRUE(ATTNRT_HAS_FIELD(&d, attnrt_attention_desc, return_lse));
  EXPECT_FALSE(ATTNRT_HAS_FIELD(&d, attnrt_attention_desc, device));
}

}  // namespace
