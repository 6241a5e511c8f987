"""Kiln's matmul op, a Triton kernel with the same tile and cuBLAS (through
torch.matmul) on the same 4096^3 bf16 problem: each timed (median of
do_bench), then launched once more between cudaProfilerStart/Stop for
Nsight Compute to compare (stall reasons, instructions, pipes):

    ncu --profile-from-start off --section ... \\
        python3 bench/device/profile_matmul.py path/to/libkiln_ops.so [M N K] [kn|nk]

B is [K][N] row-major (`kn`, the default) or stored [N][K] (`nk`, as
nn.Linear's weight). The tile of both DSL kernels is Kiln's default for
this size (128x256x64, 8 warps, 3 stages, groups of 8 rows).
TRITON_CACHE_DIR keeps Triton's cubin for its SASS.
"""
import os
import sys

import torch
import triton
from triton.testing import do_bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ops", "python"))
import kiln_ops  # noqa: E402
from triton_matmul import triton_matmul  # noqa: E402

ops = kiln_ops.load(sys.argv[1])
M, N, K = (int(v) for v in sys.argv[2:5]) if len(sys.argv) > 4 else (4096, 4096, 4096)
b_nk = len(sys.argv) > 5 and sys.argv[5] == "nk"
a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
b_stored = torch.randn((N, K) if b_nk else (K, N), device="cuda", dtype=torch.bfloat16)
b = b_stored.t() if b_nk else b_stored
sbk, sbn = b.stride()
reference = a.float() @ b.float()
outputs = {name: torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for name in ("kiln", "triton", "cublas")}
BM, BN, BK = 128, 256, 64
launch = {
    "kiln": lambda: ops.matmul(a, b, outputs["kiln"]),
    "triton": lambda: triton_matmul[(triton.cdiv(M, BM) * triton.cdiv(N, BN),)](
        a, b, outputs["triton"], M, N, K, sbk, sbn, BM=BM, BN=BN, BK=BK, num_warps=8, num_stages=3),
    "cublas": lambda: torch.matmul(a, b, out=outputs["cublas"]),
}
times = {}
for name, run in launch.items():
    outputs[name].fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    # bf16 outputs round to 2^-8 of their size; sums of 4096 products reach ~200
    error = ((outputs[name].float() - reference).abs() / (reference.abs() + 1)).max().item()
    assert error < 1e-2, f"{name}: max relative error {error}"
    times[name] = do_bench(run, warmup=100, rep=500, return_mode="median")
flop = 2.0 * M * N * K
print(f"| {M}x{N}x{K} bf16, B {'[N][K]' if b_nk else '[K][N]'} | ms | TFLOP/s | x cuBLAS |")
print("| --- | ---: | ---: | ---: |")
for name, ms in times.items():
    print(f"| {name} | {ms:.4f} | {flop / ms / 1e9:.1f} | {times['cublas'] / ms:.3f} |")
torch.cuda.synchronize()
torch.cuda.profiler.start()
for run in launch.values():
    run()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
