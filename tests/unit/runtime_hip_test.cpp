// The HIP runtime's loader on a machine without an AMD GPU: a missing
// library, a library that loads but finds no device (the HIP runtime CI
// installs, Debian 12's libamdhip64-5), and what the public runtime then
// does: no HIP device listed or chosen, a plain error when one is asked
// for, the interpreter still the default.
#include "runtime/hip/Runtime.h"

#include <kiln/error.h>
#include <kiln/program.h>
#include <kiln/runtime.h>

#include <gtest/gtest.h>

#include <filesystem>

namespace {

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

/// Where Debian's libamdhip64-5 puts the runtime (scripts/install-deps.sh
/// installs it), if it is there.
std::string installedRuntime() {
  for (const char *path : {"/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", "/usr/lib/x86_64-linux-gnu/libamdhip64.so.6",
                           "/opt/rocm/lib/libamdhip64.so"})
    if (std::filesystem::exists(path))
      return path;
  return "";
}

TEST(HipRuntime, AMissingLibraryIsNamed) {
  auto loaded = kiln::hip::load_runtime("/nonexistent/libamdhip64.so");
  EXPECT_TRUE(contains(loaded->error, "no HIP runtime: /nonexistent/libamdhip64.so could not be loaded"))
      << loaded->error;
  EXPECT_TRUE(loaded->arch.empty());
}

TEST(HipRuntime, ALibraryWithoutAnAmdGpuSaysSo) {
  const std::string path = installedRuntime();
  if (path.empty())
    GTEST_SKIP() << "no HIP runtime installed (scripts/install-deps.sh installs libamdhip64-5)";
  auto loaded = kiln::hip::load_runtime(path);
  // Every entry point Kiln uses was found: the failure is the device's.
  EXPECT_FALSE(contains(loaded->error, "lacks")) << loaded->error;
  EXPECT_GE(loaded->version, 50000000) << "hipRuntimeGetVersion";
  if (!loaded->arch.empty())
    GTEST_SKIP() << "this machine has an AMD GPU (" << loaded->arch[0] << ")";
  EXPECT_TRUE(contains(loaded->error, "no usable AMD GPU") || contains(loaded->error, "reports no AMD GPU"))
      << loaded->error;
}

TEST(HipRuntime, NoDeviceMeansNoHipDeviceAndAPlainError) {
  if (kiln::Device::hip_available())
    GTEST_SKIP() << "this machine has an AMD GPU";
  EXPECT_FALSE(kiln::Device::hip_unavailable_reason().empty());
  for (const kiln::Device &gpu : kiln::Device::gpus())
    EXPECT_NE(gpu.kind(), kiln::DeviceKind::hip);
  try {
    kiln::Device::hip(0);
    ADD_FAILURE() << "Device::hip should throw without an AMD GPU";
  } catch (const kiln::Error &e) {
    EXPECT_EQ(std::string(e.what()), kiln::Device::hip_unavailable_reason());
  }
  if (!kiln::Device::cuda_available()) {
    EXPECT_EQ(kiln::Device::default_device(), kiln::Device::interp());
  }
}

TEST(HipRuntime, KernelsLoadOnTheirVendorsRuntimeOnly) {
  kiln::CompiledKernel kernel;
  kernel.name = "k";
  kernel.arch = "gfx942";
  try {
    kiln::load(kernel, {}, kiln::Device::interp());
    ADD_FAILURE() << "an AMD kernel should not load on the interpreter";
  } catch (const kiln::Error &e) {
    EXPECT_STREQ(e.what(), "kernel 'k' is compiled for gfx942: it loads on a HIP device, not on interpreter");
  }
  kernel.arch = "sm_90a";
  try {
    kiln::load(kernel, {}, kiln::Device::interp());
    ADD_FAILURE() << "an NVIDIA kernel should not load on the interpreter";
  } catch (const kiln::Error &e) {
    EXPECT_STREQ(e.what(), "kernel 'k' is compiled for sm_90a: it loads on a CUDA device, not on interpreter");
  }
}

} // namespace
