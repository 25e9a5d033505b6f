// online_softmax for AVX-512 with AVX512-BF16 (its rounding conversion), 16 lanes.
#define ATTNRT_SOFTMAX_LANES 16
#define ATTNRT_SOFTMAX_NAME online_softmax_avx512bf16
#include "online_softmax.inc"
