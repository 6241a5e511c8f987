# The same memory-bound workloads in PyTorch (eager and torch.compile) and
# Triton's compile and launch latencies, measured in the same device run as
# memory_bench; writes records in bench/results' format comparing Kiln's
# best configuration of each of the benchmark's own kernels with each peer,
# and prints a table. (The ops library against the same peers, under one
# timer: bench/ops_vs_torch.py.)
#   python3 bench/compare.py kiln-records.json out-records.json "command"
import datetime
import json
import os
import sys
import time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

kiln_records = json.load(open(sys.argv[1]))
out_path, command = sys.argv[2], sys.argv[3]
device = torch.cuda.get_device_name()
date = datetime.date.today().isoformat()


def tbps(nbytes, fn):
    return nbytes / do_bench(fn, warmup=25, rep=200, return_mode="median") / 1e9


def best_kiln(prefix):
    """Kiln's best TB/s over the configurations of the workloads named `prefix...`."""
    values = [r["kiln"] for r in kiln_records if r["metric"] == "TB/s" and r["workload"].startswith(prefix)]
    return max(values) if values else None


peers = {}  # workload -> {peer name: TB/s}
n = 128 << 20
x = torch.randn(n, device="cuda"); y = torch.randn(n, device="cuda"); z = torch.empty_like(x)
peers["vector add f32 128Mi"] = {"torch eager": tbps(3 * n * 4, lambda: torch.add(x, y, out=z))}
del x, y, z

names = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}
for dt in (torch.float16, torch.bfloat16, torch.float32):
    rows, cols = 16384, 8192
    xm = torch.randn(rows, cols, device="cuda", dtype=dt)
    w = torch.randn(cols, device="cuda", dtype=dt); b = torch.randn(cols, device="cuda", dtype=dt)
    nbytes = (2 * xm.numel() + 2 * cols) * xm.element_size()
    gelu = lambda t: torch.nn.functional.gelu(t * w + b)
    compiled = torch.compile(gelu); compiled(xm)
    peers[f"gelu(x*w+b) {names[dt]} {rows}x{cols}"] = {"torch eager": tbps(nbytes, lambda: gelu(xm)),
                                                       "torch.compile": tbps(nbytes, lambda: compiled(xm))}
    del xm

for dt in (torch.float32, torch.bfloat16):
    for rows, cols in [(16384, 8192), (4096, 32768)]:
        xm = torch.randn(rows, cols, device="cuda", dtype=dt)
        nbytes = 2 * xm.numel() * xm.element_size()
        w = torch.randn(cols, device="cuda", dtype=dt); bb = torch.randn(cols, device="cuda", dtype=dt)
        shape = f"{names[dt]} {rows}x{cols}"
        for op, fn in [("softmax", lambda t: torch.softmax(t, -1)),
                       ("layer norm", lambda t: torch.nn.functional.layer_norm(t, (cols,), w, bb))]:
            compiled = torch.compile(fn); compiled(xm); torch.cuda.synchronize()
            peers[f"{op} {shape}"] = {"torch eager": tbps(nbytes, lambda: fn(xm)),
                                      "torch.compile": tbps(nbytes, lambda: compiled(xm))}
        del xm

# Triton: cold compile of a small pointwise kernel (fresh cache) and the host
# time per launch, as in the project's peer anchors.
os.environ["TRITON_CACHE_DIR"] = "/tmp/kiln-compare-triton-cache"
@triton.jit
def add_kernel(x, y, o, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < n
    tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)
xs = torch.randn(1 << 20, device="cuda"); ys = torch.randn_like(xs); os_ = torch.empty_like(xs)
t0 = time.time(); add_kernel[(1024,)](xs, ys, os_, xs.numel(), B=1024); torch.cuda.synchronize()
triton_cold_ms = (time.time() - t0) * 1e3
t0 = time.perf_counter()
for _ in range(2000):
    add_kernel[(1,)](xs, ys, os_, 1024, B=1024)
torch.cuda.synchronize()
triton_launch_us = (time.perf_counter() - t0) / 2000 * 1e6

records = []
def record(workload, metric, kiln, peer, peer_value, ratio):
    records.append(dict(workload=workload, metric=metric, kiln=kiln, peer=peer, peer_value=peer_value,
                        ratio=ratio, device=device, date=date, command=command))

# Each peer against Kiln's benchmark kernels.
for workload, by_peer in peers.items():
    prefix = "fused " + workload if workload.startswith("gelu") else workload
    kiln = best_kiln(prefix)
    if kiln is None:
        continue
    for peer, value in by_peer.items():
        record(f"{prefix} (benchmark kernel, best config)", "TB/s", kiln, peer, value, kiln / value)
latency = {r["workload"]: r["kiln"] for r in kiln_records if r["metric"] in ("ms", "us")}
for workload, metric, peer_value in [
        ("cold compile, small pointwise kernel (first in process)", "ms", triton_cold_ms),
        ("cold compile, small pointwise kernel", "ms", triton_cold_ms),
        ("host time per launch", "us", triton_launch_us)]:
    if workload in latency:
        record(workload, metric, latency[workload], "Triton " + triton.__version__, peer_value,
               peer_value / latency[workload])
json.dump(records, open(out_path, "w"), indent=1)

print("| workload | metric | Kiln | peer | peer value | ratio |")
print("| --- | --- | --- | --- | --- | --- |")
def number(v):
    return "-" if v is None else f"{v:.3f}"


for r in kiln_records + records:
    # (A record of Kiln's own may have no peer: a filtered run left it out.)
    print(f"| {r['workload']} | {r['metric']} | {number(r['kiln'])} | {r.get('peer') or '-'} | "
          f"{number(r.get('peer_value'))} | {number(r.get('ratio'))} |")
