// kiln-info: Kiln's version and the devices it can run on.
#include <kiln/error.h>
#include <kiln/runtime.h>
#include <kiln/version.h>

#include <cstdio>

int main() {
  std::printf("Kiln %s\n", kiln::version());
  std::printf("device interp: the CPU interpreter\n");
  std::string reason = kiln::Device::cuda_unavailable_reason();
  if (!reason.empty()) {
    std::printf("CUDA: unavailable (%s)\n", reason.c_str());
    return 0;
  }
  int version = kiln::Device::cuda_driver_version();
  std::printf("CUDA driver %d.%d\n", version / 1000, (version % 1000) / 10);
  try {
    for (int ordinal = 0;; ++ordinal) {
      kiln::Device device = kiln::Device::cuda(ordinal);
      int cc = device.compute_capability();
      std::printf("device cuda:%d: %s, sm_%d, %d multiprocessors, %.1f bytes of memory bandwidth a "
                  "multiprocessor-cycle\n",
                  ordinal, device.name().c_str(), cc, device.multiprocessors(),
                  device.memory_bytes_per_multiprocessor_cycle());
    }
  } catch (const kiln::Error &) {
    // past the last device
  }
  return 0;
}
