// The tutorial kernels a user writes (bench/tutorial): the GPU's results,
// with the schedule the compiler derives for each loop, against the
// interpreter's on the same inputs, at ragged and aligned sizes.
#include "GpuTestSupport.h"

namespace kiln::testing {
namespace {

const Kernel &tutorial(const std::string &name) {
  const RegisteredKernel *found = find_kernel(name);
  if (found == nullptr)
    throw Error("no kernel " + name);
  return found->kernel;
}

/// A row-major, C row-major; B row-major (its rows along K), or stored
/// [N][K] (`b_rows_of_n`: read as K x N, column by column).
void expect_matmul(int64_t m, int64_t n, int64_t k, const Config &tiles, bool leaky_relu, bool b_rows_of_n = false) {
  Array a = random_array(DType::bf16, m * k, -1, 1, 1), b = random_array(DType::bf16, k * n, -1, 1, 2);
  Array c = output_array(DType::bf16, m * n);
  Config config = tiles;
  config.set("LEAKY_RELU", leaky_relu ? 1 : 0);
  config.set("GROUP_M", 8);
  int64_t programs = cdiv(m, tiles.get("BLOCK_M", 0)) * cdiv(n, tiles.get("BLOCK_N", 0));
  int64_t stride_bk = b_rows_of_n ? 1 : n, stride_bn = b_rows_of_n ? k : 1;
  expect_same(tutorial("tutorial_matmul"), Grid(programs), config,
              {&a, &b, &c, m, n, k, k, int64_t(1), stride_bk, stride_bn, n, int64_t(1)}, 2e-2);
}

TEST(GpuTutorial, MatmulAlignedEveryTileSet) {
  for (const char *tiles : {"BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,num_warps=8,num_stages=3",
                            "BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,num_warps=4,num_stages=4",
                            "BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,num_warps=8,num_stages=3",
                            "BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,num_warps=4,num_stages=4"})
    expect_matmul(256, 256, 512, Config::parse(tiles), false);
}

TEST(GpuTutorial, MatmulRaggedWithLeakyRelu) {
  expect_matmul(200, 136, 200, Config::parse("BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,num_warps=8,num_stages=3"), true);
  // Strides that are no multiple of 16 bytes: the copies cannot be 16 bytes.
  expect_matmul(130, 60, 77, Config::parse("BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,num_warps=4,num_stages=4"), true);
  // The tile sets whose rings take a spare slot (docs/schedules.md), with a
  // K tail (masked copies) and ragged edges (the staged epilogue's masks).
  expect_matmul(200, 264, 200, Config::parse("BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,num_warps=8,num_stages=3"), true);
  expect_matmul(200, 136, 328, Config::parse("BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,num_warps=4,num_stages=4"), false);
}

// The operands' pointer blocks read as boxes by the copy engine (the
// default where the strides allow; rows and columns wrapped by `% M` and
// `% N`, a K tail) and by per-thread copies (copy_engine=0), with B stored
// either way round (as [N][K] its box is loaded transposed).
TEST(GpuTutorial, MatmulOperandsByTheCopyEngineOrByEachThread) {
  for (int64_t copy_engine : {1, 0})
    for (bool b_rows_of_n : {false, true}) {
      Config tiles = Config::parse("BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,num_warps=8,num_stages=3");
      tiles.set("copy_engine", copy_engine);
      expect_matmul(328, 200, 264, tiles, false, b_rows_of_n);
      tiles = Config::parse("BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,num_warps=8,num_stages=3");
      tiles.set("copy_engine", copy_engine);
      expect_matmul(136, 264, 136, tiles, true, b_rows_of_n);
    }
}

TEST(GpuTutorial, AttentionFullAndCausal) {
  const int64_t heads = 2, n_ctx = 256;
  for (int64_t d : {64, 128})
    for (int causal : {0, 1}) {
      Array q = random_array(DType::bf16, heads * n_ctx * d, -1, 1, 3);
      Array k = random_array(DType::bf16, heads * n_ctx * d, -1, 1, 4);
      Array v = random_array(DType::bf16, heads * n_ctx * d, -1, 1, 5);
      Array o = output_array(DType::bf16, heads * n_ctx * d);
      // The benchmark's two tile sets. (Three stages of 128-wide heads pass
      // what an sm_80 program may hold, which --compile-only also compiles
      // for; the benchmark runs them on Hopper and checks their results.)
      // Each with and without a producer warpgroup feeding K and V, whose
      // two consumer warpgroups take turns or drift.
      for (int64_t block_n : {64, 128})
        for (auto [warp_specialize, ping_pong] : {std::pair{0, 1}, {1, 1}, {1, 0}}) {
          Config config{{"BLOCK_M", 128},  {"BLOCK_N", block_n}, {"HEAD_DIM", d},
                        {"CAUSAL", causal}, {"num_warps", 8},     {"num_stages", d == 64 && block_n == 64 ? 3 : 2},
                        {"warp_specialize", warp_specialize}, {"ping_pong", ping_pong}};
          expect_same(tutorial("tutorial_attention"), Grid(n_ctx / 128, heads), config,
                      {&q, &k, &v, &o, n_ctx, 1.0 / std::sqrt(double(d))}, 2e-2);
        }
    }
}

TEST(GpuTutorial, SoftmaxRowsWalkedByFewerPrograms) {
  const int64_t rows = 37, cols = 1000;
  Array x = random_array(DType::bf16, rows * cols, -4, 4, 6);
  Array y = output_array(DType::bf16, rows * cols);
  expect_same(tutorial("tutorial_softmax_bf16"), Grid(8), Config{{"BLOCK", 1024}, {"num_warps", 4}},
              {&x, &y, rows, cols, cols, cols}, 1e-2);
}

TEST(GpuTutorial, LayerNormForwardAndBackward) {
  const int64_t rows = 24, cols = 1000, programs = 5;
  Array x = random_array(DType::bf16, rows * cols, -2, 2, 7), w = random_array(DType::bf16, cols, 0.5, 1.5, 8);
  Array b = random_array(DType::bf16, cols, -1, 1, 9), y = output_array(DType::bf16, rows * cols);
  Array mean = output_array(DType::f32, rows), rstd = output_array(DType::f32, rows);
  expect_same(tutorial("tutorial_layer_norm_fwd"), Grid(rows), Config{{"BLOCK", 256}, {"num_warps", 4}},
              {&x, &y, &w, &b, &mean, &rstd, cols, cols, 1e-5}, 1e-2);

  Array stats_mean = random_array(DType::f32, rows, -0.1, 0.1, 10), stats_rstd = random_array(DType::f32, rows, 0.5, 2, 11);
  Array dy = random_array(DType::bf16, rows * cols, -1, 1, 12), dx = output_array(DType::bf16, rows * cols);
  Array partial_dw = output_array(DType::f32, programs * cols), partial_db = output_array(DType::f32, programs * cols);
  expect_same(tutorial("tutorial_layer_norm_bwd_dx"), Grid(programs), Config{{"BLOCK", 1024}, {"num_warps", 4}},
              {&dx, &dy, &partial_dw, &partial_db, &x, &w, &stats_mean, &stats_rstd, rows, cols, cols}, 1e-2);

  Array pdw = random_array(DType::f32, programs * cols, -1, 1, 13), pdb = random_array(DType::f32, programs * cols, -1, 1, 14);
  Array dw = output_array(DType::bf16, cols), db = output_array(DType::bf16, cols);
  expect_same(tutorial("tutorial_layer_norm_bwd_dwdb"), Grid(cdiv(cols, 128)),
              Config{{"BLOCK_M", 32}, {"BLOCK_N", 128}, {"num_warps", 4}}, {&pdw, &pdb, &dw, &db, programs, cols},
              1e-2);
}

} // namespace
} // namespace kiln::testing
