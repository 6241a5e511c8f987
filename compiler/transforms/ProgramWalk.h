//===- ProgramWalk.h - a persistent program's loop over its tiles ---------===//
//
// A persistent kernel's program walks tiles in a loop at the kernel's top
// (for t = program_id; t < tiles; t += num_programs, or over its own steps
// from 0, each finding its tile), and each tile walks its blocks of keys
// or K in loops inside: the same loops of dots as a kernel with one
// program a tile has at its top. LowerDescriptors and
// PipelineLoops give those inner loops a producer warpgroup all the same:
// it walks the tiles too, filling the ring for every tile's loops one after
// another, so that a tile's first blocks arrive while the consumers still
// finish the one before.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "compiler/dialect/tile/Tile.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kiln {

/// The walk over tiles around `loop`: the loop directly enclosing it, where
/// that loop sits at the top of the kernel and holds no other loop with
/// loops inside; null otherwise. (What the walk carries, the producer does
/// not read: its copies' addresses may use the walk's counter only.)
mlir::scf::ForOp enclosingWalk(mlir::scf::ForOp loop);

/// Whether `loop` runs at a program's top: at the kernel's top, or inside
/// a walk over tiles (enclosingWalk).
bool atProgramTop(mlir::scf::ForOp loop);

/// Whether `loop` is a walk over tiles: at the kernel's top, holding loops
/// of dots (and no deeper loops).
bool walksTiles(mlir::scf::ForOp loop);

} // namespace kiln
