// Kernels loaded by the HIP runtime. Internal to runtime/.
#pragma once

#include <kiln/program.h>

#include <memory>
#include <span>

namespace kiln::hip {

/// `kernel` (compiled for an AMD target, with its code object) loaded on
/// HIP device `device`; throws kiln::Error when it was compiled for another
/// target than the device's, has no code object, or the runtime refuses it.
std::shared_ptr<const Program> load_program(const CompiledKernel &kernel, std::span<const ElementType> parameters,
                                            const Device &device);

} // namespace kiln::hip
