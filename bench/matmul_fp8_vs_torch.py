"""Kiln's scaled fp8 matmul against torch._scaled_mm (cuBLASLt), side by side
in one process with one timer: Kiln through libkiln_ops.so's C ABI
(kiln_matmul_scaled: ctypes, DLPack), both on the same float8_e4m3fn
operands (a row-major, b the transpose of an [N, K] tensor) with per-tensor
scales, with row-wise ones (a scale a row of a, a column of b), and with
block scales (a's [M, K / 128], b's one a 128 x 128 block), bf16 out.
Each output is checked first against the product of the fp8 values and
scales in f32; TFLOP/s count 2 * M * N * K. torch._scaled_mm is timed as it
defaults (partial sums promoted to f32 now and then) and with
use_fast_accum (fp8 wgmma's own running sums, as Kiln's per-tensor and
row-wise kernels). Block scales: beside torch._scaled_mm's block-scaled
product where this PyTorch has one, else beside its per-tensor product of
the same operands (the same work less the scaling), said so in the table.

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
TOLERANCE = 3e-3  # of each element's sum of |terms|: bf16's rounding (2^-9) and fp8 sums' (2^-11)

records, table = [], []
for M, N, K in SHAPES:
    for scaling in ("per-tensor", "row-wise", "block"):
        name = f"matmul fp8 e4m3 {M}x{N}x{K} {scaling} scales, bf16 out"
        if only not in name:
            continue
        a = (torch.randn(M, K, device="cuda") * 0.5).to(torch.float8_e4m3fn)
        b = (torch.randn(N, K, device="cuda") * 0.5).to(torch.float8_e4m3fn).t()  # [K, N], K-major
        tensor_a, tensor_b = torch.tensor(0.75, device="cuda"), torch.tensor(1.25, device="cuda")
        if scaling == "row-wise":
            scale_a, scale_b = torch.rand(M, 1, device="cuda") + 0.5, torch.rand(1, N, device="cuda") + 0.5
            kiln_scales = (scale_a.reshape(-1), scale_b.reshape(-1))
            scaled = lambda x, y: (x @ y) * scale_a * scale_b
        elif scaling == "block":
            kb, nb = (K + 127) // 128, (N + 127) // 128
            scale_a = torch.rand(M, kb, device="cuda") + 0.5
            scale_b = (torch.rand(nb, kb, device="cuda") + 0.5).t()  # [K / 128, N / 128], as b: the transpose
            kiln_scales = (scale_a, scale_b)
            widen = lambda s, rows, cols: s.repeat_interleave(128, 0)[:rows].repeat_interleave(128, 1)[:, :cols]
            scaled = lambda x, y: (x * scale_a.repeat_interleave(128, 1)[:, :K]) @ (y * widen(scale_b, K, N))
        else:
            scale_a, scale_b = tensor_a, tensor_b
            kiln_scales = (scale_a.reshape(-1), scale_b.reshape(-1))
            scaled = lambda x, y: (x @ y) * scale_a * scale_b
        # The reference, and each element's sum of |terms| (the scale of the
        # accumulation's error: fp8 tensor cores keep about 14 bits of a
        # running sum, so an error of 2^-11 of it passes; a lost or doubled
        # step of 32 products does not).
        want, magnitude = scaled(a.float(), b.float()), scaled(a.float().abs(), b.float().abs())
        out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)

        def kiln():
            ops.matmul_scaled(a, b, out, scale_a=kiln_scales[0], scale_b=kiln_scales[1])

        def scaled_mm(sa, sb, fast=False):
            return torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast)

        def error_of(got):
            return float(((got.float() - want).abs() / magnitude).max())

        peer, peer_name = (lambda fast=False: scaled_mm(scale_a, scale_b, fast)), "torch._scaled_mm"
        if scaling == "block":
            try:  # (block-scaled cuBLASLt where this PyTorch has it and agrees with the reference)
                if not error_of(scaled_mm(scale_a, scale_b)) <= TOLERANCE:
                    raise RuntimeError("off")
            except (RuntimeError, TypeError, NotImplementedError):
                peer = lambda fast=False: scaled_mm(tensor_a, tensor_b, fast)
                peer_name = "torch._scaled_mm per-tensor (no block scales in this PyTorch)"
        kiln()
        error = error_of(out)
        peer_error = error_of(peer()) if peer_name == "torch._scaled_mm" else float("nan")
        if not error <= TOLERANCE:
            raise SystemExit(f"{name}: Kiln's output is off by {error} (torch._scaled_mm's by {peer_error})")
        ms = median_times({"kiln": kiln, "peer": peer, "fast": lambda: peer(True)})
        tflops = {label: 2 * M * N * K / t / 1e9 for label, t in ms.items()}
        for label, full_name in (("peer", peer_name), ("fast", peer_name + ", use_fast_accum")):
            records.append(dict(workload=f"ops {name}", metric="TFLOP/s", kiln=tflops["kiln"], peer=full_name,
                                peer_value=tflops[label], ratio=tflops["kiln"] / tflops[label],
                                device=setup.device, date=setup.date, command=setup.command))
        table.append((name, peer_name, tflops["kiln"], tflops["peer"], tflops["fast"], error, peer_error))
        del a, b, out, want, magnitude

with open(setup.out_path, "w") as f:
    json.dump(records, f, indent=1)
print(f"\n{setup.device}, {setup.date}")
print("| workload | peer | Kiln TFLOP/s | peer | Kiln / it | its fast accumulation | Kiln / it "
      "| max error / sum of abs. terms, Kiln / peer |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for name, peer_name, kiln_tf, peer_tf, fast_tf, error, peer_error in table:
    print(f"| {name} | {peer_name} | {kiln_tf:.0f} | {peer_tf:.0f} | {kiln_tf / peer_tf:.2f} | {fast_tf:.0f} "
          f"| {kiln_tf / fast_tf:.2f} | {error:.1e} / {peer_error:.1e} |")
