/* Compiled as C99: proves plugin_abi.h and host_api.h are plain C, and reports the layout a C
 * compiler gives the ABI structs, which abi_layout_test.cpp compares with C++'s. */
#include <attnrt/host_api.h>
#include <attnrt/plugin_abi.h>

#include <stddef.h>

size_t attnrt_test_c_layout(int which) {
  switch (which) {
    case 0: return sizeof(attnrt_attention_desc);
    case 1: return sizeof(attnrt_forward_args);
    case 2: return sizeof(attnrt_backward_args);
    case 3: return sizeof(attnrt_plugin_api);
    case 4: return sizeof(attnrt_capabilities);
    case 5: return sizeof(attnrt_exec);
    case 6: return offsetof(attnrt_attention_desc, device);
    case 7: return offsetof(attnrt_plugin_api, backward);
    case 8: return offsetof(attnrt_attention_desc, return_lse);
    case 9: return offsetof(attnrt_attention_desc, extensions);
    case 10: return sizeof(attnrt_extension);
    case 11: return offsetof(attnrt_extension, next);
    case 12: return ATTNRT_ATTENTION_DESC_SIZE_V1_0;
    case 13: return ATTNRT_ATTENTION_DESC_SIZE_V1_1;
    case 14: return ATTNRT_EXEC_SIZE_V1_0;
    case 15: return ATTNRT_ABI_VERSION_MINOR;
    case 16: return sizeof(attnrt_flex_attention);
    case 17: return offsetof(attnrt_flex_attention, kv_num_blocks);
    case 18: return sizeof(attnrt_block_mask_args);
    case 19: return offsetof(attnrt_plugin_api, create_block_mask);
    default: return 0;
  }
}
