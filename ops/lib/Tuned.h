//===- Tuned.h - what the ops share with the autotuner --------*- C++ -*-===//
//
// The config a call without one runs: the tuned one from the store, tuned
// now when KILN_AUTOTUNE asks, or the op's defaults; remembered per
// process. (Checking a tuned config's output: DeviceCheck.h.)
//
//===----------------------------------------------------------------------===//

#pragma once

#include <kiln/autotune.h>
#include <kiln/ops/view.h>

#include <functional>
#include <string>
#include <vector>

namespace kiln::ops {

/// Whether two views' extents share memory.
bool overlaps(const TensorView &a, const TensorView &b);

/// The config for problem `key` of `op` on the stream's device: the stored
/// winner when it is a point of the op's `space` for this problem (one that
/// is not, or does not parse, is ignored with a warning: autotune::tuned),
/// else tuned now (when KILN_AUTOTUNE=quick|full, on a GPU, and `tunable`:
/// running configs must not destroy inputs), else empty (the op's
/// defaults). KILN_PRINT_AUTOTUNING=1 says which.
Config chosen_config(const std::string &op, const std::string &key, const Stream &stream, bool tunable,
                     const std::function<ConfigSpace()> &space, const std::function<autotune::Task()> &task);

} // namespace kiln::ops
