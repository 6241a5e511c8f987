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
#include "runtime/interp/Interpreter.h"

#include <kiln/cache.h>
#include <kiln/compiler.h>
#include <kiln/error.h>
#include <kiln/version.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace kiln {

Specialization Kernel::specialize(const std::vector<Arg> &args) const {
  Specialization spec;
  for (size_t i = 0; i < args.size() && i < signature().size(); ++i) {
    const Arg &arg = args[i];
    ArgSpecialization s;
    if (arg.kind() == Arg::Kind::memory) {
      s.divisible_by_16 = arg.address() % 16 == 0;
    } else if (arg.kind() == Arg::Kind::integer && !signature()[i].is_pointer &&
               is_integer(signature()[i].dtype)) {
      s.equal_to_1 = arg.integer() == 1;
      s.divisible_by_16 = arg.integer() % 16 == 0;
    }
    spec.args.push_back(s);
  }
  return spec;
}

namespace {

/// The PTX target for a device of compute capability `cc`.
std::string archFor(int cc) { return "sm_" + std::to_string(cc) + (cc == 90 ? "a" : ""); }

std::string dumpDir() {
  const char *dir = std::getenv("KILN_DUMP_DIR");
  return dir ? dir : "";
}

/// Parameter values as the driver takes them: one pointer per parameter.
struct Parameters {
  std::vector<uint64_t> storage;
  std::vector<void *> pointers;
  Parameters(const std::vector<ElementType> &signature, const std::vector<Arg> &args, const std::string &kernel) {
    storage.resize(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const ElementType &type = signature[i];
      const Arg &arg = args[i];
      auto bad = [&](const std::string &why) {
        throw Error("argument #" + std::to_string(i) + " of kernel '" + kernel + "': " + why);
      };
      uint64_t &slot = storage[i];
      if (type.is_pointer) {
        if (arg.kind() != Arg::Kind::memory)
          bad("the kernel expects a pointer, the launch passed a number");
        if (arg.device() != DeviceKind::cuda)
          bad("the GPU needs device memory (a Buffer of a CUDA device), not host memory");
        slot = arg.address();
      } else if (is_float(type.dtype)) {
        if (arg.kind() == Arg::Kind::memory)
          bad("the kernel expects a float, the launch passed memory");
        double v = arg.kind() == Arg::Kind::floating ? arg.floating() : static_cast<double>(arg.integer());
        if (type.dtype == DType::f64) {
          std::memcpy(&slot, &v, 8);
        } else if (type.dtype == DType::f32) {
          float f = static_cast<float>(v);
          std::memcpy(&slot, &f, 4);
        } else {
          bad("scalar parameters of " + std::string(name(type.dtype)) + " are not supported; pass f32");
        }
      } else {
        if (arg.kind() != Arg::Kind::integer)
          bad("the kernel expects an integer");
        int64_t v = arg.integer();
        int width = bit_width(type.dtype);
        if (width < 64 && (v < -(int64_t(1) << (width - 1)) || v >= (int64_t(1) << width)))
          bad(std::to_string(v) + " does not fit " + std::string(name(type.dtype)));
        std::memcpy(&slot, &v, 8); // little endian: the low bytes first
      }
      pointers.push_back(&slot);
    }
  }
};

} // namespace

CompiledKernel Kernel::compile(const Config &config_in, const Specialization &spec, const std::string &arch) const {
  Config config = impl_->defaults.merged(config_in);
  Module module = trace(config, spec);
  CompileOptions options;
  options.arch = arch;
  options.num_warps = config.num_warps();
  options.num_stages = config.num_stages();
  options.dump_dir = dumpDir();
  std::string key = sha256_hex(std::string(version()) + "\n" + build_id() + "\n" + arch + "\n" +
                               config.str() + "\n" + spec.str() + "\n" + module.str(false));
  BlobStore store(cache_root() + "/kernels");
  if (options.dump_dir.empty()) // a dump asks for every stage: compile afresh
    if (auto entry = store.load(key)) {
      try {
        auto meta = nlohmann::json::parse(entry->metadata);
        CompiledKernel kernel;
        kernel.name = meta.at("name");
        kernel.arch = meta.at("arch");
        kernel.num_warps = meta.at("num_warps");
        kernel.shared_memory = meta.at("shared_memory");
        kernel.registers = meta.at("registers");
        kernel.spill_stores = meta.at("spill_stores");
        kernel.spill_loads = meta.at("spill_loads");
        kernel.stack_frame = meta.at("stack_frame");
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
                         {"registers", kernel.registers},
                         {"spill_stores", kernel.spill_stores},
                         {"spill_loads", kernel.spill_loads},
                         {"stack_frame", kernel.stack_frame},
                         {"config", config.str()},
                         {"specialization", spec.str()},
                         {"kiln", version()}};
  BlobStore::Entry entry;
  entry.metadata = meta.dump();
  entry.files["kernel.ptx"] = std::vector<char>(kernel.ptx.begin(), kernel.ptx.end());
  if (!kernel.cubin.empty())
    entry.files["kernel.cubin"] = kernel.cubin;
  store.store(key, entry);
  return kernel;
}

void Kernel::launch_with(const Grid &grid, const Config &config_in, const Stream &stream,
                         const std::vector<Arg> &args) const {
  if (args.size() != signature().size())
    throw Error("kernel '" + name() + "' takes " + std::to_string(signature().size()) +
                " arguments, the launch passed " + std::to_string(args.size()));
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return; // an empty grid runs nothing
  Config config = impl_->defaults.merged(config_in);
  Specialization spec = specialize(args);
  const Device &device = stream.device();
  std::string key = config.str() + "|" + spec.str();

  if (device.kind() == DeviceKind::interp) {
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
      std::lock_guard<std::mutex> lock(impl_->mutex);
      impl_->interpreted.emplace(key, program);
    }
    program->run(grid, args, std::cout);
    return;
  }

  key += "|cuda:" + std::to_string(device.ordinal());
  std::shared_ptr<const cuda::LoadedKernel> loaded;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto it = impl_->loaded.find(key);
    if (it != impl_->loaded.end())
      loaded = it->second;
  }
  if (!loaded) {
    CompiledKernel compiled = compile(config, spec, archFor(device.compute_capability()));
    std::vector<char> image = compiled.cubin;
    if (image.empty()) { // no ptxas: the driver compiles the PTX
      image.assign(compiled.ptx.begin(), compiled.ptx.end());
      image.push_back('\0');
    }
    loaded = std::make_shared<const cuda::LoadedKernel>(cuda::load(
        image, compiled.name, device.ordinal(), compiled.num_warps * 32, compiled.shared_memory));
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->loaded.emplace(key, loaded);
  }
  Parameters parameters(signature(), args, name());
  cuda::launch(*loaded, grid, stream.native(), parameters.pointers);
}

} // namespace kiln
