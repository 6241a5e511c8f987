"""Kiln's matmul op beside Triton and cuBLAS, timed the way the bar's peer
numbers were (triton.testing.do_bench, median), in one process on the same
buffers:

    python3 bench/device/matmul_peers.py LIB [--stage 1|2] [--shapes MxNxK,...] [--b nk|kn]
                                         [--rounds N] [--triton|--no-triton] [--keep-kernel DIR]

--stage 1 runs the op on mma.sync (KILN_TARGET=sm_80) and Triton's own
mma.sync path (DISABLE_MMA_V3=1, Triton's switch that keeps it from
wgmma on Hopper); --stage 2 (the default) runs both as they plan for the
GPU (Kiln's defaults, Triton's wgmma). Triton runs the kernel of
triton_matmul.py (the same tile order and pointer loads as Kiln's op)
with each tile of its stage's list; the fastest in a first pass is kept.
Every kernel's output is checked against an f32 reference on a
NaN-poisoned output before and after it is timed, and Triton's PTX must
hold the stage's instruction (mma.sync without wgmma, or wgmma). Each
round times the contenders in a new random order, two ways: do_bench's
median (it flushes L2 before each launch and keeps host costs out) and the
median of batches of 10 launches back to back (L2 warm). Prints a table a
round and the medians over rounds. --keep-kernel DIR keeps the first
shape's Triton PTX and cubin there.
"""
import argparse
import os
import random
import statistics
import sys

parser = argparse.ArgumentParser()
parser.add_argument("lib")
parser.add_argument("--stage", type=int, choices=(1, 2), default=2)
parser.add_argument("--shapes", default="4096x4096x4096")
parser.add_argument("--b", choices=("nk", "kn"), default="nk", help="B stored [N][K] or [K][N]")
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--triton", action=argparse.BooleanOptionalAction, default=True)
parser.add_argument("--keep-kernel", metavar="DIR", help="where the first shape's Triton PTX and cubin go")
args = parser.parse_args()
if args.stage == 1:
    os.environ["KILN_TARGET"] = "sm_80"  # Kiln plans and compiles for mma.sync
    os.environ["DISABLE_MMA_V3"] = "1"  # read by Triton's compiler at compile time

import torch  # noqa: E402
import triton  # noqa: E402
from triton.testing import do_bench  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "ops", "python"))
import kiln_ops  # noqa: E402
from triton_matmul import triton_matmul  # noqa: E402

TILES = {  # Triton's: (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)
    1: [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 256, 32, 8, 4), (256, 128, 32, 8, 4),
        (128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (128, 128, 64, 8, 3), (64, 256, 32, 4, 4)],
    2: [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4),
        (128, 128, 64, 8, 4), (64, 256, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 64, 4, 4)],
}[args.stage]
instruction = "mma.sync" if args.stage == 1 else "wgmma"
ops = kiln_ops.load(args.lib)
b_nk = args.b == "nk"


def checked(name, out, reference, run):
    out.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    # bf16 outputs round to 2^-8 of their size; sums of K products reach ~200
    error = ((out.float() - reference).abs() / (reference.abs() + 1)).max().item()
    if not error < 1e-2:  # NaN fails too
        raise SystemExit(f"WRONG: {name}: max relative error {error}")


def back_to_back_ms(run, batches=20, count=10):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(batches):
        start.record()
        for _ in range(count):
            run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / count)
    return statistics.median(times)


def measure(M, N, K, keep):
    torch.manual_seed(M + N + K)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b_stored = torch.randn((N, K) if b_nk else (K, N), device="cuda", dtype=torch.bfloat16)
    b = b_stored.t() if b_nk else b_stored
    sbk, sbn = b.stride()
    reference = a.float() @ b.float()
    flop = 2.0 * M * N * K
    names = ("kiln", "triton", "cublas") if args.triton else ("kiln", "cublas")
    outputs = {name: torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for name in names}
    launch = {
        "kiln": lambda: ops.matmul(a, b, outputs["kiln"]),
        "cublas": lambda: torch.matmul(a, b, out=outputs["cublas"]),
    }

    def triton_launch(tile):
        bm, bn, bk, warps, stages = tile
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        return lambda: triton_matmul[grid](a, b, outputs["triton"], M, N, K, sbk, sbn, BM=bm, BN=bn, BK=bk,
                                           num_warps=warps, num_stages=stages)

    print(f"\n{M}x{N}x{K} bf16, B {'[N][K]' if b_nk else '[K][N]'}, stage {args.stage}: Kiln's op "
          f"({'KILN_TARGET=sm_80' if args.stage == 1 else 'as it plans: the defaults, or a tuned config in the store'}), "
          "cuBLAS (torch.matmul)"
          + (f", Triton {triton.__version__} on {instruction}" if args.triton else ""))
    if args.triton:
        print("| Triton tile (BMxBNxBK, warps, stages) | registers | spills | ms | TFLOP/s |")
        print("| --- | ---: | ---: | ---: | ---: |")
        best = None
        for tile in TILES:
            run = triton_launch(tile)
            try:
                checked(f"triton {tile}", outputs["triton"], reference, run)
            except Exception as error:  # a tile Triton cannot fit (shared memory): skipped, said so
                print(f"| {tile} | - | - | failed: {str(error).splitlines()[0][:80]} | |")
                continue
            compiled = run()  # a launch returns its compiled kernel
            ptx = compiled.asm["ptx"]
            if instruction not in ptx or (args.stage == 1 and "wgmma" in ptx):
                raise SystemExit(f"Triton tile {tile} did not compile to {instruction}")
            ms = do_bench(run, warmup=50, rep=300, return_mode="median")
            print(f"| {tile} | {compiled.n_regs} | {compiled.n_spills} | {ms:.4f} | {flop / ms / 1e9:.1f} |")
            if best is None or ms < best[1]:
                best = (tile, ms, compiled)
        launch["triton"] = triton_launch(best[0])
        print(f"Triton's tile: {best[0]}")
        if keep:
            with open(os.path.join(keep, f"triton-stage{args.stage}.ptx"), "w") as f:
                f.write(best[2].asm["ptx"])
            with open(os.path.join(keep, f"triton-stage{args.stage}.cubin"), "wb") as f:
                f.write(best[2].asm["cubin"])
    for name in launch:
        checked(name, outputs[name], reference, launch[name])

    single = {name: [] for name in launch}
    batched = {name: [] for name in launch}
    peers = [name for name in launch if name != "cublas"]
    print("| round | " + " | ".join(f"{n} TFLOP/s" for n in launch) + " | "
          + " | ".join(f"{n} x cuBLAS" for n in peers) + " | " + " | ".join(f"b2b: {n} x cuBLAS" for n in peers) + " |")
    print("| --- |" + " ---: |" * (len(launch) + 2 * len(peers)))
    for r in range(args.rounds):
        order = list(launch)
        random.shuffle(order)
        for name in order:
            single[name].append(do_bench(launch[name], warmup=50, rep=300, return_mode="median"))
            batched[name].append(back_to_back_ms(launch[name]))
        print(f"| {r + 1} | " + " | ".join(f"{flop / single[n][-1] / 1e9:.1f}" for n in launch) + " | "
              + " | ".join(f"{single['cublas'][-1] / single[n][-1]:.3f}" for n in peers) + " | "
              + " | ".join(f"{batched['cublas'][-1] / batched[n][-1]:.3f}" for n in peers) + " |")
    for name in launch:  # every kernel checked again after its timings
        checked(name, outputs[name], reference, launch[name])
    med = {name: statistics.median(single[name]) for name in launch}
    b2b = {name: statistics.median(batched[name]) for name in launch}
    print(f"medians over {args.rounds} rounds, {M}x{N}x{K}: do_bench "
          + ", ".join(f"{n} {flop / med[n] / 1e9:.1f}" for n in launch) + " TFLOP/s; "
          + ", ".join(f"{n} {med['cublas'] / med[n]:.3f}x cuBLAS" for n in peers)
          + "; back to back " + ", ".join(f"{n} {b2b['cublas'] / b2b[n]:.3f}x" for n in peers))


for i, shape in enumerate(args.shapes.split(",")):
    M, N, K = (int(v) for v in shape.split("x"))
    measure(M, N, K, args.keep_kernel if i == 0 else None)
