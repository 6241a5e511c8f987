//===- OverlapChain.h - a chain's softmax under its own last dot ----------===//
//
// A producer's consumer loop of chained dots (attention: S = Q Kᵀ, the
// softmax, O = P V + O * alpha) runs, within one warpgroup, one thing at a
// time: the softmax waits for Q Kᵀ, and the next Q Kᵀ for the softmax.
// Other warpgroups fill the tensor cores meanwhile, but only as far as
// they drift out of step. Rotating the loop by the last dot lets a
// warpgroup's own tensor cores run while it computes its softmax
// (FlashAttention-3's overlap within a warpgroup): iteration j issues
// block j's first dot, then block j-1's last dot, waits for the first
// only, computes block j's softmax while the last dot runs, and waits for
// that before the rescale that reads its accumulator:
//
//     prologue (if the loop runs): block lo's first part, up to the last dot
//     for j in (lo, hi):
//       S = dot(Q, K[j])                    in flight
//       acc = dot(P', V[j-1], C')           in flight
//       wait until only acc is pending      S is ready
//       softmax(S) -> alpha, ...
//       wait for acc; hand slot j-1 back
//       C = acc * alpha; P = ...
//     epilogue (if the loop ran): acc = dot(P', V[last], C')
//
// The values are the original loop's, bit for bit: each last dot runs on
// the same operands, an iteration later. The loop carries P and the slot
// its V is read from besides its own values. (ptxas keeps the registers
// an in-flight wgmma reads until its wait; a P converted after the wait,
// as attention's `p.to(bf16)` after the rescale is, reuses them then.)
//
//===----------------------------------------------------------------------===//

#pragma once

#include "compiler/dialect/tile/Tile.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {

/// Rotates `loop` (a consumer loop after the pipeliner read its blocks from
/// the ring: `local_load`s of the slot, its last two carried values the
/// slot and parity to read next) as OverlapChain.h describes; `first` and
/// `last` are its chain's first and last wgmma dots, the last one's result
/// carried at iter_arg `accIndex` and its A read from registers;
/// `emptyLast` the barriers slots are handed back on once the last dot
/// read them (each but the last, unless `handBackLast`: the loop is its
/// program's only loop of dots, and only a walk over tiles runs it again),
/// and, where the first dot's ring has barriers of its own, `emptyFirst`
/// those its slots go back on as soon as the first dot read them (null:
/// with the last's). Returns false, and leaves the loop as it is, where
/// the loop does not have that form.
bool overlapChain(mlir::IRRewriter &b, mlir::scf::ForOp loop, tile::DotOp first, tile::DotOp last,
                  unsigned accIndex, mlir::Value emptyFirst, mlir::Value emptyLast, bool handBackLast);

} // namespace kiln
