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

/// A and B as the copy engine cannot read them (MatmulPadding.cpp), copied
/// first into the stream's workspace with rows padded to 16 bytes: the
/// copies' launches, and the problem as the product's kernel sees it.
class PaddedOperands {
public:
  /// The largest size a padded copy's columns may have (its launch's
  /// second grid dimension counts them by 128).
  static constexpr int64_t kMaxColumns = int64_t(65535) * 128;

  /// Pads A and / or B of problem `p` (2-D) with shape `m`.
  PaddedOperands(const MatmulProblem &p, const MatmulArgs &m, bool padA, bool padB, const Stream &stream);
  PaddedOperands(const PaddedOperands &) = delete;
  PaddedOperands &operator=(const PaddedOperands &) = delete;

  /// The problem and shape with the padded operands' copies in their place.
  const MatmulProblem &problem() const { return problem_; }
  const MatmulArgs &shape() const { return shape_; }
  /// Makes a product step read the padded operands from the workspace.
  void redirect(MatmulLaunch::Step &step) const;

  std::vector<MatmulLaunch::Step> steps; ///< the copies
  size_t bytes = 0;                      ///< of workspace they take, from offset 0

private:
  MatmulProblem problem_;
  MatmulArgs shape_;
  TensorView copies_[2];
  size_t offsets_[2] = {};
  bool padded_[2] = {};
};

/// Whether the copy engine can read a 2-D operand as stored: one of its
/// dimensions contiguous, the other's stride a multiple of 16 bytes, the
/// base 16-byte aligned.
bool copy_engine_reads(const TensorView &v);

} // namespace kiln::ops
