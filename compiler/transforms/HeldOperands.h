//===- HeldOperands.h - a dot operand held across a loop ------------------===//
//
// A tensor-core dot in a loop whose A is made before the loop (attention's
// Q) holds that block for the whole loop. wgmma reads a 16-bit A from
// registers at no cost per iteration, but where the loop's values would
// not fit a thread's registers (its dots' f32 results and every A read
// from registers: D 256 attention's 128 x 256 output beside its 128 x 256
// queries), the held A is stored once, before the loop, in a shared-memory
// buffer that the dots read through matrix descriptors, as they read ring
// slots. Shared by LowerDescriptors (its rings fit beside the buffer),
// AssignLayouts (such an A gets no register layout) and PipelineLoops
// (which stores it and sizes the rings beside it).
//
//===----------------------------------------------------------------------===//

#pragma once

#include "compiler/dialect/tile/Tile.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kiln {

/// Registers a thread of a loop's plain schedule spends, beyond the dots'
/// own values, on addresses, row statistics and loop state.
constexpr int kChainOverheadRegisters = 24;

/// Whether a dot operand is loaded in `loop` (so streamed through a ring),
/// directly or transposed.
bool loadedIn(mlir::scf::ForOp loop, mlir::Value operand);

/// Registers a thread of `loop`'s plain schedule holds across an
/// iteration: every dot's f32 result, and its A where A is read from
/// registers (computed in the loop, as attention's P, or held from before
/// it and not kept in shared memory), plus kChainOverheadRegisters.
int loopRegisters(mlir::scf::ForOp loop, int computeCapability, int numWarps);

/// Whether `dot`, a wgmma dot in a loop, reads its A from a buffer in shared
/// memory stored before the loop: a 16-bit A made outside the loop, held
/// by a loop whose values would otherwise not fit a thread's registers.
bool holdsAInShared(tile::DotOp dot, int computeCapability, int numWarps);

/// The bytes of the held A blocks that `loop`'s dots read from shared memory.
int64_t heldSharedBytes(mlir::scf::ForOp loop, int computeCapability, int numWarps);

/// Stores each held A that holdsAInShared picks in a one-slot buffer right
/// after it is made (kgpu.local_store), and makes the wgmma dots read that
/// buffer (kgpu.local_load before each dot). Runs after layout assignment.
void storeHeldOperands(tile::FuncOp func, int computeCapability, int numWarps);

} // namespace kiln
