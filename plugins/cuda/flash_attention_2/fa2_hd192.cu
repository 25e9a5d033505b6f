// flash_attention_2 kernels for head_dim 192 (fp16 and bf16).
#include "fa2_launch.cuh"

ATTNRT_FA2_INSTANTIATE(192)
