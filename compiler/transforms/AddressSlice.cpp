//===- AddressSlice.cpp - the loop-body arithmetic an address depends on --===//

#include "compiler/transforms/AddressSlice.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {

using namespace mlir;

namespace {

bool provablyPositive(Value v, int depth = 0) {
  APInt constant;
  if (matchPattern(v, m_ConstantInt(&constant)))
    return constant.isStrictlyPositive();
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8)
    return false;
  if (auto max = dyn_cast<arith::MaxSIOp>(def))
    return provablyPositive(max.getLhs(), depth + 1) || provablyPositive(max.getRhs(), depth + 1);
  if (auto min = dyn_cast<arith::MinSIOp>(def)) // (not products: they may wrap)
    return provablyPositive(min.getLhs(), depth + 1) && provablyPositive(min.getRhs(), depth + 1);
  return false;
}

/// Pure arithmetic, or a division whose divisor cannot be zero (nor -1:
/// it is positive) wherever the slice runs.
bool safeToRunAhead(Operation *op) {
  if (isPure(op))
    return true;
  if (!isMemoryEffectFree(op) || !isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
                                       arith::CeilDivSIOp, arith::FloorDivSIOp>(op))
    return false;
  return provablyPositive(op->getOperand(1));
}

/// A branch whose bodies hold only what may run ahead (a persistent
/// program's operand pointers: advanced by a K step, or formed afresh for
/// the next tile only when its last step comes); `captured` gets the values
/// from outside it that its bodies use.
bool branchCanRunAhead(scf::IfOp branch, SmallVectorImpl<Value> &captured) {
  bool ok = true;
  branch->walk([&](Operation *op) {
    if (op == branch.getOperation() || isa<scf::YieldOp>(op))
      return;
    if (!safeToRunAhead(op) || op->getNumRegions() != 0)
      ok = false;
    for (Value operand : op->getOperands())
      if (!branch->isAncestor(operand.getParentBlock()->getParentOp()))
        captured.push_back(operand);
  });
  return ok;
}

} // namespace

bool collectSlice(scf::ForOp loop, ArrayRef<Value> roots, AddressSlice &slice) {
  Block *body = loop.getBody();
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!v)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != body || arg == loop.getInductionVar())
        continue;
      unsigned index = arg.getArgNumber() - loop.getNumInductionVars();
      if (slice.carried.insert(index)) // its next value must be address arithmetic too
        work.push_back(loop.getYieldedValues()[index]);
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != body)
      continue; // defined outside the loop: available everywhere
    SmallVector<Value> captured;
    if (auto branch = dyn_cast<scf::IfOp>(def)) {
      if (!branchCanRunAhead(branch, captured))
        return false;
    } else if (!safeToRunAhead(def) || def->getNumRegions() != 0) {
      return false;
    }
    if (slice.ops.insert(def)) {
      llvm::append_range(work, def->getOperands());
      llvm::append_range(work, captured);
    }
  }
  SmallVector<Operation *> sorted(slice.ops.begin(), slice.ops.end());
  llvm::sort(sorted, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  slice.ops = llvm::SetVector<Operation *>(sorted.begin(), sorted.end());
  return true;
}

} // namespace kiln
