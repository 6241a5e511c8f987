//===- AttentionModifiers.cpp - score and mask modifiers in the kernels ---===//

#include "ops/lib/AttentionModifiers.h"

#include "ops/lib/ExprNode.h"
#include "ops/lib/Views.h"

namespace kiln::ops {

std::string modifier_key(const AttentionModifiers *m) {
  if (!m)
    return "";
  std::string key = "|mods=" + m->name + (m->score_mod ? ":score" : "") + (m->score_mod_grad ? ":grad" : "") +
                    (m->mask_mod ? ":mask" : "");
  for (const TensorView &t : m->tensors)
    key += ":" + std::string(name(t.dtype));
  return key;
}

ModifierIndices modifier_indices(const Tensor &batch, const Tensor &head, const Tensor &rows, const Tensor &keys,
                                 const Tensor &seqQ, const Tensor &seqK, const AttentionModifiers &m,
                                 const std::vector<Tensor> &args, int captured) {
  auto inside = [](const Tensor &positions, const Tensor &length) {
    return maximum(minimum(positions.to(DType::i32), length - 1), 0);
  };
  ModifierIndices at{batch.to(DType::i32), head.to(DType::i32), expand_dims(inside(rows, seqQ), 1),
                     expand_dims(inside(keys, seqK), 0), {}};
  for (size_t i = 0; i < m.tensors.size(); ++i)
    at.captured.push_back(args[captured + static_cast<int>(i)]);
  return at;
}

std::vector<const TensorView *> checked_modifier_tensors(const AttentionModifiers &m, const std::string &op) {
  if (m.name.empty())
    throw Error(op + ": modifiers need a name (the kernels they are traced into are kept by it)");
  if (m.score_mod_grad && !m.score_mod)
    throw Error(op + ": modifiers '" + m.name + "' have a score_mod_grad without a score_mod");
  std::vector<const TensorView *> views;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    check_view(m.tensors[i], op, "modifier tensor " + std::to_string(i) + " of '" + m.name + "'");
    views.push_back(&m.tensors[i]);
  }
  return views;
}

namespace {

/// An expression evaluated where a modifier is: inputs score, b, h, q_idx,
/// kv_idx; gathered elements of the captured tensors, indices clamped into
/// their `lengths` and scaled by their `strides`.
Tensor evaluate(const Expr &e, const Tensor &score, const ModifierIndices &at, const std::vector<int64_t> &lengths,
                const std::vector<int64_t> &strides) {
  Evaluator evaluator([&](int i) {
    switch (i) {
    case 0: return score;
    case 1: return at.batch;
    case 2: return at.head;
    case 3: return at.q_idx;
    default: return at.kv_idx;
    }
  });
  evaluator.gathering([&](int j, const Tensor &index) {
    const size_t t = static_cast<size_t>(j);
    Tensor inside = maximum(minimum(index.to(DType::i64), lengths[t] - 1), int64_t(0));
    return load(at.captured[t] + inside * strides[t]);
  });
  return evaluator(e);
}

} // namespace

std::shared_ptr<const AttentionModifiers>
attention_modifiers(const std::string &scoreText, const std::string &maskText,
                    const std::vector<std::pair<std::string, TensorView>> &tensors) {
  auto m = std::make_shared<AttentionModifiers>();
  ExprNames names{{"score", "b", "h", "q_idx", "kv_idx"}, {DType::f32, DType::i32, DType::i32, DType::i32, DType::i32},
                  {}, {}};
  std::vector<int64_t> lengths, strides;
  std::string tensorKey;
  for (const auto &[name, view] : tensors) {
    if (view.rank() != 1 || view.shape[0] < 1)
      throw Error("attention modifiers: tensor '" + name + "' " + view.describe() + " must be 1-D and not empty");
    names.tensors.push_back(name);
    names.tensor_dtypes.push_back(view.dtype);
    lengths.push_back(view.shape[0]);
    strides.push_back(view.effective_strides()[0]);
    m->tensors.push_back(view);
    tensorKey += "|" + name + ":" + std::to_string(lengths.back()) + ":" + std::to_string(strides.back());
  }
  // (The score takes no part in a mask.)
  ExprNames maskNames = names;
  maskNames.inputs[0] = "";
  const Expr score = scoreText.empty() ? Expr() : parse_expr(scoreText, names);
  const Expr mask = maskText.empty() ? Expr() : parse_expr(maskText, maskNames);
  if (mask.valid() && mask.dtype() != DType::i1)
    throw Error("attention modifiers: the mask '" + maskText + "' must be a condition (a comparison), not " +
                std::string(name(mask.dtype())));
  if (score.valid()) {
    const Expr slope = derivative(score, 0);
    m->score_mod = [score, lengths, strides](const Tensor &s, const ModifierIndices &at) {
      return evaluate(score, s, at, lengths, strides);
    };
    m->score_mod_grad = [slope, lengths, strides](const Tensor &s, const ModifierIndices &at) {
      return evaluate(slope, s, at, lengths, strides);
    };
  }
  if (mask.valid()) {
    m->mask_mod = [mask, lengths, strides](const ModifierIndices &at) {
      return evaluate(mask, Tensor(), at, lengths, strides);
    };
    const std::set<int> read = inputs_of(mask);
    m->mask_reads_batch = read.count(1) > 0;
    m->mask_reads_head = read.count(2) > 0;
  }
  // (The texts' canonical forms name the kernels.)
  m->name = "expr|" + (score.valid() ? score.key() : "-") + "|" + (mask.valid() ? mask.key() : "-") + tensorKey;
  return m;
}

} // namespace kiln::ops
