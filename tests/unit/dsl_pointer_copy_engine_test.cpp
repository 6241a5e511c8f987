// Pointer-block loads on the copy engine: what the compiler makes of a
// plain Triton-style matmul for Hopper (tensor maps it adds, built by the
// launch from the kernel's own pointer and integer parameters), and where
// it keeps per-thread loads (sizes not known positive, strides off 16
// bytes, the option off, older GPUs). Results on the GPU:
// tests/gpu/gpu_tutorial_test.cpp.
#include "TraceTestSupport.h"

#include <kiln/compiler.h>

using namespace kiln;
using kiln::testing::contains;

namespace {

/// Triton's tutorial matmul, rows and columns wrapped by `% M` / `% N`.
void plain_matmul(const Config &cfg, ConstPtr<bf16> a, ConstPtr<bf16> b, Ptr<f32> c, Int M, Int N, Int K,
                  Int stride_am, Int stride_bk, Int stride_cm) {
  const int64_t BM = cfg["BM"], BN = cfg["BN"], BK = cfg["BK"];
  Tensor rows = program_id(0) * BM + arange(0, BM), cols = program_id(1) * BN + arange(0, BN);
  Tensor offs_k = arange(0, BK);
  Tensor a_ptrs = a + expand_dims(rows % M, 1) * stride_am + expand_dims(offs_k, 0);
  Tensor b_ptrs = b + expand_dims(offs_k, 1) * stride_bk + expand_dims(cols % N, 0);
  auto [acc, a_end, b_end] =
      for_range(0, cdiv(K, BK), 1, carry(zeros({BM, BN}, f32), a_ptrs, b_ptrs),
                [&](const Tensor &k, const Tensor &acc, const Tensor &a_at, const Tensor &b_at) {
                  Tensor left = K - k * BK;
                  Tensor av = load(a_at, expand_dims(offs_k, 0) < left, 0.0);
                  Tensor bv = load(b_at, expand_dims(offs_k, 1) < left, 0.0);
                  return std::array{dot(av, bv, acc), a_at + BK, b_at + BK * stride_bk};
                });
  store(c + expand_dims(rows, 1) * stride_cm + expand_dims(cols, 0), acc,
        expand_dims(rows < M, 1) & expand_dims(cols < N, 0));
}

Kernel plainMatmul() {
  return jit(plain_matmul, "plain_matmul")
      .defaults({{"BM", 128}, {"BN", 128}, {"BK", 64}, {"num_warps", 4}, {"num_stages", 4}});
}

/// What a launch with these sizes (row-major operands) knows.
Specialization launchedWith(const Kernel &kernel, int64_t M, int64_t N, int64_t K, int64_t pitchA = -1) {
  pitchA = pitchA < 0 ? K : pitchA;
  std::vector<Arg> args{Arg::device_pointer(1 << 20, M * pitchA * 2), Arg::device_pointer(1 << 24, K * N * 2),
                        Arg::device_pointer(1 << 28, M * N * 4),       Arg(int32_t(M)),
                        Arg(int32_t(N)),                               Arg(int32_t(K)),
                        Arg(int32_t(pitchA)),                          Arg(int32_t(N)),
                        Arg(int32_t(N))};
  return kernel.specialize(args);
}

} // namespace

TEST(PointerCopyEngine, TutorialMatmulReadsBoxesOfItsOperands) {
  Kernel kernel = plainMatmul();
  CompiledKernel hopper = kernel.compile({}, launchedWith(kernel, 200, 264, 200), "sm_90a");
  EXPECT_TRUE(contains(hopper.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"));
  EXPECT_FALSE(contains(hopper.ptx, "cp.async.cg")); // no per-thread copies left
  // Two maps after the kernel's nine parameters.
  EXPECT_TRUE(contains(hopper.ptx, ".param .align 64 .b8 plain_matmul_param_9[128]"));
  EXPECT_TRUE(contains(hopper.ptx, ".param .align 64 .b8 plain_matmul_param_10[128]"));
  ASSERT_EQ(hopper.tensor_maps.size(), 2u);
  // A: the tensor [M, K] at `a` with strides (stride_am, 1), boxes of 128
  // rows of 64 bf16; B: [K, N] at `b`, (stride_bk, 1), two boxes of 64x64.
  TensorMapSpec a{9, {128, 64}, 128, 0, {{3, 0}, {5, 0}}, {{6, 0}, {-1, 1}}};
  TensorMapSpec b{10, {64, 64}, 128, 1, {{5, 0}, {4, 0}}, {{7, 0}, {-1, 1}}};
  EXPECT_EQ(hopper.tensor_maps[0], a);
  EXPECT_EQ(hopper.tensor_maps[1], b);
  EXPECT_EQ(hopper.spill_stores, 0);
}

TEST(PointerCopyEngine, KeepsPerThreadLoadsWhereTheBoxIsNotProven) {
  Kernel kernel = plainMatmul();
  // K = 0: a size the launch does not know positive (no tensor map can
  // hold it); both operands are masked by it.
  Specialization empty = launchedWith(kernel, 128, 128, 0);
  EXPECT_EQ(empty.str().substr(3, 3), "ddz");
  EXPECT_TRUE(kernel.compile({}, empty, "sm_90a").tensor_maps.empty());
  // A's rows 200 bf16 apart: 400 bytes, a multiple of 16; 100 apart (200
  // bytes) is not, so only B is on the copy engine.
  EXPECT_EQ(kernel.compile({}, launchedWith(kernel, 128, 128, 64, 200), "sm_90a").tensor_maps.size(), 2u);
  CompiledKernel offPitch = kernel.compile({}, launchedWith(kernel, 128, 128, 64, 100), "sm_90a");
  ASSERT_EQ(offPitch.tensor_maps.size(), 1u);
  EXPECT_EQ(offPitch.tensor_maps[0].base, 1);
  // The option off, and GPUs without the copy engine.
  EXPECT_TRUE(kernel.compile({{"copy_engine", 0}}, launchedWith(kernel, 256, 256, 256), "sm_90a").tensor_maps.empty());
  EXPECT_TRUE(kernel.compile({}, launchedWith(kernel, 256, 256, 256), "sm_80").tensor_maps.empty());
}

TEST(PointerCopyEngine, RejectsAnInvalidOption) {
  Kernel kernel = plainMatmul();
  try {
    kernel.compile({{"copy_engine", 2}}, launchedWith(kernel, 256, 256, 256), "sm_90a");
    FAIL() << "copy_engine=2 compiled";
  } catch (const Error &e) {
    EXPECT_TRUE(contains(e.what(), "copy_engine must be 0 or 1, got 2")) << e.what();
  }
}
