// Devices, buffers and streams for the interpreter and CUDA.

#include "runtime/cuda/Driver.h"

#include <kiln/error.h>
#include <kiln/runtime.h>

#include <chrono>
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

bool Device::cuda_available() { return cuda::driver_available(); }

Device Device::default_device() {
  if (interpret_requested() || !cuda_available())
    return interp();
  return cuda(0);
}

std::string Device::name() const {
  if (kind_ == DeviceKind::interp)
    return "interpreter";
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

int Device::compute_capability() const {
  if (kind_ == DeviceKind::interp)
    return 0;
  return attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
         attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
}

int Device::multiprocessors() const {
  if (kind_ == DeviceKind::interp)
    return 1;
  return attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
}

double Device::memory_bytes_per_multiprocessor_cycle() const {
  if (kind_ == DeviceKind::interp)
    return 0;
  // Both clocks in kHz; double data rate moves the bus width twice a memory clock.
  const double memoryBytesPerSecond = 2.0 * attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) * 1e3 *
                                      attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH) / 8;
  const double cyclesPerSecond =
      double(multiprocessors()) * attribute(ordinal_, cuda::CU_DEVICE_ATTRIBUTE_CLOCK_RATE) * 1e3;
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

struct Buffer::Impl {
  Device device;
  size_t bytes = 0;
  uint64_t address = 0;
  std::vector<uint8_t> host; ///< the memory of interpreter buffers

  ~Impl() {
    if (device.kind() == DeviceKind::cuda && address)
      cuda::driver().cuMemFree(address); // no throw from a destructor
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
  cuda::use_device(impl_->device.ordinal());
  cuda::check(cuda::driver().cuMemcpyHtoD(impl_->address + offset, source, bytes), "cuMemcpyHtoD");
}

void Buffer::copy_to_host(void *destination, size_t bytes, size_t offset) const {
  check_range(offset, bytes, impl_->bytes, "Buffer::copy_to_host");
  if (impl_->device.kind() == DeviceKind::interp) {
    std::memcpy(destination, reinterpret_cast<const void *>(impl_->address + offset), bytes);
    return;
  }
  cuda::use_device(impl_->device.ordinal());
  cuda::check(cuda::driver().cuMemcpyDtoH(destination, impl_->address + offset, bytes),
              "cuMemcpyDtoH");
}

void Buffer::fill_bytes(uint8_t value) {
  if (impl_->device.kind() == DeviceKind::interp) {
    std::memset(reinterpret_cast<void *>(impl_->address), value, impl_->bytes);
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
  }
}

Event::~Event() {
  if (event_)
    cuda::driver().cuEventDestroy(static_cast<cuda::CUevent>(event_));
}

void Event::record(const Stream &stream) {
  if (!event_) {
    host_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return;
  }
  cuda::check(cuda::driver().cuEventRecord(static_cast<cuda::CUevent>(event_), static_cast<cuda::CUstream>(stream.native())),
              "cuEventRecord");
}

void Event::synchronize() const {
  if (event_)
    cuda::check(cuda::driver().cuEventSynchronize(static_cast<cuda::CUevent>(event_)), "cuEventSynchronize");
}

float Event::elapsed_ms(const Event &start) const {
  if (!event_)
    return static_cast<float>(host_ms_ - start.host_ms_);
  float ms = 0;
  cuda::check(cuda::driver().cuEventElapsedTime(&ms, static_cast<cuda::CUevent>(start.event_),
                                                static_cast<cuda::CUevent>(event_)),
              "cuEventElapsedTime");
  return ms;
}

Stream Stream::create(const Device &device) {
  Stream stream(device);
  if (device.kind() == DeviceKind::interp)
    return stream;
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
  cuda::use_device(device_.ordinal());
  cuda::check(cuda::driver().cuStreamSynchronize(static_cast<cuda::CUstream>(native_)),
              "cuStreamSynchronize");
}

} // namespace kiln
