"""Calls libkiln_ops.so from Python (ctypes, PyTorch tensors through DLPack)
and checks every op against PyTorch computed in float64 on the same random
inputs: odd shapes, strided and broadcast inputs, f32/f16/bf16. Prints a
table; exits 1 on any mismatch.

    python3 ops/python/check_with_torch.py path/to/libkiln_ops.so [cuda|cpu]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kiln_ops  # noqa: E402

ops = kiln_ops.load(sys.argv[1])
device = sys.argv[2] if len(sys.argv) > 2 else ("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
rows = []
failures = 0
TOLERANCE = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def check(name, got, want, tolerance, scale=None):
    """Largest error relative to `scale` (default: |want|, at least 1)."""
    global failures
    got64, want64 = got.double(), want.double()
    if got.dtype == torch.int64:
        error = float((got64 != want64).sum())
    else:
        scale = want64.abs().clamp(min=1) if scale is None else scale
        error = float(((got64 - want64).abs() / scale).max())
    ok = error <= tolerance and not torch.isnan(got64).any().item()
    failures += not ok
    rows.append((name, tuple(got.shape), str(got.dtype).replace("torch.", ""), error, tolerance, ok))


def empty(shape, dtype):
    return torch.full(shape, float("nan"), device=device, dtype=dtype) if dtype.is_floating_point \
        else torch.full(shape, -1, device=device, dtype=dtype)


for dtype in (torch.float32, torch.float16, torch.bfloat16):
    tol = TOLERANCE[dtype]
    for shape in ((7, 3), (129, 1000), (4, 33, 250)):
        x = torch.randn(shape, device=device, dtype=dtype)
        w = torch.randn(shape[-1], device=device, dtype=dtype)
        b = torch.randn(shape[-1], device=device, dtype=dtype)
        name = f"{list(shape)}"

        y = empty(shape, dtype)
        ops.pointwise("gelu(in0 * in1 + in2)", [x, w, b], [y])
        check(f"pointwise gelu(x*w+b) {name}", y,
              torch.nn.functional.gelu(x.double() * w.double() + b.double()).to(dtype), tol)

        y = empty(shape, dtype)
        ops.softmax(x, y)
        check(f"softmax {name}", y, torch.softmax(x.double(), -1), tol)
        y = empty(shape, dtype)
        ops.log_softmax(x, y)
        check(f"log_softmax {name}", y, torch.log_softmax(x.double(), -1), tol * 4)

        y = empty(shape, dtype)
        mean = empty(shape[:-1], torch.float32)
        rstd = empty(shape[:-1], torch.float32)
        ops.layer_norm(x, w, b, 1e-5, y, mean, rstd)
        ref = torch.nn.functional.layer_norm(x.double(), (shape[-1],), w.double(), b.double(), 1e-5)
        check(f"layer_norm {name}", y, ref, tol * 2)
        check(f"layer_norm mean {name}", mean, x.double().mean(-1), 1e-5)
        check(f"layer_norm rstd {name}", rstd, 1 / (x.double().var(-1, unbiased=False) + 1e-5).sqrt(), 1e-4)

        y = empty(shape, dtype)
        ops.rms_norm(x, w, 1e-6, y)
        xd = x.double()
        check(f"rms_norm {name}", y, xd * (xd.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() * w.double(), tol * 2)

        for op, ref, out_dtype in ((kiln_ops.SUM, lambda t, d: t.sum(d), torch.float32),
                                   (kiln_ops.MEAN, lambda t, d: t.mean(d), torch.float32),
                                   (kiln_ops.MAX, lambda t, d: t.amax(d), torch.float32),
                                   (kiln_ops.ARGMAX, lambda t, d: t.argmax(d), torch.int64),
                                   (kiln_ops.VAR, lambda t, d: t.var(d), torch.float32)):
            for dim in (0, -1):
                kept = list(shape)
                del kept[dim]
                out = empty(kept, out_dtype)
                ops.reduce(op, x, dim, out)
                label = ["sum", "mean", "max", "min", "argmax", "argmin", "var"][op]
                check(f"reduce {label} dim {dim} {name}", out, ref(x.double(), dim),
                      0 if out_dtype == torch.int64 else 1e-4)

# Strided and broadcast views straight from PyTorch: a transposed input, a
# sliced output, a scalar-like broadcast.
x = torch.randn(300, 500, device=device)
out = torch.full((500, 600), float("nan"), device=device)[:, ::2]
ops.pointwise("in0 * in1 - in0", [x.t(), torch.tensor([3.0], device=device)], [out])
check("pointwise on x.t() into a strided slice", out, x.t().double() * 3 - x.t().double(), 2e-6)
y = torch.full((500, 300), float("nan"), device=device)
ops.softmax(x.t(), y)
check("softmax of x.t() (strided rows)", y, torch.softmax(x.t().double(), -1), 2e-5)
lse = torch.full((300,), float("nan"), device=device)
ops.reduce_fused(kiln_ops.SUM, "exp(in0)", [x], -1, "log(r)", lse)
check("fused logsumexp", lse, torch.logsumexp(x.double(), -1), 2e-6)
long = torch.randn(3, 300007, device=device)
total = torch.full((3,), float("nan"), device=device)
ops.reduce(kiln_ops.SUM, long, 1, total)
check("sum of 300007-long rows (split)", total, long.double().sum(1), 1e-4)

# Matmul: tensor cores for f16/bf16 (FMAs for f32), a transposed operand,
# a batch, the fused epilogue; against float64 products.
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    for (m, n, k) in ((128, 256, 64), (77, 45, 100), (512, 384, 1024)):
        a = torch.randn(m, k, device=device, dtype=dtype)
        bt = torch.randn(n, k, device=device, dtype=dtype)
        bias = torch.randn(n, device=device, dtype=dtype)
        out = empty((m, n), torch.float32)
        ops.matmul(a, bt.t(), out, bias=bias, alpha=0.5, activation=kiln_ops.ACTIVATION_GELU)
        ref = torch.nn.functional.gelu(0.5 * (a.double() @ bt.t().double()) + bias.double())
        check(f"matmul gelu(0.5 a@b.t() + bias) [{m}, {n}, {k}]", out, ref, 2e-4 * max(1, k // 64))
# f32 on tensor cores: tf32 (operands rounded to 10 mantissa bits: errors
# of about 2^-10 of sum |a*b|) and tf32x3 (near f32), both operand orders.
for precision, name, tolerance in ((kiln_ops.PRECISION_TF32, "tf32", 2e-3), (kiln_ops.PRECISION_TF32X3, "tf32x3", 2e-5)):
    for (m, n, k), b_transposed in (((256, 384, 512), False), ((77, 45, 100), True), ((512, 256, 1024), True)):
        a = torch.randn(m, k, device=device)
        b = torch.randn(n, k, device=device).t() if b_transposed else torch.randn(k, n, device=device)
        out = empty((m, n), torch.float32)
        ops.matmul(a, b, out, precision=precision)
        check(f"matmul {name} [{m}, {n}, {k}]{' b.t()' if b_transposed else ''} (error / sum |a*b|)", out,
              a.double() @ b.double(), tolerance, scale=a.double().abs() @ b.double().abs())
a3 = torch.randn(4, 96, 160, device=device, dtype=torch.bfloat16)
b3 = torch.randn(4, 160, 64, device=device, dtype=torch.bfloat16)
res = torch.randn(4, 96, 64, device=device, dtype=torch.bfloat16)
out3 = empty((4, 96, 64), torch.bfloat16)
ops.matmul(a3, b3, out3, residual=res)
check("batched matmul + residual", out3, (a3.double() @ b3.double() + res.double()), 1.6e-2)

# Attention against torch's scaled_dot_product_attention in float64: PyTorch's
# [batch, heads, seq, D] layout, causal aligned top-left (is_causal), grouped
# K/V heads, the log-sum-exp.
q = torch.randn(2, 4, 150, 64, device=device, dtype=torch.bfloat16)
k = torch.randn(2, 2, 150, 64, device=device, dtype=torch.bfloat16)
v = torch.randn(2, 2, 150, 64, device=device, dtype=torch.bfloat16)
out = empty((2, 4, 150, 64), torch.bfloat16)
lse = empty((2, 4, 150), torch.float32)
ops.attention(q, k, v, out, lse, layout=kiln_ops.LAYOUT_BHSD, mask=kiln_ops.MASK_CAUSAL_TOP_LEFT)
kd, vd = k.double().repeat_interleave(2, 1), v.double().repeat_interleave(2, 1)
scores = (q.double() @ kd.transpose(-1, -2)) / 8.0
scores = scores.masked_fill(torch.ones(150, 150, dtype=torch.bool, device=device).triu(1), float("-inf"))
check("attention causal, GQA 4:2, BHSD", out, torch.softmax(scores, -1) @ vd, 2e-2)
check("attention log-sum-exp", lse, torch.logsumexp(scores, -1), 1e-4)

# Refusals come back as exceptions with the library's reason.
try:
    ops.softmax(x, torch.empty(3, device=device))
    refused = "accepted a wrong output shape"
except kiln_ops.KilnError as e:
    refused = str(e)
print(f"kiln_ops {ops.version} on {torch.cuda.get_device_name() if device == 'cuda' else 'cpu'} "
      f"through ctypes + DLPack (torch {torch.__version__})")
print(f"| check | shape | dtype | max rel err | tol | ok |\n| --- | --- | --- | --- | --- | --- |")
for name, shape, dtype, error, tol, ok in rows:
    print(f"| {name} | {shape} | {dtype} | {error:.2e} | {tol:.0e} | {'ok' if ok else 'MISMATCH'} |")
print(f"wrong output shape: {refused}")
failures += "must have x's shape" not in refused
print(f"{len(rows)} checks, {failures} failures")
sys.exit(1 if failures else 0)
