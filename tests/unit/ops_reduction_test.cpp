// Reductions of the ops library on the interpreter: every op along the
// last, first and a middle dimension, half types accumulating in f32,
// prologues and epilogues, strided inputs, long rows split across programs,
// arg-ops with ties and NaN, and argument errors; against double-precision
// references.
#include "tests/common/OpsTestSupport.h"

#include <limits>

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::HostTensor;

namespace {

Stream cpu() { return Stream(Device::interp()); }

/// The double-precision reduction of `x` along `dim` at output coordinate
/// `at` (x's coordinates without `dim`).
double reference(Reduce op, const HostTensor &x, int dim, const std::vector<int64_t> &at, int correction = 1,
                 const std::function<double(double)> &prologue = [](double v) { return v; }) {
  std::vector<int64_t> c = at;
  c.insert(c.begin() + dim, 0);
  int64_t n = x.shape()[dim];
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) {
    c[dim] = i;
    v.push_back(prologue(x.at(c)));
  }
  double sum = 0;
  for (double e : v)
    sum += e;
  switch (op) {
  case Reduce::sum: return sum;
  case Reduce::mean: return sum / n;
  case Reduce::max: return *std::max_element(v.begin(), v.end());
  case Reduce::min: return *std::min_element(v.begin(), v.end());
  case Reduce::argmax:
  case Reduce::argmin: {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
      if (std::isnan(v[best]))
        break;
      if (std::isnan(v[i]) || (op == Reduce::argmax ? v[i] > v[best] : v[i] < v[best]))
        best = i;
    }
    return static_cast<double>(best);
  }
  case Reduce::var: {
    double mean = sum / n, m2 = 0;
    for (double e : v)
      m2 += (e - mean) * (e - mean);
    return m2 / (n - correction);
  }
  }
  return 0;
}

std::vector<int64_t> without(std::vector<int64_t> shape, int dim) {
  shape.erase(shape.begin() + dim);
  return shape;
}

} // namespace

TEST(OpsReduction, EveryOpAlongEveryKindOfDimension) {
  const std::vector<int64_t> shape{6, 37, 10};
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    HostTensor x = HostTensor::random(t, shape, 21);
    for (int dim : {0, 1, 2, -1})
      for (Reduce op : {Reduce::sum, Reduce::mean, Reduce::max, Reduce::min, Reduce::argmax, Reduce::argmin, Reduce::var}) {
        int d = dim < 0 ? dim + 3 : dim;
        DType out = op == Reduce::argmax || op == Reduce::argmin ? DType::i64 : DType::f32;
        HostTensor y = HostTensor::poisoned(out, without(shape, d));
        reduce(op, x.view(), dim, y.view(), cpu());
        SCOPED_TRACE(std::string(name(t)) + " " + name(op) + " dim " + std::to_string(dim));
        y.expect_near([&](const std::vector<int64_t> &at) { return reference(op, x, d, at); }, 1e-5);
      }
  }
}

TEST(OpsReduction, PrologueAndEpilogue) {
  // logsumexp(x * s) over rows, s broadcast per column; stored as f16.
  HostTensor x = HostTensor::random(DType::f32, {9, 300}, 22), s = HostTensor::random(DType::f32, {300}, 23);
  HostTensor y = HostTensor::poisoned(DType::f16, {9});
  Reduction r(Reduce::sum, 1);
  Expr xe = r.input(x.view()), se = r.input(s.view());
  r.reduce(exp(xe * se));
  r.output(y.view(), log(reduced(r.reduced_dtype())));
  r.run(cpu());
  y.expect_rounded([&](const std::vector<int64_t> &at) {
    double total = 0;
    for (int64_t j = 0; j < 300; ++j)
      total += std::exp(x.at({at[0], j}) * s.at({j}));
    return std::log(total);
  });
  // mean of squares, then sqrt: an RMS, with the length in the epilogue.
  HostTensor rms = HostTensor::poisoned(DType::f32, {9});
  Reduction q(Reduce::sum, -1);
  Expr v = q.input(x.view());
  q.reduce(v * v);
  q.output(rms.view(), sqrt(reduced(DType::f32) / cast(reduced_length(), DType::f32)));
  q.run(cpu());
  rms.expect_near([&](const std::vector<int64_t> &at) {
    return std::sqrt(reference(Reduce::mean, x, 1, at, 1, [](double e) { return e * e; }));
  }, 1e-5);
}

TEST(OpsReduction, KeepDimStridedInputsAndIntegers) {
  HostTensor base = HostTensor::random(DType::f32, {50, 20}, 24);
  TensorView xt = base.view(); // the transpose: [20, 50] with strides [1, 20]
  xt.shape = {20, 50};
  xt.strides = {1, 20};
  HostTensor y = HostTensor::poisoned(DType::f32, {20, 1});
  reduce(Reduce::sum, xt, 1, y.view(), cpu());
  y.expect_near([&](const std::vector<int64_t> &at) {
    double total = 0;
    for (int64_t j = 0; j < 50; ++j)
      total += base.at({j, at[0]});
    return total;
  }, 1e-5);
  HostTensor ints = HostTensor::random(DType::i32, {7, 33}, 25);
  HostTensor isum = HostTensor::poisoned(DType::i64, {7}), imax = HostTensor::poisoned(DType::i32, {33});
  reduce(Reduce::sum, ints.view(), 1, isum.view(), cpu());
  reduce(Reduce::max, ints.view(), 0, imax.view(), cpu());
  isum.expect_near([&](const std::vector<int64_t> &at) { return reference(Reduce::sum, ints, 1, at); }, 0);
  imax.expect_near([&](const std::vector<int64_t> &at) { return reference(Reduce::max, ints, 0, at); }, 0);
}

TEST(OpsReduction, LongRowsSplitAcrossProgramsAndCombine) {
  // One row of 100003 elements: R splits across programs (a workspace of
  // partial states), and a second kernel combines them.
  HostTensor x = HostTensor::random(DType::f32, {2, 100003}, 26, -1, 1);
  for (Reduce op : {Reduce::sum, Reduce::max, Reduce::argmin, Reduce::var}) {
    DType out = op == Reduce::argmin ? DType::i64 : DType::f32;
    HostTensor y = HostTensor::poisoned(out, {2});
    reduce(op, x.view(), 1, y.view(), cpu());
    SCOPED_TRACE(name(op));
    y.expect_near([&](const std::vector<int64_t> &at) { return reference(op, x, 1, at); }, 2e-5);
  }
  HostTensor column = HostTensor::random(DType::bf16, {70001, 3}, 27);
  HostTensor mean = HostTensor::poisoned(DType::f32, {3});
  reduce(Reduce::mean, column.view(), 0, mean.view(), cpu());
  mean.expect_near([&](const std::vector<int64_t> &at) { return reference(Reduce::mean, column, 0, at); }, 1e-5);
}

TEST(OpsReduction, ArgOpsTiesNanAndVarianceCorrection) {
  HostTensor x = HostTensor::random(DType::f32, {4, 9}, 28);
  for (int64_t j : {2, 5, 7}) // row 0: three equal maxima; the first wins
    x.set_flat(x.index({0, j}), 9.0);
  x.set_flat(x.index({1, 6}), std::numeric_limits<double>::quiet_NaN()); // row 1: a NaN wins
  x.set_flat(x.index({1, 8}), std::numeric_limits<double>::quiet_NaN());
  HostTensor am = HostTensor::poisoned(DType::i64, {4}), mx = HostTensor::poisoned(DType::f32, {4});
  reduce(Reduce::argmax, x.view(), 1, am.view(), cpu());
  reduce(Reduce::max, x.view(), 1, mx.view(), cpu());
  EXPECT_EQ(am.at({0}), 2);
  EXPECT_EQ(am.at({1}), 6);
  EXPECT_TRUE(std::isnan(mx.at({1})));
  am.expect_near([&](const std::vector<int64_t> &at) { return reference(Reduce::argmax, x, 1, at); }, 0);
  HostTensor v0 = HostTensor::poisoned(DType::f32, {9});
  reduce(Reduce::var, x.view(), 0, v0.view(), cpu(), /*correction=*/0);
  v0.expect_near([&](const std::vector<int64_t> &at) { return reference(Reduce::var, x, 0, at, 0); }, 1e-5);
}

TEST(OpsReduction, BadArgumentsAreClearErrors) {
  HostTensor x = HostTensor::random(DType::f32, {4, 5}, 29), ints = HostTensor::random(DType::i32, {4, 5}, 30);
  HostTensor y = HostTensor::poisoned(DType::f32, {4});
  auto message = kiln::testing::error_of;
  EXPECT_NE(message([&] { reduce(Reduce::sum, x.view(), 2, y.view(), cpu()); })
                .find("sum: dim 2 is out of range for 2 dimensions"),
            std::string::npos);
  EXPECT_NE(message([&] { reduce(Reduce::sum, x.view(), 0, y.view(), cpu()); })
                .find("must have the input's shape without dim 0"),
            std::string::npos);
  EXPECT_NE(message([&] { reduce(Reduce::mean, ints.view(), 1, y.view(), cpu()); })
                .find("mean of i32 values: cast them to a float dtype first"),
            std::string::npos);
  HostTensor empty = HostTensor::random(DType::f32, {4, 0}, 31);
  EXPECT_NE(message([&] { reduce(Reduce::max, empty.view(), 1, y.view(), cpu()); })
                .find("max: the reduced dimension is empty"),
            std::string::npos);
}
