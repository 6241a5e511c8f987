"""Kiln's attention backward pass against PyTorch's scaled_dot_product_attention
backward on its cuDNN and FlashAttention backends, side by side in one
process with one timer: Kiln through libkiln_ops.so's C ABI
(kiln_attention_backward: ctypes, DLPack) from Kiln's own forward's out and
lse, the peers through autograd from their own forward (only the backward
timed), all on the same [batch, heads, seq, D] bf16 tensors. Kiln's
gradients are checked first against float64 autograd on the first batch's
first two heads (their whole rows). TFLOP/s are counted as FlashAttention
counts the backward: 2.5 x its forward's 4 * B * H * N^2 * D (five products
of the forward's two's size), half of it causal.

    python3 bench/attention_backward_vs_torch.py path/to/libkiln_ops.so records.json "command" [filter]

Writes bench/results-style records and prints a table.
"""
import json
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from peer_run import PeerRun, kiln_ops, median_times

setup = PeerRun(sys.argv)
ops, only = setup.ops, setup.only
torch.manual_seed(0)
PEERS = {"cuDNN": SDPBackend.CUDNN_ATTENTION, "FlashAttention (SDPA)": SDPBackend.FLASH_ATTENTION}
CASES = [(4, 32, 4096, 128, causal, det) for causal in (False, True) for det in (False, True)] + \
        [(16, 16, 1024, 64, True, False), (4, 16, 4096, 256, True, False)]


def reference(q, k, v, dout, causal):
    """float64 gradients of the first batch's first two heads."""
    q64, k64, v64 = (x[:1, :2].double().requires_grad_() for x in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(q64, k64, v64, is_causal=causal)
    return torch.autograd.grad(out, (q64, k64, v64), dout[:1, :2].double())


records, table, wrong = [], [], []
for B, H, N, D, causal, deterministic in CASES:
    name = f"attention backward B {B} H {H} N {N} D {D} bf16{' causal' if causal else ''}" \
           f"{' deterministic' if deterministic else ''}"
    if only not in name:
        continue
    q, k, v, dout = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    out = torch.empty_like(q)
    lse = torch.empty(B, H, N, device="cuda", dtype=torch.float32)
    mask = kiln_ops.MASK_CAUSAL_TOP_LEFT if causal else kiln_ops.MASK_NONE
    ops.attention(q, k, v, out, lse=lse, layout=kiln_ops.LAYOUT_BHSD, mask=mask)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def kiln():
        ops.attention_backward(q, k, v, out, lse, dout, dq, dk, dv, layout=kiln_ops.LAYOUT_BHSD, mask=mask,
                               deterministic=deterministic)

    kiln()
    want = reference(q, k, v, dout, causal)

    def error_of(grads):
        return max(float(((got[:1, :2].double() - w).abs() / (w.abs() + w.abs().mean())).max())
                   for got, w in zip(grads, want))

    error = error_of((dq, dk, dv))
    runners, peer_errors = {"kiln": kiln}, {}
    for peer, backend in PEERS.items():
        qg, kg, vg = (x.detach().requires_grad_() for x in (q, k, v))
        try:
            with sdpa_kernel(backend):
                peer_out = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
                peer_errors[peer] = error_of(torch.autograd.grad(peer_out, (qg, kg, vg), dout, retain_graph=True))
        except RuntimeError as e:  # (this backend does not take the problem)
            print(f"{name}: no {peer} ({e})")
            continue

        def backward(peer_out=peer_out, qg=qg, kg=kg, vg=vg, backend=backend):
            with sdpa_kernel(backend):
                torch.autograd.grad(peer_out, (qg, kg, vg), dout, retain_graph=True)

        runners[peer] = backward
    # Within 5e-2, or within twice the best peer's error: bf16 inputs and a
    # bf16 out (rowsum(dO o O) is taken from it) bound any backward's
    # accuracy, and the peers, on the same inputs, show how far.
    bound = max(5e-2, 2 * min(peer_errors.values(), default=0))
    if not error <= bound:
        # (Not timed; the others still are, and the run fails at the end.)
        wrong.append(f"{name}: Kiln's gradients are off by {error:.2e} (relative; bound {bound:.2e}, peers "
                     f"{peer_errors})")
        print(wrong[-1])
        continue
    ms = median_times(runners)
    flops = 2.5 * 4 * B * H * N * N * D * (0.5 if causal else 1)
    tflops = {label: flops / t / 1e9 for label, t in ms.items()}
    for peer in PEERS:
        if peer in tflops:
            records.append(dict(workload=f"ops {name}", metric="TFLOP/s", kiln=tflops["kiln"], peer=peer,
                                peer_value=tflops[peer], ratio=tflops["kiln"] / tflops[peer], device=setup.device,
                                date=setup.date, command=setup.command))
    table.append((name, tflops, error, peer_errors))
    del q, k, v, dout, out, lse, dq, dk, dv

with open(setup.out_path, "w") as f:
    json.dump(records, f, indent=1)
print(f"\n{setup.device}, {setup.date}")
print("| workload | Kiln TFLOP/s | cuDNN | Kiln / cuDNN | FlashAttention (SDPA) | Kiln / FA "
      "| max rel. error Kiln / cuDNN / FA |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, tflops, error, peer_errors in table:
    cells = []
    for peer in PEERS:
        value = tflops.get(peer)
        cells += [f"{value:.0f}", f"{tflops['kiln'] / value:.2f}"] if value else ["-", "-"]
    errors = " / ".join(f"{e:.1e}" for e in [error] + [peer_errors.get(peer, float("nan")) for peer in PEERS])
    print(f"| {name} | {tflops['kiln']:.0f} | " + " | ".join(cells) + f" | {errors} |")
if wrong:
    raise SystemExit("\n".join(wrong))
