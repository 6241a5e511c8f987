# The same memory-bound operations in PyTorch (eager and torch.compile), in
# the same run on the same GPU, next to Kiln's numbers from memory_bench's
# JSON; prints a table of bandwidths and Kiln/peer ratios.
#   python3 bench/compare.py kiln.json [out.json]
import json, sys
import torch
from triton.testing import do_bench

def bench(fn):
    return do_bench(fn, warmup=25, rep=200, return_mode="median")

kiln = json.load(open(sys.argv[1]))
peers = {}
n = 128 << 20
x = torch.randn(n, device="cuda"); y = torch.randn(n, device="cuda"); z = torch.empty_like(x)
peers["copy"] = 2 * n * 4 / bench(lambda: z.copy_(x)) / 1e9
peers["add"] = 3 * n * 4 / bench(lambda: torch.add(x, y, out=z)) / 1e9
del x, y, z
rows, cols = 16384, 8192
for dt, name in [(torch.float32, "f32"), (torch.bfloat16, "bf16")]:
    a = torch.randn(rows, cols, device="cuda", dtype=dt)
    bytes_ = 2 * a.numel() * a.element_size()
    peers[f"softmax_{name}_eager"] = bytes_ / bench(lambda: torch.softmax(a, -1)) / 1e9
    compiled = torch.compile(lambda t: torch.softmax(t, -1))
    compiled(a)
    peers[f"softmax_{name}_compile"] = bytes_ / bench(lambda: compiled(a)) / 1e9

def best(prefix):
    return max(v["TBps"] for k, v in kiln.items() if k.startswith(prefix))

rows_out = [
    ("copy f32 128Mi", best("copy f32"), "torch copy", peers["copy"]),
    ("vector add f32 128Mi", best("vector add f32"), "torch add", peers["add"]),
    ("vector add f32 128Mi", best("vector add f32"), "Kiln copy", best("copy f32")),
    ("softmax f32 16384x8192", best("softmax f32"), "torch.compile", peers["softmax_f32_compile"]),
    ("softmax f32 16384x8192", best("softmax f32"), "torch eager", peers["softmax_f32_eager"]),
    ("softmax bf16 16384x8192", best("softmax bf16"), "torch.compile", peers["softmax_bf16_compile"]),
    ("softmax bf16 16384x8192", best("softmax bf16"), "torch eager", peers["softmax_bf16_eager"]),
]
print(f"| workload | Kiln TB/s | peer | peer TB/s | Kiln / peer |")
print(f"| --- | --- | --- | --- | --- |")
for name, k, peer, p in rows_out:
    print(f"| {name} | {k:.3f} | {peer} | {p:.3f} | {k / p:.3f} |")
if len(sys.argv) > 2:
    json.dump({"kiln": kiln, "peers": peers, "device": torch.cuda.get_device_name()}, open(sys.argv[2], "w"), indent=1)
