// Attention's backward pass on the interpreter: dq, dk and dv after the
// forward op, against double-precision gradients (themselves checked by
// finite differences of the forward), for every forward variant but a
// paged cache: masks, windows, soft-capping, a custom scale, grouped-query
// heads, both layouts, a masked head dimension, packed batches with empty
// and one-token sequences; atomic and deterministic dq; argument errors;
// the passes through ptxas for sm_90a.
#include "tests/common/AttentionGradients.h"

#include <kiln/ops/library.h>

#include "ops/lib/AttentionPlan.h"

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::AttentionGradients;
using kiln::testing::AttentionReference;
using kiln::testing::DenseAttention;
using kiln::testing::HostTensor;

namespace {

Stream cpu() { return Stream(Device::interp()); }

const Config kSmall{{"BLOCK_M", 16}, {"BLOCK_N", 16}, {"num_warps", 4}, {"num_stages", 2}};

/// A dense call's tensors, forward run, and gradients run.
struct DenseCase {
  DenseAttention p;
  DType dtype = DType::f16;
  bool deterministic = false;
  Config config = kSmall;

  void check(double tolerance) const {
    HostTensor q = HostTensor::random(dtype, p.shape(p.seqQ, p.headsQ), 1, -1, 1);
    HostTensor k = HostTensor::random(dtype, p.shape(p.seqK, p.headsKV), 2, -1, 1);
    HostTensor v = HostTensor::random(dtype, p.shape(p.seqK, p.headsKV), 3, -1, 1);
    HostTensor dout = HostTensor::random(dtype, p.shape(p.seqQ, p.headsQ), 4, -1, 1);
    HostTensor out = HostTensor::poisoned(dtype, p.shape(p.seqQ, p.headsQ));
    HostTensor lse = HostTensor::poisoned(DType::f32, {p.batch, p.headsQ, p.seqQ});
    HostTensor dq = HostTensor::poisoned(dtype, q.shape()), dk = HostTensor::poisoned(dtype, k.shape());
    HostTensor dv = HostTensor::poisoned(dtype, v.shape());
    AttentionBackwardArgs b;
    AttentionArgs &a = b.forward;
    a.q = q.view(), a.k = k.view(), a.v = v.view(), a.out = out.view(), a.lse = lse.view();
    a.layout = p.layout, a.mask = p.mask, a.scale = p.scale, a.softcap = p.softcap;
    a.window_left = p.windowLeft, a.window_right = p.windowRight;
    attention(a, cpu(), kSmall);
    b.dout = dout.view(), b.dq = dq.view(), b.dk = dk.view(), b.dv = dv.view();
    b.deterministic = deterministic;
    attention_backward(b, cpu(), config);
    auto element = [&](const HostTensor &t) {
      return [&t, this](int64_t bb, int64_t s, int64_t h, int64_t d) { return t.at(p.at(bb, s, h, d)); };
    };
    AttentionGradients want(
        p, [this](int64_t) { return std::pair{p.seqQ, p.seqK}; }, element(q), element(k), element(v), element(dout));
    const bool bshd = p.layout == AttentionLayout::bshd;
    auto split = [bshd](const std::vector<int64_t> &x) {
      return std::tuple{x[0], bshd ? x[1] : x[2], bshd ? x[2] : x[1], x[3]};
    };
    {
      SCOPED_TRACE("dq");
      dq.expect_near([&](const std::vector<int64_t> &x) { auto [bb, s, h, d] = split(x); return want.dq(bb, s, h, d); },
                     tolerance);
    }
    {
      SCOPED_TRACE("dk");
      dk.expect_near([&](const std::vector<int64_t> &x) { auto [bb, s, h, d] = split(x); return want.dk(bb, s, h, d); },
                     tolerance);
    }
    {
      SCOPED_TRACE("dv");
      dv.expect_near([&](const std::vector<int64_t> &x) { auto [bb, s, h, d] = split(x); return want.dv(bb, s, h, d); },
                     tolerance);
    }
  }
};

} // namespace

TEST(OpsAttentionBackward, TheReferenceGradientsAreTheForwardsDerivatives) {
  // Central differences of L = Σ out ∘ dout (the forward in double) against
  // the reference's dq, dk and dv, on a tiny causal, soft-capped call with
  // two query heads on one K/V head.
  DenseAttention p;
  p.seqQ = 3, p.seqK = 4, p.headsQ = 2, p.headsKV = 1, p.D = 3;
  p.mask = AttentionMask::causal_bottom_right, p.softcap = 2;
  std::vector<double> q(2 * 3 * 3), k(4 * 3), v(4 * 3), dout(2 * 3 * 3);
  for (size_t i = 0; i < q.size(); ++i)
    q[i] = std::sin(1.3 * i + 0.2), dout[i] = std::cos(0.7 * i);
  for (size_t i = 0; i < k.size(); ++i)
    k[i] = std::cos(0.9 * i + 0.4), v[i] = std::sin(0.5 * i - 1);
  auto qe = [&](int64_t, int64_t s, int64_t h, int64_t d) { return q[(s * 2 + h) * 3 + d]; };
  auto ke = [&](int64_t, int64_t s, int64_t, int64_t d) { return k[s * 3 + d]; };
  auto ve = [&](int64_t, int64_t s, int64_t, int64_t d) { return v[s * 3 + d]; };
  auto de = [&](int64_t, int64_t s, int64_t h, int64_t d) { return dout[(s * 2 + h) * 3 + d]; };
  auto lengths = [](int64_t) { return std::pair<int64_t, int64_t>{3, 4}; };
  auto loss = [&] {
    AttentionReference forward(p, lengths, qe, ke, ve);
    double sum = 0;
    for (int64_t s = 0; s < 3; ++s)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t d = 0; d < 3; ++d)
          sum += forward.out(0, s, h, d) * de(0, s, h, d);
    return sum;
  };
  AttentionGradients g(p, lengths, qe, ke, ve, de);
  auto numeric = [&](double &x) {
    const double h = 1e-6, saved = x;
    x = saved + h;
    const double up = loss();
    x = saved - h;
    const double down = loss();
    x = saved;
    return (up - down) / (2 * h);
  };
  for (int64_t s = 0; s < 3; ++s)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t d = 0; d < 3; ++d)
        EXPECT_NEAR(g.dq(0, s, h, d), numeric(q[(s * 2 + h) * 3 + d]), 1e-6) << "dq " << s << " " << h << " " << d;
  for (int64_t s = 0; s < 4; ++s)
    for (int64_t d = 0; d < 3; ++d) {
      EXPECT_NEAR(g.dk(0, s, 0, d), numeric(k[s * 3 + d]), 1e-6) << "dk " << s << " " << d;
      EXPECT_NEAR(g.dv(0, s, 0, d), numeric(v[s * 3 + d]), 1e-6) << "dv " << s << " " << d;
    }
}

TEST(OpsAttentionBackward, EveryDenseVariant) {
  auto base = [] {
    DenseAttention p;
    p.batch = 2, p.seqQ = 37, p.seqK = 45, p.headsQ = 4, p.headsKV = 2, p.D = 32;
    return p;
  };
  struct Variant {
    const char *what;
    std::function<void(DenseAttention &)> change;
  };
  const Variant variants[] = {
      {"no mask", [](DenseAttention &) {}},
      {"causal top-left", [](DenseAttention &p) { p.mask = AttentionMask::causal_top_left; }},
      {"causal bottom-right, window 9 left",
       [](DenseAttention &p) { p.mask = AttentionMask::causal_bottom_right, p.windowLeft = 9; }},
      {"window 5 left, 3 right", [](DenseAttention &p) { p.windowLeft = 5, p.windowRight = 3; }},
      {"soft-capped at 2, scale 0.4", [](DenseAttention &p) { p.softcap = 2, p.scale = 0.4; }},
      {"bhsd, D 40 (masked), one K/V head for four",
       [](DenseAttention &p) { p.layout = AttentionLayout::bhsd, p.D = 40, p.headsKV = 1; }},
      {"more queries than keys, causal", [](DenseAttention &p) { p.seqQ = 50, p.seqK = 20, p.mask = AttentionMask::causal_bottom_right; }},
  };
  for (const Variant &variant : variants)
    for (bool deterministic : {false, true}) {
      SCOPED_TRACE(std::string(variant.what) + (deterministic ? ", deterministic" : ", atomic"));
      DenseCase c{base()};
      variant.change(c.p);
      c.deterministic = deterministic;
      c.check(1e-2);
    }
  SCOPED_TRACE("bf16");
  DenseCase c{base(), DType::bf16};
  c.p.mask = AttentionMask::causal_top_left;
  c.check(4e-2);
}

TEST(OpsAttentionBackward, DefaultTilesOfEveryHeadDim) {
  // The op's own tiles (queries and keys blocks of different sizes at D
  // 128), causal so that diagonal blocks are cut, sequences longer than a
  // few blocks and not a multiple of one.
  for (int64_t D : {64, 128, 256})
    for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_top_left}) {
      SCOPED_TRACE("D " + std::to_string(D) + " " + std::string(name(mask)));
      DenseCase c{DenseAttention{}, DType::bf16};
      c.p.batch = 1, c.p.seqQ = 150, c.p.seqK = 150, c.p.headsQ = 2, c.p.headsKV = 1, c.p.D = D, c.p.mask = mask;
      c.config = Config{};
      c.check(4e-2);
    }
}

TEST(OpsAttentionBackward, PackedBatchesWithEmptyAndOneTokenSequences) {
  // Sequences of 5, 0, 23 and 1 queries over 7, 3, 23 and 1 keys, four
  // query heads on one K/V head, causal bottom-right (each sequence's own
  // diagonal) and not.
  const std::vector<int32_t> startsQ{0, 5, 5, 28, 29}, startsK{0, 7, 10, 33, 34};
  const int64_t Hq = 4, Hkv = 1, D = 16, tokensQ = 29, tokensK = 34;
  for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_bottom_right})
    for (bool deterministic : {false, true}) {
      SCOPED_TRACE(std::string(name(mask)) + (deterministic ? ", deterministic" : ", atomic"));
      HostTensor q = HostTensor::random(DType::f16, {tokensQ, Hq, D}, 5, -1, 1);
      HostTensor k = HostTensor::random(DType::f16, {tokensK, Hkv, D}, 6, -1, 1);
      HostTensor v = HostTensor::random(DType::f16, {tokensK, Hkv, D}, 7, -1, 1);
      HostTensor dout = HostTensor::random(DType::f16, {tokensQ, Hq, D}, 8, -1, 1);
      HostTensor out = HostTensor::poisoned(DType::f16, {tokensQ, Hq, D});
      HostTensor lse = HostTensor::poisoned(DType::f32, {Hq, tokensQ});
      HostTensor cuQ = HostTensor::random(DType::i32, {5}, 0), cuK = HostTensor::random(DType::i32, {5}, 0);
      for (int64_t i = 0; i < 5; ++i)
        cuQ.set_flat(i, startsQ[i]), cuK.set_flat(i, startsK[i]);
      HostTensor dq = HostTensor::poisoned(DType::f16, q.shape()), dk = HostTensor::poisoned(DType::f16, k.shape());
      HostTensor dv = HostTensor::poisoned(DType::f16, v.shape());
      AttentionBackwardArgs b;
      AttentionArgs &a = b.forward;
      a.q = q.view(), a.k = k.view(), a.v = v.view(), a.out = out.view(), a.lse = lse.view(), a.mask = mask;
      a.cu_seqlens_q = cuQ.view(), a.cu_seqlens_k = cuK.view();
      attention(a, cpu(), kSmall);
      b.dout = dout.view(), b.dq = dq.view(), b.dk = dk.view(), b.dv = dv.view(), b.deterministic = deterministic;
      attention_backward(b, cpu(), kSmall);
      DenseAttention p;
      p.batch = 4, p.seqQ = 23, p.seqK = 23, p.headsQ = Hq, p.headsKV = Hkv, p.D = D, p.mask = mask;
      auto packed = [](const HostTensor &t, const std::vector<int32_t> &starts) {
        return [&t, &starts](int64_t bb, int64_t s, int64_t h, int64_t d) { return t.at({starts[bb] + s, h, d}); };
      };
      AttentionGradients want(
          p, [&](int64_t bb) { return std::pair<int64_t, int64_t>{startsQ[bb + 1] - startsQ[bb], startsK[bb + 1] - startsK[bb]}; },
          packed(q, startsQ), packed(k, startsK), packed(v, startsK), packed(dout, startsQ));
      auto sequenceOf = [](const std::vector<int32_t> &starts, int64_t token) {
        int64_t bb = 0;
        while (starts[bb + 1] <= token)
          ++bb;
        return bb;
      };
      dq.expect_near([&](const std::vector<int64_t> &x) {
        const int64_t bb = sequenceOf(startsQ, x[0]);
        return want.dq(bb, x[0] - startsQ[bb], x[1], x[2]);
      }, 1e-2);
      dk.expect_near([&](const std::vector<int64_t> &x) {
        const int64_t bb = sequenceOf(startsK, x[0]);
        return want.dk(bb, x[0] - startsK[bb], x[1], x[2]);
      }, 1e-2);
      dv.expect_near([&](const std::vector<int64_t> &x) {
        const int64_t bb = sequenceOf(startsK, x[0]);
        return want.dv(bb, x[0] - startsK[bb], x[1], x[2]);
      }, 1e-2);
    }
}

TEST(OpsAttentionBackward, DeterministicDqIsTheSameBitsEveryRun) {
  DenseAttention p;
  p.batch = 1, p.seqQ = 33, p.seqK = 40, p.headsQ = 2, p.headsKV = 1, p.D = 16;
  HostTensor q = HostTensor::random(DType::bf16, p.shape(p.seqQ, p.headsQ), 9, -1, 1);
  HostTensor k = HostTensor::random(DType::bf16, p.shape(p.seqK, p.headsKV), 10, -1, 1);
  HostTensor v = HostTensor::random(DType::bf16, p.shape(p.seqK, p.headsKV), 11, -1, 1);
  HostTensor dout = HostTensor::random(DType::bf16, q.shape(), 12, -1, 1), out = HostTensor::poisoned(DType::bf16, q.shape());
  HostTensor lse = HostTensor::poisoned(DType::f32, {1, 2, 33});
  AttentionBackwardArgs b;
  b.forward.q = q.view(), b.forward.k = k.view(), b.forward.v = v.view(), b.forward.out = out.view();
  b.forward.lse = lse.view();
  attention(b.forward, cpu(), kSmall);
  b.deterministic = true;
  std::vector<std::vector<uint8_t>> runs;
  for (int run = 0; run < 2; ++run) {
    HostTensor dq = HostTensor::poisoned(DType::bf16, q.shape()), dk = HostTensor::poisoned(DType::bf16, k.shape());
    HostTensor dv = HostTensor::poisoned(DType::bf16, v.shape());
    b.dout = dout.view(), b.dq = dq.view(), b.dk = dk.view(), b.dv = dv.view();
    attention_backward(b, cpu(), kSmall);
    runs.push_back(dq.bytes());
  }
  EXPECT_EQ(runs[0], runs[1]);
  // Three passes: the rows, the keys, the queries (no atomic sums).
  EXPECT_EQ(prepare_attention_backward(b, cpu(), kSmall).steps.size(), 3u);
}

TEST(OpsAttentionBackward, NoQueriesOrNoKeysGiveZeroGradients) {
  // No queries: dk and dv are zeros; no keys: dq is zeros (both dq modes).
  for (bool deterministic : {false, true})
    for (auto [seqQ, seqK] : {std::pair<int64_t, int64_t>{0, 8}, {8, 0}}) {
      SCOPED_TRACE(std::to_string(seqQ) + " queries, " + std::to_string(seqK) + " keys");
      DenseAttention p;
      p.D = 16;
      HostTensor q = HostTensor::random(DType::f16, p.shape(seqQ, 1), 21), k = HostTensor::random(DType::f16, p.shape(seqK, 1), 22);
      HostTensor v = HostTensor::random(DType::f16, p.shape(seqK, 1), 23), out = HostTensor::poisoned(DType::f16, q.shape());
      HostTensor lse = HostTensor::poisoned(DType::f32, {1, 1, seqQ}), dout = HostTensor::random(DType::f16, q.shape(), 24);
      HostTensor dq = HostTensor::poisoned(DType::f16, q.shape()), dk = HostTensor::poisoned(DType::f16, k.shape());
      HostTensor dv = HostTensor::poisoned(DType::f16, v.shape());
      AttentionBackwardArgs b;
      b.forward.q = q.view(), b.forward.k = k.view(), b.forward.v = v.view(), b.forward.out = out.view();
      b.forward.lse = lse.view();
      attention(b.forward, cpu(), kSmall);
      b.dout = dout.view(), b.dq = dq.view(), b.dk = dk.view(), b.dv = dv.view(), b.deterministic = deterministic;
      attention_backward(b, cpu(), kSmall);
      for (const HostTensor *g : {&dq, &dk, &dv})
        g->expect_near([](const std::vector<int64_t> &) { return 0.0; }, 0);
    }
}

TEST(OpsAttentionBackward, BadArgumentsAreRejectedWithReasons) {
  DenseAttention p;
  p.seqQ = 8, p.seqK = 8, p.D = 16;
  HostTensor q = HostTensor::random(DType::f16, p.shape(8, 1), 13), k = HostTensor::random(DType::f16, p.shape(8, 1), 14);
  HostTensor v = HostTensor::random(DType::f16, p.shape(8, 1), 15), out = HostTensor::poisoned(DType::f16, p.shape(8, 1));
  HostTensor lse = HostTensor::poisoned(DType::f32, {1, 1, 8}), dout = HostTensor::random(DType::f16, p.shape(8, 1), 16);
  HostTensor dq = HostTensor::poisoned(DType::f16, p.shape(8, 1)), dk = HostTensor::poisoned(DType::f16, p.shape(8, 1));
  HostTensor dv = HostTensor::poisoned(DType::f16, p.shape(8, 1)), wrong = HostTensor::poisoned(DType::f16, p.shape(7, 1));
  HostTensor halves = HostTensor::poisoned(DType::bf16, p.shape(8, 1));
  auto args = [&] {
    AttentionBackwardArgs b;
    b.forward.q = q.view(), b.forward.k = k.view(), b.forward.v = v.view(), b.forward.out = out.view();
    b.forward.lse = lse.view();
    b.dout = dout.view(), b.dq = dq.view(), b.dk = dk.view(), b.dv = dv.view();
    return b;
  };
  auto fails = [&](const AttentionBackwardArgs &b, const std::string &why) {
    const std::string message = kiln::testing::error_of([&] { attention_backward(b, cpu(), kSmall); });
    EXPECT_NE(message.find(why), std::string::npos) << why << ": " << message;
  };
  AttentionBackwardArgs b = args();
  b.forward.lse = {};
  fails(b, "needs the forward's lse");
  b = args(), b.dq = wrong.view();
  fails(b, "dq");
  b = args(), b.dk = halves.view();
  fails(b, "dk");
  b = args(), b.dout = wrong.view();
  fails(b, "dout");
  TensorView strided = dv.view();
  strided.shape = {1, 4, 1, 16}, strided.strides = {128, 32, 16, 2};
  b = args(), b.dv = strided;
  fails(b, "dv");
  HostTensor table = HostTensor::random(DType::i32, {1, 1}, 0), lengths = HostTensor::random(DType::i32, {1}, 0);
  b = args(), b.forward.block_table = table.view(), b.forward.cache_seqlens = lengths.view();
  fails(b, "paged cache has no backward pass");
  b = args();
  const std::string message = kiln::testing::error_of(
      [&] { attention_backward(b, cpu(), Config(kSmall).set("BLOCK_N", 24)); });
  EXPECT_NE(message.find("BLOCK_N must be a power of two"), std::string::npos) << message;
}

TEST(OpsAttentionBackward, ThePassesCompileForHopper) {
  // The default tiles at D 64, 128 and 256 (causal, grouped heads), both
  // dq modes, through the compiler and ptxas for sm_90a.
  for (int64_t D : {64, 128, 256})
    for (bool deterministic : {false, true}) {
      SCOPED_TRACE("D " + std::to_string(D) + (deterministic ? ", deterministic" : ", atomic"));
      DenseAttention p;
      p.batch = 2, p.seqQ = 512, p.seqK = 512, p.headsQ = 8, p.headsKV = 2, p.D = D;
      HostTensor q = HostTensor::random(DType::bf16, p.shape(512, 8), 17), k = HostTensor::random(DType::bf16, p.shape(512, 2), 18);
      HostTensor v = HostTensor::random(DType::bf16, p.shape(512, 2), 19), out = HostTensor::poisoned(DType::bf16, q.shape());
      HostTensor lse = HostTensor::poisoned(DType::f32, {2, 8, 512}), dout = HostTensor::random(DType::bf16, q.shape(), 20);
      HostTensor dq = HostTensor::poisoned(DType::bf16, q.shape()), dk = HostTensor::poisoned(DType::bf16, k.shape());
      HostTensor dv = HostTensor::poisoned(DType::bf16, v.shape());
      AttentionBackwardArgs b;
      b.forward.q = q.view(), b.forward.k = k.view(), b.forward.v = v.view(), b.forward.out = out.view();
      b.forward.lse = lse.view(), b.forward.mask = AttentionMask::causal_top_left;
      b.dout = dout.view(), b.dq = dq.view(), b.dk = dk.view(), b.dv = dv.view(), b.deterministic = deterministic;
      Launches launch = prepare_attention_backward(b, cpu(), {});
      ASSERT_EQ(launch.steps.size(), 3u);
      for (const Launches::Step &step : launch.steps) {
        std::vector<Arg> args = step.args;
        for (const Launches::Scratch &s : step.workspace)
          args[s.argument] = Arg::device_pointer(256 + s.offset, launch.workspace_bytes - s.offset);
        CompiledKernel kernel = step.kernel.compile(step.config, step.kernel.specialize(args), "sm_90a");
        EXPECT_GT(kernel.registers, 0);
        // (From D 128 the keys pass, its queries' rows coming through rings,
        // parks a few registers: at most 16 bytes at D 128, 64 at 256.)
        EXPECT_LE(kernel.spill_stores, D > 128 ? 64 : D > 64 ? 16 : 0) << step.kernel.name() << "\n" << kernel.ptxas_log;
      }
    }
}
