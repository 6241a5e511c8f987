//===- Launches.cpp - an op's generated kernels, launched in order --------===//

#include "ops/lib/Launches.h"

#include "ops/lib/Workspace.h"

#include <algorithm>

namespace kiln::ops {

void Launches::queue(const Stream &stream) const {
  // (A step may take workspace arguments it never reads, of no bytes: they
  // still point into a workspace.)
  const bool scratch =
      std::any_of(steps.begin(), steps.end(), [](const Step &step) { return !step.workspace.empty(); });
  const size_t bytes = std::max<size_t>(workspace_bytes, kWorkspaceAlignment);
  Buffer space = scratch ? workspace(stream, bytes) : Buffer();
  for (const Step &step : steps) {
    if (step.workspace.empty()) {
      step.kernel.launch_with(step.grid, step.config, stream, step.args);
      continue;
    }
    std::vector<Arg> args = step.args;
    for (const Scratch &s : step.workspace)
      args[s.argument] = Arg::device_pointer(space.address() + s.offset, bytes - s.offset, space.device().kind());
    step.kernel.launch_with(step.grid, step.config, stream, args);
  }
}

CompiledKernel Launches::compile(const std::string &arch) const {
  CompiledKernel largest;
  for (const Step &step : steps) {
    std::vector<Arg> args = step.args;
    // Only the workspace's alignment shapes the code; workspaces are
    // allocations, aligned at least this much.
    for (const Scratch &s : step.workspace)
      args[s.argument] = Arg::device_pointer(kWorkspaceAlignment + s.offset,
                                             std::max<size_t>(workspace_bytes, kWorkspaceAlignment) - s.offset);
    CompiledKernel compiled = step.kernel.compile(step.config, step.kernel.specialize(args), arch);
    if (compiled.registers >= largest.registers)
      largest = std::move(compiled);
  }
  return largest;
}

} // namespace kiln::ops
