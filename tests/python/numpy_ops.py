"""The ops library from Python on NumPy arrays (CPU: Kiln's interpreter),
through the installed `kiln_ops` package: each op against NumPy in float64
on random inputs of odd shapes, then arguments the library must refuse.
Exits 1 on any mismatch.

    python3 tests/python/numpy_ops.py     (KILN_OPS_LIBRARY: libkiln_ops.so)
"""
import sys

import numpy as np

import kiln_ops

ops = kiln_ops.load()
rng = np.random.default_rng(0)
failures = 0


def check(name, got, want, tolerance):
    global failures
    error = float(np.max(np.abs(got.astype(np.float64) - want) / np.maximum(np.abs(want), 1)))
    ok = error <= tolerance
    failures += not ok
    print(f"  {name:44s} max rel. error {error:.1e} (tolerance {tolerance:.0e})  {'ok' if ok else 'MISMATCH'}")


def refused(name, call, words):
    global failures
    try:
        call()
    except kiln_ops.KilnError as e:
        ok = words in str(e)
        print(f"  {name:44s} refused: {e}  {'ok' if ok else 'WRONG MESSAGE'}")
        failures += not ok
        return
    print(f"  {name:44s} accepted  WRONG")
    failures += 1


print(f"kiln_ops {ops.version} on NumPy {np.__version__}")
x = rng.uniform(-3, 3, (5, 37)).astype(np.float32)
x64 = x.astype(np.float64)

y = np.full_like(x, np.nan)
ops.softmax(x, y)
e = np.exp(x64 - x64.max(1, keepdims=True))
check("softmax f32 [5, 37]", y, e / e.sum(1, keepdims=True), 1e-6)

w, b = rng.uniform(0.5, 1.5, 37).astype(np.float32), rng.uniform(-1, 1, 37).astype(np.float32)
mean, rstd = np.full(5, np.nan, np.float32), np.full(5, np.nan, np.float32)
ops.layer_norm(x, w, b, 1e-5, y, mean, rstd)
m, v = x64.mean(1, keepdims=True), x64.var(1, keepdims=True)
check("layer norm f32 with mean and rstd", y, (x64 - m) / np.sqrt(v + 1e-5) * w + b, 1e-5)
check("layer norm's rstd", rstd, 1 / np.sqrt(v[:, 0] + 1e-5), 1e-5)

h = np.full((5, 37), np.nan, np.float16)
ops.pointwise("gelu(in0 * in1 + in2)", [x, w, b], [h])
z = x64 * w + b
check("pointwise gelu into f16 (broadcast inputs)", h, 0.5 * z * (1 + np.vectorize(__import__("math").erf)(z / 2 ** 0.5)),
      2e-3)

s = np.full(5, np.nan, np.float32)
ops.reduce(kiln_ops.SUM, x[:, ::2], 1, s)  # (a strided view)
check("row sums of a strided view", s, x64[:, ::2].sum(1), 1e-5)

a, bm = rng.uniform(-1, 1, (33, 20)).astype(np.float32), rng.uniform(-1, 1, (20, 17)).astype(np.float32)
out = np.full((33, 17), np.nan, np.float32)
ops.matmul(a, bm, out, activation=kiln_ops.ACTIVATION_RELU)
check("matmul f32 33x17x20 with relu", out, np.maximum(a.astype(np.float64) @ bm.astype(np.float64), 0), 1e-5)

q, k, v = (rng.uniform(-1, 1, (1, 19, 2, 16)).astype(np.float16) for _ in range(3))
o = np.full_like(q, np.nan)
ops.attention(q, k, v, o, mask=kiln_ops.MASK_CAUSAL_TOP_LEFT)
scores = np.einsum("bqhd,bkhd->bhqk", q.astype(np.float64), k.astype(np.float64)) / 4
scores[:, :, np.triu_indices(19, 1)[0], np.triu_indices(19, 1)[1]] = -np.inf
p = np.exp(scores - scores.max(-1, keepdims=True))
p /= p.sum(-1, keepdims=True)
check("attention f16 causal [1, 19, 2, 16]", o, np.einsum("bhqk,bkhd->bqhd", p, v.astype(np.float64)), 4e-3)

refused("softmax into a wrong shape", lambda: ops.softmax(x, np.zeros((5, 36), np.float32)), "must have x's shape")
refused("a list instead of an array", lambda: ops.softmax([1.0, 2.0], y), "not a tensor")

print("all checks passed" if failures == 0 else f"{failures} checks failed")
sys.exit(1 if failures else 0)
