// Loading a compiled kernel on the GPU runtime its target belongs to.

#include "runtime/cuda/Kernel.h"
#include "runtime/hip/Program.h"

#include <kiln/error.h>
#include <kiln/program.h>
#include <kiln/target.h>

namespace kiln {

std::shared_ptr<const Program> load(const CompiledKernel &kernel, std::span<const ElementType> parameters,
                                    const Device &device) {
  const bool amd = targets_amd(kernel.arch);
  const DeviceKind wanted = amd ? DeviceKind::hip : DeviceKind::cuda;
  if (device.kind() != wanted)
    throw Error("kernel '" + kernel.name + "' is compiled for " + kernel.arch + ": it loads on a " +
                (amd ? "HIP" : "CUDA") + " device, not on " + device.name());
  return amd ? hip::load_program(kernel, parameters, device) : cuda::load_program(kernel, parameters, device);
}

} // namespace kiln
