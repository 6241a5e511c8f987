"""Triton's tutorial kernels written by a user in Kiln (bench/tutorial/*.cpp)
against the same kernels in Triton (bench/tutorial/triton_tutorial.py):
same algorithm, layout and tiles, one process, one timer
(triton.testing.do_bench: CUDA events, L2 flushed before every run,
median), rounds alternating the two so that drift hits both alike. The
library peers (cuBLAS through torch.matmul, cuDNN's attention through
scaled_dot_product_attention) run beside them. Every output is checked
against float64 PyTorch before it is timed.

    python3 bench/tutorial_vs_triton.py path/to/libkiln_tutorial.so records.json "command" [filter]

Writes bench/results-style records and prints a table of Kiln / Triton per
kernel and tile set (a ratio above 1: Kiln faster). `filter` (a
substring) runs only the workloads whose names hold it.
"""
import ctypes
import datetime
import itertools
import json
import math
import os
import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tutorial"))
import triton_tutorial as tt  # noqa: E402

lib = None  # the tutorial kernels' library (load_library)
ROUNDS = 3
torch.manual_seed(0)
sms = torch.cuda.get_device_properties(0).multi_processor_count


def load_library(path):
    """Loads libkiln_tutorial.so, which kiln() launches through."""
    global lib
    lib = ctypes.CDLL(path)
    lib.kiln_tutorial_launch.restype = ctypes.c_int
    i64p, dp = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_double)
    lib.kiln_tutorial_launch.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32,
                                         ctypes.c_uint32, ctypes.c_char_p, i64p, i64p, dp, ctypes.c_void_p,
                                         ctypes.c_char_p, ctypes.c_size_t]


def workloads():
    """Every workload, lazily: each one's closures and tensors are live only
    while it is used."""
    return itertools.chain(matmul_workloads(), attention_workloads(), memory_workloads())


def kiln(kernel, config, grid, *args):
    """Launches a tutorial kernel on torch's current stream."""
    kinds, ints, sizes, floats = "", [], [], []
    for a in args:
        if isinstance(a, torch.Tensor):
            kinds += "p"; ints.append(a.data_ptr()); sizes.append(a.numel() * a.element_size()); floats.append(0.0)
        elif isinstance(a, float):
            kinds += "f"; ints.append(0); sizes.append(0); floats.append(a)
        else:
            kinds += "i"; ints.append(int(a)); sizes.append(0); floats.append(0.0)
    n = len(args)
    grid = tuple(grid) + (1,) * (3 - len(grid))
    error = ctypes.create_string_buffer(4096)
    config_text = ",".join(f"{k}={v}" for k, v in config.items())
    status = lib.kiln_tutorial_launch(kernel.encode(), config_text.encode(), *grid,
                                      kinds.encode(), (ctypes.c_int64 * n)(*ints), (ctypes.c_int64 * n)(*sizes),
                                      (ctypes.c_double * n)(*floats),
                                      torch.cuda.current_stream().cuda_stream, error, 4096)
    if status != 0:
        raise RuntimeError(f"{kernel}: {error.value.decode()}")


def check(label, got, want, tolerance):
    """||got - want|| / ||want||; an unwritten (NaN-poisoned) element fails."""
    error = float((got.double() - want).norm() / want.norm())
    if not error <= tolerance:
        raise SystemExit(f"{label}: output off by {error} (relative; tolerance {tolerance})")


def matmul_workloads():
    m = n = k = 4096
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    want = a.double() @ b.double()
    flops = 2 * m * n * k
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    for bm, bn, bk, warps, stages in [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 64, 8, 3),
                                      (64, 128, 64, 4, 4)]:
        for leaky in (0, 1):
            if leaky and (bm, bn, warps) != (128, 256, 8):
                continue
            reference = torch.where(want >= 0, want, want * 0.01) if leaky else want
            grid = (math.ceil(m / bm) * math.ceil(n / bn),)
            config = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, LEAKY_RELU=leaky, num_warps=warps,
                          num_stages=stages)
            name = f"matmul{' + leaky_relu' if leaky else ''} bf16 4096^3, {bm}x{bn}x{bk} {warps}w {stages}s"
            yield (name, "TFLOP/s", flops, c, reference, 1e-2,
                   lambda: kiln("tutorial_matmul", config, grid, a, b, c, m, n, k, *strides),
                   lambda: tt.matmul[grid](a, b, c, m, n, k, *strides, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                           GROUP_M=8, LEAKY_RELU=leaky, num_warps=warps, num_stages=stages),
                   {"cuBLAS": lambda: torch.matmul(a, b, out=c),
                    # The same kernel with per-thread copies, and with a producer warpgroup.
                    "Kiln copy_engine=0": lambda config=config, grid=grid: kiln(
                        "tutorial_matmul", {**config, "copy_engine": 0}, grid, a, b, c, m, n, k, *strides),
                    "Kiln warp_specialize=1": lambda config=config, grid=grid: kiln(
                        "tutorial_matmul", {**config, "warp_specialize": 1}, grid, a, b, c, m, n, k, *strides)}
                   if not leaky else {})


# Tile sets of the attention kernel (BLOCK_M, BLOCK_N, warps, stages): the
# tutorial's, and key blocks twice as long (half the iterations, so half the
# per-iteration synchronization). Causal attention needs BLOCK_M a multiple
# of BLOCK_N.
ATTENTION_TILES = [(128, 64, 8, 3), (128, 128, 8, 2)]


def attention_workloads():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    bh, n_ctx = 128, 4096
    backend, peer = SDPBackend.CUDNN_ATTENTION, "cuDNN"
    try:
        probe = torch.randn(1, 1, 128, 64, device="cuda", dtype=torch.bfloat16)
        with sdpa_kernel(backend):
            torch.nn.functional.scaled_dot_product_attention(probe, probe, probe)
    except RuntimeError:
        backend, peer = SDPBackend.FLASH_ATTENTION, "FlashAttention (SDPA)"
    for d in (64, 128):
        q, k, v = (torch.randn(bh, n_ctx, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        scale = 1 / math.sqrt(d)
        q4, k4, v4 = (t.view(1, bh, n_ctx, d) for t in (q, k, v))
        for causal in (0, 1):
            want = torch.nn.functional.scaled_dot_product_attention(q.double().cpu()[:2], k.double().cpu()[:2],
                                                                    v.double().cpu()[:2], is_causal=bool(causal))
            flops = 4 * bh * n_ctx * n_ctx * d // (2 if causal else 1)

            def library(causal=causal):
                with sdpa_kernel(backend):
                    return torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=bool(causal))
            for bm, bn, warps, stages in ATTENTION_TILES:
                grid = (n_ctx // bm, bh)
                config = dict(BLOCK_M=bm, BLOCK_N=bn, HEAD_DIM=d, CAUSAL=causal, num_warps=warps, num_stages=stages)
                name = f"flash attention fwd bf16, B*H {bh}, N {n_ctx}, D {d}, {'causal' if causal else 'full'}, " \
                       f"{bm}x{bn} {warps}w {stages}s"
                yield (name, "TFLOP/s", flops, o, want, 1e-2,
                       lambda config=config, grid=grid: kiln("tutorial_attention", config, grid, q, k, v, o, n_ctx,
                                                             scale),
                       lambda grid=grid, bm=bm, bn=bn, warps=warps, stages=stages, causal=causal:
                           tt.attention[grid](q, k, v, o, n_ctx, scale, BLOCK_M=bm, BLOCK_N=bn, HEAD_DIM=d,
                                              CAUSAL=causal, num_warps=warps, num_stages=stages),
                       {peer: library,
                        # The same kernel with per-thread copies of K and V (no producer).
                        "Kiln copy_engine=0": lambda config=config, grid=grid: kiln(
                            "tutorial_attention", {**config, "copy_engine": 0}, grid, q, k, v, o, n_ctx, scale)},
                       lambda t: t[:2].cpu())


def memory_workloads():
    rows, cols = 16384, 8192
    for dt, kernel in ((torch.float32, "tutorial_softmax"), (torch.bfloat16, "tutorial_softmax_bf16")):
        x = torch.randn(rows, cols, device="cuda", dtype=dt)
        y = torch.empty_like(x)
        grid = (sms * 4,)
        warps = 8
        yield (f"softmax {str(dt)[6:]} {rows}x{cols}, {warps}w, {grid[0]} programs", "GB/s",
               2 * x.numel() * x.element_size(), y, torch.softmax(x.double(), -1), 1e-2 if dt != torch.float32 else 1e-5,
               lambda: kiln(kernel, dict(BLOCK=cols, num_warps=warps), grid, x, y, rows, cols, cols, cols),
               lambda: tt.softmax[grid](x, y, rows, cols, cols, cols, BLOCK=cols, num_warps=warps), {})
    m, n = 4096, 8192
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(n, device="cuda", dtype=torch.bfloat16) + 0.5
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    mean = torch.empty(m, device="cuda", dtype=torch.float32)
    rstd = torch.empty_like(mean)
    want = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)
    yield (f"layer norm fwd bf16 {m}x{n}, 8w", "GB/s", 2 * x.numel() * 2, y, want, 1e-2,
           lambda: kiln("tutorial_layer_norm_fwd", dict(BLOCK=n, num_warps=8), (m,), x, y, w, b, mean, rstd, n, n,
                        1e-5),
           lambda: tt.layer_norm_fwd[(m,)](x, y, w, b, mean, rstd, n, n, 1e-5, BLOCK=n, num_warps=8), {})
    dy = torch.randn_like(x)
    dx = torch.empty_like(x)
    programs = sms * 2
    pdw = torch.empty(programs, n, device="cuda", dtype=torch.float32)
    pdb = torch.empty_like(pdw)
    dw = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    db = torch.empty_like(dw)
    xd = x.double().requires_grad_()
    wd = w.double().requires_grad_()
    bd = b.double().requires_grad_()
    torch.nn.functional.layer_norm(xd, (n,), wd, bd, 1e-5).backward(dy.double())
    tt.layer_norm_fwd[(m,)](x, y, w, b, mean, rstd, n, n, 1e-5, BLOCK=n, num_warps=8)

    def kiln_bwd():
        kiln("tutorial_layer_norm_bwd_dx", dict(BLOCK=n, num_warps=8), (programs,), dx, dy, pdw, pdb, x, w, mean,
             rstd, m, n, n)
        kiln("tutorial_layer_norm_bwd_dwdb", dict(BLOCK_M=32, BLOCK_N=128, num_warps=4), (n // 128,), pdw, pdb,
             dw, db, programs, n)

    def triton_bwd():
        tt.layer_norm_bwd_dx[(programs,)](dx, dy, pdw, pdb, x, w, mean, rstd, m, n, n, BLOCK=n, num_warps=8)
        tt.layer_norm_bwd_dwdb[(n // 128,)](pdw, pdb, dw, db, programs, n, BLOCK_M=32, BLOCK_N=128, num_warps=4)
    yield (f"layer norm bwd bf16 {m}x{n} (dx 8w {programs} programs; dw, db 32x128 4w)", "GB/s",
           3 * x.numel() * 2, (dx, dw, db), (xd.grad, wd.grad, bd.grad), 1e-2, kiln_bwd, triton_bwd, {})


def main():
    load_library(sys.argv[1])
    out_path, command = sys.argv[2], sys.argv[3]
    only = sys.argv[4] if len(sys.argv) > 4 else ""
    device = torch.cuda.get_device_name()
    records = []
    print(f"| kernel | unit | Kiln | Triton | Kiln / Triton | library peers (Kiln / peer) |")
    print(f"| --- | --- | --- | --- | --- | --- |")
    for workload in workloads():
        name, unit, amount, out, want, tolerance, run_kiln, run_triton, peers = workload[:9]
        view = workload[9] if len(workload) > 9 else (lambda t: t)
        if only and only not in name:
            continue
        outs = out if isinstance(out, tuple) else (out,)
        wants = want if isinstance(want, tuple) else (want,)
        # Kiln's variants among the peers are checked as Kiln is.
        checked = [(run_kiln, "Kiln"), (run_triton, "Triton")]
        checked += [(fn, who) for who, fn in peers.items() if who.startswith("Kiln ")]
        for runner, who in checked:
            for t in outs:
                t.fill_(float("nan"))
            runner()
            torch.cuda.synchronize()
            for got, ref in zip(outs, wants):
                check(f"{name} ({who})", view(got), ref, tolerance)
        timers = {"Kiln": run_kiln, "Triton": run_triton, **peers}
        times = {who: [] for who in timers}
        for _ in range(ROUNDS):
            for who, fn in timers.items():
                times[who].append(do_bench(fn, warmup=25, rep=200, return_mode="median"))
        rate = {who: amount / statistics.median(ms) / (1e9 if unit == "TFLOP/s" else 1e6)
                for who, ms in times.items()}
        ratio = rate["Kiln"] / rate["Triton"]
        peer_text = ", ".join(f"{who} {rate[who]:.0f} ({rate['Kiln'] / rate[who]:.2f})" for who in peers)
        print(f"| {name} | {unit} | {rate['Kiln']:.0f} | {rate['Triton']:.0f} | {ratio:.2f} | {peer_text} |",
              flush=True)
        records.append({"workload": name, "metric": unit, "kiln": rate["Kiln"], "triton": rate["Triton"],
                        "kiln_over_triton": ratio, "peers": {who: rate[who] for who in peers},
                        "device": device, "date": datetime.date.today().isoformat(), "command": command})
    json.dump(records, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()
