// Tensor maps (runtime/cuda/TensorMap.h): what the copy engine cannot take
// is refused with the reason, before the CUDA driver is asked, so these run
// without a GPU.
#include "runtime/cuda/TensorMap.h"

#include <kiln/kiln.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace kiln;

namespace {

/// The error encoding a map of `dtype` at `address` throws ("" if none
/// before the driver: then the driver is missing here, or it encoded).
std::string refusal(DType dtype, uint64_t address, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                    std::vector<uint32_t> box) {
  try {
    cuda::encode_tensor_map(dtype, address, sizes, strides, box, 128);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

void expectRefused(const std::string &error, const std::string &reason) {
  EXPECT_NE(error.find("cannot describe the tensor to the copy engine"), std::string::npos) << error;
  EXPECT_NE(error.find(reason), std::string::npos) << error;
}

} // namespace

TEST(TensorMap, RefusesWhatTheCopyEngineCannotTake) {
  const uint64_t aligned = 1 << 20;
  expectRefused(refusal(DType::i1, aligned, {64, 64}, {64, 1}, {64, 64}), "no tensor-map type for i1");
  expectRefused(refusal(DType::bf16, aligned, {}, {}, {}), "1 to 5 dimensions");
  expectRefused(refusal(DType::bf16, aligned, {2, 2, 2, 2, 2, 8}, {256, 128, 64, 32, 8, 1}, {1, 1, 1, 1, 1, 8}),
                "1 to 5 dimensions");
  expectRefused(refusal(DType::bf16, aligned, {64, 64}, {64}, {64, 64}), "one stride and box size each");
  expectRefused(refusal(DType::bf16, aligned + 8, {64, 64}, {64, 1}, {64, 64}), "multiple of 16 bytes");
  expectRefused(refusal(DType::bf16, aligned, {64, 64}, {1, 64}, {64, 64}), "innermost dimension must be contiguous");
  expectRefused(refusal(DType::bf16, aligned, {0, 64}, {64, 1}, {64, 64}), "sizes must lie in [1, 2^32]");
  // Rows 20 bf16 (40 bytes) apart: not a multiple of 16 bytes.
  expectRefused(refusal(DType::bf16, aligned, {64, 20}, {20, 1}, {64, 16}), "multiples of 16 bytes below 2^40, got 40");
}
