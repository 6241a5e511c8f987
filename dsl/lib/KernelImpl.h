//===- KernelImpl.h - what a kiln::Kernel holds --------------*- C++ -*-===//

#pragma once

#include <kiln/compiler.h>
#include <kiln/kernel.h>
#include <kiln/program.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln {

/// A launch's specialization (ArgSpecialization) of up to 32 arguments in
/// two words: a 2-bit code per argument and a bit per nonpositive integer.
struct PackedSpecialization {
  uint64_t codes = 0;
  uint32_t nonpositive = 0;
  friend bool operator==(const PackedSpecialization &, const PackedSpecialization &) = default;
};

struct Kernel::Impl {
  std::string name;
  std::vector<ElementType> signature;
  Body body;
  Config defaults;
  ConfigSpace space;
  std::string library; ///< see Kernel::library; empty for users' kernels

  /// The kernel cache, one entry per (config merged over the defaults,
  /// specialization, target): what compile() made in this process (so a
  /// launch after the autotuner's compile neither traces nor reads the disk
  /// cache again), and the programs loaded from it, per device.
  struct Entry {
    std::shared_ptr<const CompiledKernel> compiled; ///< (none for the interpreter)
    std::map<int, std::shared_ptr<const Program>> programs; ///< per device ordinal
  };
  std::mutex mutex;
  std::map<std::string, Entry> cache;

  /// The launch path's first look: (launch config as given, specialization
  /// bits, device) -> program, compared without merging configs or building
  /// any string.
  struct RecentLaunch {
    Config config;
    PackedSpecialization specialization;
    Device device;
    std::shared_ptr<const Program> program;
  };
  std::vector<RecentLaunch> recent;
};

} // namespace kiln
