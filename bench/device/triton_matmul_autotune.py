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

from triton_matmul import triton_matmul

CONFIGS = [  # the same tiles as the Kiln run: (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)
    (128, 128, 64, 4, 3), (128, 256, 64, 8, 3), (128, 128, 32, 4, 4), (64, 128, 64, 4, 4), (256, 128, 32, 8, 4)]


matmul = triton.autotune(configs=[triton.Config({"BM": m, "BN": n, "BK": k}, num_warps=w, num_stages=s)
                                  for m, n, k, w, s in CONFIGS], key=["M", "N", "K"])(triton_matmul)


M = N = K = 4096
a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
torch.cuda.synchronize()
t0 = time.perf_counter()
matmul[grid](a, b, c, M, N, K, N, 1)
torch.cuda.synchronize()
first = time.perf_counter() - t0
t0 = time.perf_counter()
matmul[grid](a, b, c, M, N, K, N, 1)
torch.cuda.synchronize()
second = time.perf_counter() - t0
ok = torch.allclose(c.float(), (a.float() @ b.float()), rtol=3e-2, atol=1e-1)
print(f"Triton {triton.__version__}: autotuning 5 configs at 4096^3 bf16 end to end {first:.2f} s "
      f"(best {matmul.best_config}); second call {second * 1e3:.2f} ms; result {'ok' if ok else 'WRONG'}")
