// The CPU interpreter of tile-dialect modules (runtime/interp): runs every
// program instance of a grid, block by block, with the exact semantics the
// tile dialect documents. Internal to Kiln (includes no MLIR).
#pragma once

#include <kiln/module.h>
#include <kiln/runtime.h>

#include <iosfwd>
#include <memory>
#include <vector>

namespace kiln::interp {

/// A module compiled for the interpreter: its kernel's operations turned
/// into a list of closures over value slots, ready to run many times.
class Program {
public:
  /// Compiles the kernel of `module` (tile stage, or traced). Throws
  /// kiln::Error naming the operation when the module holds one the
  /// interpreter does not know.
  static std::shared_ptr<const Program> compile(const Module &module);

  /// Runs the kernel on `grid` with `args` (one per kernel parameter).
  /// Memory arguments must be host memory; every load, store and atomic is
  /// checked against their extents. Device prints go to `out`. Throws
  /// kiln::Error for out-of-bounds or misaligned accesses, failed device
  /// assertions and bad arguments, naming the kernel's source line.
  void run(const Grid &grid, std::span<const Arg> args, std::ostream &out) const;

  struct Impl;
  explicit Program(std::unique_ptr<Impl> impl);
  ~Program();

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln::interp
