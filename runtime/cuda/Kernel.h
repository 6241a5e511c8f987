// Loading compiled kernels onto a CUDA device and launching them.
// Internal to Kiln.
#pragma once

#include "runtime/cuda/Driver.h"

#include <kiln/program.h>
#include <kiln/runtime.h>

#include <memory>
#include <span>

#include <string>
#include <vector>

namespace kiln::cuda {

struct LoadedKernel {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  int device = 0;
  int threads = 128;       ///< per program
  int shared_memory = 0;   ///< dynamic shared memory bytes
  int cluster_size = 1;    ///< programs a cluster (compiled into the kernel)
};

/// Loads a cubin (or NUL-terminated PTX, which the driver compiles) onto
/// device `ordinal` and finds `name` in it; raises its dynamic shared
/// memory limit when it needs more than the default 48 KB.
LoadedKernel load(const std::vector<char> &image, const std::string &name, int ordinal, int threads,
                  int shared_memory, int cluster_size = 1);

/// `kernel` (compiled for an NVIDIA target) loaded on CUDA device `device`:
/// its cubin when it runs there, else its PTX, which the driver compiles.
std::shared_ptr<const Program> load_program(const CompiledKernel &kernel, std::span<const ElementType> parameters,
                                            const Device &device);

/// Launches with `params` (one pointer per kernel parameter, to its value).
void launch(const LoadedKernel &kernel, const Grid &grid, void *stream, void **params);

/// How many programs of the kernel one multiprocessor holds at once.
int max_active_blocks_per_multiprocessor(const LoadedKernel &kernel);
/// How many clusters of a kernel compiled for clusters its device runs at
/// once (their programs must share a GPC).
int max_active_clusters(const LoadedKernel &kernel);

} // namespace kiln::cuda
