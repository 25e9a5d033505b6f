// online_softmax for AVX2 (x86-64-v3), 8 lanes.
#define ATTNRT_SOFTMAX_LANES 8
#define ATTNRT_SOFTMAX_NAME online_softmax_avx2
#define ATTNRT_SPLIT_NAME split_to_bf16_avx2
#define ATTNRT_PDS_NAME probabilities_and_ds_avx2
#include "online_softmax.inc"
