# Decode anchors for paged_attention (issue 17), to run in the same session as
# `attnrt bench --decode` so that ratios come from one machine and one run: PyTorch's SDPA
# backends (cuDNN, flash, efficient) on one decode step over a *contiguous* KV cache, and the
# device copy bandwidth, reported as effective bandwidth = K+V bytes / time (TB/s).
# Shapes: batch x cached keys 1x65536, 16x8192, 64x2048, 256x1024; hd128; 8 KV heads; GQA 4 and 8;
# bf16. Case names match attnrt bench --decode's (decode_D128_B16_K8192_H32_KV8_contiguous).
# Usage: python3 torch_decode_anchors.py [--shapes 1x65536,...] [--gqa 4,8] [--hdim 128]
# Timing: triton.testing.do_bench (median; the L2 cleared before every call, as attnrt bench
# --decode's cuda_median_ms_cold_l2 does).
# Prints "case,backend,tbps,note" rows and writes decode_anchors.csv into $OUT (or /tmp).
import argparse
import csv
import os

import torch
import torch.nn.functional as F
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

ap = argparse.ArgumentParser()
ap.add_argument("--shapes", default="1x65536,16x8192,64x2048,256x1024")
ap.add_argument("--gqa", default="4,8")
ap.add_argument("--hdim", default="128")
ap.add_argument("--heads-kv", type=int, default=8)
args = ap.parse_args()

dev = "cuda"
props = torch.cuda.get_device_properties(0)
print(f"# {props.name} SMs={props.multi_processor_count} torch={torch.__version__} "
      f"cudnn={torch.backends.cudnn.version()}", flush=True)
out_dir = os.environ.get("OUT", "/tmp")
rows = []


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


x = torch.randn(2 * 1024**3 // 2, device=dev, dtype=torch.bfloat16)
y = torch.empty_like(x)
ms = bench(lambda: y.copy_(x))
bw = 2 * x.numel() * 2 / ms / 1e9
print(f"# copy {bw:.3f} TB/s", flush=True)
rows.append(dict(case="ceiling_copy", backend="copy", tbps=round(bw, 3)))
del x, y

backends = {
    "torch_cudnn": SDPBackend.CUDNN_ATTENTION,
    "torch_flash": SDPBackend.FLASH_ATTENTION,
    "torch_efficient": SDPBackend.EFFICIENT_ATTENTION,
}
hkv = args.heads_kv
for hd in [int(h) for h in args.hdim.split(",")]:
    for shape in args.shapes.split(","):
        B, L = (int(v) for v in shape.split("x"))
        for g in [int(v) for v in args.gqa.split(",")]:
            hq = hkv * g
            q = torch.randn(B, hq, 1, hd, device=dev, dtype=torch.bfloat16)
            k = torch.randn(B, hkv, L, hd, device=dev, dtype=torch.bfloat16)
            v = torch.randn(B, hkv, L, hd, device=dev, dtype=torch.bfloat16)
            # Contiguous GQA cache expanded to the query heads as views (no copy in the timed region).
            ke = k[:, :, None].expand(B, hkv, g, L, hd).reshape(B, hq, L, hd) if g > 1 else k
            ve = v[:, :, None].expand(B, hkv, g, L, hd).reshape(B, hq, L, hd) if g > 1 else v
            kv_bytes = 2 * B * L * hkv * hd * 2
            case = f"decode_D{hd}_B{B}_K{L}_H{hq}_KV{hkv}_contiguous"
            for name, be in backends.items():
                try:
                    with sdpa_kernel(be):
                        # enable_gqa reads each KV head once; a backend that refuses it gets the
                        # cache expanded to the query heads (it then reads group x the bytes,
                        # noted so, while the figure still counts the cache's own bytes).
                        try:
                            fn = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)  # noqa: E731
                            fn()
                            note = "enable_gqa"
                        except Exception:
                            fn = lambda: F.scaled_dot_product_attention(q, ke, ve)  # noqa: E731
                            fn()
                            note = "expanded_kv"
                        ms = bench(fn)
                    tbps = kv_bytes / ms / 1e9
                    rows.append(dict(case=case, backend=name, tbps=round(tbps, 3), note=note))
                    print(f"{case},{name},{tbps:.3f},{note}", flush=True)
                except Exception as e:  # a backend that refuses the shape
                    print(f"{case},{name},n/a ({type(e).__name__}: {str(e)[:80]})", flush=True)
            del q, k, v, ke, ve
            torch.cuda.empty_cache()

with open(os.path.join(out_dir, "decode_anchors.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["case", "backend", "tbps", "note"], restval="")
    w.writeheader()
    w.writerows(rows)
