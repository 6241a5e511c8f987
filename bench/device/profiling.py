"""Shared by the profile_*.py scripts: warm up (compile) each run, then run
each once between cudaProfilerStart/Stop, which is what Nsight Compute's
--profile-from-start off records."""
import torch

DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}


def row_problem(args, first):
    """x [rows, cols] with a weight and a bias of cols values (random) and an
    output like x, from the command line's dtype, rows and cols at
    args[first:] (defaults bf16, 16384, 8192)."""
    dtype = DTYPES[args[first] if len(args) > first else "bf16"]
    rows = int(args[first + 1]) if len(args) > first + 1 else 16384
    cols = int(args[first + 2]) if len(args) > first + 2 else 8192
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    w = torch.randn(cols, device="cuda", dtype=dtype)
    b = torch.randn(cols, device="cuda", dtype=dtype)
    return x, w, b, torch.empty_like(x)


def profile_once(*runs, warmups=3):
    for _ in range(warmups):
        for run in runs:
            run()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for run in runs:
        run()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
