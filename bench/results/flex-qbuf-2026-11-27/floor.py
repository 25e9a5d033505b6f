# The bytes a 90%-sparse S2048 forward must move at the least (issue 15's bench mask visits
# every query and key block: Q, K and V read once, O written once), timed as one device-to-device
# copy of two tensors' bytes (2 read + 2 written), back to back like the bench's pipelined rows.
import torch
for hd in (64, 128):
    n = 2 * 16 * 2048 * hd  # elements of one of q, k, v, out (batch 2, 16 heads, S2048)
    src = torch.randn(2 * n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    for _ in range(20):
        dst.copy_(src)
    torch.cuda.synchronize()
    best = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(200):
            dst.copy_(src)
        b.record()
        torch.cuda.synchronize()
        best.append(a.elapsed_time(b) / 200)
    mb = 4 * n * 2 / 1e6
    print(f"hd{hd}: {mb:.1f} MB moved, copy {min(best) * 1e3:.1f} us (rounds {', '.join(f'{x * 1e3:.1f}' for x in best)}), "
          f"{mb / 1e3 / (min(best) / 1e3):.0f} GB/s")
