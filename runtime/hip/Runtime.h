// AMD's HIP runtime (libamdhip64), loaded at run time with dlopen as the
// CUDA driver is: Kiln has no link-time ROCm dependency, and a machine
// without the library or without an AMD GPU gets a plain message.
// Internal to runtime/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::hip {

// The HIP types and values Kiln uses, declared as the runtime's ABI defines
// them (hip_runtime_api.h is not needed to build).
using hipError_t = int;
using hipDevice_t = int;
using hipDeviceptr_t = void *;
struct ihipModule_t;
using hipModule_t = ihipModule_t *;
struct ihipModuleSymbol_t;
using hipFunction_t = ihipModuleSymbol_t *;
struct ihipStream_t;
using hipStream_t = ihipStream_t *;
struct ihipEvent_t;
using hipEvent_t = ihipEvent_t *;

constexpr hipError_t hipSuccess = 0;
constexpr unsigned hipStreamNonBlocking = 1;

/// Device attributes Kiln reads (hipDeviceAttribute_t; the same values in
/// ROCm 5's headers and 6's).
enum Attribute : int {
  kClockRate = 5,               ///< kHz
  kMemoryBusWidth = 59,         ///< bits
  kMemoryClockRate = 60,        ///< kHz
  kMultiprocessorCount = 63,    ///< compute units
};

/// Entry points of libamdhip64.
struct Runtime {
  hipError_t (*hipInit)(unsigned);
  hipError_t (*hipRuntimeGetVersion)(int *);
  hipError_t (*hipGetDeviceCount)(int *);
  hipError_t (*hipSetDevice)(int);
  hipError_t (*hipDeviceGetName)(char *, int, hipDevice_t);
  hipError_t (*hipDeviceGetAttribute)(int *, int, int);
  hipError_t (*hipMalloc)(void **, size_t);
  hipError_t (*hipFree)(void *);
  hipError_t (*hipMemcpyHtoD)(hipDeviceptr_t, const void *, size_t);
  hipError_t (*hipMemcpyDtoH)(void *, hipDeviceptr_t, size_t);
  hipError_t (*hipMemsetD8)(hipDeviceptr_t, unsigned char, size_t);
  hipError_t (*hipMemcpyDtoDAsync)(hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t);
  hipError_t (*hipModuleLoadData)(hipModule_t *, const void *);
  hipError_t (*hipModuleGetFunction)(hipFunction_t *, hipModule_t, const char *);
  hipError_t (*hipModuleUnload)(hipModule_t);
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, hipStream_t, void **, void **);
  hipError_t (*hipModuleOccupancyMaxActiveBlocksPerMultiprocessor)(int *, hipFunction_t, int blockSize,
                                                                   size_t sharedBytes);
  hipError_t (*hipStreamCreateWithFlags)(hipStream_t *, unsigned);
  hipError_t (*hipStreamDestroy)(hipStream_t);
  hipError_t (*hipStreamSynchronize)(hipStream_t);
  hipError_t (*hipEventCreate)(hipEvent_t *);
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*hipEventSynchronize)(hipEvent_t);
  hipError_t (*hipEventElapsedTime)(float *, hipEvent_t, hipEvent_t);
  hipError_t (*hipEventDestroy)(hipEvent_t);
  const char *(*hipGetErrorName)(hipError_t);
  const char *(*hipGetErrorString)(hipError_t);
};

/// What loading a HIP runtime found: its entry points, its version, the
/// devices' target names ("gfx942"), or why it is unusable.
struct Loaded {
  Runtime runtime{};
  int version = 0;               ///< hipRuntimeGetVersion: major * 10^7 + minor * 10^5 + patch
  std::vector<std::string> arch; ///< per device ordinal
  std::string error;             ///< empty when the runtime works
};

/// Loads the HIP runtime at `path` ("libamdhip64.so" and its versioned
/// names are searched on the library path) and asks it for its devices.
/// Never throws: a failure is in `error`.
std::shared_ptr<const Loaded> load_runtime(const std::string &path);

/// The process's HIP runtime ($KILN_HIP_LIBRARY, else libamdhip64.so, .so.7,
/// .so.6, .so.5), loaded once; throws kiln::Error saying why when it is
/// unusable (library missing, symbol missing, hipInit failing, no device).
const Runtime &runtime();
/// Whether runtime() would succeed (never throws).
bool runtime_available();
/// Why runtime() fails, or empty.
std::string unavailable_reason();
/// The loaded runtime's version (0 when none loaded).
int runtime_version();

/// Throws kiln::Error "<what>: <HIP error name>: <description>" unless
/// `result` is hipSuccess.
void check(hipError_t result, const char *what);

/// Makes device `ordinal` current on this thread (remembered per thread, so
/// repeated calls on the launch path cost no runtime call); throws when
/// there is no such device.
void use_device(int ordinal);
/// The target name of device `ordinal`, as Kiln compiles for it ("gfx942").
const std::string &arch_of(int ordinal);
/// How many HIP devices there are (0 without a usable runtime).
int device_count();
/// A device attribute (Attribute), asked once per device.
int attribute(int ordinal, Attribute which);

} // namespace kiln::hip
