// online_softmax for AVX-512 (F, BW, DQ, VL), 16 lanes.
#define ATTNRT_SOFTMAX_LANES 16
#define ATTNRT_SOFTMAX_NAME online_softmax_avx512
#define ATTNRT_SPLIT_NAME split_to_bf16_avx512
#define ATTNRT_PDS_NAME probabilities_and_ds_avx512
#include "online_softmax.inc"
