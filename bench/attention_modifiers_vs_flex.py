"""Kiln's attention with score and mask modifiers (written as expressions)
against Kiln's own built-in variant of the same work and PyTorch's
flex_attention under torch.compile, forward and backward, side by side in
one process with one timer (bench/peer_run.py), bf16 [batch, heads, seq, D]:

  ALiBi            score + slopes[h] * (kv_idx - q_idx), causal
                   (flex: the same score_mod and a causal block mask)
  soft-capping 30  tanh(score / 30) * 30 (Kiln built-in: softcap=30)
  document mask    doc[q_idx] == doc[kv_idx] over documents of ragged lengths
                   (Kiln built-in: the same documents as a packed batch)

Kiln's outputs are checked against flex_attention's first.

    python3 bench/attention_modifiers_vs_flex.py path/to/libkiln_ops.so records.json "command" [filter]
"""
import json
import sys

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from peer_run import PeerRun, kiln_ops, median_times

setup = PeerRun(sys.argv)
ops, only = setup.ops, setup.only
torch.manual_seed(0)
B, H, N, D = 4, 16, 4096, 128
BHSD = kiln_ops.LAYOUT_BHSD
flex = torch.compile(flex_attention)

slopes = torch.tensor([2.0 ** (-8 * (h + 1) / H) for h in range(H)], device="cuda")
lengths = torch.randint(128, 1024, (64,))
ends = torch.cumsum(lengths, 0)
lengths = lengths[: int((ends < N).sum()) + 1]
lengths[-1] = N - int(lengths[:-1].sum())
doc = torch.repeat_interleave(torch.arange(len(lengths)), lengths).to(torch.int32).cuda()
cu = torch.cat([torch.zeros(1, dtype=torch.int32), torch.cumsum(lengths, 0).to(torch.int32)]).cuda()


def alibi(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (kv_idx - q_idx)


def softcap(score, b, h, q_idx, kv_idx):
    return torch.tanh(score / 30) * 30


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def documents(b, h, q_idx, kv_idx):
    return doc[q_idx] == doc[kv_idx]


WORKLOADS = {
    "ALiBi, causal": dict(kiln=dict(score_mod="score + slopes[h] * cast(kv_idx - q_idx, f32)",
                                    tensors={"slopes": slopes}, mask=kiln_ops.MASK_CAUSAL_TOP_LEFT),
                          builtin=None, flex=dict(score_mod=alibi, mask=causal)),
    "soft-capping 30": dict(kiln=dict(score_mod="tanh(score / 30) * 30"), builtin=dict(softcap=30.0),
                            flex=dict(score_mod=softcap, mask=None)),
    "document mask": dict(kiln=dict(mask_mod="doc[q_idx] == doc[kv_idx]", tensors={"doc": doc}), builtin="packed",
                          flex=dict(score_mod=None, mask=documents)),
}

records, table = [], []
for label, w in WORKLOADS.items():
    name = f"attention modifiers {label} B {B} H {H} N {N} D {D} bf16"
    if only not in name:
        continue
    q, k, v, dout = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    out, lse = torch.empty_like(q), torch.empty(B, H, N, device="cuda")
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    opts = dict(layout=BHSD, **w["kiln"])

    def kiln_forward():
        ops.attention(q, k, v, out, lse=lse, **opts)

    def kiln_backward():
        ops.attention_backward(q, k, v, out, lse, dout, dq, dk, dv, **opts)

    block_mask = create_block_mask(w["flex"]["mask"], B, H, N, N) if w["flex"]["mask"] else None
    qg, kg, vg = (x.detach().requires_grad_() for x in (q, k, v))
    flex_out = flex(qg, kg, vg, score_mod=w["flex"]["score_mod"], block_mask=block_mask)
    kiln_forward()
    error = float(((out.float() - flex_out.float()).abs() / (flex_out.float().abs() + 1)).max())
    if not error <= 3e-2:
        raise SystemExit(f"{name}: Kiln's output is off flex_attention's by {error}")
    runners = {
        "Kiln forward": kiln_forward,
        "Kiln backward": kiln_backward,
        "flex forward": lambda: flex(q, k, v, score_mod=w["flex"]["score_mod"], block_mask=block_mask),
        "flex backward": lambda: torch.autograd.grad(flex_out, (qg, kg, vg), dout, retain_graph=True),
    }
    builtin = w["builtin"]
    if builtin == "packed":  # the same documents as one packed batch of sequences
        pq, pk, pv, pd = (x.transpose(1, 2).reshape(B * N, H, D)[:N].contiguous() for x in (q, k, v, dout))
        pout, plse = torch.empty_like(pq), torch.empty(H, N, device="cuda")
        pdq, pdk, pdv = torch.empty_like(pq), torch.empty_like(pk), torch.empty_like(pv)
        packed = dict(cu_seqlens_q=cu, cu_seqlens_k=cu)
        runners["built-in forward"] = lambda: [ops.attention(pq, pk, pv, pout, lse=plse, **packed) for _ in range(B)]
        runners["built-in backward"] = lambda: [
            ops.attention_backward(pq, pk, pv, pout, plse, pd, pdq, pdk, pdv, **packed) for _ in range(B)]
        runners["built-in forward"]()
    elif builtin:
        runners["built-in forward"] = lambda: ops.attention(q, k, v, out, lse=lse, layout=BHSD, **builtin)
        runners["built-in backward"] = lambda: ops.attention_backward(q, k, v, out, lse, dout, dq, dk, dv,
                                                                      layout=BHSD, **builtin)
    ms = median_times(runners)
    for phase in ("forward", "backward"):
        kiln_ms = ms[f"Kiln {phase}"]
        for peer in ("flex", "built-in"):
            if f"{peer} {phase}" in ms:
                peer_name = "flex_attention (torch.compile)" if peer == "flex" else "Kiln's built-in variant"
                records.append(dict(workload=f"ops {name} {phase}", metric="ms", kiln=kiln_ms, peer=peer_name,
                                    peer_value=ms[f"{peer} {phase}"], ratio=ms[f"{peer} {phase}"] / kiln_ms,
                                    device=setup.device, date=setup.date, command=setup.command))
    table.append((name, ms))

with open(setup.out_path, "w") as f:
    json.dump(records, f, indent=1)
print(f"\n{setup.device}, {setup.date}")
print("| workload | phase | Kiln ms | flex ms | flex / Kiln | built-in ms | built-in / Kiln |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, ms in table:
    for phase in ("forward", "backward"):
        kiln_ms, flex_ms, own = ms[f"Kiln {phase}"], ms[f"flex {phase}"], ms.get(f"built-in {phase}")
        own_cells = f"{own:.3f} | {own / kiln_ms:.2f}" if own else "- | -"
        print(f"| {name} | {phase} | {kiln_ms:.3f} | {flex_ms:.3f} | {flex_ms / kiln_ms:.2f} | {own_cells} |")
