// GPU tests. On a GPU, each kernel runs there and on the interpreter and
// the results must agree. With --compile-only (no GPU needed; CI runs it),
// each kernel is compiled as its launch would specialize it, for Hopper and
// Ampere, and ptxas must accept it; the interpreter still runs it. Without a
// GPU (or, compiling only, without ptxas) the program exits 77, which ctest
// reports as skipped; listing the tests works everywhere.
#include "GpuTestSupport.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char **argv) {
  bool listing = false;
  std::vector<char *> args;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strcmp(argv[i], "--compile-only") == 0) {
      kiln::testing::compile_only() = true;
      continue;
    }
    listing = listing || std::strcmp(argv[i], "--gtest_list_tests") == 0;
    args.push_back(argv[i]);
  }
  if (!listing && kiln::testing::compile_only() && !kiln::testing::ptxas_available()) {
    std::printf("skipped: no ptxas (set KILN_PTXAS or install the CUDA toolkit)\n");
    return 77;
  }
  if (kiln::testing::compile_only())
    setenv("KILN_CHECK_PTX", kiln::testing::kCheckedTargets, 1);
  if (!listing && !kiln::testing::compile_only() && !kiln::Device::cuda_available()) {
    std::printf("skipped: %s\n", kiln::Device::cuda_unavailable_reason().c_str());
    return 77;
  }
  int count = static_cast<int>(args.size());
  ::testing::InitGoogleTest(&count, args.data());
  return RUN_ALL_TESTS();
}
