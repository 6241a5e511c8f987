//===- Launches.h - an op's generated kernels, launched in order -*- C++ -*-===//
//
// A call an op planned into launches of its generated kernels, one after
// another on the stream, sharing the stream's workspace: what the matmul
// ops (split-K's partial tiles, padded operands, a grouped product's tile
// table) and attention's backward pass (the rows' dO·O, dQ's f32 sums)
// keep between their kernels.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ops/lib/RecentPlans.h"

#include <kiln/kiln.h>

#include <vector>

namespace kiln::ops {

struct Launches {
  /// An argument the stream's workspace fills: its address plus `offset`
  /// (a multiple of kWorkspaceAlignment).
  struct Scratch {
    int argument;
    size_t offset;
  };
  struct Step {
    Kernel kernel;
    Config config;
    Grid grid;
    std::vector<Arg> args;
    /// The arguments in the workspace.
    std::vector<Scratch> workspace;
    /// The arguments holding the call's tensors, views numbered in the
    /// op's own order (for rebinding a reused plan).
    TensorSlots tensors;
    int alpha = -1; ///< the argument holding alpha, if any
  };
  std::vector<Step> steps;
  size_t workspace_bytes = 0; ///< taken from the stream's workspace when queued

  void queue(const Stream &stream) const;
  /// Compiles every step; returns the one using the most registers.
  CompiledKernel compile(const std::string &arch) const;
};

} // namespace kiln::ops
