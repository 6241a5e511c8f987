// The ops library on input a demanding user tries first: empty tensors,
// sizes whose arithmetic overflows, outputs whose elements overlap,
// expressions nested thousands deep, and offsets past 2^31 (large strides
// over memory that is reserved, not touched). Each gets the right result
// or a clear error, never a crash or a hang; on the interpreter.
#include "TraceTestSupport.h"
#include "tests/common/OpsTestSupport.h"

#include <kiln_ops.h>

#include <sys/mman.h>

#include <cmath>
#include <limits>
#include <string>

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::contains;
using kiln::testing::error_of;
using kiln::testing::HostTensor;

namespace {

Stream cpu() { return Stream(Device::interp()); }

/// A view of `shape` with `strides` over `base` (f32, host memory).
TensorView strided(void *base, std::vector<int64_t> shape, std::vector<int64_t> strides, DType dtype = DType::f32) {
  TensorView v;
  v.address = reinterpret_cast<uint64_t>(base);
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.strides = std::move(strides);
  v.device = DeviceKind::interp;
  return v;
}

} // namespace

TEST(OpsEdgeCases, NormalizationsOfEmptyTensorsDoNothing) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{0, 16}, {8, 0}, {0, 0}, {2, 0, 4}}) {
    std::vector<float> x(1, 1.0f), y(1, 7.0f), w(16, 1.0f);
    TensorView xv = strided(x.data(), shape, {}), yv = strided(y.data(), shape, {});
    TensorView wv = strided(w.data(), {shape.back()}, {});
    EXPECT_NO_THROW(softmax(xv, yv, cpu()));
    EXPECT_NO_THROW(log_softmax(xv, yv, cpu()));
    EXPECT_NO_THROW(layer_norm(xv, wv, wv, 1e-5, yv, {}, {}, cpu()));
    EXPECT_NO_THROW(rms_norm(xv, wv, 1e-5, yv, {}, cpu()));
    EXPECT_EQ(y[0], 7.0f) << "an empty output was written";
  }
  // NumPy gives empty arrays zero strides: still nothing to write.
  std::vector<float> x(1), y(1);
  EXPECT_NO_THROW(softmax(strided(x.data(), {8, 0}, {0, 0}), strided(y.data(), {8, 0}, {0, 0}), cpu()));
  // Rows of no columns have no mean to give.
  std::vector<float> mean(8, 7.0f);
  EXPECT_TRUE(contains(error_of([&] {
                         layer_norm(strided(x.data(), {8, 0}, {}), {}, {}, 1e-5, strided(y.data(), {8, 0}, {}),
                                    strided(mean.data(), {8}, {}), {}, cpu());
                       }),
                       "rows of length 0 have no mean"));
}

TEST(OpsEdgeCases, ReductionsOverAnEmptyDimensionFollowPyTorch) {
  std::vector<float> x(1, 5.0f);
  TensorView xv = strided(x.data(), {8, 0}, {});
  auto reduced = [&](Reduce op) {
    std::vector<float> out(8, 123.0f);
    reduce(op, xv, 1, strided(out.data(), {8}, {}), cpu());
    return out;
  };
  for (float v : reduced(Reduce::sum))
    EXPECT_EQ(v, 0.0f);
  for (float v : reduced(Reduce::mean))
    EXPECT_TRUE(std::isnan(v));
  for (float v : reduced(Reduce::var))
    EXPECT_TRUE(std::isnan(v)) << "var of nothing is NaN, not " << v;
  for (Reduce op : {Reduce::max, Reduce::min, Reduce::argmax, Reduce::argmin}) {
    std::vector<int64_t> out(8);
    EXPECT_TRUE(contains(error_of([&] {
                           reduce(op, xv, 1, strided(out.data(), {8}, {}, op == Reduce::argmax || op == Reduce::argmin
                                                                              ? DType::i64
                                                                              : DType::f32),
                                  cpu());
                         }),
                         "the reduced dimension is empty"));
  }
  // Over a dimension that is not empty, of a tensor that is: nothing to do.
  std::vector<float> out(1, 9.0f);
  EXPECT_NO_THROW(reduce(Reduce::sum, strided(x.data(), {0, 4}, {0, 0}), 1, strided(out.data(), {0}, {0}), cpu()));
  EXPECT_EQ(out[0], 9.0f);
}

TEST(OpsEdgeCases, VarianceOfTooFewValuesIsNotNegative) {
  // One value with correction 1 divides 0 by max(0, 0): NaN, as PyTorch.
  HostTensor x = HostTensor::random(DType::f32, {3, 1}, 1);
  std::vector<float> out(3, 0.0f);
  reduce(Reduce::var, x.view(), 1, strided(out.data(), {3}, {}), cpu());
  for (float v : out)
    EXPECT_TRUE(std::isnan(v));
}

TEST(OpsEdgeCases, EmptyMatmulsAndPointwiseDoNothing) {
  std::vector<float> a(64, 1.0f), b(64, 1.0f), out(64, 7.0f);
  MatmulArgs m;
  m.a = strided(a.data(), {0, 8}, {});
  m.b = strided(b.data(), {8, 8}, {});
  m.out = strided(out.data(), {0, 8}, {});
  EXPECT_NO_THROW(matmul(m, cpu()));
  Pointwise pw;
  Expr in = pw.input(strided(a.data(), {0, 3}, {}));
  pw.output(strided(out.data(), {0, 3}, {0, 0}), in * 2);
  EXPECT_NO_THROW(pw.run(cpu()));
  EXPECT_EQ(out[0], 7.0f);
}

TEST(OpsEdgeCases, MatmulOverAnEmptyKGivesTheEpilogueOfZero) {
  // K = 0: every product is an empty sum, so out = bias (+ residual), as PyTorch's.
  std::vector<float> a(1), b(1);
  HostTensor bias = HostTensor::random(DType::f32, {5}, 2);
  HostTensor out = HostTensor::poisoned(DType::f32, {3, 5});
  MatmulArgs m;
  m.a = strided(a.data(), {3, 0}, {});
  m.b = strided(b.data(), {0, 5}, {});
  m.out = out.view();
  m.bias = bias.view();
  matmul(m, cpu());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      EXPECT_EQ(out.flat(i * 5 + j), bias.flat(j));
}

TEST(OpsEdgeCases, SizesThatOverflowAreRefusedNotHung) {
  std::vector<float> x(16), y(16);
  const int64_t huge = (int64_t(1) << 62) + 1;
  EXPECT_TRUE(contains(error_of([&] { softmax(strided(x.data(), {huge}, {}), strided(y.data(), {huge}, {}), cpu()); }),
                       "more than 2^62"));
  EXPECT_TRUE(contains(error_of([&] {
                         softmax(strided(x.data(), {1 << 20, 1 << 22, 1 << 22}, {}),
                                 strided(y.data(), {1 << 20, 1 << 22, 1 << 22}, {}), cpu());
                       }),
                       "more than 2^62"));
  MatmulArgs m;
  m.a = strided(x.data(), {huge, 4}, {});
  m.b = strided(x.data(), {4, 4}, {});
  m.out = strided(y.data(), {huge, 4}, {});
  EXPECT_TRUE(contains(error_of([&] { matmul(m, cpu()); }), "2^62"));
  // Empty, but sizes whose product (zeros aside) overflows: refused before
  // anything sizes strides or keys from them.
  const int64_t big = int64_t(1) << 62;
  EXPECT_TRUE(contains(error_of([&] { softmax(strided(x.data(), {4, big, 0}, {}), strided(y.data(), {4, big, 0}, {}), cpu()); }),
                       "2^62"));
  EXPECT_TRUE(contains(error_of([&] {
                         reduce(Reduce::sum, strided(x.data(), {0, big, 8}, {}), 2, strided(y.data(), {0, big}, {}), cpu());
                       }),
                       "2^62"));
  // Through the C ABI, too: a status and a message.
  int64_t shape[2] = {huge, 4};
  DLTensor t{};
  t.data = x.data();
  t.device = {kDLCPU, 0};
  t.ndim = 2;
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape;
  EXPECT_NE(kiln_softmax(&t, &t, nullptr), KILN_OK);
  EXPECT_TRUE(contains(kiln_ops_last_error(), "2^62"));
  EXPECT_NE(kiln_layer_norm(&t, nullptr, nullptr, 1e-5, &t, nullptr, nullptr, nullptr), KILN_OK);
}

TEST(OpsEdgeCases, OverlappingOutputsAreRefused) {
  std::vector<float> x(64, 1.0f), y(64);
  TensorView in = strided(x.data(), {4, 8}, {});
  TensorView rowsOverlap = strided(y.data(), {4, 8}, {4, 1});
  EXPECT_TRUE(contains(error_of([&] { softmax(in, rowsOverlap, cpu()); }), "writes elements more than once"));
  Pointwise pw;
  pw.output(rowsOverlap, pw.input(in) + 1);
  EXPECT_TRUE(contains(error_of([&] { pw.run(cpu()); }), "writes elements more than once"));
  // Interleaved but disjoint (columns step 2 inside rows of 16): accepted.
  std::vector<float> wide(64, NAN);
  EXPECT_NO_THROW(softmax(in, strided(wide.data(), {4, 8}, {16, 2}), cpu()));
  EXPECT_FALSE(std::isnan(wide[2]));
  // A transposed output is no overlap.
  EXPECT_NO_THROW(softmax(in, strided(y.data(), {4, 8}, {1, 4}), cpu()));
}

TEST(OpsEdgeCases, NormalizationsTakeOnlyTheirFloatTypes) {
  std::vector<double> y(8);
  HostTensor x = HostTensor::random(DType::f32, {2, 4}, 3);
  EXPECT_TRUE(contains(error_of([&] { softmax(x.view(), strided(y.data(), {2, 4}, {}, DType::f64), cpu()); }),
                       "must be f32, f16 or bf16"));
}

TEST(OpsEdgeCases, DeepExpressionsAreRefusedWithAReason) {
  std::vector<float> x(4, 1.0f), y(4);
  DLTensor in{}, out{};
  int64_t shape[1] = {4};
  for (DLTensor *t : {&in, &out}) {
    t->device = {kDLCPU, 0};
    t->ndim = 1;
    t->dtype = {kDLFloat, 32, 1};
    t->shape = shape;
  }
  in.data = x.data();
  out.data = y.data();
  const DLTensor *ins[1] = {&in};
  const DLTensor *outs[1] = {&out};
  auto run = [&](const std::string &text) {
    return kiln_pointwise(text.c_str(), ins, 1, outs, 1, nullptr);
  };
  const std::string parens = std::string(5000, '(') + "in0" + std::string(5000, ')');
  std::string absolutes = "in0";
  for (int i = 0; i < 5000; ++i)
    absolutes = "abs(" + absolutes + ")";
  std::string sum = "in0";
  for (int i = 0; i < 10000; ++i)
    sum += "+in0";
  for (const std::string &text : {parens, absolutes, std::string(10000, '-') + "in0", sum, std::string(100000, '(')}) {
    EXPECT_EQ(run(text), KILN_ERROR_FAILED);
    EXPECT_TRUE(contains(kiln_ops_last_error(), "deeper than")) << kiln_ops_last_error();
    EXPECT_LT(std::string(kiln_ops_last_error()).size(), 400u) << "the message quotes the text whole";
  }
  // An input number past any count: a reason, not an exception of the parser's.
  EXPECT_EQ(run("in99999999999999999999 + 1"), KILN_ERROR_FAILED);
  EXPECT_TRUE(contains(kiln_ops_last_error(), "names no input")) << kiln_ops_last_error();
  // Built in C++ rather than parsed: the same bound.
  Expr e = input(0, DType::f32);
  EXPECT_TRUE(contains(error_of([&] {
                         for (int i = 0; i < 10000; ++i)
                           e = e + 1;
                       }),
                       "deeper than"));
  // Deep enough for any honest expression: 100 levels run.
  std::string nested = "in0";
  for (int i = 0; i < 100; ++i)
    nested = "(" + nested + " + 1)";
  ASSERT_EQ(run(nested), KILN_OK) << kiln_ops_last_error();
  EXPECT_FLOAT_EQ(y[0], 101.0f);
}

// Offsets past 2^31 elements, over a reservation of address space whose
// untouched pages cost nothing: the index arithmetic must be 64-bit (the
// interpreter wraps i32 as the GPU does, so 32-bit offsets would read the
// wrong element or fail the bounds check).
class LargeOffsets : public ::testing::Test {
protected:
  static constexpr int64_t kRowStride = (int64_t(1) << 31) + 64; // elements (f32)
  static constexpr size_t kBytes = size_t(4) * (3 * kRowStride + 4096);

  void SetUp() override {
    memory_ = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory_ == MAP_FAILED)
      GTEST_SKIP() << "cannot reserve " << kBytes << " bytes of address space";
  }
  void TearDown() override {
    if (memory_ != MAP_FAILED)
      munmap(memory_, kBytes);
  }
  float *row(int r) { return static_cast<float *>(memory_) + r * kRowStride; }
  /// Rows of 8 floats, kRowStride apart: a [4, 8] view spanning 25 GiB.
  TensorView rows(int first = 0) {
    return strided(row(first), {4, 8}, {kRowStride, 1});
  }
  void fill() {
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 8; ++j)
        row(r)[j] = static_cast<float>(r * 8 + j) * 0.25f - 3.0f;
  }
  void *memory_ = MAP_FAILED;
};

TEST_F(LargeOffsets, EveryOpIndexesPast2To31) {
  fill();
  std::vector<float> ref(32);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 8; ++j)
      ref[r * 8 + j] = row(r)[j];
  // Pointwise, into a contiguous output.
  std::vector<float> out(32, NAN);
  Pointwise pw;
  pw.output(strided(out.data(), {4, 8}, {}), pw.input(rows()) * 2);
  pw.run(cpu());
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(out[i], 2 * ref[i]);
  // A reduction along the long stride (dim 0) and along rows (dim 1).
  std::vector<float> sums0(8, NAN), sums1(4, NAN);
  reduce(Reduce::sum, rows(), 0, strided(sums0.data(), {8}, {}), cpu());
  reduce(Reduce::sum, rows(), 1, strided(sums1.data(), {4}, {}), cpu());
  for (int j = 0; j < 8; ++j)
    EXPECT_FLOAT_EQ(sums0[j], ref[j] + ref[8 + j] + ref[16 + j] + ref[24 + j]);
  for (int r = 0; r < 4; ++r) {
    double s = 0;
    for (int j = 0; j < 8; ++j)
      s += ref[r * 8 + j];
    EXPECT_FLOAT_EQ(sums1[r], static_cast<float>(s));
  }
  // Softmax, layer norm and RMS norm writing back into the far rows.
  softmax(rows(), rows(), cpu());
  for (int r = 0; r < 4; ++r) {
    double total = 0, most = -1e30;
    for (int j = 0; j < 8; ++j)
      most = std::max<double>(most, ref[r * 8 + j]);
    for (int j = 0; j < 8; ++j)
      total += std::exp(ref[r * 8 + j] - most);
    for (int j = 0; j < 8; ++j)
      EXPECT_NEAR(row(r)[j], std::exp(ref[r * 8 + j] - most) / total, 1e-6);
  }
  fill();
  std::vector<float> mean(4, NAN), rstd(4, NAN);
  layer_norm(rows(), {}, {}, 1e-5, rows(), strided(mean.data(), {4}, {}), strided(rstd.data(), {4}, {}), cpu());
  for (int r = 0; r < 4; ++r) {
    double m = 0;
    for (int j = 0; j < 8; ++j)
      m += ref[r * 8 + j] / 8.0;
    EXPECT_NEAR(mean[r], m, 1e-5);
  }
  fill();
  rms_norm(rows(), {}, 1e-5, rows(), {}, cpu());
  for (int r = 0; r < 4; ++r) {
    double ms = 0;
    for (int j = 0; j < 8; ++j)
      ms += ref[r * 8 + j] * ref[r * 8 + j] / 8.0;
    for (int j = 0; j < 8; ++j)
      EXPECT_NEAR(row(r)[j], ref[r * 8 + j] / std::sqrt(ms + 1e-5), 1e-5);
  }
}

TEST_F(LargeOffsets, MatmulOperandsAndOutputPast2To31) {
  fill();
  // a: [4, 8] rows 2^31 apart; b: the same memory's first 8x8 block seen as
  // [8, 4] columns of the far rows; out: [4, 4] in the far rows' tails.
  HostTensor b = HostTensor::random(DType::f32, {8, 4}, 4);
  MatmulArgs m;
  m.a = rows();
  m.b = b.view();
  m.out = strided(row(0) + 16, {4, 4}, {kRowStride, 1});
  matmul(m, cpu());
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 8; ++k)
        s += static_cast<double>(row(i)[k]) * b.flat(k * 4 + j);
      EXPECT_NEAR(row(i)[16 + j], s, 1e-4) << i << "," << j;
    }
}

TEST(OpsEdgeCases, MatmulThroughDescriptorsWithOffsetsPast2To31) {
  // The copy engine's coordinates stay i32 when offsets need i64: rows of a
  // 2^26 elements apart make a 32-row operand span past 2^31 elements.
  constexpr int64_t M = 32, K = 64, N = 32, rowStride = (int64_t(1) << 26) + 64;
  const size_t bytes = size_t(2) * (M * rowStride + K);
  void *memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED)
    GTEST_SKIP() << "cannot reserve " << bytes << " bytes of address space";
  auto *a = static_cast<uint16_t *>(memory);
  HostTensor dense = HostTensor::random(DType::bf16, {M, K}, 21);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      a[i * rowStride + k] = static_cast<uint16_t>(encode_float(DType::bf16, dense.flat(i * K + k)));
  HostTensor b = HostTensor::random(DType::bf16, {K, N}, 22);
  HostTensor out = HostTensor::poisoned(DType::f32, {M, N});
  MatmulArgs m;
  m.a = strided(memory, {M, K}, {rowStride, 1}, DType::bf16);
  m.b = b.view();
  m.out = out.view();
  matmul(m, cpu(), Config{{"DESCRIPTORS", 1}});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k)
        want += dense.flat(i * K + k) * b.flat(k * N + j);
      EXPECT_NEAR(out.flat(i * N + j), want, 1e-3) << i << "," << j;
    }
  munmap(memory, bytes);
}
