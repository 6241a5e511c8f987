// Attention's score and mask modifiers on the interpreter, forward and
// backward, against double precision: ALiBi (a captured slope a head),
// soft-capping written as a modifier (against the built-in one too), a
// document mask (captured document ids, ragged documents), a prefix-LM
// mask, modifiers on a packed batch and a split-KV call; their errors; a
// modified kernel through ptxas for sm_90a.
#include "tests/common/AttentionGradients.h"

#include <kiln/ops/library.h>

#include "ops/lib/AttentionPlan.h"
#include "ops/lib/Workspace.h"

#include <cstring>

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::AttentionGradients;
using kiln::testing::AttentionReference;
using kiln::testing::DenseAttention;
using kiln::testing::HostTensor;

namespace {

Stream cpu() { return Stream(Device::interp()); }

const Config kSmall{{"BLOCK_M", 16}, {"BLOCK_N", 16}, {"num_warps", 4}, {"num_stages", 2}};

HostTensor floats(const std::vector<double> &values) {
  HostTensor t = HostTensor::random(DType::f32, {static_cast<int64_t>(values.size())}, 0);
  for (size_t i = 0; i < values.size(); ++i)
    t.set_flat(static_cast<int64_t>(i), values[i]);
  return t;
}

HostTensor ints(const std::vector<int32_t> &values) {
  HostTensor t = HostTensor::poisoned(DType::i32, {static_cast<int64_t>(values.size())});
  std::memcpy(t.bytes().data(), values.data(), values.size() * 4);
  return t;
}

/// A dense call with modifiers: forward (out, lse) and backward (dq, dk,
/// dv) against the reference with the same modifiers in double.
void checkDense(DenseAttention p, std::shared_ptr<const AttentionModifiers> modifiers, bool backward = true,
                int splits = 0) {
  HostTensor q = HostTensor::random(DType::f16, p.shape(p.seqQ, p.headsQ), 1, -1, 1);
  HostTensor k = HostTensor::random(DType::f16, p.shape(p.seqK, p.headsKV), 2, -1, 1);
  HostTensor v = HostTensor::random(DType::f16, p.shape(p.seqK, p.headsKV), 3, -1, 1);
  HostTensor dout = HostTensor::random(DType::f16, q.shape(), 4, -1, 1), out = HostTensor::poisoned(DType::f16, q.shape());
  HostTensor lse = HostTensor::poisoned(DType::f32, {p.batch, p.headsQ, p.seqQ});
  AttentionBackwardArgs b;
  AttentionArgs &a = b.forward;
  a.q = q.view(), a.k = k.view(), a.v = v.view(), a.out = out.view(), a.lse = lse.view();
  a.layout = p.layout, a.mask = p.mask, a.softcap = p.softcap, a.num_splits = splits;
  a.modifiers = std::move(modifiers);
  attention(a, cpu(), kSmall);
  AttentionReference reference(p, q, k, v);
  {
    SCOPED_TRACE("out");
    out.expect_near([&](const std::vector<int64_t> &x) { return reference.out(x); }, 5e-3);
  }
  if (splits == 0) { // (split runs write lse too, merged: checked with out)
    SCOPED_TRACE("lse");
    lse.expect_near([&](const std::vector<int64_t> &x) { return reference.lse(x); }, 1e-4);
  }
  if (!backward)
    return;
  HostTensor dq = HostTensor::poisoned(DType::f16, q.shape()), dk = HostTensor::poisoned(DType::f16, k.shape());
  HostTensor dv = HostTensor::poisoned(DType::f16, v.shape());
  b.dout = dout.view(), b.dq = dq.view(), b.dk = dk.view(), b.dv = dv.view();
  attention_backward(b, cpu(), kSmall);
  auto element = [&](const HostTensor &t) {
    return [&t, p](int64_t bb, int64_t s, int64_t h, int64_t d) { return t.at(p.at(bb, s, h, d)); };
  };
  AttentionGradients want(p, [p](int64_t) { return std::pair{p.seqQ, p.seqK}; }, element(q), element(k), element(v),
                          element(dout));
  auto split = [&p](const std::vector<int64_t> &x) {
    const bool bshd = p.layout == AttentionLayout::bshd;
    return std::tuple{x[0], bshd ? x[1] : x[2], bshd ? x[2] : x[1], x[3]};
  };
  SCOPED_TRACE("gradients");
  dq.expect_near([&](const std::vector<int64_t> &x) { auto [bb, s, h, d] = split(x); return want.dq(bb, s, h, d); }, 1e-2);
  dk.expect_near([&](const std::vector<int64_t> &x) { auto [bb, s, h, d] = split(x); return want.dk(bb, s, h, d); }, 1e-2);
  dv.expect_near([&](const std::vector<int64_t> &x) { auto [bb, s, h, d] = split(x); return want.dv(bb, s, h, d); }, 1e-2);
}

DenseAttention problem() {
  DenseAttention p;
  p.batch = 2, p.seqQ = 37, p.seqK = 37, p.headsQ = 4, p.headsKV = 2, p.D = 16;
  return p;
}

} // namespace

TEST(OpsAttentionModifiers, AlibiBiasesWithACapturedSlopeAHead) {
  // score + slope[h] * (kv - q), under the causal mask (slopes 2^-1 .. 2^-4).
  const std::vector<double> slopes{0.5, 0.25, 0.125, 0.0625};
  HostTensor slopeTensor = floats(slopes);
  auto alibi = std::make_shared<AttentionModifiers>();
  alibi->name = "alibi";
  alibi->tensors = {slopeTensor.view()};
  alibi->score_mod = [](const Tensor &score, const ModifierIndices &at) {
    return score + load(at.captured[0] + at.head) * (at.kv_idx - at.q_idx).to(DType::f32);
  };
  alibi->score_mod_grad = [](const Tensor &score, const ModifierIndices &) { return score * 0.0 + 1.0; };
  DenseAttention p = problem();
  p.mask = AttentionMask::causal_top_left;
  p.scoreMod = [&](double s, int64_t, int64_t h, int64_t i, int64_t j) { return s + slopes[h] * double(j - i); };
  p.scoreModGrad = [](double, int64_t, int64_t, int64_t, int64_t) { return 1.0; };
  checkDense(p, alibi);
}

TEST(OpsAttentionModifiers, SoftCappingAsAModifierMatchesTheBuiltInOne) {
  const double cap = 1.5;
  auto softcap = std::make_shared<AttentionModifiers>();
  softcap->name = "softcap-1.5";
  softcap->score_mod = [cap](const Tensor &score, const ModifierIndices &) { return tanh(score * (1 / cap)) * cap; };
  softcap->score_mod_grad = [cap](const Tensor &score, const ModifierIndices &) {
    Tensor t = tanh(score * (1 / cap));
    return 1.0 - t * t;
  };
  DenseAttention modified = problem(), builtIn = problem();
  builtIn.softcap = cap;
  modified.scoreMod = [cap](double s, int64_t, int64_t, int64_t, int64_t) { return cap * std::tanh(s / cap); };
  modified.scoreModGrad = [cap](double s, int64_t, int64_t, int64_t, int64_t) {
    const double t = std::tanh(s / cap);
    return 1 - t * t;
  };
  checkDense(modified, softcap);
  checkDense(builtIn, nullptr);
}

TEST(OpsAttentionModifiers, DocumentAndPrefixMasks) {
  // Documents of 5, 1, 20 and 11 tokens (ids in a captured tensor): a
  // query sees the keys of its own document; then a prefix-LM mask (the
  // first 9 keys seen by all, the rest causally), on a split-KV call too.
  std::vector<int32_t> documents;
  for (auto [id, length] : {std::pair{0, 5}, {1, 1}, {2, 20}, {3, 11}})
    documents.insert(documents.end(), length, id);
  HostTensor ids = ints(documents);
  auto document = std::make_shared<AttentionModifiers>();
  document->name = "document";
  document->tensors = {ids.view()};
  document->mask_mod = [](const ModifierIndices &at) {
    return load(at.captured[0] + at.q_idx) == load(at.captured[0] + at.kv_idx);
  };
  DenseAttention p = problem();
  p.maskMod = [&](int64_t, int64_t, int64_t i, int64_t j) { return documents[i] == documents[j]; };
  checkDense(p, document);

  auto prefix = std::make_shared<AttentionModifiers>();
  prefix->name = "prefix-9";
  prefix->mask_mod = [](const ModifierIndices &at) { return (at.kv_idx < 9) | (at.kv_idx <= at.q_idx); };
  DenseAttention lm = problem();
  lm.layout = AttentionLayout::bhsd;
  lm.maskMod = [](int64_t, int64_t, int64_t i, int64_t j) { return j < 9 || j <= i; };
  checkDense(lm, prefix);
  checkDense(lm, prefix, false, 3);
}

TEST(OpsAttentionModifiers, TheBlockMaskListsOnlyTheBlocksAQuerySees) {
  // Documents of 16, 32 and 16 tokens in blocks of 16: each block of
  // queries lists only its own document's blocks of keys, all wholly
  // visible (none masked); under a causal mask too, the diagonal's blocks
  // are listed as partly visible. The outputs against double precision.
  std::vector<int32_t> documents;
  for (auto [id, length] : {std::pair{0, 16}, {1, 32}, {2, 16}})
    documents.insert(documents.end(), length, id);
  HostTensor ids = ints(documents);
  auto document = std::make_shared<AttentionModifiers>();
  document->name = "document";
  document->tensors = {ids.view()};
  document->mask_mod = [](const ModifierIndices &at) {
    return load(at.captured[0] + at.q_idx) == load(at.captured[0] + at.kv_idx);
  };
  DenseAttention p;
  p.seqQ = p.seqK = 64, p.D = 16;
  p.maskMod = [&](int64_t, int64_t, int64_t i, int64_t j) { return documents[i] == documents[j]; };
  for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_top_left}) {
    SCOPED_TRACE(name(mask));
    p.mask = mask;
    HostTensor q = HostTensor::random(DType::f16, p.shape(64, 1), 21, -1, 1), k = HostTensor::random(DType::f16, p.shape(64, 1), 22, -1, 1);
    HostTensor v = HostTensor::random(DType::f16, p.shape(64, 1), 23, -1, 1), out = HostTensor::poisoned(DType::f16, q.shape());
    AttentionArgs a;
    a.q = q.view(), a.k = k.view(), a.v = v.view(), a.out = out.view(), a.mask = mask, a.modifiers = document;
    Stream stream = cpu();
    const AttentionProblem problem = checked_attention(a, stream);
    AttentionLaunch launch = prepare_attention(a, problem, stream, kSmall);
    ASSERT_EQ(launch.steps.size(), 2u); // (the block mask, then the forward)
    launch.queue(stream);
    std::vector<int32_t> table(launch.tableBytes / 4);
    workspace(stream, launch.tableBytes).copy_to_host(table.data(), launch.tableBytes);
    // Row i: partly visible count, wholly visible count, then 4 + 4 entries.
    const std::vector<std::vector<int32_t>> whole = {{0}, {1, 2}, {1, 2}, {3}};
    for (int i = 0; i < 4; ++i) {
      const int32_t *row = table.data() + i * 10;
      std::vector<int32_t> partial(row + 2, row + 2 + row[0]), wholly(row + 6, row + 6 + row[1]);
      if (mask == AttentionMask::none) {
        EXPECT_TRUE(partial.empty()) << i;
        EXPECT_EQ(wholly, whole[i]) << i;
      } else { // (the diagonal's block is partly visible, the ones before it wholly)
        EXPECT_EQ(partial, std::vector<int32_t>{i}) << i;
        std::vector<int32_t> before;
        for (int32_t b : whole[i])
          if (b < i)
            before.push_back(b);
        EXPECT_EQ(wholly, before) << i;
      }
    }
    AttentionReference reference(p, q, k, v);
    out.expect_near([&](const std::vector<int64_t> &x) { return reference.out(x); }, 5e-3);
  }
}

TEST(OpsAttentionModifiers, APackedBatchSeesPositionsWithinEachSequence) {
  // Sequences of 5, 0 and 23 queries over 9, 4 and 23 keys, two query heads
  // on one K/V head: a causal mask written as a modifier (q_idx and kv_idx
  // count within each sequence: top-left) and a bias by head, forward and
  // backward.
  const std::vector<int32_t> startsQ{0, 5, 5, 28}, startsK{0, 9, 13, 36};
  const int64_t H = 2, D = 16;
  auto modifiers = std::make_shared<AttentionModifiers>();
  modifiers->name = "causal-head-bias";
  modifiers->mask_mod = [](const ModifierIndices &at) { return at.kv_idx <= at.q_idx; };
  modifiers->score_mod = [](const Tensor &score, const ModifierIndices &at) { return score + at.head.to(DType::f32); };
  modifiers->score_mod_grad = [](const Tensor &score, const ModifierIndices &) { return score * 0.0 + 1.0; };
  HostTensor q = HostTensor::random(DType::f16, {28, H, D}, 9, -1, 1), k = HostTensor::random(DType::f16, {36, 1, D}, 10, -1, 1);
  HostTensor v = HostTensor::random(DType::f16, {36, 1, D}, 11, -1, 1), dout = HostTensor::random(DType::f16, {28, H, D}, 12, -1, 1);
  HostTensor out = HostTensor::poisoned(DType::f16, {28, H, D}), lse = HostTensor::poisoned(DType::f32, {H, 28});
  HostTensor cuQ = ints(startsQ), cuK = ints(startsK);
  HostTensor dq = HostTensor::poisoned(DType::f16, q.shape()), dk = HostTensor::poisoned(DType::f16, k.shape());
  HostTensor dv = HostTensor::poisoned(DType::f16, v.shape());
  AttentionBackwardArgs b;
  b.forward.q = q.view(), b.forward.k = k.view(), b.forward.v = v.view(), b.forward.out = out.view();
  b.forward.lse = lse.view(), b.forward.cu_seqlens_q = cuQ.view(), b.forward.cu_seqlens_k = cuK.view();
  b.forward.modifiers = modifiers;
  attention(b.forward, cpu(), kSmall);
  b.dout = dout.view(), b.dq = dq.view(), b.dk = dk.view(), b.dv = dv.view();
  attention_backward(b, cpu(), kSmall);
  DenseAttention p;
  p.batch = 3, p.seqQ = 23, p.seqK = 23, p.headsQ = H, p.headsKV = 1, p.D = D;
  p.maskMod = [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i; };
  p.scoreMod = [](double s, int64_t, int64_t h, int64_t, int64_t) { return s + double(h); };
  p.scoreModGrad = [](double, int64_t, int64_t, int64_t, int64_t) { return 1.0; };
  auto lengths = [&](int64_t bb) {
    return std::pair<int64_t, int64_t>{startsQ[bb + 1] - startsQ[bb], startsK[bb + 1] - startsK[bb]};
  };
  auto packed = [](const HostTensor &t, const std::vector<int32_t> &starts) {
    return [&t, &starts](int64_t bb, int64_t s, int64_t h, int64_t d) { return t.at({starts[bb] + s, h, d}); };
  };
  auto sequenceOf = [](const std::vector<int32_t> &starts, int64_t token) {
    int64_t bb = 0;
    while (starts[bb + 1] <= token)
      ++bb;
    return bb;
  };
  AttentionReference forward(p, lengths, packed(q, startsQ), packed(k, startsK), packed(v, startsK));
  out.expect_near([&](const std::vector<int64_t> &x) {
    const int64_t bb = sequenceOf(startsQ, x[0]);
    return forward.out(bb, x[0] - startsQ[bb], x[1], x[2]);
  }, 5e-3);
  AttentionGradients want(p, lengths, packed(q, startsQ), packed(k, startsK), packed(v, startsK), packed(dout, startsQ));
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

TEST(OpsAttentionModifiers, ModifiersFromTextsWithTheirDerivativesTakenByKiln) {
  // ALiBi and a document mask as texts over captured tensors (what the C
  // ABI takes), then soft-capping: forward and backward against double
  // precision, the score modifiers' derivatives taken symbolically.
  const std::vector<double> slopes{0.5, 0.25, 0.125, 0.0625};
  std::vector<int32_t> documents;
  for (auto [id, length] : {std::pair{0, 12}, {1, 25}})
    documents.insert(documents.end(), length, id);
  HostTensor slopeTensor = floats(slopes), ids = ints(documents);
  DenseAttention p = problem();
  p.scoreMod = [&](double s, int64_t, int64_t h, int64_t i, int64_t j) { return s + slopes[h] * double(j - i); };
  p.scoreModGrad = [](double, int64_t, int64_t, int64_t, int64_t) { return 1.0; };
  p.maskMod = [&](int64_t, int64_t, int64_t i, int64_t j) { return documents[i] == documents[j]; };
  checkDense(p, attention_modifiers("score + slopes[h] * cast(kv_idx - q_idx, f32)", "doc[q_idx] == doc[kv_idx]",
                                    {{"slopes", slopeTensor.view()}, {"doc", ids.view()}}));
  DenseAttention capped = problem();
  capped.scoreMod = [](double s, int64_t, int64_t, int64_t, int64_t) { return 2 * std::tanh(s / 2); };
  capped.scoreModGrad = [](double s, int64_t, int64_t, int64_t, int64_t) {
    const double t = std::tanh(s / 2);
    return 1 - t * t;
  };
  checkDense(capped, attention_modifiers("tanh(score / 2) * 2", ""));
  // A mask that reads neither the head nor the batch: one block mask serves
  // them all (its pass runs once); one that reads them: each its own.
  auto shared = attention_modifiers("", "doc[q_idx] == doc[kv_idx]", {{"doc", ids.view()}});
  EXPECT_FALSE(shared->mask_reads_head || shared->mask_reads_batch);
  auto own = attention_modifiers("", "(h == 1) | (b == 1) | (kv_idx <= q_idx)");
  EXPECT_TRUE(own->mask_reads_head && own->mask_reads_batch);
  DenseAttention perHead = problem();
  perHead.maskMod = [](int64_t b, int64_t h, int64_t i, int64_t j) { return h == 1 || b == 1 || j <= i; };
  checkDense(perHead, own);
  // Mistakes name their position; a mask must be a condition.
  EXPECT_NE(kiln::testing::error_of([] { attention_modifiers("score + bias[q_idx]", ""); }).find("'bias' names no value"),
            std::string::npos);
  EXPECT_NE(kiln::testing::error_of([] { attention_modifiers("", "score > 0"); }).find("'score' names no value"),
            std::string::npos);
  EXPECT_NE(kiln::testing::error_of([] { attention_modifiers("", "q_idx - kv_idx"); }).find("must be a condition"),
            std::string::npos);
}

TEST(OpsAttentionModifiers, DerivativesOfExpressions) {
  // Each expression's derivative, evaluated by the pointwise op in f64,
  // against central differences of the function in double.
  HostTensor xs = HostTensor::random(DType::f64, {64}, 13, -2, 2);
  struct Case {
    const char *what;
    std::function<Expr(const Expr &)> f;
    std::function<double(double)> g;
  };
  const Case cases[] = {
      {"tanh(x / 3) * 3", [](const Expr &x) { return tanh(x / 3.0) * 3.0; }, [](double x) { return 3 * std::tanh(x / 3); }},
      {"exp(x) sin(x)", [](const Expr &x) { return exp(x) * sin(x); }, [](double x) { return std::exp(x) * std::sin(x); }},
      {"sqrt(x² + 1)", [](const Expr &x) { return sqrt(x * x + 1.0); }, [](double x) { return std::sqrt(x * x + 1); }},
      {"x / (1 + x²)", [](const Expr &x) { return x / (1.0 + x * x); }, [](double x) { return x / (1 + x * x); }},
      {"x³", [](const Expr &x) { return pow(x, Expr(3.0)); }, [](double x) { return x * x * x; }},
      {"sigmoid, silu, gelu", [](const Expr &x) { return sigmoid(x) + silu(x) + gelu(x); },
       [](double x) {
         const double s = 1 / (1 + std::exp(-x));
         return s + x * s + 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
       }},
      {"log(x² + 1) - cos(x)", [](const Expr &x) { return log(x * x + 1.0) - cos(x); },
       [](double x) { return std::log(x * x + 1) - std::cos(x); }},
      {"where(x > 0, x², -x) + max(x, x / 2)", [](const Expr &x) { return where(x > 0.0, x * x, -x) + maximum(x, x / 2.0); },
       [](double x) { return (x > 0 ? x * x : -x) + std::max(x, x / 2); }},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    HostTensor out = HostTensor::poisoned(DType::f64, {64});
    Pointwise op;
    Expr x = op.input(xs.view());
    op.output(out.view(), derivative(c.f(x), 0));
    op.run(cpu());
    out.expect_near([&](const std::vector<int64_t> &at) {
      const double v = xs.at(at), h = 1e-6;
      return (c.g(v + h) - c.g(v - h)) / (2 * h);
    }, 1e-6);
  }
}

TEST(OpsAttentionModifiers, ErrorsNameWhatIsMissing) {
  DenseAttention p = problem();
  HostTensor q = HostTensor::random(DType::f16, p.shape(p.seqQ, p.headsQ), 5);
  HostTensor k = HostTensor::random(DType::f16, p.shape(p.seqK, p.headsKV), 6);
  HostTensor out = HostTensor::poisoned(DType::f16, q.shape()), lse = HostTensor::poisoned(DType::f32, {2, 4, 37});
  AttentionBackwardArgs b;
  b.forward.q = q.view(), b.forward.k = k.view(), b.forward.v = k.view(), b.forward.out = out.view();
  b.forward.lse = lse.view();
  auto unnamed = std::make_shared<AttentionModifiers>();
  unnamed->mask_mod = [](const ModifierIndices &at) { return at.kv_idx <= at.q_idx; };
  b.forward.modifiers = unnamed;
  EXPECT_NE(kiln::testing::error_of([&] { attention(b.forward, cpu(), kSmall); }).find("modifiers need a name"),
            std::string::npos);
  auto noGrad = std::make_shared<AttentionModifiers>();
  noGrad->name = "bias-no-grad";
  noGrad->score_mod = [](const Tensor &score, const ModifierIndices &) { return score + 1.0; };
  b.forward.modifiers = noGrad;
  attention(b.forward, cpu(), kSmall); // (the forward needs no derivative)
  HostTensor dq = HostTensor::poisoned(DType::f16, q.shape()), dk = HostTensor::poisoned(DType::f16, k.shape());
  b.dout = q.view(), b.dq = dq.view(), b.dk = dk.view(), b.dv = dk.view();
  EXPECT_NE(kiln::testing::error_of([&] { attention_backward(b, cpu(), kSmall); }).find("has no derivative"),
            std::string::npos);
}

TEST(OpsAttentionModifiers, AModifiedKernelCompilesForHopper) {
  // ALiBi and a document mask at D 128, causal, through ptxas for sm_90a:
  // the forward's default tile and the backward's passes.
  HostTensor slopes = floats(std::vector<double>(8, 0.25)), ids = ints(std::vector<int32_t>(512, 0));
  auto modifiers = std::make_shared<AttentionModifiers>();
  modifiers->name = "alibi-document";
  modifiers->tensors = {slopes.view(), ids.view()};
  modifiers->score_mod = [](const Tensor &score, const ModifierIndices &at) {
    return score + load(at.captured[0] + at.head) * (at.kv_idx - at.q_idx).to(DType::f32);
  };
  modifiers->score_mod_grad = [](const Tensor &score, const ModifierIndices &) { return score * 0.0 + 1.0; };
  modifiers->mask_mod = [](const ModifierIndices &at) {
    return load(at.captured[1] + at.q_idx) == load(at.captured[1] + at.kv_idx);
  };
  DenseAttention p;
  p.batch = 1, p.seqQ = 512, p.seqK = 512, p.headsQ = 8, p.headsKV = 8, p.D = 128;
  HostTensor q = HostTensor::random(DType::bf16, p.shape(512, 8), 7), k = HostTensor::random(DType::bf16, p.shape(512, 8), 8);
  HostTensor out = HostTensor::poisoned(DType::bf16, q.shape()), lse = HostTensor::poisoned(DType::f32, {1, 8, 512});
  AttentionBackwardArgs b;
  b.forward.q = q.view(), b.forward.k = k.view(), b.forward.v = k.view(), b.forward.out = out.view();
  b.forward.lse = lse.view(), b.forward.mask = AttentionMask::causal_top_left, b.forward.modifiers = modifiers;
  const AttentionProblem problem = checked_attention(b.forward, cpu());
  AttentionLaunch forward =
      prepare_attention(b.forward, problem, cpu(), default_attention_tile(b.forward, problem, "sm_90a"));
  CompiledKernel kernel = forward.compile("sm_90a");
  EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
  HostTensor dq = HostTensor::poisoned(DType::bf16, q.shape()), dk = HostTensor::poisoned(DType::bf16, k.shape());
  b.dout = q.view(), b.dq = dq.view(), b.dk = dk.view(), b.dv = dk.view();
  Launches backward = prepare_attention_backward(b, cpu(), {});
  EXPECT_EQ(backward.steps.size(), 4u); // (the rows, the block mask, the keys, dq from its sums)
  for (const Launches::Step &step : backward.steps) {
    std::vector<Arg> args = step.args;
    for (const Launches::Scratch &s : step.workspace)
      args[s.argument] = Arg::device_pointer(256 + s.offset, backward.workspace_bytes - s.offset);
    CompiledKernel compiled = step.kernel.compile(step.config, step.kernel.specialize(args), "sm_90a");
    EXPECT_EQ(compiled.spill_stores, 0) << step.kernel.name() << "\n" << compiled.ptxas_log;
  }
}
