//===- Staging.h - a block's staging buffer in shared memory --------------===//
//
// How much shared memory a block converted between layouts through shared
// memory takes (the lowering's conversions, and the passes that plan
// shared memory before the lowering). No MLIR here.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace kiln::gpu {

/// Rows of a staging buffer: every dimension but the last.
int64_t stagingRows(llvm::ArrayRef<int64_t> shape);

/// Elements a row of a staging buffer takes: rows whose length is a
/// multiple of 32 bytes would start in the same few banks, so a warp
/// writing one column of successive rows (an mma.sync accumulator: 8 rows,
/// 4 lanes each) would conflict; 16 bytes more a row spread them over all
/// banks and keep 16-byte vectors aligned.
int64_t stagingRowLength(llvm::ArrayRef<int64_t> shape, int64_t elementBytes);

/// Shared memory a conversion of a block of `shape` through shared memory
/// takes: its rows, padded against bank conflicts.
int64_t stagingBytes(llvm::ArrayRef<int64_t> shape, int64_t elementBytes);

} // namespace kiln::gpu
