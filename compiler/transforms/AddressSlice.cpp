//===- AddressSlice.cpp - the loop-body arithmetic an address depends on --===//

#include "compiler/transforms/AddressSlice.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {

using namespace mlir;

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
    if (!isPure(def) || def->getNumRegions() != 0)
      return false;
    if (slice.ops.insert(def))
      llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> sorted(slice.ops.begin(), slice.ops.end());
  llvm::sort(sorted, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  slice.ops = llvm::SetVector<Operation *>(sorted.begin(), sorted.end());
  return true;
}

} // namespace kiln
