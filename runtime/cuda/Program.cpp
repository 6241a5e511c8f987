//===- Program.cpp - kernels loaded by the CUDA driver, and their launches ===//
//
// A launch packs its arguments as the driver takes them (one pointer per
// parameter, to its value), with a tensor map encoded for every tensor the
// kernel reads by the copy engine: a descriptor's, or one the compiler
// added for pointer loads.
//
//===----------------------------------------------------------------------===//

#include "runtime/Arguments.h"
#include "runtime/cuda/Kernel.h"
#include "runtime/cuda/TensorMap.h"

#include <kiln/error.h>
#include <kiln/program.h>
#include <kiln/target.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace kiln::cuda {

namespace {

/// Parameter values as the driver takes them: one pointer per parameter
/// (on the stack for up to kInline parameters: the launch path allocates
/// nothing), tensor maps built for the descriptors the kernel reads by TMA.
class Parameters {
public:
  Parameters(std::span<const ElementType> signature, std::span<const Arg> args, const std::string &kernel,
             const std::vector<TensorMapSpec> &tensorMaps) {
    // The compiler's added maps are parameters after the kernel's own.
    size_t count = args.size();
    for (const TensorMapSpec &spec : tensorMaps)
      if (spec.base >= 0)
        count = std::max(count, static_cast<size_t>(spec.parameter) + 1);
    if (count > kInline) {
      heapStorage_.resize(count);
      heapPointers_.resize(count);
    }
    uint64_t *storage = count > kInline ? heapStorage_.data() : inlineStorage_;
    pointers_ = count > kInline ? heapPointers_.data() : inlinePointers_;
    for (size_t i = 0; i < args.size(); ++i) {
      if (signature[i].descriptor_rank > 0) {
        maps_.push_back(tensorMap(signature, args, i, kernel, tensorMaps));
        continue; // pointed to below, once maps_ stops moving
      }
      storage[i] = parameter_slot(signature[i], args[i], i, kernel, DeviceKind::cuda);
      pointers_[i] = &storage[i];
    }
    for (size_t i = args.size(); i < count; ++i)
      maps_.push_back(addedMap(signature, args, i, kernel, tensorMaps));
    for (size_t i = 0, m = 0; i < count; ++i)
      if (i >= args.size() || signature[i].descriptor_rank > 0)
        pointers_[i] = &maps_[m++];
  }
  void **pointers() { return pointers_; }

private:
  static constexpr size_t kInline = 32;

  [[noreturn]] static void bad(size_t i, const std::string &kernel, const std::string &why) {
    throw Error("argument #" + std::to_string(i) + " of kernel '" + kernel + "': " + why);
  }

  /// The tensor map of the descriptor whose parameters start at `i`: built
  /// from the base, sizes and strides after it when the kernel reads it by
  /// TMA, else never read (zeros).
  static TensorMap tensorMap(std::span<const ElementType> signature, std::span<const Arg> args, size_t i,
                                   const std::string &kernel, const std::vector<TensorMapSpec> &tensorMaps) {
    const int rank = signature[i].descriptor_rank; // (arguments checked by checkDescriptors)
    int64_t sizes[5], strides[5];
    for (int d = 0; d < rank; ++d) {
      sizes[d] = args[i + 2 + d].integer();
      strides[d] = args[i + 2 + rank + d].integer();
    }
    TensorMap map;
    for (const TensorMapSpec &spec : tensorMaps)
      if (spec.parameter == static_cast<int>(i))
        map = encoded(signature[i].dtype, args[i + 1], sizes, strides, spec, i, kernel);
    return map;
  }

  /// The map of the tensor at `base` with the first `spec.box.size()`
  /// sizes and strides, for `spec`'s box and swizzle; a tensor the copy
  /// engine cannot take is reported against argument `argument`.
  static TensorMap encoded(DType dtype, const Arg &base, const int64_t *sizes, const int64_t *strides,
                                 const TensorMapSpec &spec, size_t argument, const std::string &kernel) {
    const size_t rank = spec.box.size();
    try {
      return encode_tensor_map(dtype, base.address(), {sizes, rank}, {strides, rank}, spec.box,
                                     spec.swizzle_bytes);
    } catch (const Error &e) {
      bad(argument, kernel, e.what());
    }
  }

  /// The tensor map the compiler added as parameter `i`, for pointer loads
  /// it moved to the copy engine: built from the pointer and integer
  /// arguments it names (whose specialization, alignment and positive
  /// sizes, the compiled kernel assumed).
  static TensorMap addedMap(std::span<const ElementType> signature, std::span<const Arg> args, size_t i,
                                  const std::string &kernel, const std::vector<TensorMapSpec> &tensorMaps) {
    auto spec = std::find_if(tensorMaps.begin(), tensorMaps.end(),
                             [&](const TensorMapSpec &s) { return s.parameter == static_cast<int>(i); });
    auto valid = [&](int p) { return p >= 0 && static_cast<size_t>(p) < args.size(); };
    if (spec == tensorMaps.end() || !valid(spec->base) || spec->sizes.size() != spec->box.size() ||
        spec->strides.size() != spec->box.size() || spec->box.empty() || spec->box.size() > 5)
      bad(i, kernel, "the compiled kernel's added tensor map is malformed");
    const size_t rank = spec->box.size();
    int64_t sizes[5], strides[5];
    for (size_t d = 0; d < rank; ++d)
      for (auto [source, out] : {std::pair{spec->sizes[d], &sizes[d]}, std::pair{spec->strides[d], &strides[d]}}) {
        if (source.parameter >= 0 && (!valid(source.parameter) || args[source.parameter].kind() != Arg::Kind::integer))
          bad(i, kernel, "the compiled kernel's added tensor map names a parameter that is not an integer");
        *out = source.parameter >= 0 ? args[source.parameter].integer() : source.constant;
      }
    // A coordinate counting the pointers' uniform offset in rows (32 bits)
    // reaches every row of the memory passed only below 2^31 rows.
    const Arg &base = args[spec->base];
    const int64_t rowBytes = strides[0] * size_in_bytes(signature[spec->base].dtype);
    if (spec->offset_rows && base.kind() == Arg::Kind::memory && rowBytes > 0 &&
        base.bytes() / static_cast<uint64_t>(rowBytes) > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
      bad(spec->base, kernel,
          "the copy engine reads this tensor by rows of " + std::to_string(rowBytes) + " bytes counted in 32 bits, and " +
              std::to_string(base.bytes()) + " bytes hold 2^31 of them or more: compile with copy_engine=0");
    const uint64_t elementBytes = size_in_bytes(signature[spec->base].dtype);
    if (spec->offset_columns && base.kind() == Arg::Kind::memory &&
        base.bytes() / elementBytes > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
      bad(spec->base, kernel,
          "the copy engine reads this tensor at column offsets counted in 32 bits, and its " +
              std::to_string(base.bytes() / elementBytes) + " elements are 2^31 or more: compile with copy_engine=0");
    return encoded(signature[spec->base].dtype, base, sizes, strides, *spec, spec->base, kernel);
  }

  uint64_t inlineStorage_[kInline];
  void *inlinePointers_[kInline];
  std::vector<uint64_t> heapStorage_;
  std::vector<void *> heapPointers_;
  std::vector<TensorMap> maps_; ///< (empty, so not allocated, without descriptors)
  void **pointers_ = nullptr;
};

class CudaProgram final : public Program {
public:
  CudaProgram(const CompiledKernel &kernel, std::span<const ElementType> parameters, const Device &device,
              LoadedKernel loaded)
      : name_(kernel.name), parameters_(parameters.begin(), parameters.end()), tensorMaps_(kernel.tensor_maps),
        device_(device), loaded_(loaded) {}
  ~CudaProgram() override = default;

  void launch(const Grid &grid, const Stream &stream, std::span<const Arg> args) const override {
    check_arguments(name_, parameters_, args);
    if (grid.size() == 0)
      return; // an empty grid runs nothing
    if (stream.device() != device_)
      throw Error("kernel '" + name_ + "' is loaded on cuda:" + std::to_string(device_.ordinal()) +
                  ", the launch's stream is on " + stream.device().name());
    check_whole_clusters(name_, grid, loaded_.cluster_size);
    Parameters parameters(parameters_, args, name_, tensorMaps_);
    cuda::launch(loaded_, grid, stream.native(), parameters.pointers());
  }

  int cluster_size() const override { return loaded_.cluster_size; }

  int resident_clusters() const override {
    return loaded_.cluster_size > 1 ? max_active_clusters(loaded_)
                                    : max_active_blocks_per_multiprocessor(loaded_) * device_.multiprocessors();
  }

private:
  std::string name_;
  std::vector<ElementType> parameters_;
  std::vector<TensorMapSpec> tensorMaps_;
  Device device_;
  LoadedKernel loaded_;
};

} // namespace

std::shared_ptr<const Program> load_program(const CompiledKernel &kernel, std::span<const ElementType> parameters,
                                            const Device &device) {
  const int cc = device.compute_capability();
  std::vector<char> image = kernel.cubin;
  // A cubin loads only on its own GPU generation; PTX of an older target
  // runs on newer GPUs, compiled by the driver.
  if (image.empty() || !cubin_runs_on(check_target(kernel.arch), cc)) {
    image.assign(kernel.ptx.begin(), kernel.ptx.end());
    image.push_back('\0');
  }
  LoadedKernel loaded = load(image, kernel.name, device.ordinal(), kernel.num_warps * 32, kernel.shared_memory,
                             kernel.cluster_size);
  return std::make_shared<const CudaProgram>(kernel, parameters, device, loaded);
}

} // namespace kiln::cuda
