// Programs: kernels loaded on a device, ready to launch. The one interface
// the DSL (and anything else) launches through: a GPU's program is a
// compiled kernel loaded by its driver, the interpreter's a tile-stage
// module (kiln/interpreter.h). Public header: no MLIR, no CUDA headers.
#pragma once

#include <kiln/compiled_kernel.h>
#include <kiln/dtype.h>
#include <kiln/runtime.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kiln {

/// A kernel loaded on one device.
class Program {
public:
  virtual ~Program() = default;

  /// Queues the kernel on `stream` (of the program's device; the
  /// interpreter's runs at once) over `grid`, with one argument per
  /// parameter (check_arguments' rules). Throws kiln::Error naming the
  /// argument that does not fit, or the driver's failure.
  virtual void launch(const Grid &grid, const Stream &stream, std::span<const Arg> args) const = 0;

  /// Programs launched together as a cluster, consecutive along grid x.
  virtual int cluster_size() const = 0;
  /// How many clusters (of cluster_size() programs) the device runs at once.
  virtual int resident_clusters() const = 0;
};

/// Checks a launch's arguments against the kernel `name`'s parameters: one
/// each; a descriptor's tensor-map placeholder followed by its memory,
/// sizes and strides, which must stay inside that memory. Throws
/// kiln::Error naming the argument.
void check_arguments(const std::string &name, std::span<const ElementType> parameters, std::span<const Arg> args);

/// Loads `kernel` on the GPU `device`: its cubin when it runs there, else
/// its PTX, which the driver compiles (an older target's code on a newer
/// GPU). `parameters` are the kernel's own, in order (the tensor maps the
/// compiler added follow them). Throws kiln::Error when the device is not
/// a GPU or the driver refuses the code.
std::shared_ptr<const Program> load(const CompiledKernel &kernel, std::span<const ElementType> parameters,
                                    const Device &device);

} // namespace kiln
