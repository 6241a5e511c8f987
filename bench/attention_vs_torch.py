"""Kiln's attention op against PyTorch's scaled_dot_product_attention on its
cuDNN and FlashAttention backends, side by side in one process with one
timer: Kiln through libkiln_ops.so's C ABI (ctypes, DLPack), both peers on
the same [batch, heads, seq, D] bf16 tensors, each timed by
triton.testing.do_bench (CUDA events, L2 flushed before every run, median).
Rounds alternate the three; the reported time is the median of the rounds'
medians. Kiln's output and log-sum-exp are checked against float64 first.
TFLOP/s are counted as FlashAttention counts them: 4 * B * H * N_q * N_k * D,
half of it for causal attention.

    python3 bench/attention_vs_torch.py path/to/libkiln_ops.so records.json "command" [filter]

Writes bench/results-style records (Kiln / peer for each peer) and prints a
table. `filter` (a substring) runs only the workloads whose names hold it.
"""
import datetime
import json
import os
import statistics
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops", "python"))
import kiln_ops  # noqa: E402

ops = kiln_ops.load(sys.argv[1])
out_path, command = sys.argv[2], sys.argv[3]
only = sys.argv[4] if len(sys.argv) > 4 else ""
ROUNDS = 3
device = torch.cuda.get_device_name()
date = datetime.date.today().isoformat()
torch.manual_seed(0)
PEERS = {"cuDNN": SDPBackend.CUDNN_ATTENTION, "FlashAttention (SDPA)": SDPBackend.FLASH_ATTENTION}


def check(label, q, k, v, out, lse, causal):
    """out and lse against float64 for the first batch's first two heads and
    512 queries, and the last 512 (the whole problem in float64 would not fit)."""
    n = q.shape[2]
    kd, vd = k[:1, :2].double(), v[:1, :2].double()
    error = lse_error = 0.0
    for rows in (slice(0, min(512, n)), slice(max(0, n - 512), n)):
        scores = q[:1, :2, rows].double() @ kd.transpose(-1, -2) / q.shape[-1] ** 0.5
        if causal:
            index = torch.arange(n, device="cuda")
            scores = scores.masked_fill(index[None, :] > index[rows, None], float("-inf"))
        want, want_lse = torch.softmax(scores, -1) @ vd, torch.logsumexp(scores, -1)
        got = out[:1, :2, rows].double()
        error = max(error, float(((got - want).abs() / (want.abs() + want.abs().mean())).max()))
        lse_error = max(lse_error, float((lse[:1, :2, rows].double() - want_lse).abs().max()))
    if not (error <= 3e-2 and lse_error <= 1e-3):
        raise SystemExit(f"{label}: Kiln's output is off by {error} (relative), its lse by {lse_error}")


records, table = [], []
for D in (64, 128):
    for n in (1024, 4096, 16384):
        batch, heads = max(1, 16384 // n), 32  # B 4 at N 4096, as the headline shape
        for causal in (False, True):
            name = f"attention fwd bf16 B {batch} H {heads} N {n} D {D} {'causal' if causal else 'full'}"
            if only not in name:
                continue
            q, k, v = (torch.randn(batch, heads, n, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            out = torch.full_like(q, float("nan"))
            lse = torch.full((batch, heads, n), float("nan"), device="cuda")
            mask = kiln_ops.MASK_CAUSAL_TOP_LEFT if causal else kiln_ops.MASK_NONE

            def kiln():
                ops.attention(q, k, v, out, lse, layout=kiln_ops.LAYOUT_BHSD, mask=mask)

            kiln()
            torch.cuda.synchronize()
            check(name, q, k, v, out, lse, causal)
            runners = {"kiln": kiln}
            for peer, backend in PEERS.items():
                def run(backend=backend):
                    with sdpa_kernel(backend):
                        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                try:
                    run()
                    runners[peer] = run
                except RuntimeError as e:  # a backend that does not take this shape
                    print(f"{name}: {peer} unavailable ({str(e).splitlines()[0]})")
            times = {label: [] for label in runners}
            for _ in range(ROUNDS):
                for label, fn in runners.items():
                    times[label].append(do_bench(fn, warmup=25, rep=200, return_mode="median"))
            flops = 4 * batch * heads * n * n * D / (2 if causal else 1)
            tflops = {label: flops / statistics.median(ms) / 1e9 for label, ms in times.items()}
            for peer in runners:
                if peer != "kiln":
                    records.append(dict(workload=f"ops {name}", metric="TFLOP/s", kiln=tflops["kiln"], peer=peer,
                                        peer_value=tflops[peer], ratio=tflops["kiln"] / tflops[peer], device=device,
                                        date=date, command=command))
            table.append((name, tflops))
            del q, k, v, out, lse

json.dump(records, open(out_path, "w"), indent=1)
print(f"{device}, {date}; TFLOP/s, median of {ROUNDS} rounds of do_bench medians")
print("| workload | Kiln | cuDNN | FlashAttention (SDPA) | Kiln / cuDNN | Kiln / flash |")
print("| --- | --- | --- | --- | --- | --- |")
for name, t in table:
    cudnn, flash = t.get("cuDNN"), t.get("FlashAttention (SDPA)")
    print(f"| {name} | {t['kiln']:.0f} | {cudnn or 0:.0f} | {flash or 0:.0f} | "
          f"{t['kiln'] / cudnn if cudnn else float('nan'):.2f} | {t['kiln'] / flash if flash else float('nan'):.2f} |")
