//===- KernelImpl.h - what a kiln::Kernel holds --------------*- C++ -*-===//

#pragma once

#include "runtime/cuda/Kernel.h"

#include <kiln/compiler.h>
#include <kiln/kernel.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln {

namespace interp {
class Program;
}

/// A launch's specialization (ArgSpecialization) of up to 32 arguments in
/// two words: a 2-bit code per argument and a bit per nonpositive integer.
struct PackedSpecialization {
  uint64_t codes = 0;
  uint32_t nonpositive = 0;
  friend bool operator==(const PackedSpecialization &, const PackedSpecialization &) = default;
};

/// A kernel loaded on a GPU, and the tensor maps its launches build.
struct GpuKernel {
  cuda::LoadedKernel loaded;
  std::vector<TensorMapSpec> tensor_maps;
};

struct Kernel::Impl {
  std::string name;
  std::vector<ElementType> signature;
  Body body;
  Config defaults;
  ConfigSpace space;
  std::string library; ///< see Kernel::library; empty for users' kernels

  /// Compiled code per "config|specialization" (and, for GPUs, device).
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const interp::Program>> interpreted;
  std::map<std::string, std::shared_ptr<const GpuKernel>> loaded;
  /// What compile() made in this process, per "config|specialization|arch":
  /// a launch after a compile (the autotuner's) neither traces nor reads
  /// the disk cache again.
  std::map<std::string, std::shared_ptr<const CompiledKernel>> compiled;

  /// The launch path's first look: (launch config as given, specialization
  /// bits, device) -> loaded kernel, compared without building any string.
  struct RecentLaunch {
    Config config;
    PackedSpecialization specialization;
    int device;
    std::shared_ptr<const GpuKernel> kernel;
  };
  std::vector<RecentLaunch> recent;
};

} // namespace kiln
