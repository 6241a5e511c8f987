//===- Mfma.h - dots on AMD matrix cores: when, and in which layouts -*- C++ -*-===//
//
// On CDNA GPUs (gfx90a, gfx942: 64-lane wavefronts) a tile.dot of f16 or
// bf16 operands runs on the matrix cores, as v_mfma_f32_32x32x8 (f16,
// bf16_1k) when its M and N split into 32x32 pieces, else as
// v_mfma_f32_16x16x16 when they split into 16x16 ones; on gfx942 a dot of
// f32 operands at tf32 or tf32x3 precision runs as v_mfma_f32_32x32x4_xf32
// or _16x16x8_xf32 (xf32 keeps tf32's 10 mantissa bits; tf32x3 is three of
// them). One instruction multiplies a PxK piece of A by a KxP piece of B
// (P = 32 or 16) with every lane holding `perLane` consecutive K (4 of
// 16-bit operands, 2 of f32) of one row of A (row lane % P, K block
// lane / P) and the same of one column of B; its accumulator gives each
// lane one column (lane % P) and 4-row groups of rows: for P = 32 rows
// 8 * (r / 4) + 4 * (lane / 32) + r % 4 of register r (16 of them), for
// P = 16 rows 4 * (lane / 16) + r (4 of them). Wavefronts own whole pieces,
// interleaved along N then M, repeated over the block. Other dots (f32 at
// ieee precision or on gfx90a, shapes that do not split, RDNA's gfx1100)
// run on FMAs.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "compiler/dialect/gpu/LinearLayout.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln::tile {
class DotOp;
} // namespace kiln::tile

namespace kiln::gpu {

/// One matrix-core instruction: a P x P piece of the result from K = kStep
/// of the operands, each lane holding `perLane` of K per operand and
/// `accumulators` f32 results.
struct MfmaShape {
  int64_t piece = 32;
  int64_t kStep = 8;
  int64_t accumulators = 16;
  int64_t perLane = 4;
  /// Lanes that share a row of A (a column of B) and hold its K blocks.
  int64_t kBlocks() const { return 64 / piece; }
};

/// The matrix-core instruction `op` runs as on `target` (an AMD target name),
/// or nullopt when it runs on FMAs there.
std::optional<MfmaShape> mfmaShape(tile::DotOp op, std::string_view target);

/// Wavefronts along M and N for an MxN accumulator of `shape` pieces; with
/// fewer pieces than wavefronts, the rest hold copies.
struct MfmaWaves {
  int m = 1, n = 1;
};
MfmaWaves mfmaWaves(int64_t M, int64_t N, int numWarps, const MfmaShape &shape);

/// The accumulator layout of an MxN matrix-core dot of `shape` pieces:
/// register index = the piece's own register + accumulators * (its piece
/// along N + pieces along N * its piece along M) within the wavefront.
LinearLayout mfmaAccumulatorLayout(int64_t M, int64_t N, int numWarps, const MfmaShape &shape);

} // namespace kiln::gpu
