//===- NormalizationPlan.h - a normalization's launch, and its tuning -----===//

#pragma once

#include <kiln/kiln.h>
#include <kiln/ops/library.h>

#include "ops/lib/RecentPlans.h"

#include <string>
#include <vector>

namespace kiln::ops {

/// One launch of a normalization kernel, ready to queue or to compile; an
/// empty one (no arguments) when there is nothing to do.
struct NormalizationLaunch {
  Kernel kernel;
  Config config;
  Grid grid;
  std::vector<Arg> args;
  /// The arguments holding the call's tensors, views numbered in
  /// NormalizationArgs' order (x, y, weight, bias, mean, rstd).
  TensorSlots tensors;
  int eps = -1; ///< the argument holding eps, if any

  /// Points the plan at another call's tensors and eps (a call planned the
  /// same otherwise: RecentPlans).
  void rebind(const NormalizationArgs &args);

  /// Queues the launch on `stream` (nothing when there is nothing to do).
  void queue(const Stream &stream) const;
  /// Compiles it for `arch` (a GPU target such as "sm_90a").
  CompiledKernel compile(const std::string &arch) const;
};

/// Checks the arguments and plans the launch for target `arch` (default:
/// the stream's device's); `config` overrides the plan.
NormalizationLaunch prepare_normalization(Normalization op, const NormalizationArgs &args, const Stream &stream,
                                          const Config &config, const std::string &arch = "");

/// Values a thread of a one-pass program holds by default, for a program
/// of `elements` values (BLOCK_M x BLOCK_N) on a device whose memory moves
/// `bytesPerMultiprocessorCycle` (Device::memory_bytes_per_multiprocessor_cycle):
/// 16, or 32 where memory outruns the multiprocessors (more than 16 bytes a
/// multiprocessor-cycle) and that still leaves 4 warps. Fewer, fuller
/// programs then keep more of the row in flight against each program's two
/// block reductions; where memory does not outrun them, 16 is as fast
/// (docs/ops.md, "Normalizations").
int64_t one_pass_values_per_thread(int64_t elements, double bytesPerMultiprocessorCycle);

/// The plan a call without overrides takes: the tuned one for this problem
/// and device (remembered per process), tuning it first when KILN_AUTOTUNE
/// asks; else none (the defaults).
Config chosen_plan(Normalization op, const NormalizationArgs &args, const Stream &stream);

} // namespace kiln::ops
