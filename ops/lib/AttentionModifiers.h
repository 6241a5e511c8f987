//===- AttentionModifiers.h - score and mask modifiers in the kernels -*- C++ -*-===//
//
// What the attention kernels, forward and backward, share about a call's
// score and mask modifiers (AttentionModifiers): how they tell kernels
// apart, where they are evaluated, how a call's are checked.
//
//===----------------------------------------------------------------------===//

#pragma once

#include <kiln/ops/library.h>

#include <string>
#include <vector>

namespace kiln::ops {

/// What tells the kernels of modifiers `m` (null: none) apart: their name
/// and their tensors' dtypes.
std::string modifier_key(const AttentionModifiers *m);

/// Where the modifiers are evaluated for `rows` (query positions, [BM])
/// by `keys` (key positions, [BN]) of query head `head` of batch `batch`
/// in a sequence of `seqQ` queries and `seqK` keys: the kernel's arguments
/// from `captured` on are the modifiers' tensors. Positions past the
/// sequence (a block's rows past its end, whose scores are hidden anyway)
/// are clamped into it, so that a modifier indexing a tensor by them reads
/// within it.
ModifierIndices modifier_indices(const Tensor &batch, const Tensor &head, const Tensor &rows, const Tensor &keys,
                                 const Tensor &seqQ, const Tensor &seqK, const AttentionModifiers &m,
                                 const std::vector<Tensor> &args, int captured);

/// The tensors (views) a call's modifiers read, checked (`op` names the
/// op in errors): a name, and tensors of device memory.
std::vector<const TensorView *> checked_modifier_tensors(const AttentionModifiers &m, const std::string &op);

} // namespace kiln::ops
