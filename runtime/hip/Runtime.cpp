// Loading libamdhip64 and checking every call.

#include "runtime/hip/Runtime.h"

#include "runtime/Symbols.h"

#include <kiln/error.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace kiln::hip {

namespace {

template <class F> bool bind(void *library, const char *name, F &slot, std::string &error) {
  return bind_symbol(library, name, slot, error, "the HIP runtime");
}

bool bindAll(void *library, Runtime &r, std::string &error) {
  return bind(library, "hipInit", r.hipInit, error) &&
         bind(library, "hipRuntimeGetVersion", r.hipRuntimeGetVersion, error) &&
         bind(library, "hipGetDeviceCount", r.hipGetDeviceCount, error) &&
         bind(library, "hipSetDevice", r.hipSetDevice, error) &&
         bind(library, "hipDeviceGetName", r.hipDeviceGetName, error) &&
         bind(library, "hipDeviceGetAttribute", r.hipDeviceGetAttribute, error) &&
         bind(library, "hipMalloc", r.hipMalloc, error) && bind(library, "hipFree", r.hipFree, error) &&
         bind(library, "hipMemcpyHtoD", r.hipMemcpyHtoD, error) &&
         bind(library, "hipMemcpyDtoH", r.hipMemcpyDtoH, error) &&
         bind(library, "hipMemsetD8", r.hipMemsetD8, error) &&
         bind(library, "hipMemcpyDtoDAsync", r.hipMemcpyDtoDAsync, error) &&
         bind(library, "hipModuleLoadData", r.hipModuleLoadData, error) &&
         bind(library, "hipModuleGetFunction", r.hipModuleGetFunction, error) &&
         bind(library, "hipModuleUnload", r.hipModuleUnload, error) &&
         bind(library, "hipModuleLaunchKernel", r.hipModuleLaunchKernel, error) &&
         bind(library, "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
              r.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor, error) &&
         bind(library, "hipStreamCreateWithFlags", r.hipStreamCreateWithFlags, error) &&
         bind(library, "hipStreamDestroy", r.hipStreamDestroy, error) &&
         bind(library, "hipStreamSynchronize", r.hipStreamSynchronize, error) &&
         bind(library, "hipEventCreate", r.hipEventCreate, error) &&
         bind(library, "hipEventRecord", r.hipEventRecord, error) &&
         bind(library, "hipEventSynchronize", r.hipEventSynchronize, error) &&
         bind(library, "hipEventElapsedTime", r.hipEventElapsedTime, error) &&
         bind(library, "hipEventDestroy", r.hipEventDestroy, error) &&
         bind(library, "hipGetErrorName", r.hipGetErrorName, error) &&
         bind(library, "hipGetErrorString", r.hipGetErrorString, error);
}

std::string describe(const Runtime &r, hipError_t result) {
  const char *name = r.hipGetErrorName ? r.hipGetErrorName(result) : nullptr;
  return name ? name : "HIP error " + std::to_string(result);
}

/// The target name of device `ordinal` from its properties' gcnArchName
/// ("gfx90a:sramecc+:xnack-": the processor before the feature flags).
/// Where the properties struct keeps it depends on the entry point: ROCm 6
/// added hipGetDevicePropertiesR0600 (gcnArchName at byte 1160 of 1472) and
/// kept hipGetDeviceProperties with the struct ROCm 5 had (at 396 of 792).
std::string archName(void *library, const Runtime &r, int ordinal, std::string &error) {
  struct Abi {
    const char *symbol;
    size_t offset; ///< of gcnArchName (char[256])
  };
  using GetProperties = hipError_t (*)(void *, int);
  for (const Abi abi : {Abi{"hipGetDevicePropertiesR0600", 1160}, Abi{"hipGetDeviceProperties", 396}}) {
    auto get = reinterpret_cast<GetProperties>(dlsym(library, abi.symbol));
    if (!get)
      continue;
    std::vector<char> properties(8192, 0); // room to spare past either struct
    if (hipError_t result = get(properties.data(), ordinal); result != hipSuccess) {
      error = std::string(abi.symbol) + ": " + describe(r, result);
      return {};
    }
    std::string name(properties.data() + abi.offset, strnlen(properties.data() + abi.offset, 256));
    name = name.substr(0, name.find(':'));
    if (name.rfind("gfx", 0) != 0) {
      error = "the HIP runtime names device " + std::to_string(ordinal) + "'s target '" + name + "', not a gfx target";
      return {};
    }
    return name;
  }
  error = "the HIP runtime lacks hipGetDeviceProperties";
  return {};
}

} // namespace

std::shared_ptr<const Loaded> load_runtime(const std::string &path) {
  auto loaded = std::make_shared<Loaded>();
  Loaded &s = *loaded;
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    s.error = "no HIP runtime: " + path + " could not be loaded (" + std::string(dlerror()) + ")";
    return loaded;
  }
  Runtime &r = s.runtime;
  if (!bindAll(library, r, s.error))
    return loaded;
  r.hipRuntimeGetVersion(&s.version);
  if (hipError_t result = r.hipInit(0); result != hipSuccess) {
    s.error = "the HIP runtime (" + path + ") did not initialize (hipInit: " + describe(r, result) + "): no usable AMD GPU";
    return loaded;
  }
  int count = 0;
  if (r.hipGetDeviceCount(&count) != hipSuccess || count == 0) {
    s.error = "the HIP runtime (" + path + ") reports no AMD GPU";
    return loaded;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    std::string arch = archName(library, r, ordinal, s.error);
    if (arch.empty())
      return loaded;
    s.arch.push_back(arch);
  }
  return loaded; // (the library stays loaded: its code is in use)
}

namespace {

/// The process's runtime: $KILN_HIP_LIBRARY, else the first of the usual
/// names that loads.
const Loaded &loaded() {
  // (Never destroyed: buffers, streams and events freed at exit still reach
  // the runtime through it.)
  static const std::shared_ptr<const Loaded> &state = *new std::shared_ptr<const Loaded>([] {
    if (const char *path = std::getenv("KILN_HIP_LIBRARY"); path && *path)
      return load_runtime(path);
    std::shared_ptr<const Loaded> first;
    for (const char *name : {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"}) {
      std::shared_ptr<const Loaded> tried = load_runtime(name);
      if (!first)
        first = tried;
      if (tried->error.rfind("no HIP runtime:", 0) != 0) // it loaded: its verdict stands
        return tried;
    }
    return first;
  }());
  return *state;
}

} // namespace

const Runtime &runtime() {
  const Loaded &state = loaded();
  if (!state.error.empty())
    throw Error(state.error);
  return state.runtime;
}

bool runtime_available() { return loaded().error.empty(); }

std::string unavailable_reason() { return loaded().error; }

int runtime_version() { return loaded().version; }

void check(hipError_t result, const char *what) {
  if (result == hipSuccess)
    return;
  const Runtime &r = loaded().runtime;
  const char *text = r.hipGetErrorString ? r.hipGetErrorString(result) : nullptr;
  throw Error(std::string(what) + ": " + describe(r, result) + (text ? std::string(": ") + text : std::string()));
}

int device_count() { return runtime_available() ? static_cast<int>(loaded().arch.size()) : 0; }

const std::string &arch_of(int ordinal) {
  runtime();
  const Loaded &state = loaded();
  if (ordinal < 0 || ordinal >= static_cast<int>(state.arch.size()))
    throw Error("HIP device " + std::to_string(ordinal) + " does not exist (" + std::to_string(state.arch.size()) +
                " device(s))");
  return state.arch[ordinal];
}

void use_device(int ordinal) {
  thread_local int current = -1;
  if (current == ordinal)
    return;
  arch_of(ordinal); // (checks the ordinal)
  check(runtime().hipSetDevice(ordinal), "hipSetDevice");
  current = ordinal;
}

int attribute(int ordinal, Attribute which) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, int> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find({ordinal, which}); it != known.end())
    return it->second;
  arch_of(ordinal);
  int value = 0;
  check(runtime().hipDeviceGetAttribute(&value, which, ordinal), "hipDeviceGetAttribute");
  known.emplace(std::pair{ordinal, int(which)}, value);
  return value;
}

} // namespace kiln::hip
