//===- Launch.cpp - specializing, compiling and running kernels -----------===//
//
// A launch specializes on its arguments, then finds its program in the
// kernel's cache (one entry per config, specialization and target, with
// the programs loaded per device), else compiles the kernel -- from the
// on-disk cache, keyed by everything that changes the code, or by tracing
// and compiling it -- and loads it through the runtime. The interpreter's
// program is the traced module itself.
//
//===----------------------------------------------------------------------===//

#include "dsl/lib/KernelImpl.h"

#include <kiln/cache.h>
#include <kiln/compiler.h>
#include <kiln/error.h>
#include <kiln/interpreter.h>
#include <kiln/program.h>
#include <kiln/target.h>
#include <kiln/version.h>

#include <cstdlib>
#include <optional>
#include <string_view>

namespace kiln {

namespace {

ArgSpecialization specializationOf(const Arg &arg, const ElementType &parameter) {
  ArgSpecialization s;
  if (arg.kind() == Arg::Kind::memory) {
    s.divisible_by_16 = arg.address() % 16 == 0;
  } else if (arg.kind() == Arg::Kind::integer && !parameter.is_pointer && is_integer(parameter.dtype)) {
    // (A size of zero or less is told apart as nonpositive, so that no
    // kernel compiled for a positive size runs with it; its divisibility
    // is still told, zero being divisible by everything, so that a zero
    // stride, a broadcast view's, keeps its pointers' alignment.)
    s.nonpositive = arg.integer() <= 0;
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

} // namespace

CompileOptions compile_options(const Config &config, const std::string &arch) {
  CompileOptions options;
  options.arch = arch;
  options.num_warps = config.num_warps();
  options.num_stages = config.num_stages();
  options.min_blocks_per_sm = config.min_blocks_per_sm();
  options.warp_specialize = config.warp_specialize();
  options.ping_pong = config.ping_pong();
  options.overlap_chain = config.overlap_chain();
  options.fp_fusion = config.fp_fusion();
  options.approx_div = config.approx_div();
  options.copy_engine = config.copy_engine();
  return options;
}

std::string target_for(const Device &device) {
  if (const char *target = std::getenv("KILN_TARGET"); target && *target) {
    Target checked;
    try { // e.g. sm_80 on a Hopper GPU, to run an older target's code
      checked = check_target(target);
    } catch (const Error &error) {
      throw Error(std::string("KILN_TARGET: ") + error.what());
    }
    // (The interpreter runs no compiled code: any target serves its checks.)
    const bool amd = checked.vendor == GpuVendor::amd;
    if (device.kind() != DeviceKind::interp && amd != (device.kind() == DeviceKind::hip))
      throw Error("KILN_TARGET: " + checked.name + " is " + (amd ? "an AMD" : "an NVIDIA") + " GPU's target; " +
                  device.name() + " is " + (amd ? "an NVIDIA GPU" : "an AMD GPU"));
    return checked.name;
  }
  return device.arch();
}

namespace {

/// The traced kernel's compiled code from the disk cache, or compiled and
/// stored.
CompiledKernel compileThroughDiskCache(const Module &module, const Config &config, const Specialization &spec,
                                       const std::string &arch, const std::string &dump) {
  CompileOptions options = compile_options(config, arch);
  options.dump_dir = dump;
  std::string key = sha256_hex(std::string(version()) + "\n" + build_id() + "\n" + arch + "\n" + config.str() + "\n" +
                               spec.str() + "\n" + module.str(false));
  // No cache root (a user without a home directory): compile every time.
  const std::string root = cache_root();
  std::optional<BlobStore> store;
  if (!root.empty())
    store.emplace(root + "/kernels");
  if (store && options.dump_dir.empty()) // a dump asks for every stage: compile afresh
    if (auto entry = store->load(key)) {
      try {
        CompiledKernel kernel = compiled_kernel_from_metadata(entry->metadata);
        kernel.cubin = entry->files["kernel.cubin"];
        kernel.code_object = entry->files["kernel.hsaco"];
        auto &ptx = entry->files["kernel.ptx"];
        kernel.ptx.assign(ptx.begin(), ptx.end());
        auto &amdgcn = entry->files["kernel.amdgcn"];
        kernel.amdgcn.assign(amdgcn.begin(), amdgcn.end());
        return kernel;
      } catch (const Error &) {
        // metadata of another shape: compile afresh below
      }
    }
  CompiledKernel kernel = kiln::compile(module, options);
  BlobStore::Entry entry;
  entry.metadata = compiled_kernel_metadata(
      kernel, {{"config", config.str()}, {"specialization", spec.str()}, {"kiln", version()}});
  if (!kernel.ptx.empty())
    entry.files["kernel.ptx"] = std::vector<char>(kernel.ptx.begin(), kernel.ptx.end());
  if (!kernel.cubin.empty())
    entry.files["kernel.cubin"] = kernel.cubin;
  if (!kernel.amdgcn.empty())
    entry.files["kernel.amdgcn"] = std::vector<char>(kernel.amdgcn.begin(), kernel.amdgcn.end());
  if (!kernel.code_object.empty())
    entry.files["kernel.hsaco"] = kernel.code_object;
  if (store)
    store->store(key, entry);
  return kernel;
}

/// The cache entry's key: the config merged over the defaults, the
/// specialization, and the target ("sm_90a", or "interp").
std::string cacheKey(const Config &config, const Specialization &spec, const std::string &target) {
  return config.str() + "|" + spec.str() + "|" + target;
}

constexpr const char *kInterpreterTarget = "interp";

} // namespace

std::shared_ptr<const CompiledKernel> Kernel::compiledFor(const Config &config, const Specialization &spec,
                                                          const std::string &arch) const {
  const std::string dump = dumpDir();
  const std::string key = cacheKey(config, spec, arch);
  if (dump.empty()) { // a dump asks for every stage: compile afresh
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (auto it = impl_->cache.find(key); it != impl_->cache.end() && it->second.compiled)
      return it->second.compiled;
  }
  auto kernel = std::make_shared<const CompiledKernel>(
      compileThroughDiskCache(traceMerged(config, spec, nullptr), config, spec, arch, dump));
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Impl::Entry &entry = impl_->cache[key];
  if (!entry.compiled)
    entry.compiled = kernel;
  return kernel;
}

CompiledKernel Kernel::compile(const Config &config, const Specialization &spec, const std::string &arch) const {
  check_target(arch);
  return *compiledFor(impl_->defaults.merged(config), spec, arch);
}

std::shared_ptr<const Program> Kernel::programFor(const Config &config_in, const Device &device,
                                                  std::span<const Arg> args) const {
  // The fast path: a launch like a recent one finds its program without
  // merging configs or building keys.
  PackedSpecialization bits;
  const bool packed = packedSpecialization(args, signature(), bits);
  if (packed) {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    for (const Impl::RecentLaunch &recent : impl_->recent)
      if (recent.specialization == bits && recent.device == device && recent.config == config_in)
        return recent.program;
  }
  const Config config = impl_->defaults.merged(config_in);
  const Specialization spec = specialize(args);
  const bool interpreted = device.kind() == DeviceKind::interp;
  const std::string target = interpreted ? kInterpreterTarget : target_for(device);
  const std::string key = cacheKey(config, spec, target);
  std::shared_ptr<const Program> program;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (auto it = impl_->cache.find(key); it != impl_->cache.end())
      if (auto found = it->second.programs.find(device.ordinal()); found != it->second.programs.end())
        program = found->second;
  }
  if (!program && interpreted) {
    program = interpret(traceMerged(config, spec, nullptr), signature());
    // KILN_CHECK_PTX=sm_90a,sm_80,gfx942: also compile each kernel the
    // interpreter runs for those GPUs, through ptxas or ld.lld (CI has no
    // GPU).
    for (const Target &check : checkPtxTargets())
      // (Clusters exist from sm_90: a cluster kernel has no older target.)
      if (config.cluster_size() == 1 || check.compute_capability() >= 90)
        compiledFor(config, spec, check.name);
  } else if (!program) {
    program = load(*compiledFor(config, spec, target), signature(), device);
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  program = impl_->cache[key].programs.emplace(device.ordinal(), program).first->second;
  if (packed) {
    constexpr size_t kRecent = 8; // the launch shapes a program cycles through
    if (impl_->recent.size() == kRecent)
      impl_->recent.erase(impl_->recent.begin());
    impl_->recent.push_back({config_in, bits, device, program});
  }
  return program;
}

void Kernel::launch_with(const Grid &grid, const Config &config, const Stream &stream,
                         std::span<const Arg> args) const {
  // The program checks the arguments as it launches them; an empty grid
  // launches nothing, and its arguments are checked here.
  if (grid.size() == 0) {
    check_arguments(name(), signature(), args);
    return;
  }
  if (args.size() != signature().size()) // (before specializing on them)
    check_arguments(name(), signature(), args);
  programFor(config, stream.device(), args)->launch(grid, stream, args);
}

int Kernel::resident_clusters(const Config &config, const Stream &stream, std::span<const Arg> args) const {
  if (args.size() != signature().size())
    throw Error("kernel '" + name() + "' takes " + std::to_string(signature().size()) +
                " arguments, the query passed " + std::to_string(args.size()));
  return programFor(config, stream.device(), args)->resident_clusters();
}

} // namespace kiln
