// Flash-attention forward: out = softmax(q k^T * scale) v for contiguous
// [batch*heads, seq_len, HEAD_DIM] f16 tensors, with an online softmax over
// BLOCK_N-wide key blocks. CAUSAL=1 masks keys after each query and skips
// the key blocks wholly after a query block.
#include <kiln/kiln.h>

#include <cmath>

using namespace kiln;

namespace {

void attention(const Config &cfg, ConstPtr<f16> q, ConstPtr<f16> k, ConstPtr<f16> v, Ptr<f16> out,
               Int seq_len, Float scale) {
  const int64_t BLOCK_M = cfg["BLOCK_M"], BLOCK_N = cfg["BLOCK_N"], D = cfg["HEAD_DIM"];
  const bool causal = cfg["CAUSAL"] != 0;
  Tensor offs_m = program_id(0) * BLOCK_M + arange(0, BLOCK_M);
  Tensor offs_n = arange(0, BLOCK_N);
  Tensor offs_d = arange(0, D);
  Tensor head = program_id(1).to(i64) * seq_len * D; // offset of this (batch, head)
  Tensor q_rows = expand_dims(offs_m < seq_len, 1);
  Tensor q_tile = load(q + head + expand_dims(offs_m, 1) * D + expand_dims(offs_d, 0), q_rows, 0.0);

  Tensor end = causal ? minimum(seq_len, (program_id(0) + 1) * BLOCK_M) : Tensor(seq_len);
  auto [m_i, l_i, acc] = for_range(
      0, end, BLOCK_N,
      carry(full({BLOCK_M}, -INFINITY, f32), zeros({BLOCK_M}, f32), zeros({BLOCK_M, D}, f32)),
      [&](const Tensor &start, const Tensor &m_i, const Tensor &l_i, const Tensor &acc) {
        Tensor keys = start + offs_n;
        Tensor key_ok = keys < seq_len;
        Tensor k_tile = load(k + head + expand_dims(keys, 0) * D + expand_dims(offs_d, 1),
                             expand_dims(key_ok, 0), 0.0); // D x BLOCK_N
        Tensor s = dot(q_tile, k_tile) * scale;
        Tensor visible = expand_dims(key_ok, 0);
        if (causal)
          visible = visible & (expand_dims(offs_m, 1) >= expand_dims(keys, 0));
        s = where(visible, s, -INFINITY);
        Tensor m_new = maximum(m_i, max(s, 1));
        Tensor alpha = exp(m_i - m_new);
        Tensor p = exp(s - expand_dims(m_new, 1));
        Tensor v_tile = load(v + head + expand_dims(keys, 1) * D + expand_dims(offs_d, 0),
                             expand_dims(key_ok, 1), 0.0); // BLOCK_N x D
        Tensor acc_new = acc * expand_dims(alpha, 1) + dot(p.to(f16), v_tile);
        return std::array{m_new, l_i * alpha + sum(p, 1), acc_new};
      });
  Tensor o = acc / expand_dims(l_i, 1);
  store(out + head + expand_dims(offs_m, 1) * D + expand_dims(offs_d, 0), o.to(f16), q_rows);
}

} // namespace

KILN_REGISTER_KERNEL(
    attention,
    "flash-attention forward, q/k/v/out: [B*H, seq_len, HEAD_DIM] f16; grid: (cdiv(seq_len, BLOCK_M), B*H)",
    jit(attention, "attention")
        .defaults({{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"HEAD_DIM", 64}, {"CAUSAL", 0},
                   {"num_warps", 4}, {"num_stages", 2}}));
