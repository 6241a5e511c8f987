// Matrix products on tensor cores (mma.sync with ldmatrix from swizzled
// shared memory, cp.async pipelining of the K loop) against a double
// precision reference: both operand orders, ragged edges, every pipelining
// depth, f16 and bf16, f32 operands as tf32 or tf32x3, and fp8 operands. Without a GPU (--compile-only) the interpreter runs
// the same cases, and KILN_CHECK_PTX compiles every variant through ptxas.
#include "GpuTestSupport.h"

#include <array>

namespace kiln::testing {
namespace {

/// C (f32, row-major, M x N) = A (M x K) x B (K x N), operands of any
/// strides, every edge masked; f32 operands multiply as `P` says.
template <DType T, Precision P = Precision::tf32>
void matmul(const Config &cfg, ConstPtr<T> a, ConstPtr<T> b, Ptr<f32> c, Int M, Int N, Int K, Int stride_am,
            Int stride_ak, Int stride_bk, Int stride_bn) {
  const int64_t BM = cfg["BLOCK_M"], BN = cfg["BLOCK_N"], BK = cfg["BLOCK_K"];
  Tensor rm = program_id(0) * BM + arange(0, BM);
  Tensor rn = program_id(1) * BN + arange(0, BN);
  Tensor rk = arange(0, BK);
  Tensor a_tile = a + expand_dims(rm, 1) * stride_am + expand_dims(rk, 0) * stride_ak;
  Tensor b_tile = b + expand_dims(rk, 1) * stride_bk + expand_dims(rn, 0) * stride_bn;
  Tensor acc = for_range(0, K, BK, carry(zeros({BM, BN}, f32)), [&](const Tensor &k, const Tensor &acc) {
    Tensor a_mask = expand_dims(rm < M, 1) & expand_dims(k + rk < K, 0);
    Tensor b_mask = expand_dims(k + rk < K, 1) & expand_dims(rn < N, 0);
    Tensor av = load(a_tile + k * stride_ak, a_mask, 0.0);
    Tensor bv = load(b_tile + k * stride_bk, b_mask, 0.0);
    return dot(av, bv, acc, DotOptions{.precision = P});
  });
  store(c + expand_dims(rm, 1) * N + expand_dims(rn, 0), acc, expand_dims(rm < M, 1) & expand_dims(rn < N, 0));
}

struct Case {
  DType dtype;
  int64_t M, N, K;
  bool a_column_major, b_column_major;
  Config config;
  Precision precision = Precision::tf32; ///< f32 operands only
};

Kernel kernelFor(DType dtype, Precision precision) {
  if (dtype == f16)
    return jit(matmul<f16>, "matmul_f16");
  if (dtype == bf16)
    return jit(matmul<bf16>, "matmul_bf16");
  if (dtype == f8e4m3)
    return jit(matmul<f8e4m3>, "matmul_f8e4m3");
  if (dtype == f8e5m2)
    return jit(matmul<f8e5m2>, "matmul_f8e5m2");
  return precision == Precision::tf32x3 ? jit(matmul<f32, Precision::tf32x3>, "matmul_tf32x3")
                                        : jit(matmul<f32, Precision::tf32>, "matmul_tf32");
}

/// How far C may be from the exact product, relative to the sum of the
/// products' magnitudes: f32 accumulation of exact products (16-bit
/// operands), or of products of operands rounded to tf32 (2^-11 each), or
/// of split tf32 operands (about 2^-21). fp8 products are exact too, but
/// Hopper's fp8 wgmma keeps only about 14 bits of its running sums (what
/// block-scaled fp8 matmuls promote partial sums into f32 registers for):
/// a K step of 32 each adds up to 2^-14 of the sum so far.
double tolerance(DType dtype, Precision precision, int64_t K) {
  if (dtype == f8e4m3 || dtype == f8e5m2)
    return std::max<double>(1e-5, std::ldexp(static_cast<double>(K) / 32, -14));
  if (dtype != f32)
    return 1e-5;
  return precision == Precision::tf32x3 ? 2e-5 : 1.5e-3;
}

void check(const Case &t) {
  Kernel k = kernelFor(t.dtype, t.precision);
  Array a = random_array(t.dtype, t.M * t.K, -1, 1, 31), b = random_array(t.dtype, t.K * t.N, -1, 1, 32);
  Array c = output_array(f32, t.M * t.N);
  // Element (i, j) of A sits at i * stride_am + j * stride_ak.
  int64_t sam = t.a_column_major ? 1 : t.K, sak = t.a_column_major ? t.M : 1;
  int64_t sbk = t.b_column_major ? 1 : t.N, sbn = t.b_column_major ? t.K : 1;
  Grid grid(cdiv(t.M, t.config["BLOCK_M"]), cdiv(t.N, t.config["BLOCK_N"]));
  std::vector<HostArg> args{&a, &b, &c, t.M, t.N, t.K, sam, sak, sbk, sbn};
  const Device device = compile_only() ? Device::interp() : Device::cuda(0);
  Array result = run_on(device, k, grid, t.config, args, 0xFF).front();
  size_t bad = 0;
  for (int64_t i = 0; i < t.M; ++i)
    for (int64_t j = 0; j < t.N; ++j) {
      double exact = 0, magnitude = 0;
      for (int64_t l = 0; l < t.K; ++l) {
        double product = a.at(i * sam + l * sak) * b.at(l * sbk + j * sbn);
        exact += product;
        magnitude += std::fabs(product);
      }
      double got = result.at(i * t.N + j);
      if (!(std::fabs(got - exact) <= tolerance(t.dtype, t.precision, t.K) * magnitude + 1e-6) && bad++ < 5)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", expected " << exact;
    }
  EXPECT_EQ(bad, 0u) << t.M << "x" << t.N << "x" << t.K << " " << name(t.dtype);
}

/// A tile: BLOCK_M x BLOCK_N x BLOCK_K, warps, pipelining depth.
Config config(int64_t bm, int64_t bn, int64_t bk, int64_t warps, int64_t stages) {
  return Config{{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"num_warps", warps}, {"num_stages", stages}};
}

TEST(GpuMatmul, PipelinedTilesInBothOperandOrders) {
  Config big{{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 32}, {"num_warps", 4}, {"num_stages", 3}};
  Config deep{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 64}, {"num_warps", 4}, {"num_stages", 4}};
  Config wide{{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"BLOCK_K", 32}, {"num_warps", 8}, {"num_stages", 2}};
  check({bf16, 256, 256, 512, false, false, big});
  check({f16, 256, 128, 256, true, true, deep});
  check({bf16, 128, 192, 192, false, true, deep});
  check({f16, 192, 160, 320, true, false, wide}); // edges of M and N masked
}

TEST(GpuMatmul, HopperWgmmaWithKMajorOperands) {
  // A row-major and B column-major ([N][K]) or row-major: A K-major and B
  // K- or N-major in shared memory, so sm_90a runs wgmma (128-, 64- and 32-byte swizzled rows for BLOCK_K
  // 64, 32 and 16), one or two warpgroups, N up to 256, pipelined or staged.
  check({bf16, 256, 256, 512, false, true, config(128, 128, 64, 8, 3)});
  check({f16, 128, 256, 256, false, true, config(64, 256, 64, 4, 3)});
  check({bf16, 192, 160, 320, false, true, config(128, 64, 32, 8, 4)}); // edges of M and N masked
  check({f16, 128, 128, 128, false, true, config(64, 128, 16, 4, 2)});
  check({bf16, 128, 128, 192, false, true, config(128, 128, 64, 4, 1)}); // staged from registers
  // B row-major ([K][N]): N-major slots in 128-byte column blocks (trans-b).
  check({bf16, 256, 512, 256, false, false, config(128, 256, 64, 8, 3)});
  check({f16, 128, 192, 160, false, false, config(64, 64, 32, 4, 4)});
}

TEST(GpuMatmul, Fp8WgmmaWithKMajorOperands) {
  // e4m3 and e5m2 operands, A row-major and B column-major ([N][K]): both
  // K-major in shared memory, so sm_90a runs wgmma k32 (128-, 64- and
  // 32-byte swizzled rows for BLOCK_K 128, 64 and 32), one or two
  // warpgroups, pipelined or staged. B row-major ([K][N]) would be N-major,
  // which fp8 wgmma does not read: FMAs, as on every other target.
  check({f8e4m3, 256, 256, 512, false, true, config(128, 128, 128, 8, 3)});
  check({f8e5m2, 128, 192, 256, false, true, config(64, 64, 64, 4, 4)});
  check({f8e4m3, 192, 160, 320, false, true, config(128, 64, 32, 8, 2)}); // edges of M and N masked
  check({f8e5m2, 128, 128, 256, false, true, config(64, 128, 128, 4, 1)}); // staged from registers
  check({f8e4m3, 128, 128, 128, false, false, config(64, 64, 32, 4, 3)});  // B N-major: FMAs
}

TEST(GpuMatmul, RaggedShapesAndUnpipelinedLoops) {
  // Sizes not divisible by 16: loads stay scalar, operands are staged
  // through shared memory from registers; num_stages 1 does that always.
  check({f16, 77, 45, 100, false, false,
         {{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 32}, {"num_warps", 4}, {"num_stages", 3}}});
  check({bf16, 128, 128, 128, false, true,
         {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"BLOCK_K", 32}, {"num_warps", 4}, {"num_stages", 1}}});
  check({bf16, 16, 16, 16, false, false,
         {{"BLOCK_M", 16}, {"BLOCK_N", 16}, {"BLOCK_K", 16}, {"num_warps", 4}, {"num_stages", 3}}});
}

TEST(GpuMatmul, Tf32TensorCoresInBothOperandOrders) {
  // f32 operands (tf32 by default) take mma.sync m16n8k8 on sm_80+, sm_90a
  // included: K-contiguous operands through ldmatrix, the others element by
  // element; tf32x3 adds the two cross products of the rounding errors.
  // On sm_90a tf32 with K-major A and B takes wgmma, which truncates the
  // operands to tf32 instead of rounding them (within the tolerance).
  check({f32, 256, 256, 256, false, false, config(128, 128, 32, 4, 3)});
  check({f32, 128, 192, 160, true, true, config(64, 64, 32, 4, 4)});
  check({f32, 192, 160, 96, false, true, config(128, 64, 16, 8, 2)}); // edges of M and N masked
  check({f32, 128, 128, 128, true, false, config(64, 128, 8, 4, 1)}); // staged from registers, k8 steps
  check({f32, 77, 45, 100, false, false, config(64, 64, 32, 4, 3)});  // K not a multiple of 8: scalar loads
  // K-major A and B: wgmma (k8) on sm_90a, 128- and 64-byte rows, in
  // flight or staged.
  check({f32, 256, 256, 256, false, true, config(128, 128, 32, 8, 3)});
  check({f32, 192, 160, 96, false, true, config(64, 64, 16, 4, 4)}); // edges of M and N masked
  check({f32, 128, 128, 64, false, true, config(64, 128, 32, 4, 1)});
  check({f32, 128, 192, 192, false, true, config(64, 64, 32, 4, 3), Precision::tf32x3});
  check({f32, 96, 128, 160, true, false, config(32, 64, 16, 4, 2), Precision::tf32x3});
}

/// C[h] = A[h] B for each batch h (A [H][M][256] bf16 and C [H][M][64] f32
/// row-major, B [256][64], M a multiple of 128), the batch a uniform
/// pointer offset of 64 bits, as a user writes it.
void batched_matmul(const Config &, ConstPtr<bf16> a, ConstPtr<bf16> b, Ptr<f32> c, Int M) {
  const int64_t BM = 128, BN = 64, BK = 64, K = 256;
  Tensor rows_before = program_id(1).to(i64) * M;
  Tensor rm = program_id(0) * BM + arange(0, BM);
  Tensor rn = arange(0, BN);
  Tensor rk = arange(0, BK);
  Tensor acc = for_range(0, K, BK, carry(zeros({BM, BN}, f32)), [&](const Tensor &k, const Tensor &acc) {
    Tensor av = load(a + rows_before * K + expand_dims(rm, 1) * K + expand_dims(k + rk, 0));
    Tensor bv = load(b + expand_dims(k + rk, 1) * BN + expand_dims(rn, 0));
    return dot(av, bv, acc);
  });
  store(c + rows_before * BN + expand_dims(rm, 1) * BN + expand_dims(rn, 0), acc);
}

// The batch offset moves the box of A along its rows (the copy engine reads
// each batch from the tensor of all of them), or each thread copies
// (copy_engine=0): both against the exact product. A launch whose memory
// holds 2^31 rows or more, which the 32-bit row coordinate cannot reach,
// is refused before anything runs.
TEST(GpuMatmul, BatchesAtAUniformPointerOffset) {
  Kernel kernel = jit(batched_matmul, "batched_matmul");
  const int64_t heads = 3, m = 256, k = 256, n = 64;
  Config tiles{{"num_warps", 4}, {"num_stages", 3}};
  Specialization aligned;
  aligned.args = {{.divisible_by_16 = true}, {.divisible_by_16 = true}, {.divisible_by_16 = true},
                  {.divisible_by_16 = true}};
  CompiledKernel compiled = kernel.compile(tiles, aligned, "sm_90a");
  ASSERT_EQ(compiled.tensor_maps.size(), 2u);
  EXPECT_TRUE(compiled.tensor_maps[0].offset_rows != compiled.tensor_maps[1].offset_rows)
      << "A's map counts the batch's rows, B's does not";

  Array a = random_array(bf16, heads * m * k, -1, 1, 41), b = random_array(bf16, k * n, -1, 1, 42);
  const Device device = compile_only() ? Device::interp() : Device::cuda(0);
  for (int64_t copy_engine : {1, 0}) {
    Config config = tiles;
    config.set("copy_engine", copy_engine);
    Array c = output_array(f32, heads * m * n);
    Array result = run_on(device, kernel, Grid(m / 128, heads), config, {&a, &b, &c, m}, 0xFF).front();
    size_t bad = 0;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double exact = 0, magnitude = 0;
          for (int64_t l = 0; l < k; ++l) {
            double product = a.at((h * m + i) * k + l) * b.at(l * n + j);
            exact += product;
            magnitude += std::fabs(product);
          }
          double got = result.at((h * m + i) * n + j);
          if (!(std::fabs(got - exact) <= 1e-5 * magnitude + 1e-6) && bad++ < 5)
            ADD_FAILURE() << "C[" << h << "][" << i << "][" << j << "] = " << got << ", expected " << exact;
        }
    EXPECT_EQ(bad, 0u) << "copy_engine=" << copy_engine;
  }

  if (compile_only())
    return;
  Buffer small_a = Buffer::allocate(device, heads * m * k * 2), small_b = Buffer::allocate(device, k * n * 2);
  Buffer small_c = Buffer::allocate(device, heads * m * n * 4);
  const size_t rows_past_32_bits = (size_t(1) << 31) * k * 2;
  try {
    const std::vector<Arg> args{Arg::device_pointer(small_a.address(), rows_past_32_bits), Arg(small_b),
                                Arg(small_c), Arg(m)};
    kernel.launch_with(Grid(m / 128, heads), tiles, Stream(device), args);
    ADD_FAILURE() << "a launch on 2^31 rows of A ran";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("copy_engine=0"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace kiln::testing
