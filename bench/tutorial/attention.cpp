// Triton's fused-attention tutorial (forward) as a user writes it in Kiln:
// Q, K, V, O contiguous [B*H, N_CTX, HEAD_DIM] bf16, N_CTX a multiple of
// the blocks. Each program keeps one BLOCK_M block of queries and walks the
// keys with an online softmax in base 2; causal attention walks the blocks
// left of the diagonal unmasked, then the diagonal block masked, as the
// tutorial does. No schedule hints: the compiler picks the pipeline.
#include <kiln/kiln.h>

#include <array>
#include <cmath>

using namespace kiln;

namespace {

struct Running {
  Tensor m, l, acc;
};

/// Keys [lo, hi) against the program's queries `q`; `diagonal` masks keys
/// after each query.
Running attend(Running state, const Tensor &q, ConstPtr<bf16> k, ConstPtr<bf16> v, const Tensor &head,
               const Tensor &offs_m, const Tensor &offs_n, const Tensor &offs_d, const Tensor &lo,
               const Tensor &hi, int64_t block_n, int64_t head_dim, const Tensor &qk_scale, bool diagonal) {
  auto [m, l, acc] = for_range(
      lo, hi, block_n, carry(state.m, state.l, state.acc),
      [&](const Tensor &start, const Tensor &m_i, const Tensor &l_i, const Tensor &acc) {
        Tensor keys = start + offs_n;
        Tensor kt = load(k + head + expand_dims(keys, 0) * head_dim + expand_dims(offs_d, 1)); // D x BN
        Tensor qk = dot(q, kt);
        Tensor m_ij, scaled;
        if (diagonal) {
          Tensor visible = expand_dims(offs_m, 1) >= expand_dims(keys, 0);
          scaled = where(visible, qk * qk_scale, -1.0e6f);
          m_ij = maximum(m_i, max(scaled, 1));
        } else {
          m_ij = maximum(m_i, max(qk, 1) * qk_scale);
          scaled = qk * qk_scale;
        }
        Tensor p = exp2(scaled - expand_dims(m_ij, 1));
        Tensor alpha = exp2(m_i - m_ij);
        Tensor vt = load(v + head + expand_dims(keys, 1) * head_dim + expand_dims(offs_d, 0)); // BN x D
        Tensor next = dot(p.to(bf16), vt, acc * expand_dims(alpha, 1));
        return std::array{m_ij, l_i * alpha + sum(p, 1), next};
      });
  return {m, l, acc};
}

void tutorial_attention(const Config &cfg, ConstPtr<bf16> q, ConstPtr<bf16> k, ConstPtr<bf16> v, Ptr<bf16> out,
                        Int n_ctx, Float sm_scale) {
  const int64_t BM = cfg["BLOCK_M"], BN = cfg["BLOCK_N"], D = cfg["HEAD_DIM"];
  const bool causal = cfg["CAUSAL"] != 0;
  Tensor start_m = program_id(0);
  Tensor head = program_id(1).to(i64) * n_ctx * D;
  Tensor offs_m = start_m * BM + arange(0, BM);
  Tensor offs_n = arange(0, BN);
  Tensor offs_d = arange(0, D);
  Tensor qk_scale = sm_scale * float(1.0 / std::log(2.0));
  Tensor q_tile = load(q + head + expand_dims(offs_m, 1) * D + expand_dims(offs_d, 0));

  Running state{full({BM}, -INFINITY, f32), zeros({BM}, f32), zeros({BM, D}, f32)};
  if (causal) {
    state = attend(state, q_tile, k, v, head, offs_m, offs_n, offs_d, constant(0, i32), start_m * BM, BN, D, qk_scale, false);
    state = attend(state, q_tile, k, v, head, offs_m, offs_n, offs_d, start_m * BM, (start_m + 1) * BM, BN, D,
                   qk_scale, true);
  } else {
    state = attend(state, q_tile, k, v, head, offs_m, offs_n, offs_d, constant(0, i32), n_ctx, BN, D, qk_scale, false);
  }
  Tensor o = state.acc / expand_dims(state.l, 1);
  store(out + head + expand_dims(offs_m, 1) * D + expand_dims(offs_d, 0), o.to(bf16));
}

} // namespace

KILN_REGISTER_KERNEL(tutorial_attention,
                     "Triton's fused-attention tutorial (forward): out = softmax(q k^T * sm_scale) v, "
                     "[B*H, n_ctx, HEAD_DIM] bf16, n_ctx a multiple of BLOCK_M and BLOCK_N; "
                     "grid: (n_ctx / BLOCK_M, B*H)",
                     jit(tutorial_attention, "tutorial_attention")
                         .defaults({{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"HEAD_DIM", 64}, {"CAUSAL", 0},
                                    {"num_warps", 8}, {"num_stages", 3}}));
