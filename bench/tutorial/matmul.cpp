// Triton's matmul tutorial as a user writes it in Kiln: grouped program
// order, pointer blocks advanced along K (carried by the loop), masked
// loads of the K tail, an optional fused activation. bf16 in, f32
// accumulation, bf16 out. No schedule hints: the compiler picks the
// pipeline (docs/schedules.md).
#include <kiln/kiln.h>

using namespace kiln;

namespace {

void tutorial_matmul(const Config &cfg, ConstPtr<bf16> a, ConstPtr<bf16> b, Ptr<bf16> c, Int M, Int N, Int K,
                     Int stride_am, Int stride_ak, Int stride_bk, Int stride_bn, Int stride_cm, Int stride_cn) {
  const int64_t BM = cfg["BLOCK_M"], BN = cfg["BLOCK_N"], BK = cfg["BLOCK_K"], GROUP_M = cfg["GROUP_M"];
  const bool leaky_relu = cfg["LEAKY_RELU"] != 0;
  Tensor pid = program_id(0);
  Tensor num_pid_m = cdiv(M, BM), num_pid_n = cdiv(N, BN);
  Tensor num_pid_in_group = num_pid_n * GROUP_M;
  Tensor first_pid_m = pid / num_pid_in_group * GROUP_M;
  Tensor group_size_m = minimum(num_pid_m - first_pid_m, GROUP_M);
  Tensor pid_m = first_pid_m + pid % num_pid_in_group % group_size_m;
  Tensor pid_n = pid % num_pid_in_group / group_size_m;

  Tensor offs_am = (pid_m * BM + arange(0, BM)) % M;
  Tensor offs_bn = (pid_n * BN + arange(0, BN)) % N;
  Tensor offs_k = arange(0, BK);
  Tensor a_ptrs = a + expand_dims(offs_am, 1) * stride_am + expand_dims(offs_k, 0) * stride_ak;
  Tensor b_ptrs = b + expand_dims(offs_k, 1) * stride_bk + expand_dims(offs_bn, 0) * stride_bn;

  auto [acc, a_end, b_end] = for_range(
      0, cdiv(K, BK), 1, carry(zeros({BM, BN}, f32), a_ptrs, b_ptrs),
      [&](const Tensor &k, const Tensor &acc, const Tensor &a_at, const Tensor &b_at) {
        Tensor left = K - k * BK;
        Tensor av = load(a_at, expand_dims(offs_k, 0) < left, 0.0);
        Tensor bv = load(b_at, expand_dims(offs_k, 1) < left, 0.0);
        return std::array{dot(av, bv, acc), a_at + BK * stride_ak, b_at + BK * stride_bk};
      });
  Tensor result = leaky_relu ? where(acc >= 0, acc, acc * 0.01f) : acc;

  Tensor offs_cm = pid_m * BM + arange(0, BM), offs_cn = pid_n * BN + arange(0, BN);
  store(c + expand_dims(offs_cm, 1) * stride_cm + expand_dims(offs_cn, 0) * stride_cn, result.to(bf16),
        expand_dims(offs_cm < M, 1) & expand_dims(offs_cn < N, 0));
}

} // namespace

KILN_REGISTER_KERNEL(tutorial_matmul,
                     "Triton's matmul tutorial: C = act(A x B), bf16, any strides, grouped order; "
                     "grid: cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)",
                     jit(tutorial_matmul, "tutorial_matmul")
                         .defaults({{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64}, {"GROUP_M", 8},
                                    {"LEAKY_RELU", 0}, {"num_warps", 8}, {"num_stages", 3}}));
