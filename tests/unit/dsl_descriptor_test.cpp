// Tensor descriptors: block loads that zero-fill outside the tensor, block
// stores that write only inside it, on padded and transposed layouts; the
// errors of bad traces and launches; and what the compiler makes of them
// for Hopper (copy-engine loads in a pipelined loop) and older GPUs.
#include "TraceTestSupport.h"

#include <kiln/compiler.h>

#include <random>

using namespace kiln;
using kiln::testing::contains;
using kiln::testing::trace_error;

namespace {

/// A rows x cols f32 tensor stored with row stride `pitch` (padding after
/// each row), filled with distinct values; the padding holds NaN so that a
/// read of it shows.
struct Padded {
  int64_t rows, cols, pitch;
  std::vector<float> data;
  Padded(int64_t rows, int64_t cols, int64_t pitch) : rows(rows), cols(cols), pitch(pitch), data(rows * pitch, NAN) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> value(-4, 4);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        data[r * pitch + c] = value(rng);
  }
  float at(int64_t r, int64_t c) const {
    return r >= 0 && r < rows && c >= 0 && c < cols ? data[r * pitch + c] : 0.0f;
  }
};

void block_copy(const Config &cfg, TensorDesc<DType::f32, 2> x, Ptr<f32> out, Int row, Int col) {
  const int64_t R = cfg["R"], C = cfg["C"];
  Tensor block = x.load({row, col}, {R, C});
  store(out + expand_dims(arange(0, R), 1) * C + expand_dims(arange(0, C), 0), block);
}

} // namespace

TEST(Descriptors, LoadsZeroFillOutsideThePaddedTensor) {
  Padded x(5, 7, 9);
  Kernel kernel = jit(block_copy, "descriptor_block_copy").defaults({{"R", 8}, {"C", 8}});
  for (auto [row, col] : {std::pair{0, 0}, {-3, -2}, {2, 4}, {4, 6}, {5, 0}, {-8, 3}}) {
    std::vector<float> out(64, -999.0f);
    kernel.launch(Grid(1), {}, Stream(Device::interp()), TensorArg(x.data, {x.rows, x.cols}, {x.pitch, 1}), out,
                  row, col);
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c)
        ASSERT_EQ(out[r * 8 + c], x.at(row + r, col + c)) << "block at (" << row << ", " << col << "), element ("
                                                           << r << ", " << c << ")";
  }
}

TEST(Descriptors, ATransposedViewIsJustOtherStrides) {
  // The same memory seen as its 7x5 transpose: strides (1, 9).
  Padded x(5, 7, 9);
  Kernel kernel = jit(block_copy, "descriptor_block_copy").defaults({{"R", 8}, {"C", 4}});
  std::vector<float> out(32, -999.0f);
  kernel.launch(Grid(1), {}, Stream(Device::interp()), TensorArg(x.data, {7, 5}, {1, 9}), out, 1, 2);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(out[r * 4 + c], x.at(2 + c, 1 + r));
}

TEST(Descriptors, StoresWriteOnlyInsideTheTensor) {
  std::vector<float> y(6 * 10, -1.0f);
  jit([](TensorDesc<DType::f32, 2> y, Int row, Int col) {
    Tensor values = (expand_dims(arange(0, 4), 1) * 8 + expand_dims(arange(0, 8), 0)).to(DType::f32);
    y.store({row, col}, values);
  }, "descriptor_store").launch(Grid(1), {}, Stream(Device::interp()), TensorArg(y, {6, 10}), -1, 5);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 10; ++c) {
      int br = r + 1, bc = c - 5; // the block element that lands here
      float want = br >= 0 && br < 4 && bc >= 0 && bc < 8 ? static_cast<float>(br * 8 + bc) : -1.0f;
      EXPECT_EQ(y[r * 10 + c], want) << "(" << r << ", " << c << ")";
    }
}

TEST(Descriptors, TraceErrorsNameTheLine) {
  int line = 0;
  auto wrongOffsets = trace_error([&](TensorDesc<DType::f32, 2> x) {
    line = __LINE__; Tensor t = x.load({0}, {16, 16});
  });
  EXPECT_ERROR_AT(wrongOffsets, line, "a rank-2 descriptor takes 2 offsets, got 1");
  auto oddShape = trace_error([&](TensorDesc<DType::f32, 2> x) {
    line = __LINE__; Tensor t = x.load({0, 0}, {16, 12});
  });
  EXPECT_ERROR_AT(oddShape, line, "block shape 16x12 must have power-of-two dimensions");
  auto wrongDtype = trace_error([&](TensorDesc<DType::f16, 2> x) {
    Tensor v = zeros({16, 16}, DType::f32);
    line = __LINE__; x.store({0, 0}, v);
  });
  EXPECT_ERROR_AT(wrongDtype, line, "the value must be a 2-d block of f16");
  auto wideOffset = trace_error([&](TensorDesc<DType::f32, 2> x, Long row) {
    line = __LINE__; Tensor t = x.load({row, 0}, {16, 16});
  });
  EXPECT_ERROR_AT(wideOffset, line, "offsets are i32 (the copy engine's coordinates)");
}

TEST(Descriptors, LaunchesCheckTheirArguments) {
  Kernel kernel = jit(block_copy, "descriptor_block_copy").defaults({{"R", 8}, {"C", 8}});
  std::vector<float> x(64), out(64);
  auto launchError = [&](auto... args) -> std::string {
    try {
      kernel.launch(Grid(1), {}, Stream(Device::interp()), args...);
    } catch (const Error &e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_TRUE(contains(launchError(TensorArg(x, {8}), out, 0, 0), "takes 9 arguments, the launch passed 7"));
  EXPECT_TRUE(contains(launchError(x, x, x, x, x, x, out, 0, 0), "expects a rank-2 descriptor"));
  EXPECT_THROW(TensorArg(x, {8, 8}, {8}), Error);
  // 8 rows of 9 (or rows 9 apart) need more than the 64 floats passed.
  EXPECT_TRUE(contains(launchError(TensorArg(x, {8, 9}), out, 0, 0), "reach past its memory (256 bytes)"));
  EXPECT_TRUE(contains(launchError(TensorArg(x, {8, 8}, {9, 1}), out, 0, 0), "reach past its memory"));
  EXPECT_EQ(launchError(TensorArg(x, {8, 8}, {8, 1}), out, 0, 0), "no error");
}

namespace {

/// A K loop whose operands come through descriptors: what the matmul op
/// runs on Hopper.
void descriptor_dot(const Config &cfg, TensorDesc<DType::bf16, 2> a, TensorDesc<DType::bf16, 2> b, Ptr<f32> c,
                    Int K) {
  const int64_t BM = cfg["BM"], BN = cfg["BN"], BK = cfg["BK"];
  Tensor acc = for_range(0, K, BK, carry(zeros({BM, BN}, DType::f32)), [&](const Tensor &k, const Tensor &acc) {
    return dot(a.load({0, k}, {BM, BK}), b.load({k, 0}, {BK, BN}), acc);
  });
  store(c + expand_dims(arange(0, BM), 1) * BN + expand_dims(arange(0, BN), 0), acc);
}

Specialization aligned(const Kernel &kernel, int64_t M, int64_t N, int64_t K) {
  std::vector<Arg> args;
  TensorArg(Arg::device_pointer(1 << 20, M * K * 2), {M, K}).append_to(args);
  TensorArg(Arg::device_pointer(1 << 22, K * N * 2), {K, N}).append_to(args);
  args.push_back(Arg::device_pointer(1 << 24, M * N * 4));
  args.push_back(Arg(K));
  return kernel.specialize(args);
}

} // namespace

TEST(Descriptors, HopperLoadsThemWithTheCopyEngine) {
  Kernel kernel = jit(descriptor_dot, "descriptor_dot")
                      .defaults({{"BM", 128}, {"BN", 128}, {"BK", 64}, {"num_warps", 4}, {"num_stages", 3}});
  CompiledKernel hopper = kernel.compile({}, aligned(kernel, 128, 128, 512), "sm_90a");
  EXPECT_TRUE(contains(hopper.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"));
  EXPECT_TRUE(contains(hopper.ptx, "mbarrier.try_wait.parity.shared::cta.b64"));
  EXPECT_TRUE(contains(hopper.ptx, ".param .align 64 .b8 descriptor_dot_param_0[128]"));
  ASSERT_EQ(hopper.tensor_maps.size(), 2u);
  // A: boxes of 128 rows of 64 bf16 (128 bytes, 128-byte swizzle); B [K][N]
  // with N contiguous: 64 rows of 64 columns, two boxes side by side.
  EXPECT_EQ(hopper.tensor_maps[0], (TensorMapSpec{0, {128, 64}, 128}));
  EXPECT_EQ(hopper.tensor_maps[1], (TensorMapSpec{6, {64, 64}, 128}));
  EXPECT_EQ(hopper.spill_stores, 0);

  // Without the copy engine (an older GPU, or no pipelining) the same
  // kernel reads through masked loads and needs no tensor maps.
  CompiledKernel ampere = kernel.compile({}, aligned(kernel, 128, 128, 512), "sm_80");
  EXPECT_TRUE(ampere.tensor_maps.empty());
  EXPECT_FALSE(contains(ampere.ptx, "cp.async.bulk.tensor"));
  CompiledKernel unpipelined = kernel.compile({{"num_stages", 1}}, aligned(kernel, 128, 128, 512), "sm_90a");
  EXPECT_TRUE(unpipelined.tensor_maps.empty());
}

TEST(Descriptors, UnalignedTensorsStayOffTheCopyEngine) {
  Kernel kernel = jit(descriptor_dot, "descriptor_dot")
                      .defaults({{"BM", 64}, {"BN", 64}, {"BK", 32}, {"num_warps", 4}, {"num_stages", 3}});
  std::vector<Arg> args;
  TensorArg(Arg::device_pointer((1 << 20) + 2, 64 * 100 * 2), {64, 100}, {100, 1}).append_to(args); // base off by 2
  TensorArg(Arg::device_pointer(1 << 22, 100 * 64 * 2), {100, 64}, {64, 1}).append_to(args);
  args.push_back(Arg::device_pointer(1 << 24, 64 * 64 * 4));
  args.push_back(Arg(100));
  CompiledKernel compiled = kernel.compile({}, kernel.specialize(args), "sm_90a");
  ASSERT_EQ(compiled.tensor_maps.size(), 1u); // only B qualifies
  EXPECT_EQ(compiled.tensor_maps[0].parameter, 6);
}
