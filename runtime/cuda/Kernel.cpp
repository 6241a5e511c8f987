#include "runtime/cuda/Kernel.h"

#include <kiln/error.h>

namespace kiln::cuda {

LoadedKernel load(const std::vector<char> &image, const std::string &name, int ordinal, int threads,
                  int shared_memory, int cluster_size) {
  const Driver &d = driver();
  use_device(ordinal);
  LoadedKernel kernel;
  kernel.device = ordinal;
  kernel.threads = threads;
  kernel.shared_memory = shared_memory;
  kernel.cluster_size = cluster_size;
  check(d.cuModuleLoadData(&kernel.module, image.data()), ("loading kernel " + name).c_str());
  check(d.cuModuleGetFunction(&kernel.function, kernel.module, name.c_str()), ("finding kernel " + name).c_str());
  if (shared_memory > 48 * 1024)
    check(d.cuFuncSetAttribute(kernel.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_memory),
          ("raising the shared memory limit of " + name + " to the " + std::to_string(shared_memory) +
           " bytes it uses (more than the GPU offers a block?)").c_str());
  return kernel;
}

void launch(const LoadedKernel &kernel, const Grid &grid, void *stream, void **params) {
  const Driver &d = driver();
  use_device(kernel.device);
  check(d.cuLaunchKernel(kernel.function, grid.x, grid.y, grid.z, kernel.threads, 1, 1,
                         kernel.shared_memory, static_cast<CUstream>(stream), params, nullptr),
        "cuLaunchKernel");
}

int max_active_blocks_per_multiprocessor(const LoadedKernel &kernel) {
  const Driver &d = driver();
  use_device(kernel.device);
  int blocks = 0;
  check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel.function, kernel.threads,
                                                      static_cast<size_t>(kernel.shared_memory)),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return blocks;
}

int max_active_clusters(const LoadedKernel &kernel) {
  const Driver &d = driver();
  use_device(kernel.device);
  if (!d.cuOccupancyMaxActiveClusters)
    throw Error("the CUDA driver has no cuOccupancyMaxActiveClusters: thread-block clusters need CUDA 12 or newer");
  CUlaunchConfig config{static_cast<unsigned>(kernel.cluster_size), 1, 1, static_cast<unsigned>(kernel.threads), 1, 1,
                        static_cast<unsigned>(kernel.shared_memory), nullptr, nullptr, 0};
  int clusters = 0;
  check(d.cuOccupancyMaxActiveClusters(&clusters, kernel.function, &config), "cuOccupancyMaxActiveClusters");
  return clusters;
}

} // namespace kiln::cuda
