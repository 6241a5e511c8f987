// The fused pointwise op on the interpreter: expressions, broadcasting,
// strided and non-contiguous views, several outputs, dtypes, and the errors
// of bad arguments; every element against a double-precision reference.
#include "tests/common/OpsTestSupport.h"

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::HostTensor;

namespace {
Stream cpu() { return Stream(Device::interp()); }
} // namespace

TEST(OpsPointwise, FusedGeluWithBroadcastWeightAndBias) {
  for (auto [M, N] : std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {17, 100}, {64, 256}, {1, 1000}}) {
    HostTensor x = HostTensor::random(DType::f32, {M, N}, 1), w = HostTensor::random(DType::f32, {N}, 2),
               b = HostTensor::random(DType::f32, {N}, 3), y = HostTensor::poisoned(DType::f32, {M, N});
    Pointwise pw;
    Expr xe = pw.input(x.view()), we = pw.input(w.view()), be = pw.input(b.view());
    pw.output(y.view(), gelu(xe * we + be));
    pw.run(cpu());
    y.expect_near([&](const std::vector<int64_t> &i) {
      double v = x.at(i) * w.at({i[1]}) + b.at({i[1]});
      return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    }, 1e-6);
  }
}

TEST(OpsPointwise, HalfTypesComputeInF32AndRoundOnce) {
  for (DType t : {DType::f16, DType::bf16}) {
    HostTensor x = HostTensor::random(t, {33, 65}, 4), y = HostTensor::random(t, {65}, 5);
    HostTensor out = HostTensor::poisoned(t, {33, 65});
    Pointwise pw;
    Expr a = pw.input(x.view()), c = pw.input(y.view());
    pw.output(out.view(), silu(a) * c + 1.5);
    pw.run(cpu());
    out.expect_rounded([&](const std::vector<int64_t> &i) {
      double a = x.at(i), s = a / (1 + std::exp(-a));
      return static_cast<double>(std::fma(static_cast<float>(s), static_cast<float>(y.at({i[1]})), 1.5f));
    });
  }
}

TEST(OpsPointwise, AProductPlusAValueRoundsOnce) {
  // a * b + c on floats is one fma: with a = b = 1 + 2^-12 and c = -(1 +
  // 2^-11) the product's last bit (2^-24) survives, which rounding the
  // product first would lose (giving 0). Either operand order.
  HostTensor a = HostTensor::poisoned(DType::f32, {4}), c = HostTensor::poisoned(DType::f32, {4});
  for (int64_t i = 0; i < 4; ++i) {
    a.set_flat(i, 1 + std::ldexp(1.0, -12));
    c.set_flat(i, -(1 + std::ldexp(1.0, -11)));
  }
  HostTensor left = HostTensor::poisoned(DType::f32, {4}), right = HostTensor::poisoned(DType::f32, {4});
  Pointwise pw;
  Expr x = pw.input(a.view()), z = pw.input(c.view());
  pw.output(left.view(), x * x + z);
  pw.output(right.view(), z + x * x);
  pw.run(cpu());
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(left.at({i}), std::ldexp(1.0, -24));
    EXPECT_EQ(right.at({i}), std::ldexp(1.0, -24));
  }
}

TEST(OpsPointwise, StridedAndTransposedViewsAndSeveralOutputs) {
  // x is a transposed (column-major) view; y a slice with a row stride; two
  // outputs, one of them strided too.
  HostTensor base = HostTensor::random(DType::f32, {40, 30}, 6);
  TensorView xt = base.view();
  xt.shape = {30, 40};
  xt.strides = {1, 30};
  HostTensor wide = HostTensor::random(DType::f32, {30, 80}, 7);
  TensorView ys = wide.view();
  ys.shape = {30, 40};
  ys.strides = {80, 2}; // every other column
  HostTensor out0 = HostTensor::poisoned(DType::f32, {30, 40});
  HostTensor out1 = HostTensor::poisoned(DType::f32, {30, 100});
  TensorView o1 = out1.view();
  o1.shape = {30, 40};
  o1.strides = {100, 1};
  Pointwise pw;
  Expr a = pw.input(xt), b = pw.input(ys);
  pw.output(out0.view(), where(a > b, a - b, exp(a) * 0.25));
  pw.output(o1, maximum(a, b) + minimum(a, b));
  pw.run(cpu());
  auto X = [&](int64_t i, int64_t j) { return base.at({j, i}); };
  auto Y = [&](int64_t i, int64_t j) { return wide.at({i, 2 * j}); };
  out0.expect_near([&](const std::vector<int64_t> &i) {
    double a = X(i[0], i[1]), b = Y(i[0], i[1]);
    return a > b ? a - b : std::exp(a) * 0.25;
  }, 1e-6);
  for (int64_t i = 0; i < 30; ++i)
    for (int64_t j = 0; j < 100; ++j) {
      double got = out1.at({i, j});
      if (j < 40)
        EXPECT_NEAR(got, X(i, j) + Y(i, j), 1e-6) << i << "," << j;
      else
        EXPECT_TRUE(std::isnan(got)) << "wrote outside the view at " << i << "," << j;
    }
}

TEST(OpsPointwise, HigherRankBroadcastsCollapseAndScalars) {
  // [2, 3, 4, 5] with inputs of shapes [3, 1, 5], [1], [2, 1, 4, 1].
  HostTensor x = HostTensor::random(DType::f32, {2, 3, 4, 5}, 8), a = HostTensor::random(DType::f32, {3, 1, 5}, 9);
  HostTensor s = HostTensor::random(DType::f32, {1}, 10), c = HostTensor::random(DType::f32, {2, 1, 4, 1}, 11);
  HostTensor out = HostTensor::poisoned(DType::f32, {2, 3, 4, 5});
  Pointwise pw;
  Expr xe = pw.input(x.view()), ae = pw.input(a.view()), se = pw.input(s.view()), ce = pw.input(c.view());
  pw.output(out.view(), (xe + ae) * se - ce / 2);
  pw.run(cpu());
  out.expect_near([&](const std::vector<int64_t> &i) {
    return (x.at(i) + a.at({i[1], 0, i[3]})) * s.at({0}) - c.at({i[0], 0, i[2], 0}) / 2;
  }, 1e-6);
}

TEST(OpsPointwise, IntegerAndConversionExpressions) {
  HostTensor x = HostTensor::random(DType::i32, {100}, 12), y = HostTensor::random(DType::f32, {100}, 13);
  HostTensor out = HostTensor::poisoned(DType::f16, {100}), flag = HostTensor::poisoned(DType::i8, {100});
  Pointwise pw;
  Expr a = pw.input(x.view()), b = pw.input(y.view());
  pw.output(out.view(), cast(a, DType::f32) * b);
  pw.output(flag.view(), cast((a > 0) & (b < 0.5), DType::i8));
  pw.run(cpu());
  out.expect_rounded([&](const std::vector<int64_t> &i) {
    return static_cast<double>(static_cast<float>(x.at(i)) * static_cast<float>(y.at(i)));
  });
  flag.expect_near([&](const std::vector<int64_t> &i) { return x.at(i) > 0 && y.at(i) < 0.5 ? 1.0 : 0.0; }, 0);
}

TEST(OpsPointwise, ParsedExpressionsMatchBuiltOnes) {
  Expr built = gelu(input(0, DType::f16) * input(1, DType::f32) + 2) / where(input(0, DType::f16) > 0, 1, -1);
  Expr parsed = parse_expr("gelu(in0 * in1 + 2) / where(in0 > 0, 1, -1)", {DType::f16, DType::f32});
  EXPECT_EQ(built.key(), parsed.key());
  EXPECT_EQ(parse_expr("max(in0, 0.5) - -in0", {DType::f32}).key(), (maximum(input(0, DType::f32), 0.5) - -input(0, DType::f32)).key());
  EXPECT_EQ(parse_expr("cast(in0, f16)", {DType::f32}).dtype(), DType::f16);
  auto error = [](const std::string &text) {
    try {
      parse_expr(text, {DType::f32});
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("in0 +").find("at 6: expected a value"), std::string::npos) << error("in0 +");
  EXPECT_NE(error("in1 * 2").find("'in1' names no input (there are 1)"), std::string::npos) << error("in1 * 2");
  EXPECT_NE(error("frob(in0)").find("unknown function 'frob'"), std::string::npos);
  EXPECT_NE(error("cast(in0, f17)").find("'f17' is not a dtype"), std::string::npos);
  EXPECT_NE(error("(in0 + 1").find("expected ')'"), std::string::npos);
}

TEST(OpsPointwise, BadArgumentsAreClearErrors) {
  HostTensor x = HostTensor::random(DType::f32, {4, 5}, 14), y = HostTensor::random(DType::f32, {3}, 15);
  HostTensor out = HostTensor::poisoned(DType::f32, {4, 5});
  auto message = kiln::testing::error_of;
  EXPECT_NE(message([&] {
              Pointwise pw;
              Expr a = pw.input(x.view()), b = pw.input(y.view());
              pw.output(out.view(), a + b);
              pw.run(cpu());
            }).find("input 1 (f32[3]) does not broadcast to [4, 5]"),
            std::string::npos);
  EXPECT_NE(message([&] {
              Pointwise pw;
              TensorView null = x.view();
              null.address = 0;
              pw.input(null);
            }).find("input 0 (f32[4, 5]) has no memory"),
            std::string::npos);
  EXPECT_NE(message([&] {
              Pointwise pw;
              Expr a = pw.input(x.view());
              TensorView bad = out.view();
              bad.strides = {0, 1};
              pw.output(bad, a);
              pw.run(cpu());
            }).find("writes elements more than once"),
            std::string::npos);
  EXPECT_NE(message([&] {
              Pointwise pw;
              Expr a = pw.input(x.view());
              TensorView gpu = out.view();
              gpu.device = DeviceKind::cuda;
              pw.output(gpu, a);
              pw.run(cpu());
            }).find("is in GPU memory but the stream runs on the CPU interpreter"),
            std::string::npos);
  EXPECT_NE(message([&] { (input(0, DType::i32) * 0.5); }).find("cast it to a float first"), std::string::npos);
}
