// C = A x B for f16 matrices of any strides (f32 accumulation): each
// program computes one BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K
// steps with dot.
#include <kiln/kiln.h>

using namespace kiln;

namespace {

void matmul(const Config &cfg, ConstPtr<f16> a, ConstPtr<f16> b, Ptr<f16> c, Int M, Int N, Int K,
            Int stride_am, Int stride_ak, Int stride_bk, Int stride_bn, Int stride_cm,
            Int stride_cn) {
  const int64_t BLOCK_M = cfg["BLOCK_M"], BLOCK_N = cfg["BLOCK_N"], BLOCK_K = cfg["BLOCK_K"];
  Tensor rm = program_id(0) * BLOCK_M + arange(0, BLOCK_M);
  Tensor rn = program_id(1) * BLOCK_N + arange(0, BLOCK_N);
  Tensor rk = arange(0, BLOCK_K);
  Tensor a_tile = a + expand_dims(rm, 1) * stride_am + expand_dims(rk, 0) * stride_ak;
  Tensor b_tile = b + expand_dims(rk, 1) * stride_bk + expand_dims(rn, 0) * stride_bn;

  Tensor acc = for_range(0, K, BLOCK_K, carry(zeros({BLOCK_M, BLOCK_N}, f32)),
                         [&](const Tensor &k, const Tensor &acc) {
                           Tensor k_left = expand_dims(k + rk, 0) < K;
                           Tensor a_mask = expand_dims(rm < M, 1) & k_left;
                           Tensor b_mask = trans(k_left) & expand_dims(rn < N, 0);
                           Tensor av = load(a_tile + k * stride_ak, a_mask, 0.0);
                           Tensor bv = load(b_tile + k * stride_bk, b_mask, 0.0);
                           return dot(av, bv, acc);
                         });

  Tensor c_tile = c + expand_dims(rm, 1) * stride_cm + expand_dims(rn, 0) * stride_cn;
  store(c_tile, acc.to(f16), expand_dims(rm < M, 1) & expand_dims(rn < N, 0));
}

// The same product through tensor descriptors: blocks past the edges read
// zeros, so the K loop needs no masks, and on Hopper the compiler fills a
// pipelined ring with the copy engine (TMA) instead of per-thread loads.
void matmul_descriptors(const Config &cfg, TensorDesc<DType::f16, 2> a, TensorDesc<DType::f16, 2> b, Ptr<f16> c,
                        Int M, Int N, Int K) {
  const int64_t BLOCK_M = cfg["BLOCK_M"], BLOCK_N = cfg["BLOCK_N"], BLOCK_K = cfg["BLOCK_K"];
  Tensor row = program_id(0) * BLOCK_M, col = program_id(1) * BLOCK_N;
  Tensor acc = for_range(0, K, BLOCK_K, carry(zeros({BLOCK_M, BLOCK_N}, f32)),
                         [&](const Tensor &k, const Tensor &acc) {
                           return dot(a.load({row, k}, {BLOCK_M, BLOCK_K}), b.load({k, col}, {BLOCK_K, BLOCK_N}), acc);
                         });
  Tensor rm = row + arange(0, BLOCK_M), rn = col + arange(0, BLOCK_N);
  store(c + expand_dims(rm, 1) * N + expand_dims(rn, 0), acc.to(f16),
        expand_dims(rm < M, 1) & expand_dims(rn < N, 0));
}

} // namespace

KILN_REGISTER_KERNEL(matmul_descriptors,
                     "C = A x B through tensor descriptors (A [M][K], B [K][N] row-major), f16 in, f32 "
                     "accumulation; grid: (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N))",
                     jit(matmul_descriptors, "matmul_descriptors")
                         .defaults({{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64},
                                    {"num_warps", 4}, {"num_stages", 3}}));

KILN_REGISTER_KERNEL(matmul,
                     "C = A x B, f16 in, f32 accumulation, any strides; grid: (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N))",
                     jit(matmul, "matmul")
                         .defaults({{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 32},
                                    {"num_warps", 4}, {"num_stages", 3}}));
