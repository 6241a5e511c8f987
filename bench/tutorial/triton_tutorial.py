"""The tutorial kernels of bench/tutorial/*.cpp written in Triton, line for
line the same algorithm, layout and tiles: the measuring tool that
tutorial_vs_triton.py times Kiln against (not part of Kiln)."""
import triton
import triton.language as tl


@triton.jit
def matmul(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
           LEAKY_RELU: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = pid // num_pid_in_group * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + pid % num_pid_in_group % group_size_m
    pid_n = pid % num_pid_in_group // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - k * BLOCK_K
        av = tl.load(a_ptrs, mask=offs_k[None, :] < left, other=0.0)
        bv = tl.load(b_ptrs, mask=offs_k[:, None] < left, other=0.0)
        acc = tl.dot(av, bv, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if LEAKY_RELU:
        acc = tl.where(acc >= 0, acc, acc * 0.01)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, acc.to(tl.bfloat16),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def _attend(m_i, l_i, acc, q, k, v, head, offs_m, offs_n, offs_d, lo, hi, qk_scale,
            BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, DIAGONAL: tl.constexpr):
    for start in range(lo, hi, BLOCK_N):
        keys = start + offs_n
        kt = tl.load(k + head + keys[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, kt)
        if DIAGONAL:
            scaled = tl.where(offs_m[:, None] >= keys[None, :], qk * qk_scale, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(scaled, 1))
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            scaled = qk * qk_scale
        p = tl.math.exp2(scaled - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        vt = tl.load(v + head + keys[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(tl.bfloat16), vt, acc * alpha[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_ij
    return m_i, l_i, acc


@triton.jit
def attention(q, k, v, out, n_ctx, sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * n_ctx * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    qk_scale = sm_scale * 1.4426950408889634
    q_tile = tl.load(q + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    if CAUSAL:
        m_i, l_i, acc = _attend(m_i, l_i, acc, q_tile, k, v, head, offs_m, offs_n, offs_d, 0, start_m * BLOCK_M,
                                qk_scale, BLOCK_N, HEAD_DIM, False)
        m_i, l_i, acc = _attend(m_i, l_i, acc, q_tile, k, v, head, offs_m, offs_n, offs_d, start_m * BLOCK_M,
                                (start_m + 1) * BLOCK_M, qk_scale, BLOCK_N, HEAD_DIM, True)
    else:
        m_i, l_i, acc = _attend(m_i, l_i, acc, q_tile, k, v, head, offs_m, offs_n, offs_d, 0, n_ctx, qk_scale,
                                BLOCK_N, HEAD_DIM, False)
    o = acc / l_i[:, None]
    tl.store(out + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :], o.to(tl.bfloat16))


@triton.jit
def softmax(inp, outp, n_rows, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(inp + row * in_stride + cols, mask=inside, other=float("-inf")).to(tl.float32)
        shifted = x - tl.max(x, 0)
        numerator = tl.exp(shifted)
        tl.store(outp + row * out_stride + cols, (numerator / tl.sum(numerator, 0)).to(outp.dtype.element_ty),
                 mask=inside)


@triton.jit
def layer_norm_fwd(x, y, w, b, mean_out, rstd_out, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x + row * stride
    y_row = y + row * stride
    lanes = tl.arange(0, BLOCK)
    partial = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + lanes
        partial += tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(partial) / N
    squares = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + lanes
        d = tl.where(cols < N, tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32) - mean, 0.0)
        squares += d * d
    rstd = tl.rsqrt(tl.sum(squares) / N + eps)
    tl.store(mean_out + row, mean)
    tl.store(rstd_out + row, rstd)
    for start in range(0, N, BLOCK):
        cols = start + lanes
        mask = cols < N
        xhat = (tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32) - mean) * rstd
        out = xhat * tl.load(w + cols, mask=mask).to(tl.float32) + tl.load(b + cols, mask=mask).to(tl.float32)
        tl.store(y_row + cols, out.to(tl.bfloat16), mask=mask)


@triton.jit
def layer_norm_bwd_dx(dx, dy, partial_dw, partial_db, x, w, mean, rstd, M, stride, N, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    wv = tl.load(w + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK,), tl.float32)
    db = tl.zeros((BLOCK,), tl.float32)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        xv = tl.load(x + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        dyv = tl.load(dy + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        xhat = tl.where(mask, (xv - tl.load(mean + row)) * tl.load(rstd + row), 0.0)
        wdy = tl.where(mask, wv * dyv, 0.0)
        c1 = tl.sum(xhat * wdy) / N
        c2 = tl.sum(wdy) / N
        tl.store(dx + row * stride + cols, ((wdy - (xhat * c1 + c2)) * tl.load(rstd + row)).to(tl.bfloat16), mask=mask)
        dw += dyv * xhat
        db += dyv
    tl.store(partial_dw + tl.program_id(0) * N + cols, dw, mask=mask)
    tl.store(partial_db + tl.program_id(0) * N + cols, db, mask=mask)


@triton.jit
def layer_norm_bwd_dwdb(partial_dw, partial_db, dw_out, db_out, rows, N, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols[None, :] < N
    rows_in_block = tl.arange(0, BLOCK_M)
    dw = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    db = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for start in range(0, rows, BLOCK_M):
        r = (start + rows_in_block)[:, None]
        mask = (r < rows) & col_ok
        at = r * N + cols[None, :]
        dw += tl.load(partial_dw + at, mask=mask, other=0.0)
        db += tl.load(partial_db + at, mask=mask, other=0.0)
    tl.store(dw_out + cols, tl.sum(dw, 0).to(tl.bfloat16), mask=cols < N)
    tl.store(db_out + cols, tl.sum(db, 0).to(tl.bfloat16), mask=cols < N)
