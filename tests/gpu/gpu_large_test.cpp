// Tensors of more than 2^31 elements through every op on the GPU: the
// kernels must index with 64-bit offsets wherever an offset can pass 2^31.
// Too large for the interpreter (its tests prove the same arithmetic with
// large strides over reserved memory), so these check against host
// references on the elements around and past 2^31, every element where
// that is cheap, with outputs poisoned first. They need a GPU with about
// 16 GiB free.
#include "GpuTestSupport.h"

#include <kiln/ops/library.h>

#include <cmath>
#include <cstring>

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::compile_only;

namespace {

constexpr int64_t kPast31 = (int64_t(1) << 31) + 4096 + 17;

/// A value in [-2, 2) for element i, exact in bf16 (a multiple of 1/32).
float pattern(int64_t i, uint64_t salt) {
  uint64_t z = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + salt;
  z ^= z >> 29;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 32;
  return static_cast<float>(static_cast<int64_t>(z % 128) - 64) / 32.0f;
}

/// The bf16 bits of a float that bf16 holds exactly (pattern's values).
uint16_t exactBf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<uint16_t>(bits >> 16);
}
float fromBf16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

/// A bf16 tensor on the GPU filled with pattern(i, salt), or poisoned.
struct Bf16 {
  std::vector<int64_t> shape;
  int64_t count = 1;
  Buffer gpu;

  Bf16(std::vector<int64_t> s, uint64_t salt, bool poisoned = false) : shape(std::move(s)) {
    for (int64_t d : shape)
      count *= d;
    std::vector<uint16_t> host(static_cast<size_t>(count), 0xFFFF); // NaN: unwritten elements show
    if (!poisoned)
      for (int64_t i = 0; i < count; ++i)
        host[i] = exactBf16(pattern(i, salt));
    gpu = Buffer::allocate(Device::cuda(0), host.size() * 2);
    gpu.copy_from_host(host.data(), host.size() * 2);
  }
  TensorView view() const { return TensorView::of(gpu, DType::bf16, shape); }
  /// Elements [first, first + n) as floats.
  std::vector<float> fetched(int64_t first, int64_t n) const {
    std::vector<uint16_t> bits(static_cast<size_t>(n));
    gpu.copy_to_host(bits.data(), bits.size() * 2, static_cast<size_t>(first) * 2);
    std::vector<float> values(bits.size());
    for (size_t i = 0; i < bits.size(); ++i)
      values[i] = fromBf16(bits[i]);
    return values;
  }
};

std::vector<float> fetchedF32(const Buffer &buffer, int64_t count) {
  std::vector<float> values(static_cast<size_t>(count));
  buffer.copy_to_host(values.data(), values.size() * 4);
  return values;
}

Buffer poisonedF32(int64_t count) {
  std::vector<uint32_t> nan(static_cast<size_t>(count), 0xFFFFFFFFu);
  Buffer b = Buffer::allocate(Device::cuda(0), nan.size() * 4);
  b.copy_from_host(nan.data(), nan.size() * 4);
  return b;
}

bool skipped() { return compile_only() || !Device::cuda_available(); }

} // namespace

TEST(GpuLarge, PointwisePast2To31Elements) {
  if (skipped())
    GTEST_SKIP() << "needs a GPU (tensors of 4 GiB)";
  Bf16 x({kPast31}, 1), y({kPast31}, 0, true);
  Pointwise pw;
  pw.output(y.view(), pw.input(x.view()) * 2 + 1);
  Stream stream(Device::cuda(0));
  pw.run(stream);
  stream.synchronize();
  std::vector<float> got = y.fetched(0, kPast31);
  int64_t wrong = 0;
  for (int64_t i = 0; i < kPast31; ++i) // every element: 2x + 1 is exact in bf16
    wrong += got[i] != 2 * pattern(i, 1) + 1;
  EXPECT_EQ(wrong, 0);
}

TEST(GpuLarge, ReductionsAndNormalizationsPast2To31Elements) {
  if (skipped())
    GTEST_SKIP() << "needs a GPU (tensors of 4 GiB)";
  const int64_t rows = 32769, N = 65536; // 2^31 + 65536 elements, rows past the end
  Bf16 x({rows, N}, 2);
  Stream stream(Device::cuda(0));
  Buffer rowSums = poisonedF32(rows), columnSums = poisonedF32(N);
  reduce(Reduce::sum, x.view(), 1, TensorView::of(rowSums, DType::f32, {rows}), stream);
  reduce(Reduce::sum, x.view(), 0, TensorView::of(columnSums, DType::f32, {N}), stream);
  stream.synchronize();
  std::vector<double> wantRows(rows, 0), wantColumns(N, 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < N; ++c) {
      double v = pattern(r * N + c, 2);
      wantRows[r] += v;
      wantColumns[c] += v;
    }
  std::vector<float> gotRows = fetchedF32(rowSums, rows), gotColumns = fetchedF32(columnSums, N);
  for (int64_t r = 0; r < rows; ++r) // sums of multiples of 1/32: exact in f32 at these sizes
    ASSERT_EQ(gotRows[r], wantRows[r]) << "row " << r;
  for (int64_t c = 0; c < N; ++c)
    ASSERT_EQ(gotColumns[c], wantColumns[c]) << "column " << c;

  // The normalizations, checked on the first rows and the rows past 2^31.
  Bf16 sm({rows, N}, 0, true), ln({rows, N}, 0, true), rms({rows, N}, 0, true);
  Buffer mean = poisonedF32(rows), rstd = poisonedF32(rows);
  softmax(x.view(), sm.view(), stream);
  layer_norm(x.view(), {}, {}, 1e-5, ln.view(), TensorView::of(mean, DType::f32, {rows}),
             TensorView::of(rstd, DType::f32, {rows}), stream);
  rms_norm(x.view(), {}, 1e-5, rms.view(), {}, stream);
  stream.synchronize();
  std::vector<float> gotMean = fetchedF32(mean, rows);
  for (int64_t r : {int64_t(0), int64_t(1), rows / 2, rows - 2, rows - 1}) {
    std::vector<float> gotSm = sm.fetched(r * N, N), gotLn = ln.fetched(r * N, N), gotRms = rms.fetched(r * N, N);
    double most = -1e30, sum = 0, sumSquares = 0;
    for (int64_t c = 0; c < N; ++c) {
      double v = pattern(r * N + c, 2);
      most = std::max(most, v);
      sum += v;
      sumSquares += v * v;
    }
    double exps = 0;
    for (int64_t c = 0; c < N; ++c)
      exps += std::exp(pattern(r * N + c, 2) - most);
    double m = sum / N, var = sumSquares / N - m * m;
    EXPECT_NEAR(gotMean[r], m, 1e-5) << "row " << r;
    for (int64_t c = 0; c < N; ++c) {
      double v = pattern(r * N + c, 2);
      double softmaxWant = std::exp(v - most) / exps;
      ASSERT_NEAR(gotSm[c], softmaxWant, 1e-2 * softmaxWant + 1e-9) << "softmax row " << r << " col " << c;
      ASSERT_NEAR(gotLn[c], (v - m) / std::sqrt(var + 1e-5), 2e-2) << "layer norm row " << r << " col " << c;
      ASSERT_NEAR(gotRms[c], v / std::sqrt(sumSquares / N + 1e-5), 2e-2)
          << "rms norm row " << r << " col " << c;
    }
  }
}

TEST(GpuLarge, MatmulWithMTimesKPast2To31) {
  if (skipped())
    GTEST_SKIP() << "needs a GPU (tensors of 4 GiB)";
  const int64_t M = 65600, K = 32768, N = 64; // M * K = 2^31 + 2^21
  Bf16 a({M, K}, 3), b({K, N}, 4);
  Buffer out = poisonedF32(M * N);
  MatmulArgs m;
  m.a = a.view();
  m.b = b.view();
  m.out = TensorView::of(out, DType::f32, {M, N});
  Stream stream(Device::cuda(0));
  matmul(m, stream);
  stream.synchronize();
  std::vector<float> got = fetchedF32(out, M * N);
  int64_t unwritten = 0;
  for (float v : got)
    unwritten += std::isnan(v);
  EXPECT_EQ(unwritten, 0);
  // Rows before and past offset 2^31 of a (row 65536 starts there).
  for (int64_t i : {int64_t(0), int64_t(65535), int64_t(65536), int64_t(65537), M - 1})
    for (int64_t j = 0; j < N; ++j) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k)
        want += static_cast<double>(pattern(i * K + k, 3)) * pattern(k * N + j, 4);
      ASSERT_NEAR(got[i * N + j], want, 1e-3 * std::sqrt(double(K))) << "out[" << i << ", " << j << "]";
    }
}
