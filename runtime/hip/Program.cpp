//===- Program.cpp - kernels loaded by the HIP runtime, and their launches ===//
//
// A code object loads as a module; a launch passes one pointer per
// parameter to its value, as the CUDA driver takes them. The LDS a kernel
// uses is in its code object, so a launch asks for none; a workgroup is
// num_warps wavefronts of the target's width.
//
//===----------------------------------------------------------------------===//

#include "runtime/hip/Program.h"

#include "runtime/Arguments.h"
#include "runtime/hip/Runtime.h"

#include <kiln/error.h>

#include <vector>

namespace kiln::hip {

namespace {

class HipProgram final : public Program {
public:
  HipProgram(const CompiledKernel &kernel, std::span<const ElementType> parameters, const Device &device,
             hipFunction_t function)
      : name_(kernel.name), parameters_(parameters.begin(), parameters.end()), device_(device),
        function_(function), threads_(kernel.num_warps * kernel.threads_per_warp) {}

  void launch(const Grid &grid, const Stream &stream, std::span<const Arg> args) const override {
    check_arguments(name_, parameters_, args);
    if (grid.size() == 0)
      return; // an empty grid runs nothing
    if (stream.device() != device_)
      throw Error("kernel '" + name_ + "' is loaded on hip:" + std::to_string(device_.ordinal()) +
                  ", the launch's stream is on " + stream.device().name());
    // A descriptor's tensor-map placeholder is an unused pointer on AMD
    // GPUs (no copy engine: the kernel reads the memory after it). Up to
    // kInline parameters on the stack: the launch path allocates nothing.
    constexpr size_t kInline = 32;
    uint64_t inlineSlots[kInline] = {};
    void *inlinePointers[kInline];
    std::vector<uint64_t> heapSlots;
    std::vector<void *> heapPointers;
    if (args.size() > kInline) {
      heapSlots.assign(args.size(), 0);
      heapPointers.resize(args.size());
    }
    uint64_t *slots = args.size() > kInline ? heapSlots.data() : inlineSlots;
    void **pointers = args.size() > kInline ? heapPointers.data() : inlinePointers;
    for (size_t i = 0; i < args.size(); ++i) {
      if (parameters_[i].descriptor_rank == 0)
        slots[i] = parameter_slot(parameters_[i], args[i], i, name_, DeviceKind::hip);
      pointers[i] = &slots[i];
    }
    use_device(device_.ordinal());
    check(runtime().hipModuleLaunchKernel(function_, grid.x, grid.y, grid.z, threads_, 1, 1, 0,
                                          static_cast<hipStream_t>(stream.native()), pointers, nullptr),
          "hipModuleLaunchKernel");
  }

  int cluster_size() const override { return 1; }

  int resident_clusters() const override {
    use_device(device_.ordinal());
    int blocks = 0;
    check(runtime().hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, function_, threads_, 0),
          "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor");
    return blocks * device_.multiprocessors();
  }

private:
  std::string name_;
  std::vector<ElementType> parameters_;
  Device device_;
  hipFunction_t function_;
  int threads_;
};

} // namespace

std::shared_ptr<const Program> load_program(const CompiledKernel &kernel, std::span<const ElementType> parameters,
                                            const Device &device) {
  const std::string &arch = arch_of(device.ordinal());
  if (kernel.arch != arch)
    throw Error("kernel '" + kernel.name + "' is compiled for " + kernel.arch + "; HIP device " +
                std::to_string(device.ordinal()) + " is a " + arch);
  if (kernel.code_object.empty())
    throw Error("kernel '" + kernel.name + "' has no code object: linking it needs ld.lld (set KILN_LD_LLD)");
  use_device(device.ordinal());
  hipModule_t module = nullptr;
  check(runtime().hipModuleLoadData(&module, kernel.code_object.data()), ("loading kernel " + kernel.name).c_str());
  hipFunction_t function = nullptr;
  if (hipError_t result = runtime().hipModuleGetFunction(&function, module, kernel.name.c_str()); result != hipSuccess) {
    runtime().hipModuleUnload(module);
    check(result, ("finding kernel " + kernel.name).c_str());
  }
  return std::make_shared<const HipProgram>(kernel, parameters, device, function);
}

} // namespace kiln::hip
