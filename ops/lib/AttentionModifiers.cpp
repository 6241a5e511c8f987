//===- AttentionModifiers.cpp - score and mask modifiers in the kernels ---===//

#include "ops/lib/AttentionModifiers.h"

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

} // namespace kiln::ops
