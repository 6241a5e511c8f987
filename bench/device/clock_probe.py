"""The SM clock and board power each matmul holds when run back to back:
Kiln's op (as it plans, or the tuned config in KILN_CACHE_DIR's store) and
cuBLAS (torch.matmul), alternately, `rounds` phases of `seconds` each, while
nvidia-smi samples every 50 ms. Prints each phase's median clock, power and
TFLOP/s, so that a gap in do_bench's times can be told apart into cycles
and clock rate:

    python3 bench/device/clock_probe.py path/to/libkiln_ops.so [M N K] [--rounds 3] [--seconds 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ops", "python"))
import kiln_ops  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("lib")
parser.add_argument("shape", nargs="*", type=int, default=[4096, 4096, 4096])
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--seconds", type=float, default=3.0)
args = parser.parse_args()
M, N, K = args.shape
ops = kiln_ops.load(args.lib)
a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
launch = {"kiln": lambda: ops.matmul(a, b, out), "cublas": lambda: torch.matmul(a, b, out=out)}

sampler = subprocess.Popen(
    ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "50"],
    stdout=subprocess.PIPE, text=True)
samples = []  # (time, clock MHz, power W), stamped as they arrive


def read_samples():
    for line in sampler.stdout:
        clock, power = (float(v) for v in line.split(","))
        samples.append((time.time(), clock, power))


threading.Thread(target=read_samples, daemon=True).start()

flop = 2.0 * M * N * K
print(f"| {M}x{N}x{K} bf16, B [K][N] | phase | SM clock MHz (median) | power W (median) | TFLOP/s |")
print("| --- | ---: | ---: | ---: | ---: |")
for r in range(args.rounds):
    for name, run in launch.items():
        for _ in range(20):
            run()
        torch.cuda.synchronize()
        start = time.time()
        launches = 0
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        while time.time() - start < args.seconds:
            for _ in range(50):
                run()
            launches += 50
            torch.cuda.synchronize()  # (keeps the host from queueing far ahead of the sampling)
        end.record()
        torch.cuda.synchronize()
        stop = time.time()
        time.sleep(0.2)
        # Skip the first half second: the clock settles under the new load.
        held = [(c, p) for t, c, p in samples if start + 0.5 <= t <= stop]
        ms = begin.elapsed_time(end) / launches
        clock = statistics.median(c for c, _ in held) if held else float("nan")
        power = statistics.median(p for _, p in held) if held else float("nan")
        print(f"| {name} | {r + 1} | {clock:.0f} | {power:.0f} | {flop / ms / 1e9:.1f} |", flush=True)
sampler.terminate()
