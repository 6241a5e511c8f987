//===- Launch.cpp - specializing, compiling and running kernels -----------===//

#include "dsl/lib/KernelImpl.h"

#include "runtime/interp/Interpreter.h"

#include <kiln/compiler.h>
#include <kiln/error.h>

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
  throw Error("kernel '" + name() + "': launching on " + device.name() +
              " needs the NVIDIA back end, which this build does not have yet; run with "
              "KILN_INTERPRET=1 or on Device::interp()");
}

} // namespace kiln
