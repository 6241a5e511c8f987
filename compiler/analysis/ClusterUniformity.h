//===- ClusterUniformity.h - values every program of a cluster shares -*- C++ -*-===//
//
// Programs launched as a thread-block cluster (tile.cluster_size) may share
// a copy: one program's copy engine fills the same slot of every program's
// shared memory (multicast). That is only right when every program of the
// cluster would have copied the same block, i.e. when the copy's
// coordinates are equal in all of them. This analysis finds the values that
// are: built from constants, kernel arguments, the grid's sizes, program
// ids along y and z, and tile.cluster_id by pure operations, loops whose
// bounds are such values and whose carried values start and move so, and
// branches on them. Program ids along x, tile.cluster_rank and anything
// read from memory differ.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseSet.h"

namespace kiln::gpu {

class ClusterUniformity {
public:
  /// Analyzes every value under `root` (a kernel function).
  explicit ClusterUniformity(mlir::Operation *root);

  /// Whether `value` is the same in every program of a cluster.
  bool isUniform(mlir::Value value) const { return !varying_.contains(value); }

private:
  /// One pass over the operations; returns whether a value became varying.
  bool propagate(mlir::Operation *root);
  bool markVarying(mlir::Value value) { return varying_.insert(value).second; }

  llvm::DenseSet<mlir::Value> varying_;
};

} // namespace kiln::gpu
