"""Times Triton's autotuner end to end on 5 matmul configs (4096^3 bf16,
compile + benchmark, fresh cache), the peer of `autotune --op matmul` with
the same 5 configs. A second call in the same process shows Triton's
in-memory reuse; a new process re-tunes (Triton keeps no tuning results on
disk unless asked).

    python3 bench/device/triton_matmul_autotune.py
"""
import os
import tempfile
import time

os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp())  # fresh: compiles count

import torch
import triton
import triton.language as tl

CONFIGS = [  # the same tiles as the Kiln run: (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)
    (128, 128, 64, 4, 3), (128, 256, 64, 8, 3), (128, 128, 32, 4, 4), (64, 128, 64, 4, 4), (256, 128, 32, 8, 4)]


@triton.autotune(configs=[triton.Config({"BM": m, "BN": n, "BK": k}, num_warps=w, num_stages=s)
                          for m, n, k, w, s in CONFIGS], key=["M", "N", "K"])
@triton.jit
def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    group = pid // (8 * tiles_n)
    first_m = group * 8
    rows = min(tl.cdiv(M, BM) - first_m, 8)
    pid_m = first_m + pid % rows
    pid_n = (pid % (8 * tiles_n)) // rows
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * K + rk[None, :]
    pb = b + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(pa + k), tl.load(pb + k * N))
    om = pid_m * BM + tl.arange(0, BM)
    on = pid_n * BN + tl.arange(0, BN)
    tl.store(c + om[:, None] * N + on[None, :], acc.to(tl.bfloat16), mask=(om[:, None] < M) & (on[None, :] < N))


M = N = K = 4096
a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
torch.cuda.synchronize()
t0 = time.perf_counter()
matmul[grid](a, b, c, M, N, K)
torch.cuda.synchronize()
first = time.perf_counter() - t0
t0 = time.perf_counter()
matmul[grid](a, b, c, M, N, K)
torch.cuda.synchronize()
second = time.perf_counter() - t0
ok = torch.allclose(c.float(), (a.float() @ b.float()), rtol=3e-2, atol=1e-1)
print(f"Triton {triton.__version__}: autotuning 5 configs at 4096^3 bf16 end to end {first:.2f} s "
      f"(best {matmul.best_config}); second call {second * 1e3:.2f} ms; result {'ok' if ok else 'WRONG'}")
