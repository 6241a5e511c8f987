"""Kiln's ops library against PyTorch, side by side in one process with one
timer: each workload of issue 6 runs through libkiln_ops.so's C ABI (ctypes,
DLPack), torch.compile, eager PyTorch and a device-to-device copy of the
same bytes, timed in alternating rounds (bench/peer_run.py). Every Kiln output is checked against float64 PyTorch
before it is timed.

    python3 bench/ops_vs_torch.py path/to/libkiln_ops.so records.json "command" [filter]

Writes bench/results-style records (Kiln / peer for each peer) and prints a
table. `filter` (a substring) runs only the workloads whose names hold it.
"""
import json
import sys

import torch

from peer_run import ROUNDS, PeerRun, median_times

setup = PeerRun(sys.argv)
ops, out_path, command, only, device, date = setup.ops, setup.out_path, setup.command, setup.only, setup.device, setup.date
names = {torch.bfloat16: "bf16", torch.float32: "f32"}
TOLERANCE = {torch.float32: 2e-5, torch.bfloat16: 1.6e-2}
torch.manual_seed(0)


def check(label, got, want, tolerance):
    """Error relative to |want| plus the output's mean magnitude: outputs near
    zero (layer norm) do not need full relative precision, and softmax's
    values (~1/N) are not measured against 1, which would let zeros pass."""
    error = float(((got.double() - want).abs() / (want.abs() + want.abs().mean())).max())
    if not error <= tolerance:
        raise SystemExit(f"{label}: Kiln's output is off by {error} (relative; tolerance {tolerance})")


def workloads():
    """(name, bytes moved, {runner: callable}, check) for every workload."""
    for dt in (torch.float32, torch.bfloat16):
        # The two shapes, then rows too long to hold on chip (two walks).
        for rows, cols in [(16384, 8192), (4096, 32768), (1024, 131072)]:
            x = torch.randn(rows, cols, device="cuda", dtype=dt)
            y = torch.full_like(x, float("nan"))
            w = torch.randn(cols, device="cuda", dtype=dt)
            b = torch.randn(cols, device="cuda", dtype=dt)
            nbytes = 2 * x.numel() * x.element_size()
            shape = f"{names[dt]} {rows}x{cols}"
            xd = x.double()
            yield (f"softmax {shape}", nbytes, x, y,
                   lambda: ops.softmax(x, y), lambda t: torch.softmax(t, -1),
                   lambda: torch.softmax(xd, -1))
            yield (f"layer norm {shape}", nbytes, x, y,
                   lambda: ops.layer_norm(x, w, b, 1e-5, y),
                   lambda t: torch.nn.functional.layer_norm(t, (cols,), w, b, 1e-5),
                   lambda: torch.nn.functional.layer_norm(xd, (cols,), w.double(), b.double(), 1e-5))
            yield (f"rms norm {shape}", nbytes, x, y,
                   lambda: ops.rms_norm(x, w, 1e-5, y),
                   lambda t: torch.nn.functional.rms_norm(t, (cols,), w, 1e-5),
                   lambda: xd * (xd.pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt() * w.double())
            del x, y, xd
    for dt in (torch.float32, torch.bfloat16):
        rows, cols = 16384, 8192
        x = torch.randn(rows, cols, device="cuda", dtype=dt)
        y = torch.full_like(x, float("nan"))
        w = torch.randn(cols, device="cuda", dtype=dt)
        b = torch.randn(cols, device="cuda", dtype=dt)
        nbytes = (2 * x.numel() + 2 * cols) * x.element_size()
        yield (f"pointwise gelu(x*w+b) {names[dt]} {rows}x{cols}", nbytes, x, y,
               lambda: ops.pointwise("gelu(in0 * in1 + in2)", [x, w, b], [y]),
               lambda t: torch.nn.functional.gelu(t * w + b),
               lambda: torch.nn.functional.gelu(x.double() * w.double() + b.double()))
        del x, y


records, table = [], []
for name, nbytes, x, y, kiln, torch_fn, reference in workloads():
    if only not in name:
        continue
    kiln()
    torch.cuda.synchronize()
    check(name, y, reference(), TOLERANCE[x.dtype] * 2)
    compiled = torch.compile(torch_fn)
    compiled(x)
    copy_to = torch.empty_like(x)
    runners = {"kiln": kiln, "torch.compile": lambda: compiled(x), "torch eager": lambda: torch_fn(x),
               "copy (torch copy_)": lambda: copy_to.copy_(x)}
    tbps = {label: nbytes / ms / 1e9 for label, ms in median_times(runners).items()}
    for peer in ("torch.compile", "torch eager", "copy (torch copy_)"):
        records.append(dict(workload=f"ops {name}", metric="TB/s", kiln=tbps["kiln"], peer=peer,
                            peer_value=tbps[peer], ratio=tbps["kiln"] / tbps[peer], device=device, date=date,
                            command=command))
    table.append((name, tbps))
    del copy_to, compiled
    torch._dynamo.reset()

json.dump(records, open(out_path, "w"), indent=1)
print(f"{device}, {date}; TB/s, median of {ROUNDS} rounds of do_bench medians")
print("| workload | Kiln | torch.compile | eager | copy | Kiln / compile | Kiln / copy |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, t in table:
    print(f"| {name} | {t['kiln']:.3f} | {t['torch.compile']:.3f} | {t['torch eager']:.3f} | "
          f"{t['copy (torch copy_)']:.3f} | {t['kiln'] / t['torch.compile']:.3f} | "
          f"{t['kiln'] / t['copy (torch copy_)']:.3f} |")
