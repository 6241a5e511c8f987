//===- MatmulProblem.h - a checked product, planned into launches -*- C++ -*-===//
//
// What the matmul op (Matmul.cpp) and the grouped matmul op
// (GroupedMatmul.cpp) share: a product's sizes and tensors by role, and
// planning them into launches (the tile, its schedule, the kernels'
// structures and arguments).
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ops/lib/MatmulKernel.h"
#include "ops/lib/MatmulPlan.h"

namespace kiln::ops {

/// A call's product: its sizes, its tensors by role with their strides
/// (batch or group, 0 where it broadcasts; rows; columns), and what every
/// kernel of it shares (dtypes, epilogue inputs, precision, activation).
struct MatmulProblem {
  int rank = 2;
  int64_t M = 0, N = 0, K = 0, batches = 1;
  int64_t groups = 1; ///< (grouped) B's matrices, the tile table's groups
  /// (grouped) B's groups lie one below the other as the copy engine would
  /// describe them: group stride = rows of a group's matrix as stored x
  /// their stride
  bool groupsStacked = false;
  const TensorView *views[matmul_kernel::OPERANDS] = {};
  int64_t strides[matmul_kernel::OPERANDS][3] = {};
  matmul_kernel::Structure s;
};

/// The launches of checked problem `p` (not empty), with `config`
/// overriding the tile. `shape` holds what its views say of the product as
/// a 2-D or batched one (a grouped product's b: group 0's matrix), and
/// alpha.
MatmulLaunch plan_matmul(const MatmulProblem &p, const MatmulArgs &shape, const Stream &stream,
                         const Config &config);

/// Whether the copy engine can read a 2-D operand as stored: one of its
/// dimensions contiguous, the other's stride a multiple of 16 bytes, the
/// base 16-byte aligned.
bool copy_engine_reads(const TensorView &v);

} // namespace kiln::ops
