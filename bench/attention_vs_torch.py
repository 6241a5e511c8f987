"""Kiln's attention op against PyTorch's scaled_dot_product_attention on its
cuDNN and FlashAttention backends, side by side in one process with one
timer: Kiln through libkiln_ops.so's C ABI (ctypes, DLPack), both peers on
the same [batch, heads, seq, D] bf16 tensors, timed in alternating rounds
(bench/peer_run.py). Kiln's output and log-sum-exp are checked against float64 first.
TFLOP/s are counted as FlashAttention counts them: 4 * B * H * N_q * N_k * D,
half of it for causal attention.

    python3 bench/attention_vs_torch.py path/to/libkiln_ops.so records.json "command" [filter]

Decoding from a paged cache is timed as bytes of K/V read a second, beside a
device-to-device copy and SDPA on the same cache stored dense.

Writes bench/results-style records (Kiln / peer for each peer) and prints a
table. `filter` (a substring) runs only the workloads whose names hold it.
"""
import json
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from peer_run import ROUNDS, PeerRun, kiln_ops, median_times

setup = PeerRun(sys.argv)
ops, out_path, command, only, device, date = setup.ops, setup.out_path, setup.command, setup.only, setup.device, setup.date
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


def cases():
    """(batch, heads_q, heads_kv, n, D, causal, layout) of every workload: the dense sweep in PyTorch's
    [batch, heads, seq, D] (16 heads at D 256), then at the issue's headline shape FlashAttention's [batch, seq, heads, D] and
    grouped-query heads (32 query heads on 8 K/V heads)."""
    for D in (64, 128, 256):
        for n in (1024, 4096, 16384):
            for causal in (False, True):
                yield max(1, 16384 // n), 32 if D < 256 else 16, 32 if D < 256 else 16, n, D, causal, "bhsd"
    for causal in (False, True):
        yield 4, 32, 32, 4096, 128, causal, "bshd"
        yield 4, 32, 8, 4096, 128, causal, "bhsd"


records, table = [], []
for batch, heads, kv_heads, n, D, causal, layout in cases():
    name = (f"attention fwd bf16 B {batch} H {heads}{f'/{kv_heads}' if kv_heads != heads else ''} N {n} D {D} "
            f"{'causal' if causal else 'full'}{' bshd' if layout == 'bshd' else ''}")
    if only not in name:
        continue
    # Kiln's tensors in their layout; the peers see the same memory as [batch, heads, seq, D] views.
    shape = (lambda h: (batch, h, n, D)) if layout == "bhsd" else (lambda h: (batch, n, h, D))
    q = torch.randn(shape(heads), device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(shape(kv_heads), device="cuda", dtype=torch.bfloat16) for _ in range(2))
    out = torch.full_like(q, float("nan"))
    lse = torch.full((batch, heads, n), float("nan"), device="cuda")
    as_bhsd = (lambda t: t) if layout == "bhsd" else (lambda t: t.transpose(1, 2))
    mask = kiln_ops.MASK_CAUSAL_TOP_LEFT if causal else kiln_ops.MASK_NONE
    kiln_layout = kiln_ops.LAYOUT_BHSD if layout == "bhsd" else kiln_ops.LAYOUT_BSHD

    def kiln():
        ops.attention(q, k, v, out, lse, layout=kiln_layout, mask=mask)

    kiln()
    torch.cuda.synchronize()
    group = heads // kv_heads
    check(name, as_bhsd(q), as_bhsd(k).repeat_interleave(group, 1), as_bhsd(v).repeat_interleave(group, 1),
          as_bhsd(out), lse, causal)
    runners = {"kiln": kiln}
    for peer, backend in PEERS.items():
        def run(backend=backend):
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(
                    as_bhsd(q), as_bhsd(k), as_bhsd(v), is_causal=causal, enable_gqa=group > 1)
        try:
            run()
            runners[peer] = run
        except RuntimeError as e:  # a backend that does not take this shape
            print(f"{name}: {peer} unavailable ({str(e).splitlines()[0]})")
    flops = 4 * batch * heads * n * n * D / (2 if causal else 1)
    tflops = {label: flops / ms / 1e9 for label, ms in median_times(runners).items()}
    for peer in runners:
        if peer != "kiln":
            records.append(dict(workload=f"ops {name}", metric="TFLOP/s", kiln=tflops["kiln"], peer=peer,
                                peer_value=tflops[peer], ratio=tflops["kiln"] / tflops[peer], device=device,
                                date=date, command=command))
    table.append((name, tflops))
    del q, k, v, out, lse

# Packed batches (FlashAttention's varlen): lengths drawn from 128-4096 until
# 32k tokens, [tokens, heads, D]; their TFLOP/s (the sum of each sequence's
# work) beside Kiln's own dense kernel at B 4 N 4096 with the same head
# dimension and mask in this run, the "same work" comparison.
generator = torch.Generator().manual_seed(1)
lengths = []
while sum(lengths) < 32768:
    lengths.append(int(torch.randint(128, 4097, (1,), generator=generator)))
starts = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32, device="cuda")
tokens = int(starts[-1])
for D, causal in ((128, False), (128, True), (64, False)):
    variant = f"H 32 D {D} {'causal' if causal else 'full'}"
    packed_name = f"attention fwd bf16 packed 32k tokens (lengths 128-4096) {variant}"
    if only not in packed_name:
        continue
    mask = kiln_ops.MASK_CAUSAL_TOP_LEFT if causal else kiln_ops.MASK_NONE
    dense_name = f"attention fwd bf16 B 4 N 4096 D {D} {'causal' if causal else 'full'}"
    dense = next((t["kiln"] for name, t in table if name == f"attention fwd bf16 B 4 H 32 N 4096 D {D} "
                  f"{'causal' if causal else 'full'}"), None)
    if dense is None:
        # (The sweep above skipped the dense row: Kiln's dense rate measured here.)
        q, k, v = (torch.randn(4, 32, 4096, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        out = torch.empty_like(q)

        def dense_kiln():
            ops.attention(q, k, v, out, layout=kiln_ops.LAYOUT_BHSD, mask=mask)

        dense_kiln()
        dense = 4 * 4 * 32 * 4096 * 4096 * D / (2 if causal else 1) / median_times({"kiln": dense_kiln})["kiln"] / 1e9
        del q, k, v, out
    q, k, v = (torch.randn(tokens, 32, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = torch.full_like(q, float("nan"))
    lse = torch.full((32, tokens), float("nan"), device="cuda")

    def packed():
        ops.attention(q, k, v, out, lse, mask=mask, cu_seqlens_q=starts, cu_seqlens_k=starts)

    packed()
    torch.cuda.synchronize()
    last = slice(tokens - lengths[-1], tokens)  # the last sequence against float64
    check(packed_name, *(t[last].transpose(0, 1)[None] for t in (q, k, v, out)), lse[:, last][None], causal)
    ms = median_times({"kiln": packed})["kiln"]
    flops = sum(4 * 32 * n * n * D / (2 if causal else 1) for n in lengths)
    tflops = flops / ms / 1e9
    records.append(dict(workload=f"ops {packed_name}", metric="TFLOP/s", kiln=tflops,
                        peer=f"Kiln dense, {dense_name}", peer_value=dense, ratio=tflops / dense,
                        device=device, date=date, command=command))
    print(f"{packed_name} ({len(lengths)} sequences): {tflops:.0f} TFLOP/s, {tflops / dense:.2f} of the dense kernel's")
    del q, k, v, out, lse

# Decoding from a paged KV cache: one new query a sequence over its cache,
# pages of 64 tokens scattered over the cache by a random block table. The
# work is reading K and V: their bytes a second, beside the memory traffic
# (bytes read and written) of a device-to-device copy of as many bytes in
# this run, and beside SDPA over the same cache stored dense. Kiln is timed
# with the indices checked on the host (the default, a read that waits for
# the stream) and unchecked (the caller vouches: what a decoding loop runs).
def decode_cases():
    """(batch, heads_q, heads_kv, cache tokens): the issue's shape, then few sequences of long caches (split-KV)."""
    yield 64, 32, 8, 4096
    yield 64, 8, 8, 4096
    yield 4, 32, 8, 16384
    yield 1, 32, 8, 65536


decode_table = []
for batch, heads, kv_heads, n in decode_cases():
    D, page = 128, 64
    name = f"attention decode bf16 paged B {batch} H {heads}/{kv_heads} cache {n} D {D} pages of {page}"
    if only not in name:
        continue
    pages_per_seq = n // page
    total_pages = batch * pages_per_seq
    k_cache, v_cache = (torch.randn(total_pages, page, kv_heads, D, device="cuda", dtype=torch.bfloat16)
                        for _ in range(2))
    block_table = torch.randperm(total_pages, device="cuda", dtype=torch.int32).reshape(batch, pages_per_seq)
    seqlens = torch.full((batch,), n, device="cuda", dtype=torch.int32)
    q = torch.randn(batch, 1, heads, D, device="cuda", dtype=torch.bfloat16)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((batch, heads, 1), float("nan"), device="cuda")

    def kiln_checked():
        ops.attention(q, k_cache, v_cache, out, lse, block_table=block_table, cache_seqlens=seqlens)

    def kiln_unchecked():
        ops.attention(q, k_cache, v_cache, out, lse, block_table=block_table, cache_seqlens=seqlens, check_indices=False)

    kiln_checked()
    torch.cuda.synchronize()
    # The dense cache the pages hold, [batch, kv_heads, n, D]: the reference's and SDPA's.
    dense_k, dense_v = (c[block_table.long()].reshape(batch, n, kv_heads, D).transpose(1, 2).contiguous()
                        for c in (k_cache, v_cache))
    group = heads // kv_heads
    check(name, q[:1].transpose(1, 2), dense_k[:1].repeat_interleave(group, 1),
          dense_v[:1].repeat_interleave(group, 1), out[:1].transpose(1, 2), lse[:1], False)
    kv_bytes = 2 * k_cache.numel() * k_cache.element_size()
    source = torch.empty(kv_bytes // 2, device="cuda", dtype=torch.bfloat16)
    target = torch.empty_like(source)
    q_bhsd = q.transpose(1, 2)

    def sdpa():
        return torch.nn.functional.scaled_dot_product_attention(q_bhsd, dense_k, dense_v, enable_gqa=group > 1)

    runners = {"kiln": kiln_unchecked, "kiln checked": kiln_checked, "copy": lambda: target.copy_(source),
               "SDPA dense": sdpa}
    ms = median_times(runners)
    rate = {label: kv_bytes / ms[label] / 1e6 for label in ("kiln", "kiln checked", "SDPA dense")}  # GB/s
    copy_rate = 2 * (kv_bytes // 2) * 2 / ms["copy"] / 1e6  # read + written
    for label in ("kiln", "kiln checked"):
        records.append(dict(workload=f"ops {name}{' (indices checked on the host)' if label != 'kiln' else ''}",
                            metric="GB/s of K/V read", kiln=rate[label],
                            peer="device-to-device copy (GB/s read + written)", peer_value=copy_rate,
                            ratio=rate[label] / copy_rate, device=device, date=date, command=command))
    records.append(dict(workload=f"ops {name}", metric="GB/s of K/V read", kiln=rate["kiln"],
                        peer="SDPA on the cache stored dense", peer_value=rate["SDPA dense"],
                        ratio=rate["kiln"] / rate["SDPA dense"], device=device, date=date, command=command))
    decode_table.append((name, rate, copy_rate, ms))
    del k_cache, v_cache, dense_k, dense_v, source, target

json.dump(records, open(out_path, "w"), indent=1)
print(f"{device}, {date}; TFLOP/s, median of {ROUNDS} rounds of do_bench medians")
print("| workload | Kiln | cuDNN | FlashAttention (SDPA) | Kiln / cuDNN | Kiln / flash |")
print("| --- | --- | --- | --- | --- | --- |")
for name, t in table:
    cudnn, flash = t.get("cuDNN"), t.get("FlashAttention (SDPA)")
    print(f"| {name} | {t['kiln']:.0f} | {cudnn or 0:.0f} | {flash or 0:.0f} | "
          f"{t['kiln'] / cudnn if cudnn else float('nan'):.2f} | {t['kiln'] / flash if flash else float('nan'):.2f} |")
if decode_table:
    print("| decoding workload | Kiln GB/s (µs) | checked GB/s | copy GB/s (read + written) | SDPA dense GB/s | "
          "Kiln / copy | checked / copy | Kiln / SDPA |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, rate, copy_rate, ms in decode_table:
        print(f"| {name} | {rate['kiln']:.0f} ({ms['kiln'] * 1000:.0f}) | {rate['kiln checked']:.0f} | {copy_rate:.0f} | "
              f"{rate['SDPA dense']:.0f} | {rate['kiln'] / copy_rate:.2f} | {rate['kiln checked'] / copy_rate:.2f} | "
              f"{rate['kiln'] / rate['SDPA dense']:.2f} |")
