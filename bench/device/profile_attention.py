"""Kiln's attention op and cuDNN (PyTorch's scaled_dot_product_attention) on
the same bf16 [batch, heads, seq, D] problems: each checked against float64
on its first rows, timed (median of do_bench), then launched once more
between cudaProfilerStart/Stop for Nsight Compute to compare (tensor pipe
activity, stall reasons, instructions, occupancy):

    ncu --profile-from-start off --section ... \\
        python3 bench/device/profile_attention.py path/to/libkiln_ops.so [B H N D [causal]]...

Each problem is five numbers (the last 0 or 1); without any, a short walk
(B 16 H 32 N 1024 D 128) and a long one (B 4 H 32 N 4096 D 128), full: the
two whose rates differ most. Kiln runs its default tile; KILN_DUMP_DIR keeps
its stages (PTX, SASS where cuobjdump exists).
"""
import os
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ops", "python"))
import kiln_ops  # noqa: E402

ops = kiln_ops.load(sys.argv[1])
numbers = [int(v) for v in sys.argv[2:]]
if len(numbers) % 5:
    raise SystemExit("profile_attention.py: each problem is B H N D causal (five numbers)")
problems = [tuple(numbers[i:i + 5]) for i in range(0, len(numbers), 5)] or [(16, 32, 1024, 128, 0),
                                                                             (4, 32, 4096, 128, 0)]
torch.manual_seed(0)
launches = []
print("| problem | Kiln ms | Kiln TFLOP/s | cuDNN ms | cuDNN TFLOP/s | Kiln / cuDNN |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for batch, heads, n, D, causal in problems:
    q, k, v = (torch.randn(batch, heads, n, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = torch.full_like(q, float("nan"))
    lse = torch.full((batch, heads, n), float("nan"), device="cuda")
    mask = kiln_ops.MASK_CAUSAL_TOP_LEFT if causal else kiln_ops.MASK_NONE

    def kiln(q=q, k=k, v=v, out=out, lse=lse, mask=mask):
        ops.attention(q, k, v, out, lse, layout=kiln_ops.LAYOUT_BHSD, mask=mask)

    def cudnn(q=q, k=k, v=v, causal=causal):
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))

    kiln()
    torch.cuda.synchronize()
    rows = slice(0, min(256, n))
    scores = q[:1, :1, rows].double() @ k[:1, :1].double().transpose(-1, -2) / D ** 0.5
    if causal:
        index = torch.arange(n, device="cuda")
        scores = scores.masked_fill(index[None, :] > index[rows, None], float("-inf"))
    want = torch.softmax(scores, -1) @ v[:1, :1].double()
    error = ((out[:1, :1, rows].double() - want).abs() / (want.abs() + want.abs().mean())).max().item()
    assert error < 3e-2, f"Kiln's output is off by {error} (relative)"
    flops = 4 * batch * heads * n * n * D / (2 if causal else 1)
    ms = {name: do_bench(run, warmup=50, rep=300, return_mode="median") for name, run in (("kiln", kiln),
                                                                                          ("cudnn", cudnn))}
    print(f"| B {batch} H {heads} N {n} D {D} {'causal' if causal else 'full'} | {ms['kiln']:.4f} | "
          f"{flops / ms['kiln'] / 1e9:.0f} | {ms['cudnn']:.4f} | {flops / ms['cudnn'] / 1e9:.0f} | "
          f"{ms['cudnn'] / ms['kiln']:.3f} |")
    launches += [kiln, cudnn]
torch.cuda.synchronize()
torch.cuda.profiler.start()
for run in launches:
    run()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
