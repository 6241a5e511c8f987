// Every registered kernel (the examples' and the tutorial's) compiled for
// the AMD GPUs Kiln targets: laid out over the target's wavefronts, lowered
// to ROCDL (dots on CDNA's matrix cores), compiled to AMDGCN and linked
// into a code object whose metadata gives its resources. No GPU is needed; none of it has run on an
// AMD GPU (docs/amd.md).
#include "GpuTestSupport.h"

#include <kiln/compiler.h>
#include <kiln/registry.h>
#include <kiln/target.h>

namespace kiln::testing {
namespace {

bool has(const std::string &text, const std::string &needle) { return text.find(needle) != std::string::npos; }

/// A kernel's default config with its dot tiles cut to 32 x 32 (x 32):
/// for gfx1100, whose dots run on FMAs (no WMMA path yet), where the tiles
/// tuned for tensor cores spill (and take LLVM minutes to allocate).
Config fmaSized(const Config &defaults) {
  Config config = defaults;
  for (const char *key : {"BLOCK_M", "BLOCK_N", "BLOCK_K"})
    if (config.has(key))
      config.set(key, 32);
  config.set("num_warps", 4);
  return config;
}

TEST(AmdCodeObjects, EveryRegisteredKernelCompilesForEveryAmdTarget) {
  if (!compile_only()) // (nothing of it runs on the NVIDIA GPU, whose bundle may leave the AMD back end out)
    GTEST_SKIP() << "compiled for AMD targets by the --compile-only run";
  ASSERT_FALSE(registered_kernels().empty());
  for (const RegisteredKernel &entry : registered_kernels()) {
    const Module traced = entry.kernel.trace(entry.kernel.default_config());
    const bool dots = has(traced.str(false), "tile.dot");
    for (const char *arch : kAmdTargets) {
      SCOPED_TRACE(entry.name + " for " + arch);
      // CDNA's dots run on matrix cores at the kernels' own tiles.
      const bool matrixCores = check_target(arch).major == 9;
      const bool cut = dots && !matrixCores;
      const Config config = cut ? fmaSized(entry.kernel.default_config()) : entry.kernel.default_config();
      const Module module = cut ? entry.kernel.trace(config) : traced;
      const CompileOptions options = compile_options(config, arch);
      const int lanes = threads_per_warp(check_target(arch));
      std::string laidOut;
      ASSERT_NO_THROW(laidOut = emit(module, Stage::gpu, options));
      EXPECT_TRUE(has(laidOut, "kgpu.threads_per_warp = " + std::to_string(lanes) + " : i32"));
      EXPECT_FALSE(has(laidOut, "kgpu.wgmma")) << "no NVIDIA-only plan for an AMD target";
      CompiledKernel kernel;
      try {
        kernel = compile(module, options);
      } catch (const Error &e) {
        ADD_FAILURE() << e.what();
        continue;
      }
      EXPECT_TRUE(has(kernel.amdgcn, ".amdgcn_target \"amdgcn-amd-amdhsa--" + std::string(arch)));
      EXPECT_TRUE(has(kernel.amdgcn, ".amdhsa_kernel " + kernel.name));
      EXPECT_TRUE(kernel.ptx.empty() && kernel.cubin.empty());
      EXPECT_EQ(kernel.threads_per_warp, lanes);
      EXPECT_TRUE(has(kernel.resources, "(wave" + std::to_string(lanes) + ")")) << kernel.resources;
      EXPECT_TRUE(has(kernel.resources, std::to_string(kernel.num_warps * lanes) + " work-items"))
          << kernel.resources;
      if (!cut) { // (no scratch, no spills)
        EXPECT_EQ(kernel.stack_frame, 0) << kernel.resources;
        EXPECT_EQ(kernel.spill_stores, 0) << kernel.resources;
      }
      if (dots && matrixCores) { // (every registered dot takes f16 or bf16 operands)
        EXPECT_TRUE(has(kernel.amdgcn, "v_mfma_f32_32x32x8")) << "its dots on the matrix cores";
      }
      // ld.lld's code object: a shared ELF for the AMDGPU machine (EM_AMDGPU, 224).
      ASSERT_GT(kernel.code_object.size(), 64u) << "no ld.lld?";
      EXPECT_EQ(std::string(kernel.code_object.data(), 4), "\x7f" "ELF");
      EXPECT_EQ(static_cast<unsigned char>(kernel.code_object[18]), 224);
    }
  }
}

} // namespace
} // namespace kiln::testing
