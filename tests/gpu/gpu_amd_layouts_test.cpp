// Every registered kernel (the examples' and the tutorial's) laid out for
// the AMD GPUs Kiln plans for: the pipeline up to its gpu stage over the
// target's wavefronts, and a clear refusal past it, where the AMD lowering
// is not built yet (docs/amd.md). No GPU is needed.
#include "GpuTestSupport.h"

#include <kiln/compiler.h>
#include <kiln/registry.h>
#include <kiln/target.h>

namespace kiln::testing {
namespace {

bool has(const std::string &text, const std::string &needle) { return text.find(needle) != std::string::npos; }

TEST(AmdLayouts, EveryRegisteredKernelLaysOutOverItsWavefronts) {
  ASSERT_FALSE(registered_kernels().empty());
  for (const RegisteredKernel &entry : registered_kernels()) {
    const Config config = entry.kernel.default_config();
    const Module module = entry.kernel.trace(config);
    for (const char *arch : kAmdTargets) {
      SCOPED_TRACE(entry.name + " for " + arch);
      const CompileOptions options = compile_options(config, arch);
      const std::string lanes = std::to_string(threads_per_warp(check_layout_target(arch)));
      std::string laidOut;
      ASSERT_NO_THROW(laidOut = emit(module, Stage::gpu, options));
      EXPECT_TRUE(has(laidOut, "kgpu.threads_per_warp = " + lanes + " : i32"));
      EXPECT_FALSE(has(laidOut, "kgpu.wgmma")) << "no NVIDIA-only plan for an AMD target";
      try {
        emit(module, Stage::llvm, options);
        ADD_FAILURE() << "lowered for an AMD target, which Kiln does not do yet";
      } catch (const Error &e) {
        EXPECT_TRUE(has(e.what(), "does not lower them to machine code yet")) << e.what();
      }
    }
  }
}

} // namespace
} // namespace kiln::testing
