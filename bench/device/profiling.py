"""Shared by the profile_*.py scripts: warm up (compile) each run, then run
each once between cudaProfilerStart/Stop, which is what Nsight Compute's
--profile-from-start off records."""
import torch


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
