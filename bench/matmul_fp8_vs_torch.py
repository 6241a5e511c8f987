"""Kiln's scaled fp8 matmul against torch._scaled_mm (cuBLASLt), side by side
in one process with one timer: Kiln through libkiln_ops.so's C ABI
(kiln_matmul_scaled: ctypes, DLPack), both on the same float8_e4m3fn
operands (a row-major, b the transpose of an [N, K] tensor) with per-tensor
scales and with row-wise ones (a scale a row of a, a column of b), bf16 out.
Each output is checked first against the product of the fp8 values and
scales in f32; TFLOP/s count 2 * M * N * K. torch._scaled_mm is timed as it
defaults (partial sums promoted to f32 now and then) and with
use_fast_accum (fp8 wgmma's own running sums, as Kiln's today).

    python3 bench/matmul_fp8_vs_torch.py path/to/libkiln_ops.so records.json "command" [filter]

Writes bench/results-style records (Kiln / torch._scaled_mm) and prints a table.
"""
import json
import sys

import torch

from peer_run import PeerRun, median_times

setup = PeerRun(sys.argv)
ops, only = setup.ops, setup.only
torch.manual_seed(0)
SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 7168, 7168))

records, table = [], []
for M, N, K in SHAPES:
    for rowwise in (False, True):
        name = f"matmul fp8 e4m3 {M}x{N}x{K} {'row-wise' if rowwise else 'per-tensor'} scales, bf16 out"
        if only not in name:
            continue
        a = (torch.randn(M, K, device="cuda") * 0.5).to(torch.float8_e4m3fn)
        b = (torch.randn(N, K, device="cuda") * 0.5).to(torch.float8_e4m3fn).t()  # [K, N], K-major
        if rowwise:
            scale_a = torch.rand(M, 1, device="cuda") + 0.5
            scale_b = torch.rand(1, N, device="cuda") + 0.5
        else:
            scale_a = torch.tensor(0.75, device="cuda")
            scale_b = torch.tensor(1.25, device="cuda")
        out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)

        def kiln():
            ops.matmul_scaled(a, b, out, scale_a=scale_a.reshape(-1), scale_b=scale_b.reshape(-1))

        def peer(fast=False):
            return torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16,
                                    use_fast_accum=fast)

        kiln()
        want = (a.float() @ b.float()) * scale_a * scale_b
        error = float(((out.float() - want).abs() / (want.abs() + 1)).max())
        peer_error = float(((peer().float() - want).abs() / (want.abs() + 1)).max())
        if not error <= 2e-2:
            raise SystemExit(f"{name}: Kiln's output is off by {error} (torch._scaled_mm's by {peer_error})")
        ms = median_times({"kiln": kiln, "torch._scaled_mm": peer, "fast": lambda: peer(True)})
        tflops = {label: 2 * M * N * K / t / 1e9 for label, t in ms.items()}
        for label, peer_name in (("torch._scaled_mm", "torch._scaled_mm"),
                                 ("fast", "torch._scaled_mm, use_fast_accum")):
            records.append(dict(workload=f"ops {name}", metric="TFLOP/s", kiln=tflops["kiln"], peer=peer_name,
                                peer_value=tflops[label], ratio=tflops["kiln"] / tflops[label],
                                device=setup.device, date=setup.date, command=setup.command))
        table.append((name, tflops["kiln"], tflops["torch._scaled_mm"], tflops["fast"], error, peer_error))
        del a, b, out, want

with open(setup.out_path, "w") as f:
    json.dump(records, f, indent=1)
print(f"\n{setup.device}, {setup.date}")
print("| workload | Kiln TFLOP/s | torch._scaled_mm | Kiln / it | its fast accumulation | Kiln / it "
      "| max rel. error Kiln / torch |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, kiln_tf, peer_tf, fast_tf, error, peer_error in table:
    print(f"| {name} | {kiln_tf:.0f} | {peer_tf:.0f} | {kiln_tf / peer_tf:.2f} | {fast_tf:.0f} | {kiln_tf / fast_tf:.2f} "
          f"| {error:.1e} / {peer_error:.1e} |")
