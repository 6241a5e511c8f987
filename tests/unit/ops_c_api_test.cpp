// The ops library's C ABI: results through DLTensors on the interpreter,
// and every kind of bad input returning a status and a message (never a
// crash or a silent wrong answer).
#include <kiln/numeric.h>
#include <kiln_ops.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

struct Tensor {
  std::vector<float> data;
  std::vector<int64_t> shape;
  DLTensor dl{};
  Tensor(std::vector<int64_t> s, float fill) : shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    data.assign(n, fill);
    dl.data = data.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int>(shape.size());
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = shape.data();
  }
};

std::string error() { return kiln_ops_last_error(); }

} // namespace

TEST(OpsCApi, VersionAndResults) {
  EXPECT_EQ(kiln_ops_abi_version(), KILN_OPS_ABI_VERSION);
  EXPECT_NE(std::string(kiln_ops_version()).find("0.1.0"), std::string::npos);
  Tensor x({3, 5}, 0), y({3, 5}, NAN), sums({3}, NAN);
  for (size_t i = 0; i < x.data.size(); ++i)
    x.data[i] = static_cast<float>(i % 7) - 2.5f;
  ASSERT_EQ(kiln_softmax(&x.dl, &y.dl, nullptr), KILN_OK) << error();
  EXPECT_EQ(error(), "");
  for (int r = 0; r < 3; ++r) {
    double total = 0;
    for (int j = 0; j < 5; ++j)
      total += y.data[r * 5 + j];
    EXPECT_NEAR(total, 1.0, 1e-6);
  }
  ASSERT_EQ(kiln_reduce(KILN_REDUCE_SUM, &x.dl, 1, &sums.dl, 1, nullptr), KILN_OK) << error();
  for (int r = 0; r < 3; ++r) {
    double total = 0;
    for (int j = 0; j < 5; ++j)
      total += x.data[r * 5 + j];
    EXPECT_NEAR(sums.data[r], total, 1e-6);
  }
  // Two outputs from one pointwise call; a strided output (every other column).
  Tensor a({3, 5}, NAN), wide({3, 10}, NAN);
  int64_t strides[2] = {10, 2};
  wide.dl.shape = x.dl.shape;
  wide.dl.strides = strides;
  const DLTensor *in[1] = {&x.dl}, *out[2] = {&a.dl, &wide.dl};
  ASSERT_EQ(kiln_pointwise("in0 * 2; max(in0, 0)", in, 1, out, 2, nullptr), KILN_OK) << error();
  for (int i = 0; i < 15; ++i) {
    EXPECT_EQ(a.data[i], x.data[i] * 2);
    EXPECT_EQ(wide.data[(i / 5) * 10 + (i % 5) * 2], std::max(x.data[i], 0.0f));
    EXPECT_TRUE(std::isnan(wide.data[(i / 5) * 10 + (i % 5) * 2 + 1])) << "wrote between the strided elements";
  }
}

TEST(OpsCApi, MatmulWithBiasAndActivation) {
  Tensor a({3, 4}, 0), b({4, 5}, 0), bias({5}, 0), out({3, 5}, NAN);
  for (size_t i = 0; i < a.data.size(); ++i)
    a.data[i] = static_cast<float>(i % 5) - 2;
  for (size_t i = 0; i < b.data.size(); ++i)
    b.data[i] = static_cast<float>(i % 3) - 1;
  for (size_t i = 0; i < bias.data.size(); ++i)
    bias.data[i] = static_cast<float>(i) * 0.5f;
  ASSERT_EQ(kiln_matmul(&a.dl, &b.dl, &bias.dl, nullptr, 2.0, KILN_ACTIVATION_RELU, KILN_PRECISION_IEEE, &out.dl, nullptr), KILN_OK)
      << error();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k)
        s += a.data[i * 4 + k] * b.data[k * 5 + j];
      EXPECT_EQ(out.data[i * 5 + j], std::max(2 * s + bias.data[j], 0.0)) << i << "," << j;
    }
  EXPECT_EQ(kiln_matmul(&a.dl, &a.dl, nullptr, nullptr, 1.0, KILN_ACTIVATION_NONE, KILN_PRECISION_IEEE, &out.dl, nullptr), KILN_ERROR_FAILED);
  EXPECT_NE(error().find("shapes do not multiply"), std::string::npos) << error();
  EXPECT_EQ(kiln_matmul(&a.dl, &b.dl, nullptr, nullptr, 1.0, 9, KILN_PRECISION_IEEE, &out.dl, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("unknown activation 9"), std::string::npos) << error();
}

TEST(OpsCApi, ScaledMatmulOfFp8Operands) {
  // a [2, 32] e4m3fn (DLPack code 10), b the transpose of a [3, 32] e5m2
  // (code 12) tensor, scales of a's rows and of b's tensor: exact sums of
  // small integers.
  const int64_t M = 2, N = 3, K = 32;
  std::vector<uint8_t> a(M * K), b(N * K);
  for (int64_t i = 0; i < M * K; ++i)
    a[i] = static_cast<uint8_t>(kiln::encode_float(kiln::DType::f8e4m3, double(i % 5) - 2));
  for (int64_t i = 0; i < N * K; ++i)
    b[i] = static_cast<uint8_t>(kiln::encode_float(kiln::DType::f8e5m2, double(i % 3) - 1));
  std::vector<int64_t> aShape{M, K}, bShape{K, N}, bStrides{1, K};
  DLTensor ta{}, tb{};
  ta.data = a.data(), ta.device = {kDLCPU, 0}, ta.ndim = 2, ta.dtype = {10, 8, 1}, ta.shape = aShape.data();
  tb.data = b.data(), tb.device = {kDLCPU, 0}, tb.ndim = 2, tb.dtype = {12, 8, 1}, tb.shape = bShape.data();
  tb.strides = bStrides.data();
  Tensor rows({M}, 0), one({1}, 0.5f), out({M, N}, NAN);
  rows.data = {2.0f, -1.0f};
  ASSERT_EQ(kiln_matmul_scaled(&ta, &tb, &rows.dl, &one.dl, nullptr, nullptr, 1.0, KILN_ACTIVATION_NONE, &out.dl,
                               nullptr),
            KILN_OK)
      << error();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += (double((i * K + k) % 5) - 2) * (double((j * K + k) % 3) - 1);
      EXPECT_EQ(out.data[i * N + j], s * rows.data[i] * 0.5) << i << "," << j;
    }
  // b N-major: refused with the reason.
  std::vector<int64_t> rowMajor{N, 1};
  tb.strides = rowMajor.data();
  EXPECT_EQ(kiln_matmul_scaled(&ta, &tb, nullptr, nullptr, nullptr, nullptr, 1.0, KILN_ACTIVATION_NONE, &out.dl,
                               nullptr),
            KILN_ERROR_FAILED);
  EXPECT_NE(error().find("K-major"), std::string::npos) << error();
  // Other fp8 encodings (e4m3fnuz, code 11) are not taken.
  ta.dtype = {11, 8, 1};
  EXPECT_EQ(kiln_matmul_scaled(&ta, &tb, nullptr, nullptr, nullptr, nullptr, 1.0, KILN_ACTIVATION_NONE, &out.dl,
                               nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
}

TEST(OpsCApi, BlockScaledMatmulOfFp8Operands) {
  // Block scales (ABI 6): a [2, 256] e4m3fn with scale_a [2, 2] (a row's
  // for each 128 elements of K), b the transpose of a [3, 256] e4m3fn
  // tensor with scale_b [2, 1] (one block of columns), the transpose of a
  // [1, 2] tensor as it comes with b's. Powers of two: exact sums.
  const int64_t M = 2, N = 3, K = 256;
  std::vector<uint8_t> a(M * K), b(N * K);
  for (int64_t i = 0; i < M * K; ++i)
    a[i] = static_cast<uint8_t>(kiln::encode_float(kiln::DType::f8e4m3, double(i % 5) - 2));
  for (int64_t i = 0; i < N * K; ++i)
    b[i] = static_cast<uint8_t>(kiln::encode_float(kiln::DType::f8e4m3, double(i % 3) - 1));
  std::vector<int64_t> aShape{M, K}, bShape{K, N}, bStrides{1, K};
  DLTensor ta{}, tb{};
  ta.data = a.data(), ta.device = {kDLCPU, 0}, ta.ndim = 2, ta.dtype = {10, 8, 1}, ta.shape = aShape.data();
  tb.data = b.data(), tb.device = {kDLCPU, 0}, tb.ndim = 2, tb.dtype = {10, 8, 1}, tb.shape = bShape.data();
  tb.strides = bStrides.data();
  Tensor sa({M, 2}, 0), sbT({1, 2}, 0), out({M, N}, NAN);
  sa.data = {2.0f, 0.5f, -1.0f, 4.0f};
  sbT.data = {0.25f, 8.0f};
  std::vector<int64_t> sbShape{2, 1}, sbStrides{1, 2};
  DLTensor sb = sbT.dl;
  sb.shape = sbShape.data(), sb.strides = sbStrides.data();
  ASSERT_EQ(kiln_matmul_scaled(&ta, &tb, &sa.dl, &sb, nullptr, nullptr, 1.0, KILN_ACTIVATION_NONE, &out.dl, nullptr),
            KILN_OK)
      << error();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += (double((i * K + k) % 5) - 2) * (double((j * K + k) % 3) - 1) * sa.data[i * 2 + k / 128] *
             sbT.data[k / 128];
      EXPECT_EQ(out.data[i * N + j], s) << i << "," << j;
    }
  // One side's block scales alone: refused with the reason.
  Tensor one({1}, 1.0f);
  EXPECT_EQ(kiln_matmul_scaled(&ta, &tb, &sa.dl, &one.dl, nullptr, nullptr, 1.0, KILN_ACTIVATION_NONE, &out.dl, nullptr),
            KILN_ERROR_FAILED);
  EXPECT_NE(error().find("both scales blockwise"), std::string::npos) << error();
}

TEST(OpsCApi, GroupedMatmulOfRaggedGroups) {
  // a [6, 4] in groups of 2 and 4 rows (offsets int32 [2] = {2, 6}), b [2,
  // 4, 3], f32 at full precision: exact sums of small integers, each row
  // times its group's matrix; alpha 2.
  const int64_t M = 6, K = 4, N = 3, G = 2;
  Tensor a({M, K}, 0), b({G, K, N}, 0), out({M, N}, NAN);
  for (size_t i = 0; i < a.data.size(); ++i)
    a.data[i] = static_cast<float>(int(i % 7) - 3);
  for (size_t i = 0; i < b.data.size(); ++i)
    b.data[i] = static_cast<float>(int(i % 5) - 2);
  std::vector<int32_t> ends{2, 6};
  std::vector<int64_t> endsShape{G};
  DLTensor offsets{};
  offsets.data = ends.data(), offsets.device = {kDLCPU, 0}, offsets.ndim = 1, offsets.dtype = {kDLInt, 32, 1};
  offsets.shape = endsShape.data();
  ASSERT_EQ(kiln_grouped_matmul(&a.dl, &b.dl, &offsets, nullptr, nullptr, 2.0, KILN_ACTIVATION_NONE,
                                KILN_PRECISION_IEEE, &out.dl, nullptr),
            KILN_OK)
      << error();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const int64_t g = i < 2 ? 0 : 1;
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += a.data[i * K + k] * b.data[(g * K + k) * N + j];
      EXPECT_EQ(out.data[i * N + j], 2 * s) << i << "," << j;
    }
  // Offsets of another dtype, an unknown precision: refused with reasons.
  offsets.dtype = {kDLInt, 64, 1};
  EXPECT_EQ(kiln_grouped_matmul(&a.dl, &b.dl, &offsets, nullptr, nullptr, 1.0, KILN_ACTIVATION_NONE,
                                KILN_PRECISION_IEEE, &out.dl, nullptr),
            KILN_ERROR_FAILED);
  EXPECT_NE(error().find("offsets must be int32"), std::string::npos) << error();
  offsets.dtype = {kDLInt, 32, 1};
  EXPECT_EQ(kiln_grouped_matmul(&a.dl, &b.dl, &offsets, nullptr, nullptr, 1.0, KILN_ACTIVATION_NONE, 7, &out.dl,
                                nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
}

TEST(OpsCApi, MatmulF32PrecisionChoosesTf32) {
  // Low bits that tf32 (10 mantissa bits, ties away) drops or rounds up:
  // the tf32 product is the sum of rounded products; ieee keeps them.
  Tensor a({2, 4}, 0), b({4, 3}, 0), out({2, 3}, NAN);
  for (size_t i = 0; i < a.data.size(); ++i)
    a.data[i] = 1.0f + std::ldexp(1.0f, -12) * static_cast<float>(i % 5);
  for (size_t i = 0; i < b.data.size(); ++i)
    b.data[i] = 1.0f - std::ldexp(1.0f, -13) * static_cast<float>(i % 3);
  auto product = [&](bool tf32, int i, int j) {
    double s = 0;
    for (int k = 0; k < 4; ++k) {
      float x = a.data[i * 4 + k], y = b.data[k * 3 + j];
      s += tf32 ? double(kiln::round_to_tf32(x)) * kiln::round_to_tf32(y) : double(x) * y;
    }
    return s;
  };
  for (int precision : {KILN_PRECISION_TF32, KILN_PRECISION_IEEE}) {
    ASSERT_EQ(kiln_matmul(&a.dl, &b.dl, nullptr, nullptr, 1.0, KILN_ACTIVATION_NONE, precision, &out.dl, nullptr),
              KILN_OK)
        << error();
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        EXPECT_NEAR(out.data[i * 3 + j], product(precision == KILN_PRECISION_TF32, i, j), 1e-6)
            << "precision " << precision << " at " << i << "," << j;
  }
  EXPECT_NE(product(true, 1, 1), product(false, 1, 1)); // the case tells them apart
  EXPECT_EQ(kiln_matmul(&a.dl, &b.dl, nullptr, nullptr, 1.0, KILN_ACTIVATION_NONE, 7, &out.dl, nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("unknown precision 7"), std::string::npos) << error();
}

TEST(OpsCApi, BadInputsReturnStatusesAndReasons) {
  Tensor x({4, 8}, 1), y({4, 8}, 0), small({4}, 0);
  auto expect = [](int status, int code, const std::string &words) {
    EXPECT_EQ(status, code) << error();
    EXPECT_NE(error().find(words), std::string::npos) << "message: " << error();
  };
  expect(kiln_softmax(nullptr, &y.dl, nullptr), KILN_ERROR_INVALID_ARGUMENT, "x is NULL");
  Tensor nodata({4, 8}, 0);
  nodata.dl.data = nullptr;
  expect(kiln_softmax(&nodata.dl, &y.dl, nullptr), KILN_ERROR_INVALID_ARGUMENT, "x has no data");
  Tensor complex({4, 8}, 0);
  complex.dl.dtype = {5 /* kDLComplex */, 64, 1};
  expect(kiln_softmax(&complex.dl, &y.dl, nullptr), KILN_ERROR_INVALID_ARGUMENT, "x: DLPack dtype (code 5, bits 64)");
  Tensor lanes({4, 8}, 0);
  lanes.dl.dtype.lanes = 4;
  expect(kiln_softmax(&lanes.dl, &y.dl, nullptr), KILN_ERROR_INVALID_ARGUMENT, "vector dtypes (lanes 4)");
  Tensor vulkan({4, 8}, 0);
  vulkan.dl.device = {kDLVulkan, 0};
  expect(kiln_softmax(&vulkan.dl, &y.dl, nullptr), KILN_ERROR_INVALID_ARGUMENT, "x: device type 7 is not supported");
  Tensor gpu({4, 8}, 0);
  gpu.dl.device = {kDLCUDA, 0};
  expect(kiln_softmax(&x.dl, &gpu.dl, nullptr), KILN_ERROR_INVALID_ARGUMENT, "y is on another device");
  expect(kiln_softmax(&x.dl, &small.dl, nullptr), KILN_ERROR_FAILED, "softmax: y f32[4] must have x's shape f32[4, 8]");
  expect(kiln_reduce(42, &x.dl, 1, &small.dl, 1, nullptr), KILN_ERROR_INVALID_ARGUMENT, "unknown reduction 42");
  expect(kiln_reduce(KILN_REDUCE_SUM, &x.dl, 3, &small.dl, 1, nullptr), KILN_ERROR_FAILED, "dim 3 is out of range");
  const DLTensor *in[1] = {&x.dl}, *out[1] = {&y.dl};
  expect(kiln_pointwise("in0 + in3", in, 1, out, 1, nullptr), KILN_ERROR_FAILED, "'in3' names no input");
  expect(kiln_pointwise("in0; in0", in, 1, out, 1, nullptr), KILN_ERROR_INVALID_ARGUMENT, "2 expressions for 1 outputs");
  expect(kiln_pointwise("in0 *", in, 1, out, 1, nullptr), KILN_ERROR_FAILED, "expected a value");
  Tensor negative({4, 8}, 0);
  int64_t strides[2] = {-8, 1};
  negative.dl.strides = strides;
  expect(kiln_softmax(&negative.dl, &y.dl, nullptr), KILN_ERROR_FAILED, "negative stride");
  // A success clears the message.
  EXPECT_EQ(kiln_softmax(&x.dl, &y.dl, nullptr), KILN_OK);
  EXPECT_EQ(error(), "");
}

TEST(OpsCApi, AttentionBackwardOfACausalCall) {
  // bf16 q = k = 0 [1, 3, 1, 16]: every key a query sees weighs the same,
  // 1 / (i + 1) under the causal mask; with dout all ones dv_j = Σ_{i >= j}
  // 1 / (i + 1), and dq = dk = 0 (every product is with a zero).
  const int64_t S = 3, D = 16;
  std::vector<int64_t> shape{1, S, 1, D};
  const uint16_t one = static_cast<uint16_t>(kiln::encode_float(kiln::DType::bf16, 1.0));
  std::vector<uint16_t> zero(S * D, 0), v(S * D), out(S * D, 0xFFFF), dout(S * D, one);
  std::vector<uint16_t> dq(S * D, 0xFFFF), dk(S * D, 0xFFFF), dv(S * D, 0xFFFF);
  for (int64_t i = 0; i < S * D; ++i)
    v[i] = static_cast<uint16_t>(kiln::encode_float(kiln::DType::bf16, double(i % 5)));
  auto bf16 = [&](std::vector<uint16_t> &data) {
    DLTensor t{};
    t.data = data.data(), t.device = {kDLCPU, 0}, t.ndim = 4, t.dtype = {kDLBfloat, 16, 1}, t.shape = shape.data();
    return t;
  };
  DLTensor tq = bf16(zero), tv = bf16(v), tout = bf16(out), tdout = bf16(dout), tdq = bf16(dq), tdk = bf16(dk),
           tdv = bf16(dv);
  Tensor lse({1, 1, S}, NAN);
  kiln_attention_options options{sizeof(kiln_attention_options), KILN_ATTENTION_LAYOUT_BSHD,
                                 KILN_ATTENTION_MASK_CAUSAL_TOP_LEFT, 0.0};
  ASSERT_EQ(kiln_attention(&tq, &tq, &tv, &tout, &lse.dl, &options, nullptr), KILN_OK) << error();
  for (int deterministic : {0, 1}) {
    ASSERT_EQ(kiln_attention_backward(&tq, &tq, &tv, &tout, &lse.dl, &tdout, &tdq, &tdk, &tdv, &options, deterministic,
                                      nullptr),
              KILN_OK)
        << error();
    for (int64_t j = 0; j < S; ++j) {
      double want = 0;
      for (int64_t i = j; i < S; ++i)
        want += 1.0 / double(i + 1);
      for (int64_t d = 0; d < D; ++d) {
        EXPECT_NEAR(kiln::decode_float(kiln::DType::bf16, dv[j * D + d]), want, 1e-2) << j << "," << d;
        EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, dq[j * D + d]), 0.0) << j << "," << d;
        EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, dk[j * D + d]), 0.0) << j << "," << d;
      }
    }
  }
  // The forward's lse is required.
  EXPECT_EQ(kiln_attention_backward(&tq, &tq, &tv, &tout, nullptr, &tdout, &tdq, &tdk, &tdv, &options, 0, nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
}

TEST(OpsCApi, AttentionModifiersAsExpressions) {
  // bf16 q = k = 0 [1, 3, 1, 16]: every key a query sees weighs the same.
  // A document mask over doc = {0, 0, 1} (no other mask): rows 0 and 1 get
  // the mean of v's rows 0 and 1, row 2 its own; then a score modifier
  // "score + 5 * cast(kv_idx == 0, f32)" weighs key 0 by e^5 against 1.
  const int64_t S = 3, D = 16;
  std::vector<int64_t> shape{1, S, 1, D};
  std::vector<uint16_t> zero(S * D, 0), v(S * D), out(S * D, 0xFFFF);
  for (int64_t i = 0; i < S * D; ++i)
    v[i] = static_cast<uint16_t>(kiln::encode_float(kiln::DType::bf16, double(i / D * 2)));
  auto bf16 = [&](std::vector<uint16_t> &data) {
    DLTensor t{};
    t.data = data.data(), t.device = {kDLCPU, 0}, t.ndim = 4, t.dtype = {kDLBfloat, 16, 1}, t.shape = shape.data();
    return t;
  };
  DLTensor tq = bf16(zero), tv = bf16(v), tout = bf16(out);
  std::vector<int32_t> doc{0, 0, 1};
  std::vector<int64_t> docShape{3};
  DLTensor tdoc{};
  tdoc.data = doc.data(), tdoc.device = {kDLCPU, 0}, tdoc.ndim = 1, tdoc.dtype = {kDLInt, 32, 1}, tdoc.shape = docShape.data();
  const char *names[] = {"doc"};
  const DLTensor *tensors[] = {&tdoc};
  kiln_attention_options options{sizeof(kiln_attention_options)};
  options.mask_mod = "doc[q_idx] == doc[kv_idx]";
  options.num_tensors = 1, options.tensor_names = names, options.tensors = tensors;
  ASSERT_EQ(kiln_attention(&tq, &tq, &tv, &tout, nullptr, &options, nullptr), KILN_OK) << error();
  EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[0]), 1.0);
  EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[D]), 1.0);
  EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[2 * D]), 4.0);
  options.mask_mod = nullptr;
  options.score_mod = "score + 5 * cast(kv_idx == 0, f32)";
  ASSERT_EQ(kiln_attention(&tq, &tq, &tv, &tout, nullptr, &options, nullptr), KILN_OK) << error();
  const double w = std::exp(5.0), want = (0 * w + 2 + 4) / (w + 2);
  EXPECT_NEAR(kiln::decode_float(kiln::DType::bf16, out[0]), want, 1e-2);
  // A mistake in a text: its position, a failed call.
  options.score_mod = "score + bias[q_idx]";
  EXPECT_EQ(kiln_attention(&tq, &tq, &tv, &tout, nullptr, &options, nullptr), KILN_ERROR_FAILED);
  EXPECT_NE(error().find("'bias' names no value"), std::string::npos) << error();
}

TEST(OpsCApi, AttentionWithOptionsAndItsErrors) {
  // bf16 q, k, v [1, 3, 1, 16] (BSHD): q all zero, so every key weighs the
  // same and out is the mean of v's rows; the causal mask makes it the mean
  // of the rows up to each query's.
  const int64_t S = 3, D = 16;
  std::vector<int64_t> shape{1, S, 1, D};
  std::vector<uint16_t> q(S * D, 0), v(S * D), out(S * D, 0xFFFF);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t d = 0; d < D; ++d)
      v[s * D + d] = static_cast<uint16_t>(kiln::encode_float(kiln::DType::bf16, double(s * 2 + (d % 2))));
  auto bf16 = [&](std::vector<uint16_t> &data) {
    DLTensor t{};
    t.data = data.data();
    t.device = {kDLCPU, 0};
    t.ndim = 4;
    t.dtype = {kDLBfloat, 16, 1};
    t.shape = shape.data();
    return t;
  };
  DLTensor tq = bf16(q), tv = bf16(v), tout = bf16(out);
  Tensor lse({1, 1, S}, NAN);
  kiln_attention_options options{sizeof(kiln_attention_options), KILN_ATTENTION_LAYOUT_BSHD,
                                 KILN_ATTENTION_MASK_CAUSAL_TOP_LEFT, 0.0};
  ASSERT_EQ(kiln_attention(&tq, &tq, &tv, &tout, &lse.dl, &options, nullptr), KILN_OK) << error();
  for (int64_t s = 0; s < S; ++s) {
    EXPECT_NEAR(lse.data[s], std::log(double(s + 1)), 1e-6) << s;
    for (int64_t d = 0; d < D; ++d)
      EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[s * D + d]), double(s) + (d % 2)) << s << "," << d;
  }
  // A window of one key to the left: each query sees itself and the one
  // before, so out is the mean of those two rows of v.
  options.has_window = 1;
  options.window_left = 1;
  options.window_right = -1;
  ASSERT_EQ(kiln_attention(&tq, &tq, &tv, &tout, nullptr, &options, nullptr), KILN_OK) << error();
  for (int64_t s = 0; s < S; ++s)
    EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[s * D + 1]), s == 0 ? 1.0 : 2.0 * s) << s;
  // A packed batch: the same 3 tokens as sequences of 1 and 2, no mask:
  // each token's output is the mean of its own sequence's rows of v.
  std::vector<int64_t> packedShape{S, 1, D};
  for (DLTensor *t : {&tq, &tv, &tout}) {
    t->ndim = 3;
    t->shape = packedShape.data();
  }
  std::vector<int32_t> starts{0, 1, 3};
  std::vector<int64_t> startsShape{3};
  DLTensor cu{};
  cu.data = starts.data();
  cu.device = {kDLCPU, 0};
  cu.ndim = 1;
  cu.dtype = {kDLInt, 32, 1};
  cu.shape = startsShape.data();
  kiln_attention_options packed{sizeof(kiln_attention_options)};
  packed.cu_seqlens_q = packed.cu_seqlens_k = &cu;
  ASSERT_EQ(kiln_attention(&tq, &tq, &tv, &tout, nullptr, &packed, nullptr), KILN_OK) << error();
  EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[0 * D]), 0.0);
  EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[1 * D]), 3.0); // (2 + 4) / 2
  EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[2 * D]), 3.0);
  // A caller of ABI 3 (a struct without the paged fields) is read as one.
  packed.struct_size = offsetof(kiln_attention_options, block_table);
  ASSERT_EQ(kiln_attention(&tq, &tq, &tv, &tout, nullptr, &packed, nullptr), KILN_OK) << error();
  EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[1 * D]), 3.0);
  packed.struct_size = sizeof(kiln_attention_options);
  // A paged cache: v's 3 rows in pages of 2 keys, stored second page first
  // ([2 pages, 2 keys, 1 head, D]); one query of zeros sees all 3 keys and
  // gets their mean, in 2 runs merged.
  std::vector<uint16_t> pagesOfV(4 * D, 0), one(D, 0);
  for (int64_t s = 0; s < S; ++s)
    std::copy_n(v.begin() + s * D, D, pagesOfV.begin() + ((s < 2 ? 2 : 0) + s % 2) * D);
  std::vector<int64_t> pagedShape{2, 2, 1, D}, oneShape{1, 1, 1, D};
  DLTensor cache = bf16(pagesOfV), query = bf16(one), answer = bf16(out);
  cache.shape = pagedShape.data();
  query.shape = answer.shape = oneShape.data();
  std::vector<int32_t> table{1, 0}, keys{3};
  std::vector<int64_t> tableShape{1, 2}, keysShape{1};
  DLTensor tableView = cu, keysView = cu;
  tableView.data = table.data(), tableView.ndim = 2, tableView.shape = tableShape.data();
  keysView.data = keys.data(), keysView.shape = keysShape.data();
  kiln_attention_options paged{sizeof(kiln_attention_options)};
  paged.block_table = &tableView;
  paged.cache_seqlens = &keysView;
  paged.num_splits = 2;
  ASSERT_EQ(kiln_attention(&query, &query, &cache, &answer, nullptr, &paged, nullptr), KILN_ERROR_FAILED)
      << "k and v must be caches of one shape";
  std::vector<uint16_t> zeroKeys(4 * D, 0);
  DLTensor keysCache = bf16(zeroKeys);
  keysCache.shape = pagedShape.data();
  ASSERT_EQ(kiln_attention(&query, &keysCache, &cache, &answer, nullptr, &paged, nullptr), KILN_OK) << error();
  EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[0]), 2.0); // (0 + 2 + 4) / 3
  EXPECT_EQ(kiln::decode_float(kiln::DType::bf16, out[1]), 3.0);
  table[0] = 2;
  EXPECT_EQ(kiln_attention(&query, &keysCache, &cache, &answer, nullptr, &paged, nullptr), KILN_ERROR_FAILED);
  EXPECT_NE(error().find("block_table[0][0] = 2 is not one of the cache's 2 pages"), std::string::npos) << error();
  packed.cu_seqlens_k = nullptr;
  EXPECT_EQ(kiln_attention(&tq, &tq, &tv, &tout, nullptr, &packed, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("cu_seqlens_k is NULL"), std::string::npos) << error();
  for (DLTensor *t : {&tq, &tv, &tout}) {
    t->ndim = 4;
    t->shape = shape.data();
  }
  options.mask = 7;
  EXPECT_EQ(kiln_attention(&tq, &tq, &tv, &tout, nullptr, &options, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("unknown mask 7"), std::string::npos) << error();
  options.struct_size = 0;
  EXPECT_EQ(kiln_attention(&tq, &tq, &tv, &tout, nullptr, &options, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("struct_size"), std::string::npos) << error();
  Tensor f32({1, S, 1, D}, 0);
  EXPECT_EQ(kiln_attention(&f32.dl, &f32.dl, &f32.dl, &f32.dl, nullptr, nullptr, nullptr), KILN_ERROR_FAILED);
  EXPECT_NE(error().find("must be bf16 or f16"), std::string::npos) << error();
}
