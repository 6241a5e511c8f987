// The CUDA Driver API, loaded at run time with dlopen: Kiln has no link-time
// CUDA dependency, and a machine without a driver gets a plain message.
// Internal to runtime/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::cuda {

// The few Driver API types Kiln uses, declared as the driver's ABI defines
// them (cuda.h is not needed to build).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = uint64_t;
struct CUctx_st;
using CUcontext = CUctx_st *;
struct CUmod_st;
using CUmodule = CUmod_st *;
struct CUfunc_st;
using CUfunction = CUfunc_st *;
struct CUstream_st;
using CUstream = CUstream_st *;
struct CUevent_st;
using CUevent = CUevent_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36;
constexpr int CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;

/// A launch's shape, for occupancy queries (CUlaunchConfig; Kiln passes no
/// launch attributes: a kernel's cluster size is compiled into it).
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  void *attrs;
  unsigned numAttrs;
};

/// Entry points of libcuda.so.1.
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int blockSize, size_t sharedBytes);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  /// Builds a tensor map for the copy engine (TMA); null where the driver
  /// predates it (before CUDA 12).
  CUresult (*cuTensorMapEncodeTiled)(void *tensorMap, int dataType, uint32_t rank, void *globalAddress,
                                     const uint64_t *globalDim, const uint64_t *globalStrides,
                                     const uint32_t *boxDim, const uint32_t *elementStrides, int interleave,
                                     int swizzle, int l2Promotion, int oobFill);
  /// How many clusters of a kernel run at once; null where the driver
  /// predates clusters (before CUDA 12).
  CUresult (*cuOccupancyMaxActiveClusters)(int *numClusters, CUfunction, const CUlaunchConfig *);
};

/// The loaded driver, initialized; throws kiln::Error saying why when there
/// is no usable driver (library missing, symbol missing, cuInit failing).
const Driver &driver();
/// Whether driver() would succeed (never throws).
bool driver_available();

/// Throws kiln::Error "<what>: <CUDA error name>: <description>" unless
/// `result` is CUDA_SUCCESS.
void check(CUresult result, const char *what);

/// Makes device `ordinal`'s primary context current on this thread (a
/// thread remembers the last one it made current, so repeated calls on the
/// launch path cost no driver call).
void use_device(int ordinal);
/// The CUdevice of `ordinal` (making its context current).
CUdevice device_handle(int ordinal);

} // namespace kiln::cuda
