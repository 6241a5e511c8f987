"""Kiln's grouped matmul against torch._grouped_mm (bf16) and
torch._scaled_grouped_mm (fp8 e4m3, row-wise scales), side by side in one
process with one timer: Kiln through libkiln_ops.so's C ABI
(kiln_grouped_matmul: ctypes, DLPack), both on the same mixture-of-experts
layer: 8 experts, ragged token counts (a fixed seed) summing to 16384 rows
of a, each expert's weight an [N, K] matrix used transposed (b [G, K, N],
K-major), offsets (int32 cumulative ends) on the device. Each output is
checked first against a per-group product in f32; TFLOP/s count
2 * rows * N * K.

    python3 bench/grouped_matmul_vs_torch.py path/to/libkiln_ops.so records.json "command" [filter]

Writes bench/results-style records and prints a table.
"""
import json
import sys

import torch

from peer_run import PeerRun, median_times

setup = PeerRun(sys.argv)
ops, only = setup.ops, setup.only
torch.manual_seed(0)
GROUPS, TOKENS = 8, 16384
SHAPES = ((4096, 7168), (14336, 4096))  # (N, K)

weights = torch.rand(GROUPS) + 0.25
sizes = (weights / weights.sum() * TOKENS).floor().long()
sizes[-1] += TOKENS - sizes.sum()
offsets = torch.cumsum(sizes, 0).to(torch.int32).cuda()

records, table = [], []
for N, K in SHAPES:
    for dtype in ("bf16", "fp8 e4m3 row-wise"):
        name = f"grouped matmul {dtype} {GROUPS} experts, {TOKENS} ragged rows, N {N} K {K}, bf16 out"
        if only not in name:
            continue
        fp8 = dtype != "bf16"
        a = torch.randn(TOKENS, K, device="cuda") * 0.5
        w = torch.randn(GROUPS, N, K, device="cuda") * 0.5
        a, w = (a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)) if fp8 else (a.bfloat16(), w.bfloat16())
        b = w.transpose(-2, -1)  # [G, K, N], K-major
        scale_a = torch.rand(TOKENS, device="cuda") + 0.5
        scale_b = torch.rand(GROUPS, N, device="cuda") + 0.5
        out = torch.full((TOKENS, N), float("nan"), device="cuda", dtype=torch.bfloat16)

        def kiln():
            if fp8:
                ops.grouped_matmul(a, b, offsets, out, scale_a=scale_a, scale_b=scale_b)
            else:
                ops.grouped_matmul(a, b, offsets, out)

        def peer():
            if fp8:
                return torch._scaled_grouped_mm(a, b, scale_a, scale_b, offs=offsets, out_dtype=torch.bfloat16)
            return torch._grouped_mm(a, b, offs=offsets, out_dtype=torch.bfloat16)

        def grouped(f):
            """The scaled per-group product in f32 of f(a) and f(b)."""
            result, start = torch.empty(TOKENS, N, device="cuda"), 0
            for g, end in enumerate(offsets.tolist()):
                rows = f(a[start:end].float()) @ f(b[g].float())
                result[start:end] = rows * scale_a[start:end, None] * scale_b[g] if fp8 else rows
                start = end
            return result

        # The reference, and each element's sum of |terms| (the scale of the
        # accumulation's error: fp8 tensor cores keep about 14 bits of a
        # running sum, so an error of 2^-11 of it passes, with bf16's
        # rounding; a lost or doubled step of products does not).
        want, magnitude = grouped(lambda x: x), grouped(torch.abs)
        error_of = lambda got: float(((got.float() - want).abs() / magnitude).max())
        kiln()
        error = error_of(out)
        if not error <= 3e-3:
            raise SystemExit(f"{name}: Kiln's output is off by {error} of its terms' magnitude")
        try:
            peer_error = error_of(peer())
        except (RuntimeError, TypeError, AttributeError) as e:  # (this PyTorch or GPU has no such peer)
            print(f"{name}: no peer ({e})")
            continue
        ms = median_times({"kiln": kiln, "peer": peer})
        tflops = {label: 2 * TOKENS * N * K / t / 1e9 for label, t in ms.items()}
        peer_name = "torch._scaled_grouped_mm" if fp8 else "torch._grouped_mm"
        records.append(dict(workload=f"ops {name}", metric="TFLOP/s", kiln=tflops["kiln"], peer=peer_name,
                            peer_value=tflops["peer"], ratio=tflops["kiln"] / tflops["peer"], device=setup.device,
                            date=setup.date, command=setup.command))
        table.append((name, peer_name, tflops["kiln"], tflops["peer"], error, peer_error))
        del a, w, b, out, want, magnitude

with open(setup.out_path, "w") as f:
    json.dump(records, f, indent=1)
print(f"\n{setup.device}, {setup.date}")
print("| workload | peer | Kiln TFLOP/s | peer | Kiln / peer | max error / sum of abs. terms, Kiln / peer |")
print("| --- | --- | --- | --- | --- | --- |")
for name, peer_name, kiln_tf, peer_tf, error, peer_error in table:
    print(f"| {name} | {peer_name} | {kiln_tf:.0f} | {peer_tf:.0f} | {kiln_tf / peer_tf:.2f} "
          f"| {error:.1e} / {peer_error:.1e} |")
