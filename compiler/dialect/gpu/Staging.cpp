//===- Staging.cpp - a block's staging buffer in shared memory ------------===//

#include "compiler/dialect/gpu/Staging.h"

#include <algorithm>

namespace kiln::gpu {

int64_t stagingRows(llvm::ArrayRef<int64_t> shape) {
  int64_t rows = 1;
  for (int64_t extent : shape.drop_back())
    rows *= extent;
  return rows;
}

int64_t stagingRowLength(llvm::ArrayRef<int64_t> shape, int64_t elementBytes) {
  if (shape.empty())
    return 1;
  bool pad = stagingRows(shape) > 1 && (shape.back() * elementBytes) % 32 == 0;
  return shape.back() + (pad ? std::max<int64_t>(1, 16 / elementBytes) : 0);
}

int64_t stagingBytes(llvm::ArrayRef<int64_t> shape, int64_t elementBytes) {
  return stagingRows(shape) * stagingRowLength(shape, elementBytes) * elementBytes;
}

} // namespace kiln::gpu
