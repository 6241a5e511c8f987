//===- Swizzle.h - the XOR swizzle of shared-memory tiles -------*- C++ -*-===//
//
// Kept free of MLIR so that the unit tests can check the swizzle against
// the GPUs' bank models (tests/unit/linear_layout_test.cpp).
//
//===----------------------------------------------------------------------===//

#pragma once

#include <cstdint>

namespace kiln::gpu {

/// A tile's rows of 16-byte chunks (`vec` elements each), chunk c of row r
/// stored at chunk c ^ ((r / perPhase) % maxPhase) (#kgpu.shared).
struct Swizzle {
  int64_t vec = 1, perPhase = 1, maxPhase = 1;
};

/// The swizzle of a tile whose rows hold `contiguous` elements of
/// `elementBytes` each: any 8 consecutive rows of one chunk column fall in
/// different banks.
Swizzle swizzleOf(int64_t contiguous, int64_t elementBytes);

} // namespace kiln::gpu
