// kiln-info: Kiln's version and the devices it can run on.
#include <kiln/error.h>
#include <kiln/runtime.h>
#include <kiln/version.h>

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  if (argc > 1) {
    const bool version = std::strcmp(argv[1], "--version") == 0;
    if (version && argc == 2) {
      std::printf("kiln-info (Kiln %s)\n", kiln::version());
      return 0;
    }
    std::fprintf(std::strcmp(argv[1], "--help") == 0 && argc == 2 ? stdout : stderr,
                 "usage: kiln-info [--version]\n  Kiln's version and the devices it can run on.\n");
    return std::strcmp(argv[1], "--help") == 0 && argc == 2 ? 0 : 2;
  }
  std::printf("Kiln %s\n", kiln::version());
  std::printf("device interp: the CPU interpreter\n");
  if (std::string reason = kiln::Device::cuda_unavailable_reason(); !reason.empty()) {
    std::printf("CUDA: unavailable (%s)\n", reason.c_str());
  } else {
    int version = kiln::Device::cuda_driver_version();
    std::printf("CUDA driver %d.%d\n", version / 1000, (version % 1000) / 10);
  }
  if (std::string reason = kiln::Device::hip_unavailable_reason(); !reason.empty()) {
    std::printf("HIP: unavailable (%s)\n", reason.c_str());
  } else {
    int version = kiln::Device::hip_runtime_version(); // major * 10^7 + minor * 10^5 + patch
    std::printf("HIP runtime %d.%d\n", version / 10000000, (version / 100000) % 100);
  }
  try {
    for (const kiln::Device &device : kiln::Device::gpus()) {
      const bool amd = device.kind() == kiln::DeviceKind::hip;
      std::printf("device %s:%d: %s, %s, %d %s, %.1f bytes of memory bandwidth a %s-cycle\n", amd ? "hip" : "cuda",
                  device.ordinal(), device.name().c_str(), device.arch().c_str(), device.multiprocessors(),
                  amd ? "compute units" : "multiprocessors", device.memory_bytes_per_multiprocessor_cycle(),
                  amd ? "compute-unit" : "multiprocessor");
    }
  } catch (const kiln::Error &e) {
    std::fprintf(stderr, "kiln-info: %s\n", e.what());
    return 1;
  }
  return 0;
}
