// Loading compiled kernels onto a CUDA device and launching them.
// Internal to Kiln.
#pragma once

#include "runtime/cuda/Driver.h"

#include <kiln/runtime.h>

#include <string>
#include <vector>

namespace kiln::cuda {

struct LoadedKernel {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  int device = 0;
  int threads = 128;       ///< per program
  int shared_memory = 0;   ///< dynamic shared memory bytes
};

/// Loads a cubin (or NUL-terminated PTX, which the driver compiles) onto
/// device `ordinal` and finds `name` in it; raises its dynamic shared
/// memory limit when it needs more than the default 48 KB.
LoadedKernel load(const std::vector<char> &image, const std::string &name, int ordinal, int threads,
                  int shared_memory);

/// Launches with `params` (one pointer per kernel parameter, to its value).
void launch(const LoadedKernel &kernel, const Grid &grid, void *stream, void **params);

} // namespace kiln::cuda
