// A process-wide list of named kernels, so tools (kilnc, autotune) can find
// the examples' and the ops library's kernels by name.
#pragma once

#include <kiln/kernel.h>

#include <string>
#include <vector>

namespace kiln {

struct RegisteredKernel {
  std::string name;
  std::string description;
  Kernel kernel;
};

/// Adds `kernel` under its name; a second kernel of the same name throws.
void register_kernel(Kernel kernel, std::string description);
const std::vector<RegisteredKernel> &registered_kernels();
/// The kernel of that name, or nullptr.
const RegisteredKernel *find_kernel(const std::string &name);

} // namespace kiln

/// Registers a kernel at program start: `KILN_REGISTER_KERNEL(vector_add,
/// "c = a + b", kiln::jit(add, "vector_add").defaults({{"BLOCK", 1024}}));`
#define KILN_REGISTER_KERNEL(id, description, kernel_expr)                                    \
  static const bool kiln_registered_##id = [] {                                                \
    ::kiln::register_kernel(kernel_expr, description);                                         \
    return true;                                                                               \
  }()
