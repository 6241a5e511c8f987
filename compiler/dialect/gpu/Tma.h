//===- Tma.h - how Hopper's copy engine fills a swizzled tile --*- C++ -*-===//
//
// The copy engine (TMA, `cp.async.bulk.tensor`) writes a box of a tensor
// into shared memory with the hardware's 32/64/128-byte swizzle, which is
// Kiln's swizzled encoding (Mma.h) for rows of that many bytes when the
// tile starts 1024-byte aligned. Rows longer than 128 bytes are stored as
// 128-byte column blocks one after another (SwizzledTile), so they arrive
// as several boxes of 128-byte rows.
//
//===----------------------------------------------------------------------===//

#pragma once

#include <cstdint>
#include <optional>

namespace kiln::gpu {

/// The copies that fill a `rows x cols` tile (cols contiguous): `copies`
/// boxes of `rows x boxCols` elements, 128-byte column blocks apart, each
/// swizzled over `swizzleBytes` (0: rows of 16 bytes, unswizzled).
struct TmaBox {
  int64_t rows = 0, boxCols = 0, copies = 0;
  int swizzleBytes = 0;
};

/// The boxes of a tile of `elementBytes` elements, or nothing when the copy
/// engine cannot fill it in Kiln's encoding (rows under 16 bytes or not a
/// power of two, more than 256 rows).
std::optional<TmaBox> tmaBoxFor(int64_t rows, int64_t cols, int64_t elementBytes);

/// Whether `programs` of a cluster can share the copies of `box` (multicast),
/// each program copying rows / programs of its rows: those parts must start
/// where the swizzle pattern starts again (8 rows).
inline bool multicastSplits(const TmaBox &box, int64_t programs) {
  return programs > 1 && box.rows % (8 * programs) == 0;
}

} // namespace kiln::gpu
