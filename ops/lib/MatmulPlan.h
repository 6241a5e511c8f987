//===- MatmulPlan.h - a matmul's launch, and its tuning --------*- C++ -*-===//

#pragma once

#include <kiln/kiln.h>
#include <kiln/ops/library.h>

#include <vector>

namespace kiln::ops {

/// One launch of a matmul kernel, ready to queue or to compile; an empty
/// kernel (no signature) when there is nothing to do.
struct MatmulLaunch {
  Kernel kernel;
  Config config;
  Grid grid;
  std::vector<Arg> args;
};

/// Checks the arguments and plans the launch; `config` overrides the tile.
MatmulLaunch prepare_matmul(const MatmulArgs &args, const Stream &stream, const Config &config);

/// The problem as the tuning store keys it (sizes bucketed).
std::string matmul_problem_key(const MatmulArgs &args);

/// The tile a call without one takes (tuned, or empty for the defaults).
Config chosen_matmul_config(const MatmulArgs &args, const Stream &stream);

} // namespace kiln::ops
