//===- Mma.h - tensor-core dots: when, and in which layouts ----*- C++ -*-===//
//
// A tile.dot of f16/bf16 operands runs on the tensor cores (mma.sync
// m16n8k16, sm_80+) when its shape splits into 16x16 pieces; one of f32
// operands with precision tf32 or tf32x3 does too (m16n8k8, K a multiple
// of 8), with its operands rounded to tf32 as they are loaded. Its
// accumulator then lives in the MMA layout: each warp owns 16x8 pieces,
// interleaved with the other warps' along N then M and repeated over the
// block; within a piece, lane l holds rows l/4 and l/4 + 8, columns
// 2*(l%4) and 2*(l%4) + 1. The operands go through XOR-swizzled shared
// memory and reach the registers through ldmatrix. A dot of fp8 operands
// (e4m3 or e5m2, f32 accumulation) runs on tensor cores only as Hopper's
// wgmma (k32, both operands K-major in shared memory), where layout
// assignment chooses it; elsewhere it stays on FMAs.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/gpu/Swizzle.h"

#include <optional>

namespace kiln::gpu {

/// Whether `op` runs on tensor cores on a GPU of `computeCapability` (an
/// fp8 dot: once layout assignment chose wgmma for it).
bool usesMma(tile::DotOp op, int computeCapability);

/// Whether `op` multiplies fp8 operands (e4m3 or e5m2, either side).
bool isFp8Dot(tile::DotOp op);

/// Warps along M and N for an MxN accumulator; with fewer 16x16 pieces
/// than warps, the rest hold copies.
struct MmaWarps {
  int m = 1, n = 1;
};
MmaWarps mmaWarps(int64_t M, int64_t N, int numWarps);

/// The accumulator layout of an MxN tensor-core dot.
LinearLayout mmaAccumulatorLayout(int64_t M, int64_t N, int numWarps);

/// The register layout of operand `operand` (0: A, 1: B) of `op`, an
/// mma.sync dot of `numWarps` warps: what its K steps' fragments are read
/// into when they are carried in registers (transforms/MmaFragments.cpp).
MmaOperandEncodingAttr mmaOperandEncoding(tile::DotOp op, unsigned operand, int numWarps);

/// Whether `value` is a tensor in an mma operand layout.
bool inMmaOperandLayout(mlir::Value value);

/// The K of one mma.sync instruction for operands of `element` type: 16
/// (f16/bf16, m16n8k16) or 8 (tf32, m16n8k8).
int64_t mmaKStep(mlir::Type element);

/// The kgpu.local_load of a whole ring slot that defines dot operand
/// `operand` (the dot then reads the slot itself), or null.
LocalLoadOp ringSlotLoad(mlir::Value operand);

/// Whether `op` may run as Hopper's wgmma (sm_90a, warpgroups of 4 warps):
/// a tensor-core dot (16-bit, tf32 but not tf32x3, or fp8 with f32
/// accumulation) whose M splits into 64 rows per warpgroup, N at most 256,
/// and whose K rows fit one 32/64/128-byte swizzle atom or (16-bit) are
/// whole 128-byte blocks of them. (A must also be K-contiguous in shared
/// memory, B K-contiguous or, see below, N-contiguous with N a multiple of
/// 64; layout assignment checks how they are loaded.)
bool wgmmaShapeFits(tile::DotOp op, int computeCapability, int numWarps);

/// Whether wgmma may read `op`'s B N-major (transposing it): 16-bit
/// operands only; tf32 wgmma takes both operands K-major.
bool wgmmaTakesNMajorB(tile::DotOp op);

/// The accumulator layout of a wgmma dot: the warps of a warpgroup stacked
/// 16 rows each, warpgroups 64 rows apart, each thread holding every 8th
/// column pair of its rows (the m16n8 fragment repeated along N), then the
/// 64-row blocks repeated down M.
LinearLayout wgmmaAccumulatorLayout(int64_t M, int64_t N, int numWarps);

/// Whether wgmma may read `op`'s A from registers (16-bit operands; tf32
/// reads both from shared memory).
bool wgmmaTakesRegisterA(tile::DotOp op);

/// The registers a wgmma reads A (M x K) from: the accumulator layout of
/// an M x K result, so that each K step of 16 is the thread's next 8
/// elements (four 32-bit registers of two), and a dot's result feeds the
/// next dot's A without moving.
LinearLayout wgmmaRegisterALayout(int64_t M, int64_t K, int numWarps);

/// Whether wgmma dot `op` reads A from registers as it stands: A is not a
/// ring slot, wgmma may take it from registers, and it already lies in
/// wgmmaRegisterALayout (otherwise it is staged through shared memory).
bool wgmmaReadsRegisterA(tile::DotOp op, int numWarps);

/// Whether layout assignment chose wgmma for `op` (it marked the dot, the
/// shape fits and the accumulator still has the wgmma layout; the MMA
/// layout can equal it, so the layout alone does not tell).
bool isWgmmaDot(tile::DotOp op, int computeCapability, int numWarps);

/// A dot whose accumulator restarts from zero when a scalar condition
/// holds: its C is `select(condition, 0, accumulator)` (the condition a
/// scalar i1 or its splat, layout conversions looked through). wgmma does
/// this for free (scale-d = 0 ignores the accumulator), so a K loop running
/// over several tiles needs no per-element select.
struct AccumulatorReset {
  mlir::Value condition;   ///< scalar i1: start from zero
  mlir::Value accumulator; ///< what is accumulated into otherwise
};
std::optional<AccumulatorReset> accumulatorReset(tile::DotOp op);

/// The bytes one element of `type` takes in a shared-memory tile (i1 and
/// other sub-byte types: one).
int64_t elementBytes(mlir::Type type);

/// The swizzled shared encoding of a tile whose dimension `order[0]` is
/// contiguous with `contiguous` elements of `elementBytes` each
/// (swizzleOf, Swizzle.h).
SharedEncodingAttr swizzledEncoding(mlir::MLIRContext *context, int64_t contiguous,
                                    int64_t elementBytes, llvm::ArrayRef<unsigned> order);

} // namespace kiln::gpu
