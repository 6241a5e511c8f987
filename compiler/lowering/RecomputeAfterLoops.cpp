//===- RecomputeAfterLoops.cpp - shorter live ranges across loops ---------===//
//
// A cheap block computed before a loop, not used in it and used again after
// it -- a matmul's row and column indices, which CSE shares between the
// prologue's loads and the epilogue's store -- would hold its registers
// through the loop, beside the accumulator and the copies' addresses (37
// more registers at a 128x128 tile of 8 warps: one program a
// multiprocessor instead of two). Right before lowering (after the last
// CSE), such blocks are computed again after the loop; their ranges then
// read the thread index afresh (RangeLowering), so LLVM does not merge
// them back either.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "compiler/dialect/gpu/KGpu.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace kiln::lowering {

namespace {

/// Operations recomputed per block, at most.
constexpr int kMaxRecomputed = 12;

/// Whether `v` is cheap to compute again: a scalar, or an integer, i1 or
/// pointer block made by ranges, splats, splat constants, expand_dims,
/// broadcasts and elementwise arithmetic from scalars.
bool cheap(Value v, int &budget) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || --budget < 0 || def->getNumResults() != 1 || def->getNumRegions() != 0 ||
      !(type.getElementType().isIntOrIndex() || isa<tile::PointerType>(type.getElementType())))
    return false;
  if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    return dense && dense.isSplat();
  }
  if (isa<tile::RangeOp, tile::SplatOp>(def))
    return true;
  if (!(gpu::isElementwiseArith(def) || isa<tile::AddPtrOp, tile::ExpandDimsOp, tile::BroadcastOp>(def)))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) { return cheap(operand, budget); });
}

/// `v` computed again at `b`'s insertion point (scalars as they are).
Value recompute(OpBuilder &b, Value v, llvm::DenseMap<Value, Value> &copies) {
  if (!isa<RankedTensorType>(v.getType()))
    return v;
  if (auto it = copies.find(v); it != copies.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  SmallVector<Value> operands;
  for (Value operand : def->getOperands())
    operands.push_back(recompute(b, operand, copies));
  Operation *copy = b.clone(*def);
  copy->setOperands(operands);
  return copies[v] = copy->getResult(0);
}

void recomputeAfter(scf::ForOp loop) {
  Block *block = loop->getBlock();
  llvm::DenseMap<Value, Value> copies;
  auto liveAcross = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != block || !def->isBeforeInBlock(loop) || !isa<RankedTensorType>(v.getType()))
      return false;
    if (llvm::any_of(v.getUsers(), [&](Operation *user) { return loop->isAncestor(user); }))
      return false;
    int budget = kMaxRecomputed;
    return cheap(v, budget);
  };
  for (Operation *after = loop->getNextNode(); after; after = after->getNextNode()) {
    OpBuilder b(after);
    after->walk([&](Operation *user) {
      for (OpOperand &use : user->getOpOperands())
        if (liveAcross(use.get()))
          use.set(recompute(b, use.get(), copies));
    });
  }
}

} // namespace

void recomputeAfterLoops(ModuleOp module) {
  SmallVector<scf::ForOp> loops;
  module.walk([&](scf::ForOp loop) { loops.push_back(loop); });
  for (scf::ForOp loop : loops)
    recomputeAfter(loop);
}

} // namespace kiln::lowering
