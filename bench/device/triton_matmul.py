"""The Triton peer of Kiln's DSL matmul, shared by the device scripts: C =
A x B with A row-major, B addressed through its strides ([K][N] or stored
[N][K]), bf16 output, f32 accumulation, tiles visited in groups of 8 rows
(as Kiln's kernels), pointer loads, no masks in the K loop (BK divides K)."""
import triton
import triton.language as tl


@triton.jit
def triton_matmul(a, b, c, M, N, K, stride_bk, stride_bn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    group = pid // (8 * tiles_n)
    first_m = group * 8
    rows = min(tl.cdiv(M, BM) - first_m, 8)
    pid_m = first_m + pid % rows
    pid_n = (pid % (8 * tiles_n)) // rows
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * K + rk[None, :]
    pb = b + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(pa + k), tl.load(pb + k * stride_bk))
    om = pid_m * BM + tl.arange(0, BM)
    on = pid_n * BN + tl.arange(0, BN)
    tl.store(c + om[:, None] * N + on[None, :], acc.to(tl.bfloat16), mask=(om[:, None] < M) & (on[None, :] < N))
