// Loading libcuda.so.1 and checking every call.

#include "runtime/cuda/Driver.h"

#include "runtime/Symbols.h"

#include <kiln/error.h>

#include <dlfcn.h>

#include <mutex>
#include <vector>

namespace kiln::cuda {

namespace {

struct Loaded {
  Driver driver{};
  std::string error; ///< why the driver is unusable; empty when it works
  std::vector<CUcontext> contexts;
};

template <class F> bool bind(void *library, const char *name, F &slot, std::string &error) {
  return bind_symbol(library, name, slot, error, "the CUDA driver");
}

Loaded &loaded() {
  static Loaded state = [] {
    Loaded s;
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      s.error = "no CUDA driver: libcuda.so.1 could not be loaded (" + std::string(dlerror()) + ")";
      return s;
    }
    Driver &d = s.driver;
    bool ok = bind(library, "cuInit", d.cuInit, s.error) &&
              bind(library, "cuDriverGetVersion", d.cuDriverGetVersion, s.error) &&
              bind(library, "cuDeviceGetCount", d.cuDeviceGetCount, s.error) &&
              bind(library, "cuDeviceGet", d.cuDeviceGet, s.error) &&
              bind(library, "cuDeviceGetName", d.cuDeviceGetName, s.error) &&
              bind(library, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, s.error) &&
              bind(library, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, s.error) &&
              bind(library, "cuCtxSetCurrent", d.cuCtxSetCurrent, s.error) &&
              bind(library, "cuMemAlloc_v2", d.cuMemAlloc, s.error) &&
              bind(library, "cuMemFree_v2", d.cuMemFree, s.error) &&
              bind(library, "cuMemcpyHtoD_v2", d.cuMemcpyHtoD, s.error) &&
              bind(library, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH, s.error) &&
              bind(library, "cuMemsetD8_v2", d.cuMemsetD8, s.error) &&
              bind(library, "cuModuleLoadData", d.cuModuleLoadData, s.error) &&
              bind(library, "cuModuleUnload", d.cuModuleUnload, s.error) &&
              bind(library, "cuModuleGetFunction", d.cuModuleGetFunction, s.error) &&
              bind(library, "cuFuncSetAttribute", d.cuFuncSetAttribute, s.error) &&
              bind(library, "cuLaunchKernel", d.cuLaunchKernel, s.error) &&
              bind(library, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                   d.cuOccupancyMaxActiveBlocksPerMultiprocessor, s.error) &&
              bind(library, "cuMemcpyDtoDAsync_v2", d.cuMemcpyDtoDAsync, s.error) &&
              bind(library, "cuStreamCreate", d.cuStreamCreate, s.error) &&
              bind(library, "cuStreamDestroy_v2", d.cuStreamDestroy, s.error) &&
              bind(library, "cuStreamSynchronize", d.cuStreamSynchronize, s.error) &&
              bind(library, "cuCtxSynchronize", d.cuCtxSynchronize, s.error) &&
              bind(library, "cuEventCreate", d.cuEventCreate, s.error) &&
              bind(library, "cuEventRecord", d.cuEventRecord, s.error) &&
              bind(library, "cuEventSynchronize", d.cuEventSynchronize, s.error) &&
              bind(library, "cuEventElapsedTime_v2", d.cuEventElapsedTime, s.error) &&
              bind(library, "cuEventDestroy_v2", d.cuEventDestroy, s.error) &&
              bind(library, "cuGetErrorName", d.cuGetErrorName, s.error) &&
              bind(library, "cuGetErrorString", d.cuGetErrorString, s.error);
    if (!ok)
      return s;
    d.cuTensorMapEncodeTiled = reinterpret_cast<decltype(d.cuTensorMapEncodeTiled)>(
        dlsym(library, "cuTensorMapEncodeTiled")); // optional: only descriptors read by TMA need it
    d.cuOccupancyMaxActiveClusters = reinterpret_cast<decltype(d.cuOccupancyMaxActiveClusters)>(
        dlsym(library, "cuOccupancyMaxActiveClusters")); // optional: only cluster launches need it
    CUresult result = d.cuInit(0);
    if (result != CUDA_SUCCESS) {
      const char *name = nullptr;
      d.cuGetErrorName(result, &name);
      s.error = std::string("the CUDA driver did not initialize (cuInit: ") +
                (name ? name : "error " + std::to_string(result)) + ")";
      return s;
    }
    int count = 0;
    if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
      s.error = "the CUDA driver reports no GPU";
      return s;
    }
    s.contexts.assign(count, nullptr);
    return s;
  }();
  return state;
}

} // namespace

const Driver &driver() {
  Loaded &state = loaded();
  if (!state.error.empty())
    throw Error(state.error);
  return state.driver;
}

bool driver_available() { return loaded().error.empty(); }

void check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return;
  const Driver &d = loaded().driver;
  const char *name = nullptr, *text = nullptr;
  if (d.cuGetErrorName)
    d.cuGetErrorName(result, &name);
  if (d.cuGetErrorString)
    d.cuGetErrorString(result, &text);
  throw Error(std::string(what) + ": " + (name ? name : "CUDA error " + std::to_string(result)) +
              (text ? std::string(": ") + text : std::string()));
}

CUdevice device_handle(int ordinal) {
  const Driver &d = driver();
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  Loaded &state = loaded();
  if (ordinal < 0 || ordinal >= static_cast<int>(state.contexts.size()))
    throw Error("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                std::to_string(state.contexts.size()) + " device(s))");
  CUdevice device;
  check(d.cuDeviceGet(&device, ordinal), "cuDeviceGet");
  if (!state.contexts[ordinal])
    check(d.cuDevicePrimaryCtxRetain(&state.contexts[ordinal], device), "cuDevicePrimaryCtxRetain");
  check(d.cuCtxSetCurrent(state.contexts[ordinal]), "cuCtxSetCurrent");
  return device;
}

void use_device(int ordinal) {
  // Kiln only ever makes primary contexts current, so a thread that already
  // made `ordinal`'s current needs nothing (the launch path's hot call).
  thread_local int current = -1;
  if (current == ordinal)
    return;
  device_handle(ordinal);
  current = ordinal;
}

} // namespace kiln::cuda
