// GPU tests skip (exit 77, which ctest reports as skipped) where there is
// no usable CUDA device; listing the tests works everywhere.
#include <kiln/runtime.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    listing = listing || std::strcmp(argv[i], "--gtest_list_tests") == 0;
  if (!listing && !kiln::Device::cuda_available()) {
    std::printf("skipped: %s\n", kiln::Device::cuda_unavailable_reason().c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
