//===- RaisePointerLoads.h - pointer-block loads as boxes of a tensor -----===//
//
// A Triton-style kernel reads its dot operands through blocks of pointers,
// `a + rows[:, None] * stride_am + cols[None, :]`, advanced along K each
// step and masked against the tensor's sizes. Where such a load reads
// exactly a box of a tensor the copy engine can describe, it is a
// descriptor load of that box through a tensor map the compiler adds as a
// kernel parameter; LowerDescriptors then treats it as any descriptor load.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "compiler/dialect/tile/Tile.h"

#include <kiln/compiler.h>

#include <optional>

namespace kiln {

/// A pointer-block load rewritten as a descriptor load, not yet committed.
struct RaisedLoad {
  tile::LoadOp original;
  tile::DescriptorLoadOp load;   ///< through the added tensor-map parameter
  mlir::Value replacement;       ///< `load`, or its transpose: the original block
  TensorMapSpec sources;         ///< `base`, `sizes` and `strides` (no box yet)
};

/// Whether `load` provably reads a box of one tensor (the conditions
/// below): what raisePointerLoad would rewrite, without rewriting it.
bool readsABox(tile::LoadOp load, tile::FuncOp func);

/// Adds, before `load`, the descriptor load of the same block and its
/// tensor-map parameter (the function's last, marked kgpu.added_map), and
/// moves the load's uses
/// to it (the load stays until committed or abandoned), when the load provably
/// reads a box of one tensor: its pointers are a pointer parameter (moved,
/// perhaps, by a uniform offset that is a whole number of rows of a
/// constant row stride, on rows nothing bounds: a head's) plus one
/// index line per dimension times a stride (a unit stride on one, an
/// integer parameter or a constant on the other), loop-carried pointers
/// advance along one dimension by a uniform step, each mask bounds one
/// line by a positive integer parameter (or a positive constant) with
/// `other` zero, and a line wrapped by `% size` (Triton's tutorial rows)
/// indexes a dimension of the dot's result that every store masks with the
/// unwrapped line below that size. Nothing when it does not.
///
/// The copy engine reads zeros at negative coordinates: a pointer parameter
/// is taken as its tensor's first element (a kernel reading before it must
/// mask those elements, `idx >= 0`, which this honors). Index arithmetic is
/// taken not to overflow.
std::optional<RaisedLoad> raisePointerLoad(tile::LoadOp load, tile::FuncOp func);

/// Replaces the original load by the descriptor load and drops the pointer
/// arithmetic only it used (a loop-carried pointer block included).
void commitRaisedLoad(RaisedLoad &raised);

/// Removes what raisePointerLoad added, giving the original load its uses back.
void abandonRaisedLoad(RaisedLoad &raised, tile::FuncOp func);

} // namespace kiln
