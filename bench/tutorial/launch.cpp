// libkiln_tutorial: launches the tutorial kernels by name from Python
// (ctypes), on another framework's CUDA memory and stream, so that
// tutorial_vs_triton.py times Kiln and Triton under one timer.
#include <kiln/kiln.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

void report(const std::string &message, char *error, size_t error_bytes) {
  if (error == nullptr || error_bytes == 0)
    return;
  size_t n = std::min(message.size(), error_bytes - 1);
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

} // namespace

/// Launches registered kernel `kernel` with `config` ("K=V,...") on grid
/// (gx, gy, gz) and CUstream `stream` of CUDA device 0. Argument i is
/// described by kinds[i]: 'p' a device pointer (integers[i] the address,
/// bytes[i] its extent), 'i' an integer (integers[i]), 'f' a float
/// (floats[i]). Returns 0, or 1 with the reason in `error`.
extern "C" int kiln_tutorial_launch(const char *kernel, const char *config, uint32_t gx, uint32_t gy, uint32_t gz,
                                    const char *kinds, const int64_t *integers, const int64_t *bytes,
                                    const double *floats, void *stream, char *error, size_t error_bytes) {
  try {
    const kiln::RegisteredKernel *found = kiln::find_kernel(kernel);
    if (found == nullptr)
      throw kiln::Error(std::string("no kernel named '") + kernel + "'");
    std::vector<kiln::Arg> args;
    for (size_t i = 0; kinds[i] != '\0'; ++i) {
      switch (kinds[i]) {
      case 'p':
        args.push_back(kiln::Arg::device_pointer(static_cast<uint64_t>(integers[i]), static_cast<size_t>(bytes[i])));
        break;
      case 'i':
        args.push_back(kiln::Arg(integers[i]));
        break;
      case 'f':
        args.push_back(kiln::Arg(static_cast<float>(floats[i])));
        break;
      default:
        throw kiln::Error(std::string("argument kind '") + kinds[i] + "' is not p, i or f");
      }
    }
    static const kiln::Device device = kiln::Device::cuda(0);
    found->kernel.launch_with(kiln::Grid(gx, gy, gz), kiln::Config::parse(config),
                              kiln::Stream::wrap(device, stream), args);
    return 0;
  } catch (const std::exception &e) {
    report(e.what(), error, error_bytes);
    return 1;
  }
}
