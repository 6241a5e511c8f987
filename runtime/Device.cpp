// Devices, buffers, streams and events for the interpreter, CUDA and HIP.

#include "runtime/cuda/Driver.h"
#include "runtime/hip/Runtime.h"

#include <kiln/error.h>
#include <kiln/runtime.h>
#include <kiln/target.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace kiln {

namespace {

bool interpret_requested() {
  const char *value = std::getenv("KILN_INTERPRET");
  return value && *value && std::string(value) != "0";
}

} // namespace

Device Device::interp() { return Device(DeviceKind::interp, 0); }

Device Device::cuda(int ordinal) {
  cuda::use_device(ordinal);
  return Device(DeviceKind::cuda, ordinal);
}

Device Device::hip(int ordinal) {
  hip::use_device(ordinal);
  return Device(DeviceKind::hip, ordinal);
}

bool Device::cuda_available() { return cuda::driver_available(); }

bool Device::hip_available() { return hip::runtime_available(); }

Device Device::default_device() {
  if (interpret_requested())
    return interp();
  if (cuda_available())
    return cuda(0);
  // (An AMD GPU Kiln does not compile for, say a gfx1030, is no default.)
  for (int ordinal = 0; ordinal < hip::device_count(); ++ordinal)
    if (std::ranges::find(kAmdTargets, hip::arch_of(ordinal)) != std::end(kAmdTargets))
      return hip(ordinal);
  return interp();
}

std::vector<Device> Device::gpus() {
  std::vector<Device> devices;
  int count = 0;
  if (cuda::driver_available() && cuda::driver().cuDeviceGetCount(&count) == cuda::CUDA_SUCCESS)
    for (int i = 0; i < count; ++i)
      devices.push_back(Device(DeviceKind::cuda, i));
  for (int i = 0; i < hip::device_count(); ++i)
    devices.push_back(Device(DeviceKind::hip, i));
  return devices;
}

std::string Device::name() const {
  if (kind_ == DeviceKind::interp)
    return "interpreter";
  if (kind_ == DeviceKind::hip) {
    hip::use_device(ordinal_);
    char text[256] = {};
    hip::check(hip::runtime().hipDeviceGetName(text, sizeof text, ordinal_), "hipDeviceGetName");
    return text;
  }
  const cuda::Driver &d = cuda::driver();
  cuda::CUdevice device = cuda::device_handle(ordinal_);
  char text[256] = {};
  cuda::check(d.cuDeviceGetName(text, sizeof text, device), "cuDeviceGetName");
  return text;
}

namespace {
/// A device attribute, asked of the driver once: the ones Kiln reads never
/// change, and ops read them on every call (each ask costs the driver
/// three calls, a few hundred nanoseconds apiece).
int attribute(int ordinal, int which) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, int> known;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find({ordinal, which}); it != known.end())
      return it->second;
  }
  const cuda::Driver &d = cuda::driver();
  cuda::use_device(ordinal); // (device_handle makes its context current: keep use_device's record true)
  cuda::CUdevice device = cuda::device_handle(ordinal);
  int value = 0;
  cuda::check(d.cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute");
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(std::pair{ordinal, which}, value);
  return value;
}
} // namespace

std::string Device::arch() const {
  switch (kind_) {
  case DeviceKind::interp: return "";
  case DeviceKind::hip: return hip::arch_of(ordinal_);
  case DeviceKind::cuda: break;
  }
  const int cc = compute_capability();
  return "sm_" + std::to_string(cc) + (cc == 90 ? "a" : "");
}

int Device::compute_capability() const {
  if (kind_ != DeviceKind::cuda)
    return 0;
  return attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
         attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
}

int Device::multiprocessors() const {
  if (kind_ == DeviceKind::interp)
    return 1;
  if (kind_ == DeviceKind::hip)
    return hip::attribute(ordinal_, hip::kMultiprocessorCount);
  return attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
}

double Device::memory_bytes_per_multiprocessor_cycle() const {
  if (kind_ == DeviceKind::interp)
    return 0;
  const bool amd = kind_ == DeviceKind::hip;
  auto clock = [&] {
    return amd ? hip::attribute(ordinal_, hip::kClockRate) : attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  };
  const int memoryClock = amd ? hip::attribute(ordinal_, hip::kMemoryClockRate)
                              : attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  const int busWidth = amd ? hip::attribute(ordinal_, hip::kMemoryBusWidth)
                           : attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  // Both clocks in kHz; double data rate moves the bus width twice a memory clock.
  const double memoryBytesPerSecond = 2.0 * memoryClock * 1e3 * busWidth / 8;
  const double cyclesPerSecond = double(multiprocessors()) * clock() * 1e3;
  return cyclesPerSecond > 0 ? memoryBytesPerSecond / cyclesPerSecond : 0;
}

std::string Device::cuda_unavailable_reason() {
  try {
    cuda::driver();
    return {};
  } catch (const Error &e) {
    return e.what();
  }
}

int Device::cuda_driver_version() {
  if (!cuda::driver_available())
    return 0;
  int version = 0;
  cuda::driver().cuDriverGetVersion(&version);
  return version;
}

std::string Device::hip_unavailable_reason() { return hip::unavailable_reason(); }

int Device::hip_runtime_version() { return hip::runtime_version(); }

struct Buffer::Impl {
  Device device;
  size_t bytes = 0;
  uint64_t address = 0;
  std::vector<uint8_t> host; ///< the memory of interpreter buffers

  ~Impl() { // (no throw from a destructor)
    if (device.kind() == DeviceKind::cuda && address)
      cuda::driver().cuMemFree(address);
    if (device.kind() == DeviceKind::hip && address)
      hip::runtime().hipFree(reinterpret_cast<void *>(address));
  }
};

Buffer Buffer::allocate(const Device &device, size_t bytes) {
  Buffer buffer;
  buffer.impl_ = std::make_shared<Impl>(Impl{device, bytes, 0, {}});
  if (device.kind() == DeviceKind::interp) {
    // One spare element's worth of alignment: kernels see 64-byte aligned
    // memory, as from cudaMalloc (which aligns far more).
    buffer.impl_->host.resize(bytes + 64);
    uint64_t base = reinterpret_cast<uint64_t>(buffer.impl_->host.data());
    buffer.impl_->address = (base + 63) & ~uint64_t(63);
  } else if (device.kind() == DeviceKind::hip) {
    hip::use_device(device.ordinal());
    void *pointer = nullptr;
    hip::check(hip::runtime().hipMalloc(&pointer, bytes ? bytes : 1), "hipMalloc");
    buffer.impl_->address = reinterpret_cast<uint64_t>(pointer);
  } else {
    const cuda::Driver &d = cuda::driver();
    cuda::use_device(device.ordinal());
    cuda::CUdeviceptr pointer = 0;
    cuda::check(d.cuMemAlloc(&pointer, bytes ? bytes : 1), "cuMemAlloc");
    buffer.impl_->address = pointer;
  }
  return buffer;
}

const Device &Buffer::device() const { return impl_->device; }
size_t Buffer::bytes() const { return impl_ ? impl_->bytes : 0; }
uint64_t Buffer::address() const { return impl_ ? impl_->address : 0; }

static void check_range(size_t offset, size_t bytes, size_t size, const char *what) {
  if (offset > size || bytes > size - offset)
    throw Error(std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                std::to_string(offset) + " exceed the buffer's " + std::to_string(size) + " bytes");
}

void Buffer::copy_from_host(const void *source, size_t bytes, size_t offset) {
  check_range(offset, bytes, impl_->bytes, "Buffer::copy_from_host");
  if (impl_->device.kind() == DeviceKind::interp) {
    std::memcpy(reinterpret_cast<void *>(impl_->address + offset), source, bytes);
    return;
  }
  if (impl_->device.kind() == DeviceKind::hip) {
    hip::use_device(impl_->device.ordinal());
    hip::check(hip::runtime().hipMemcpyHtoD(reinterpret_cast<void *>(impl_->address + offset), source, bytes),
               "hipMemcpyHtoD");
    return;
  }
  cuda::use_device(impl_->device.ordinal());
  cuda::check(cuda::driver().cuMemcpyHtoD(impl_->address + offset, source, bytes), "cuMemcpyHtoD");
}

void Buffer::copy_to_host(void *destination, size_t bytes, size_t offset) const {
  check_range(offset, bytes, impl_->bytes, "Buffer::copy_to_host");
  if (impl_->device.kind() == DeviceKind::interp) {
    std::memcpy(destination, reinterpret_cast<const void *>(impl_->address + offset), bytes);
    return;
  }
  kiln::copy_to_host(impl_->device, impl_->address + offset, destination, bytes);
}

void Buffer::fill_bytes(uint8_t value) {
  if (impl_->device.kind() == DeviceKind::interp) {
    std::memset(reinterpret_cast<void *>(impl_->address), value, impl_->bytes);
    return;
  }
  if (impl_->device.kind() == DeviceKind::hip) {
    hip::use_device(impl_->device.ordinal());
    hip::check(hip::runtime().hipMemsetD8(reinterpret_cast<void *>(impl_->address), value, impl_->bytes),
               "hipMemsetD8");
    return;
  }
  cuda::use_device(impl_->device.ordinal());
  cuda::check(cuda::driver().cuMemsetD8(impl_->address, value, impl_->bytes), "cuMemsetD8");
}

void copy_to_host(const Device &device, uint64_t address, void *destination, size_t bytes) {
  if (device.kind() == DeviceKind::interp) {
    std::memcpy(destination, reinterpret_cast<const void *>(address), bytes);
    return;
  }
  if (device.kind() == DeviceKind::hip) {
    hip::use_device(device.ordinal());
    hip::check(hip::runtime().hipMemcpyDtoH(destination, reinterpret_cast<void *>(address), bytes), "hipMemcpyDtoH");
    return;
  }
  cuda::use_device(device.ordinal());
  cuda::check(cuda::driver().cuMemcpyDtoH(destination, address, bytes), "cuMemcpyDtoH");
}

void Buffer::copy_from(const Buffer &source, size_t bytes, const Stream &stream) {
  check_range(0, bytes, impl_->bytes, "Buffer::copy_from (destination)");
  check_range(0, bytes, source.bytes(), "Buffer::copy_from (source)");
  if (!(source.device() == impl_->device) || !(stream.device() == impl_->device))
    throw Error("Buffer::copy_from: the source, the destination and the stream must be on one device");
  if (impl_->device.kind() == DeviceKind::interp) {
    std::memmove(reinterpret_cast<void *>(impl_->address), reinterpret_cast<const void *>(source.address()), bytes);
    return;
  }
  if (impl_->device.kind() == DeviceKind::hip) {
    hip::use_device(impl_->device.ordinal());
    hip::check(hip::runtime().hipMemcpyDtoDAsync(reinterpret_cast<void *>(impl_->address),
                                                 reinterpret_cast<void *>(source.address()), bytes,
                                                 static_cast<hip::hipStream_t>(stream.native())),
               "hipMemcpyDtoDAsync");
    return;
  }
  cuda::use_device(impl_->device.ordinal());
  cuda::check(cuda::driver().cuMemcpyDtoDAsync(impl_->address, source.address(), bytes,
                                               static_cast<cuda::CUstream>(stream.native())),
              "cuMemcpyDtoDAsync");
}

Event::Event(const Device &device) : device_(device) {
  if (device.kind() == DeviceKind::cuda) {
    cuda::use_device(device.ordinal());
    cuda::CUevent event = nullptr;
    cuda::check(cuda::driver().cuEventCreate(&event, 0), "cuEventCreate");
    event_ = event;
  } else if (device.kind() == DeviceKind::hip) {
    hip::use_device(device.ordinal());
    hip::hipEvent_t event = nullptr;
    hip::check(hip::runtime().hipEventCreate(&event), "hipEventCreate");
    event_ = event;
  }
}

Event::~Event() { // (no throw from a destructor)
  if (event_ && device_.kind() == DeviceKind::cuda)
    cuda::driver().cuEventDestroy(static_cast<cuda::CUevent>(event_));
  if (event_ && device_.kind() == DeviceKind::hip)
    hip::runtime().hipEventDestroy(static_cast<hip::hipEvent_t>(event_));
}

void Event::record(const Stream &stream) {
  if (!(stream.device() == device_))
    throw Error("Event::record: the event is on " + device_.name() + ", the stream on " + stream.device().name());
  if (!event_) {
    host_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return;
  }
  if (device_.kind() == DeviceKind::hip) {
    hip::check(hip::runtime().hipEventRecord(static_cast<hip::hipEvent_t>(event_),
                                             static_cast<hip::hipStream_t>(stream.native())),
               "hipEventRecord");
    return;
  }
  cuda::check(cuda::driver().cuEventRecord(static_cast<cuda::CUevent>(event_), static_cast<cuda::CUstream>(stream.native())),
              "cuEventRecord");
}

void Event::synchronize() const {
  if (event_ && device_.kind() == DeviceKind::hip)
    hip::check(hip::runtime().hipEventSynchronize(static_cast<hip::hipEvent_t>(event_)), "hipEventSynchronize");
  else if (event_)
    cuda::check(cuda::driver().cuEventSynchronize(static_cast<cuda::CUevent>(event_)), "cuEventSynchronize");
}

float Event::elapsed_ms(const Event &start) const {
  if (!(start.device_ == device_))
    throw Error("Event::elapsed_ms: the events are on different devices");
  if (!event_)
    return static_cast<float>(host_ms_ - start.host_ms_);
  float ms = 0;
  if (device_.kind() == DeviceKind::hip) {
    hip::check(hip::runtime().hipEventElapsedTime(&ms, static_cast<hip::hipEvent_t>(start.event_),
                                                  static_cast<hip::hipEvent_t>(event_)),
               "hipEventElapsedTime");
    return ms;
  }
  cuda::check(cuda::driver().cuEventElapsedTime(&ms, static_cast<cuda::CUevent>(start.event_),
                                                static_cast<cuda::CUevent>(event_)),
              "cuEventElapsedTime");
  return ms;
}

Stream Stream::create(const Device &device) {
  Stream stream(device);
  if (device.kind() == DeviceKind::interp)
    return stream;
  if (device.kind() == DeviceKind::hip) {
    hip::use_device(device.ordinal());
    hip::hipStream_t native = nullptr;
    hip::check(hip::runtime().hipStreamCreateWithFlags(&native, hip::hipStreamNonBlocking), "hipStreamCreateWithFlags");
    stream.native_ = native;
    stream.owned_ = std::shared_ptr<void>(native, [](void *s) {
      hip::runtime().hipStreamDestroy(static_cast<hip::hipStream_t>(s)); // no throw from a deleter
    });
    return stream;
  }
  cuda::use_device(device.ordinal());
  cuda::CUstream native = nullptr;
  cuda::check(cuda::driver().cuStreamCreate(&native, cuda::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  stream.native_ = native;
  stream.owned_ = std::shared_ptr<void>(native, [](void *s) {
    cuda::driver().cuStreamDestroy(static_cast<cuda::CUstream>(s)); // no throw from a deleter
  });
  return stream;
}

Stream Stream::wrap(const Device &device, void *native) {
  Stream stream(device);
  stream.native_ = device.kind() == DeviceKind::interp ? nullptr : native;
  return stream;
}

void Stream::synchronize() const {
  if (device_.kind() == DeviceKind::interp)
    return;
  if (device_.kind() == DeviceKind::hip) {
    hip::use_device(device_.ordinal());
    hip::check(hip::runtime().hipStreamSynchronize(static_cast<hip::hipStream_t>(native_)), "hipStreamSynchronize");
    return;
  }
  cuda::use_device(device_.ordinal());
  cuda::check(cuda::driver().cuStreamSynchronize(static_cast<cuda::CUstream>(native_)),
              "cuStreamSynchronize");
}

} // namespace kiln
