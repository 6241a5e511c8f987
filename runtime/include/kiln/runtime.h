// Devices, memory and streams: where kernels run. The CPU interpreter is a
// device like the GPUs, so the same program runs on either. Public header:
// no MLIR, no CUDA headers.
#pragma once

#include <kiln/dtype.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

enum class DeviceKind { interp, cuda, hip };

class Device {
public:
  /// The CPU interpreter (always available).
  static Device interp();
  /// CUDA device `ordinal`; throws kiln::Error naming the reason when there
  /// is no usable driver or device.
  static Device cuda(int ordinal = 0);
  /// AMD GPU `ordinal` through the HIP runtime; throws kiln::Error naming
  /// the reason when there is no usable runtime or device.
  static Device hip(int ordinal = 0);
  /// The interpreter when KILN_INTERPRET=1 or no GPU is usable, else CUDA
  /// device 0, else the first HIP device of a target Kiln compiles for
  /// (kAmdTargets).
  static Device default_device();
  /// Whether a CUDA driver and at least one device are present.
  static bool cuda_available();
  /// Whether a HIP runtime and at least one AMD GPU are present.
  static bool hip_available();
  /// Every GPU a runtime reports: the CUDA devices, then the HIP ones.
  static std::vector<Device> gpus();

  DeviceKind kind() const { return kind_; }
  int ordinal() const { return ordinal_; }
  /// "interpreter", or the GPU's name.
  std::string name() const;
  /// The target Kiln compiles for on this GPU: "sm_XY" from its compute
  /// capability ("sm_90a" on Hopper, whose wgmma needs the 'a' target),
  /// an AMD GPU's gfx name ("gfx942"); empty for the interpreter.
  std::string arch() const;
  /// CUDA compute capability as major * 10 + minor (90 for sm_90); 0 for
  /// the interpreter and AMD GPUs.
  int compute_capability() const;
  /// Streaming multiprocessors, an AMD GPU's compute units (1 for the
  /// interpreter).
  int multiprocessors() const;
  /// The machine's balance: peak memory bandwidth over what the
  /// multiprocessors run, in bytes a multiprocessor-cycle at their peak
  /// clock (0 for the interpreter).
  /// The more, the more bytes a memory-bound program must keep in flight
  /// against its fixed per-program costs.
  double memory_bytes_per_multiprocessor_cycle() const;
  /// Why CUDA is unavailable ("no CUDA driver: ..."), or empty.
  static std::string cuda_unavailable_reason();
  /// The CUDA driver's version (e.g. 13000), or 0.
  static int cuda_driver_version();
  /// Why HIP is unavailable ("no HIP runtime: ...", "the HIP runtime ...
  /// reports no AMD GPU"), or empty.
  static std::string hip_unavailable_reason();
  /// The HIP runtime's version (e.g. 60443484 for 6.4), or 0 when none loads.
  static int hip_runtime_version();
  friend bool operator==(const Device &, const Device &) = default;

private:
  Device(DeviceKind kind, int ordinal) : kind_(kind), ordinal_(ordinal) {}
  DeviceKind kind_ = DeviceKind::interp;
  int ordinal_ = 0;
};

/// An allocation in a device's memory (host memory for the interpreter).
class Buffer {
public:
  Buffer() = default;
  static Buffer allocate(const Device &device, size_t bytes);

  const Device &device() const;
  size_t bytes() const;
  /// The address kernels see (a host pointer for the interpreter).
  uint64_t address() const;
  bool valid() const { return impl_ != nullptr; }

  void copy_from_host(const void *source, size_t bytes, size_t offset = 0);
  void copy_to_host(void *destination, size_t bytes, size_t offset = 0) const;
  /// Sets every byte (e.g. 0xFF to poison an output before a run).
  void fill_bytes(uint8_t value);
  /// Copies `bytes` from `source` (on the same device) into this buffer,
  /// queued on `stream` (at once on the interpreter).
  void copy_from(const Buffer &source, size_t bytes, const class Stream &stream);

  template <class T> static Buffer from_host(const Device &device, std::span<const T> values) {
    Buffer b = allocate(device, values.size_bytes());
    b.copy_from_host(values.data(), values.size_bytes());
    return b;
  }
  template <class T> static Buffer from_host(const Device &device, const std::vector<T> &values) {
    return from_host(device, std::span<const T>(values));
  }
  template <class T> std::vector<T> to_host() const {
    std::vector<T> values(bytes() / sizeof(T));
    copy_to_host(values.data(), values.size() * sizeof(T));
    return values;
  }

  struct Impl;

private:
  std::shared_ptr<Impl> impl_;
};

/// Copies `bytes` at `address` in `device`'s memory (a host address for the
/// interpreter) to host memory, after the work queued before on the
/// default stream; for memory Kiln did not allocate (another framework's).
void copy_to_host(const Device &device, uint64_t address, void *destination, size_t bytes);

/// An ordered queue of work on a device. Interpreter streams run launches
/// synchronously. Copies share one stream; the last copy destroys a stream
/// made by create().
class Stream {
public:
  Stream() = default;
  /// The default stream of `device`.
  explicit Stream(const Device &device) : device_(device) {}
  /// The default stream of Device::default_device().
  static Stream default_stream() { return Stream(Device::default_device()); }
  /// A new stream of its own on `device` (non-blocking with respect to the
  /// default stream).
  static Stream create(const Device &device);
  /// A stream another framework owns (a CUstream or hipStream_t of
  /// `device`), e.g. the stream a C ABI caller passes; Kiln never destroys
  /// it.
  static Stream wrap(const Device &device, void *native);

  const Device &device() const { return device_; }
  /// CUstream or hipStream_t for GPUs (nullptr: the default stream).
  void *native() const { return native_; }
  void synchronize() const;

private:
  Device device_ = Device::interp();
  void *native_ = nullptr;
  std::shared_ptr<void> owned_; ///< destroys a created stream with its last copy
};

/// A point in a stream's work, for timing it (CUDA or HIP events; the
/// interpreter's events read the host clock, as its launches are synchronous).
class Event {
public:
  explicit Event(const Device &device);
  ~Event();
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  void record(const Stream &stream);
  void synchronize() const;
  /// Milliseconds from `start` to this event (both recorded and complete).
  float elapsed_ms(const Event &start) const;

private:
  Device device_;
  void *event_ = nullptr; ///< CUevent or hipEvent_t
  double host_ms_ = 0;    ///< for the interpreter
};

/// The launch grid: program instances along x, y and z.
struct Grid {
  uint32_t x = 1, y = 1, z = 1;
  Grid() = default;
  Grid(uint32_t x, uint32_t y = 1, uint32_t z = 1) : x(x), y(y), z(z) {}
  uint64_t size() const { return uint64_t(x) * y * z; }
};

/// A kernel argument as a launch passes it: an integer or float by value,
/// or memory (a Buffer, or a host span for the interpreter) whose extent the
/// interpreter checks every access against.
class Arg {
public:
  enum class Kind { integer, floating, memory, tensor_map };

  Arg(const Buffer &buffer)
      : kind_(Kind::memory), address_(buffer.address()), bytes_(buffer.bytes()),
        device_(buffer.device().kind()) {}
  template <class T>
    requires(!std::is_same_v<std::remove_cv_t<T>, void>)
  Arg(std::span<T> host)
      : kind_(Kind::memory), address_(reinterpret_cast<uint64_t>(host.data())),
        bytes_(host.size_bytes()), device_(DeviceKind::interp), element_bytes_(sizeof(T)) {}
  template <class T> Arg(std::vector<T> &host) : Arg(std::span<T>(host)) {}
  template <class T> Arg(const std::vector<T> &host) : Arg(std::span<const T>(host)) {}
  template <class T>
    requires std::is_integral_v<T>
  Arg(T value) : kind_(Kind::integer), integer_(static_cast<int64_t>(value)) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8)
      too_large_ = value > static_cast<T>(INT64_MAX);
  }
  Arg(float value) : kind_(Kind::floating), floating_(value) {}
  Arg(double value) : kind_(Kind::floating), floating_(value) {}
  /// A raw device address (e.g. from another framework) of `bytes` bytes.
  static Arg device_pointer(uint64_t address, size_t bytes, DeviceKind device = DeviceKind::cuda) {
    Arg a(0);
    a.kind_ = Kind::memory;
    a.address_ = address;
    a.bytes_ = bytes;
    a.device_ = device;
    return a;
  }

  /// The placeholder for a descriptor's tensor-map parameter (of a tensor
  /// of `rank` dimensions): the launch builds the map from the arguments
  /// after it (see TensorArg).
  static Arg tensor_map(int rank) {
    Arg a(0);
    a.kind_ = Kind::tensor_map;
    a.integer_ = rank;
    return a;
  }

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; } ///< (tensor maps: the rank)
  bool too_large() const { return too_large_; }
  double floating() const { return floating_; }
  uint64_t address() const { return address_; }
  size_t bytes() const { return bytes_; }
  DeviceKind device() const { return device_; }
  /// The element size of a host span (checked against the kernel
  /// parameter's pointee); 0 for untyped memory such as Buffers.
  size_t element_bytes() const { return element_bytes_; }

private:
  Kind kind_;
  int64_t integer_ = 0;
  bool too_large_ = false;
  double floating_ = 0;
  uint64_t address_ = 0;
  size_t bytes_ = 0;
  DeviceKind device_ = DeviceKind::interp;
  size_t element_bytes_ = 0;
};

} // namespace kiln
