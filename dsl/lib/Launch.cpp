//===- Launch.cpp - specializing, compiling and running kernels -----------===//
//
// A launch specializes on its arguments, then finds the compiled kernel:
// in memory (per kernel, config, specialization and device), else in the
// on-disk cache (keyed by everything that changes the code), else by
// tracing and compiling it. The interpreter runs the tile-stage module
// instead.
//
//===----------------------------------------------------------------------===//

#include "dsl/lib/KernelImpl.h"

#include "runtime/cuda/Kernel.h"
#include "runtime/cuda/TensorMap.h"
#include "runtime/interp/Interpreter.h"

#include <kiln/cache.h>
#include <kiln/compiler.h>
#include <kiln/error.h>
#include <kiln/target.h>
#include <kiln/version.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <string_view>

namespace kiln {

namespace {

ArgSpecialization specializationOf(const Arg &arg, const ElementType &parameter) {
  ArgSpecialization s;
  if (arg.kind() == Arg::Kind::memory) {
    s.divisible_by_16 = arg.address() % 16 == 0;
  } else if (arg.kind() == Arg::Kind::integer && !parameter.is_pointer && is_integer(parameter.dtype)) {
    // (Zero is divisible by everything: a size of zero is told apart as
    // nonpositive, which drops the other facts, so that no kernel compiled
    // for a positive size runs with it.)
    if (arg.integer() <= 0) {
      s.nonpositive = true;
      return s;
    }
    s.equal_to_1 = arg.integer() == 1;
    s.divisible_by_16 = arg.integer() % 16 == 0;
    s.divisible_by_8 = !s.divisible_by_16 && arg.integer() % 8 == 0;
  }
  return s;
}

/// The specialization of up to 32 arguments, two bits each and one bit of
/// `nonpositive`; false when there are more (the launch then takes the
/// general path).
bool packedSpecialization(std::span<const Arg> args, const std::vector<ElementType> &signature,
                          PackedSpecialization &bits) {
  if (args.size() > 32)
    return false;
  bits = {};
  for (size_t i = 0; i < args.size(); ++i) {
    ArgSpecialization s = specializationOf(args[i], signature[i]);
    uint64_t code = s.equal_to_1 ? 2 : s.divisible_by_16 ? 1 : s.divisible_by_8 ? 3 : 0;
    bits.codes |= code << (2 * i);
    bits.nonpositive |= uint32_t(s.nonpositive) << i;
  }
  return true;
}

} // namespace

Specialization Kernel::specialize(std::span<const Arg> args) const {
  Specialization spec;
  for (size_t i = 0; i < args.size() && i < signature().size(); ++i)
    spec.args.push_back(specializationOf(args[i], signature()[i]));
  return spec;
}

namespace {

/// Every descriptor's arguments (on any device): the tensor-map
/// placeholder of the right rank, and sizes and strides that stay inside
/// the memory passed (the interpreter would stop at the first access
/// outside it; the GPU would read past it).
void checkDescriptors(const std::vector<ElementType> &signature, std::span<const Arg> args,
                      const std::string &kernel) {
  for (size_t i = 0; i < signature.size(); ++i) {
    const int rank = signature[i].descriptor_rank;
    if (rank == 0)
      continue;
    auto bad = [&](const std::string &why) {
      throw Error("argument #" + std::to_string(i) + " of kernel '" + kernel + "': " + why);
    };
    if (args[i].kind() != Arg::Kind::tensor_map || args[i].integer() != rank)
      bad("the kernel expects a rank-" + std::to_string(rank) + " descriptor (a TensorArg with " +
          std::to_string(rank) + " sizes)");
    if (i + 2 + 2 * static_cast<size_t>(rank) > args.size())
      bad("a rank-" + std::to_string(rank) + " descriptor needs " + std::to_string(2 + 2 * rank) + " arguments");
    // The last element's offset, in 128 bits: sizes times strides may pass 2^63.
    unsigned __int128 last = 0;
    bool empty = false;
    for (int d = 0; d < rank; ++d) {
      const Arg &size = args[i + 2 + d], &stride = args[i + 2 + rank + d];
      if (size.kind() != Arg::Kind::integer || stride.kind() != Arg::Kind::integer || size.integer() < 0 ||
          stride.integer() < 0)
        bad("a descriptor's sizes and strides are integers of at least 0 (a TensorArg)");
      if (size.integer() == 0)
        empty = true;
      else
        last += static_cast<unsigned __int128>(size.integer() - 1) * static_cast<uint64_t>(stride.integer());
    }
    const Arg &memory = args[i + 1];
    const unsigned __int128 needed = empty ? 0 : (last + 1) * size_in_bytes(signature[i].dtype);
    if (memory.kind() == Arg::Kind::memory && memory.bytes() > 0 && needed > memory.bytes())
      bad("the descriptor's sizes and strides reach past its memory (" + std::to_string(memory.bytes()) +
          " bytes)");
  }
}

/// The targets KILN_CHECK_PTX names ("sm_90a,sm_80"), each checked.
std::vector<Target> checkPtxTargets() {
  std::vector<Target> targets;
  const char *list = std::getenv("KILN_CHECK_PTX");
  if (!list)
    return targets;
  std::string_view rest = list;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view name = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (name.empty())
      continue;
    try {
      targets.push_back(check_target(name));
    } catch (const Error &error) {
      throw Error(std::string("KILN_CHECK_PTX: ") + error.what());
    }
  }
  return targets;
}

std::string dumpDir() {
  const char *dir = std::getenv("KILN_DUMP_DIR");
  return dir ? dir : "";
}

/// Parameter values as the driver takes them: one pointer per parameter
/// (on the stack for up to kInline parameters: the launch path allocates
/// nothing), tensor maps built for the descriptors the kernel reads by TMA.
class Parameters {
public:
  Parameters(const std::vector<ElementType> &signature, std::span<const Arg> args, const std::string &kernel,
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
      storage[i] = value(signature[i], args[i], i, kernel);
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
  static cuda::TensorMap tensorMap(const std::vector<ElementType> &signature, std::span<const Arg> args, size_t i,
                                   const std::string &kernel, const std::vector<TensorMapSpec> &tensorMaps) {
    const int rank = signature[i].descriptor_rank; // (arguments checked by checkDescriptors)
    int64_t sizes[5], strides[5];
    for (int d = 0; d < rank; ++d) {
      sizes[d] = args[i + 2 + d].integer();
      strides[d] = args[i + 2 + rank + d].integer();
    }
    cuda::TensorMap map;
    for (const TensorMapSpec &spec : tensorMaps)
      if (spec.parameter == static_cast<int>(i))
        map = encoded(signature[i].dtype, args[i + 1], sizes, strides, spec, i, kernel);
    return map;
  }

  /// The map of the tensor at `base` with the first `spec.box.size()`
  /// sizes and strides, for `spec`'s box and swizzle; a tensor the copy
  /// engine cannot take is reported against argument `argument`.
  static cuda::TensorMap encoded(DType dtype, const Arg &base, const int64_t *sizes, const int64_t *strides,
                                 const TensorMapSpec &spec, size_t argument, const std::string &kernel) {
    const size_t rank = spec.box.size();
    try {
      return cuda::encode_tensor_map(dtype, base.address(), {sizes, rank}, {strides, rank}, spec.box,
                                     spec.swizzle_bytes);
    } catch (const Error &e) {
      bad(argument, kernel, e.what());
    }
  }

  /// The tensor map the compiler added as parameter `i`, for pointer loads
  /// it moved to the copy engine: built from the pointer and integer
  /// arguments it names (whose specialization, alignment and positive
  /// sizes, the compiled kernel assumed).
  static cuda::TensorMap addedMap(const std::vector<ElementType> &signature, std::span<const Arg> args, size_t i,
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
    return encoded(signature[spec->base].dtype, base, sizes, strides, *spec, spec->base, kernel);
  }

  static uint64_t value(const ElementType &type, const Arg &arg, size_t i, const std::string &kernel) {
    if (arg.kind() == Arg::Kind::tensor_map)
      bad(i, kernel, "a descriptor (TensorArg) where the kernel expects a single value");
    uint64_t slot = 0;
    if (type.is_pointer) {
      if (arg.kind() != Arg::Kind::memory)
        bad(i, kernel, "the kernel expects a pointer, the launch passed a number");
      if (arg.device() != DeviceKind::cuda)
        bad(i, kernel, "the GPU needs device memory (a Buffer of a CUDA device), not host memory");
      return arg.address();
    }
    if (is_float(type.dtype)) {
      if (arg.kind() == Arg::Kind::memory)
        bad(i, kernel, "the kernel expects a float, the launch passed memory");
      double v = arg.kind() == Arg::Kind::floating ? arg.floating() : static_cast<double>(arg.integer());
      if (type.dtype == DType::f64) {
        std::memcpy(&slot, &v, 8);
      } else if (type.dtype == DType::f32) {
        float f = static_cast<float>(v);
        std::memcpy(&slot, &f, 4);
      } else {
        bad(i, kernel, "scalar parameters of " + std::string(name(type.dtype)) + " are not supported; pass f32");
      }
      return slot;
    }
    if (arg.kind() != Arg::Kind::integer)
      bad(i, kernel, "the kernel expects an integer");
    int64_t v = arg.integer();
    int width = bit_width(type.dtype);
    if (width < 64 && (v < -(int64_t(1) << (width - 1)) || v >= (int64_t(1) << width)))
      bad(i, kernel, std::to_string(v) + " does not fit " + std::string(name(type.dtype)));
    std::memcpy(&slot, &v, 8); // little endian: the low bytes first
    return slot;
  }

  uint64_t inlineStorage_[kInline];
  void *inlinePointers_[kInline];
  std::vector<uint64_t> heapStorage_;
  std::vector<void *> heapPointers_;
  std::vector<cuda::TensorMap> maps_; ///< (empty, so not allocated, without descriptors)
  void **pointers_ = nullptr;
};

} // namespace

CompileOptions compile_options(const Config &config, const std::string &arch) {
  CompileOptions options;
  options.arch = arch;
  options.num_warps = config.num_warps();
  options.num_stages = config.num_stages();
  options.min_blocks_per_sm = config.min_blocks_per_sm();
  options.warp_specialize = config.warp_specialize();
  options.fp_fusion = config.fp_fusion();
  options.approx_div = config.approx_div();
  options.copy_engine = config.copy_engine();
  return options;
}

std::string target_for(const Device &device) {
  if (const char *target = std::getenv("KILN_TARGET"); target && *target) {
    try { // e.g. sm_80 on a Hopper GPU, to run an older target's code
      return check_target(target).name;
    } catch (const Error &error) {
      throw Error(std::string("KILN_TARGET: ") + error.what());
    }
  }
  int cc = device.compute_capability();
  return "sm_" + std::to_string(cc) + (cc == 90 ? "a" : "");
}

namespace {

/// A launch of a kernel compiled for clusters of `size` programs must hold
/// whole clusters along x (the driver would refuse it less plainly).
void checkWholeClusters(const std::string &kernel, const Grid &grid, int size) {
  if (grid.x % size != 0)
    throw Error("kernel '" + kernel + "' runs in clusters of " + std::to_string(size) +
                " programs along x (cluster_size): the grid's x, " + std::to_string(grid.x) + ", must be a multiple");
}

/// Traces the kernel and finds its binary in the disk cache, or compiles
/// and stores it.
/// `value` when it is an integer in [lo, hi]; else throws, before any cast
/// (cached metadata is checked like any input: another version or a
/// damaged entry is recompiled, not trusted).
int integerIn(const nlohmann::json &value, const char *field, int64_t lo, int64_t hi) {
  // (Every bound is far below 2^63: an unsigned value past one fails.)
  const int64_t v = value.is_number_unsigned()
                        ? static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), static_cast<uint64_t>(hi) + 1))
                    : value.is_number_integer() ? value.get<int64_t>()
                                                : lo - 1;
  if (v < lo || v > hi)
    throw std::runtime_error(std::string("metadata field ") + field + " is not an integer in [" + std::to_string(lo) +
                             ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}
int metadataInteger(const nlohmann::json &object, const char *field, int64_t lo, int64_t hi) {
  return integerIn(object.at(field), field, lo, hi);
}

CompiledKernel compileThroughDiskCache(const Kernel &k, const Config &config, const Specialization &spec,
                                       const std::string &arch, const std::string &dump) {
  Module module = k.trace(config, spec);
  CompileOptions options = compile_options(config, arch);
  options.dump_dir = dump;
  std::string key = sha256_hex(std::string(version()) + "\n" + build_id() + "\n" + arch + "\n" +
                               config.str() + "\n" + spec.str() + "\n" + module.str(false));
  // No cache root (a user without a home directory): compile every time.
  const std::string root = cache_root();
  std::optional<BlobStore> store;
  if (!root.empty())
    store.emplace(root + "/kernels");
  if (store && options.dump_dir.empty()) // a dump asks for every stage: compile afresh
    if (auto entry = store->load(key)) {
      try {
        auto meta = nlohmann::json::parse(entry->metadata);
        CompiledKernel kernel;
        kernel.name = meta.at("name");
        kernel.arch = meta.at("arch");
        kernel.num_warps = metadataInteger(meta, "num_warps", 1, 32);
        kernel.shared_memory = metadataInteger(meta, "shared_memory", 0, 1 << 20);
        kernel.cluster_size = metadataInteger(meta, "cluster_size", 1, 16);
        kernel.registers = metadataInteger(meta, "registers", 0, 1 << 16);
        kernel.spill_stores = metadataInteger(meta, "spill_stores", 0, 1 << 30);
        kernel.spill_loads = metadataInteger(meta, "spill_loads", 0, 1 << 30);
        kernel.stack_frame = metadataInteger(meta, "stack_frame", 0, 1 << 30);
        for (const auto &map : meta.at("tensor_maps")) {
          std::vector<uint32_t> box;
          for (const auto &extent : map.at("box"))
            box.push_back(static_cast<uint32_t>(integerIn(extent, "box", 1, 256)));
          if (box.empty() || box.size() > 5)
            throw std::runtime_error("a tensor map's box has " + std::to_string(box.size()) + " dimensions");
          TensorMapSpec spec;
          spec.parameter = metadataInteger(map, "parameter", 0, 1 << 16);
          spec.box = std::move(box);
          spec.swizzle_bytes = metadataInteger(map, "swizzle", 0, 128);
          if (map.contains("base")) { // a map the compiler added
            spec.base = metadataInteger(map, "base", 0, 1 << 16);
            spec.offset_rows = map.value("offset_rows", false);
            for (auto [field, sources] : {std::pair{"sizes", &spec.sizes}, std::pair{"strides", &spec.strides}})
              for (const auto &source : map.at(field))
                sources->push_back({integerIn(source.at(0), field, -1, 1 << 16),
                                    integerIn(source.at(1), field, 0, std::numeric_limits<int32_t>::max())});
            if (spec.sizes.size() != spec.box.size() || spec.strides.size() != spec.box.size())
              throw std::runtime_error("an added tensor map's sizes and strides do not match its box");
          }
          kernel.tensor_maps.push_back(std::move(spec));
        }
        kernel.cubin = entry->files["kernel.cubin"];
        auto &ptx = entry->files["kernel.ptx"];
        kernel.ptx.assign(ptx.begin(), ptx.end());
        return kernel;
      } catch (const std::exception &) {
        // metadata of another shape: compile afresh below
      }
    }
  CompiledKernel kernel = kiln::compile(module, options);
  nlohmann::json meta = {{"name", kernel.name},
                         {"arch", kernel.arch},
                         {"num_warps", kernel.num_warps},
                         {"shared_memory", kernel.shared_memory},
                         {"cluster_size", kernel.cluster_size},
                         {"registers", kernel.registers},
                         {"spill_stores", kernel.spill_stores},
                         {"spill_loads", kernel.spill_loads},
                         {"stack_frame", kernel.stack_frame},
                         {"tensor_maps", nlohmann::json::array()},
                         {"config", config.str()},
                         {"specialization", spec.str()},
                         {"kiln", version()}};
  for (const TensorMapSpec &map : kernel.tensor_maps) {
    nlohmann::json entry = {{"parameter", map.parameter}, {"box", map.box}, {"swizzle", map.swizzle_bytes}};
    if (map.base >= 0) {
      entry["base"] = map.base;
      entry["offset_rows"] = map.offset_rows;
      for (auto [field, sources] : {std::pair{"sizes", &map.sizes}, std::pair{"strides", &map.strides}}) {
        entry[field] = nlohmann::json::array();
        for (const TensorMapSource &source : *sources)
          entry[field].push_back({source.parameter, source.constant});
      }
    }
    meta["tensor_maps"].push_back(std::move(entry));
  }
  BlobStore::Entry entry;
  entry.metadata = meta.dump();
  entry.files["kernel.ptx"] = std::vector<char>(kernel.ptx.begin(), kernel.ptx.end());
  if (!kernel.cubin.empty())
    entry.files["kernel.cubin"] = kernel.cubin;
  if (store)
    store->store(key, entry);
  return kernel;
}

} // namespace

CompiledKernel Kernel::compile(const Config &config_in, const Specialization &spec, const std::string &arch) const {
  check_target(arch);
  Config config = impl_->defaults.merged(config_in);
  const std::string dump = dumpDir();
  const std::string memo = config.str() + "|" + spec.str() + "|" + arch;
  if (dump.empty()) { // a dump asks for every stage: compile afresh
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (auto it = impl_->compiled.find(memo); it != impl_->compiled.end())
      return *it->second;
  }
  CompiledKernel kernel = compileThroughDiskCache(*this, config, spec, arch, dump);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->compiled.emplace(memo, std::make_shared<const CompiledKernel>(kernel));
  return kernel;
}

void Kernel::launch_with(const Grid &grid, const Config &config_in, const Stream &stream,
                         std::span<const Arg> args) const {
  if (args.size() != signature().size())
    throw Error("kernel '" + name() + "' takes " + std::to_string(signature().size()) +
                " arguments, the launch passed " + std::to_string(args.size()));
  checkDescriptors(signature(), args, name());
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return; // an empty grid runs nothing
  const Device &device = stream.device();

  if (device.kind() == DeviceKind::interp) {
    Config config = impl_->defaults.merged(config_in);
    checkWholeClusters(name(), grid, config.cluster_size());
    Specialization spec = specialize(args);
    std::string key = config.str() + "|" + spec.str();
    std::shared_ptr<const interp::Program> program;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      auto it = impl_->interpreted.find(key);
      if (it != impl_->interpreted.end())
        program = it->second;
    }
    if (!program) {
      Module module = trace(config, spec);
      lower(module, Stage::tile);
      program = interp::Program::compile(module);
      // KILN_CHECK_PTX=sm_90a,sm_80: also compile each kernel the
      // interpreter runs for those GPUs, through ptxas (CI has no GPU).
      for (const Target &target : checkPtxTargets())
        // (Clusters exist from sm_90: a cluster kernel has no older target.)
        if (config.cluster_size() == 1 || target.compute_capability() >= 90)
          compile(config, spec, target.name);
      std::lock_guard<std::mutex> lock(impl_->mutex);
      impl_->interpreted.emplace(key, program);
    }
    program->run(grid, args, std::cout);
    return;
  }

  std::shared_ptr<const GpuKernel> loaded = loadedFor(config_in, device, args);
  checkWholeClusters(name(), grid, loaded->loaded.cluster_size);
  Parameters parameters(signature(), args, name(), loaded->tensor_maps);
  cuda::launch(loaded->loaded, grid, stream.native(), parameters.pointers());
}

int Kernel::resident_clusters(const Config &config, const Stream &stream, std::span<const Arg> args) const {
  if (args.size() != signature().size())
    throw Error("kernel '" + name() + "' takes " + std::to_string(signature().size()) +
                " arguments, the query passed " + std::to_string(args.size()));
  const Device &device = stream.device();
  if (device.kind() == DeviceKind::interp)
    return 1;
  const cuda::LoadedKernel &loaded = loadedFor(config, device, args)->loaded;
  return loaded.cluster_size > 1 ? cuda::max_active_clusters(loaded)
                                 : cuda::max_active_blocks_per_multiprocessor(loaded) * device.multiprocessors();
}

std::shared_ptr<const GpuKernel> Kernel::loadedFor(const Config &config_in, const Device &device,
                                                   std::span<const Arg> args) const {
  // The fast path: a launch like a recent one finds its kernel without
  // merging configs or building keys.
  PackedSpecialization bits;
  bool packed = packedSpecialization(args, signature(), bits);
  std::shared_ptr<const GpuKernel> loaded;
  if (packed) {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    for (const Impl::RecentLaunch &recent : impl_->recent)
      if (recent.specialization == bits && recent.device == device.ordinal() && recent.config == config_in) {
        loaded = recent.kernel;
        break;
      }
  }
  if (!loaded) {
    Config config = impl_->defaults.merged(config_in);
    Specialization spec = specialize(args);
    std::string key = config.str() + "|" + spec.str() + "|cuda:" + std::to_string(device.ordinal());
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      auto it = impl_->loaded.find(key);
      if (it != impl_->loaded.end())
        loaded = it->second;
    }
    if (!loaded) {
      int cc = device.compute_capability();
      std::string arch = target_for(device);
      CompiledKernel compiled = compile(config, spec, arch);
      std::vector<char> image = compiled.cubin;
      // A cubin loads only on its own GPU generation; PTX of an older
      // target runs on newer GPUs, compiled by the driver.
      if (image.empty() || !cubin_runs_on(check_target(arch), cc)) {
        image.assign(compiled.ptx.begin(), compiled.ptx.end());
        image.push_back('\0');
      }
      loaded = std::make_shared<const GpuKernel>(
          GpuKernel{cuda::load(image, compiled.name, device.ordinal(), compiled.num_warps * 32, compiled.shared_memory,
                               compiled.cluster_size),
                    compiled.tensor_maps});
    }
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->loaded.emplace(key, loaded);
    if (packed) {
      constexpr size_t kRecent = 8; // the launch shapes a program cycles through
      if (impl_->recent.size() == kRecent)
        impl_->recent.erase(impl_->recent.begin());
      impl_->recent.push_back({config_in, bits, device.ordinal(), loaded});
    }
  }
  return loaded;
}

} // namespace kiln
