//===- Tma.cpp - how Hopper's copy engine fills a swizzled tile -----------===//

#include "compiler/dialect/gpu/Tma.h"

#include <algorithm>

namespace kiln::gpu {

std::optional<TmaBox> tmaBoxFor(int64_t rows, int64_t cols, int64_t elementBytes) {
  const int64_t rowBytes = cols * elementBytes;
  if (rows < 1 || rows > 256 || rowBytes < 16 || (rowBytes & (rowBytes - 1)) != 0)
    return std::nullopt;
  const int64_t boxBytes = std::min<int64_t>(rowBytes, 128);
  TmaBox box;
  box.rows = rows;
  box.boxCols = boxBytes / elementBytes;
  box.copies = rowBytes / boxBytes;
  box.swizzleBytes = boxBytes >= 32 ? static_cast<int>(boxBytes) : 0;
  return box;
}

} // namespace kiln::gpu
