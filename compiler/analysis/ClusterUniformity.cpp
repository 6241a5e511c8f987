//===- ClusterUniformity.cpp - values every program of a cluster shares ---===//

#include "compiler/analysis/ClusterUniformity.h"

#include "compiler/dialect/tile/Tile.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln::gpu {

ClusterUniformity::ClusterUniformity(Operation *root) {
  // Varying values only grow, and loops feed values back: iterate to the
  // fixed point (a few passes; each loop level may add one).
  while (propagate(root)) {
  }
}

bool ClusterUniformity::propagate(Operation *root) {
  bool changed = false;
  auto anyVarying = [&](ValueRange values) {
    return llvm::any_of(values, [&](Value v) { return varying_.contains(v); });
  };
  auto allVarying = [&](ValueRange values) {
    for (Value v : values)
      changed |= markVarying(v);
  };
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == root)
      return;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      const bool bounds = anyVarying({loop.getLowerBound(), loop.getUpperBound(), loop.getStep()});
      if (bounds) {
        allVarying(loop.getInductionVar());
        allVarying(loop.getRegionIterArgs());
        allVarying(loop.getResults());
        return;
      }
      for (auto [init, arg, yielded, result] :
           llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs(), loop.getYieldedValues(), loop.getResults()))
        if (varying_.contains(init) || varying_.contains(yielded)) {
          changed |= markVarying(arg);
          changed |= markVarying(result);
        }
      return;
    }
    if (auto branch = dyn_cast<scf::IfOp>(op)) {
      if (varying_.contains(branch.getCondition())) {
        allVarying(branch.getResults());
        return;
      }
      for (Region *region : {&branch.getThenRegion(), &branch.getElseRegion()}) {
        if (region->empty())
          continue;
        auto yield = cast<scf::YieldOp>(region->front().getTerminator());
        for (auto [yielded, result] : llvm::zip(yield.getOperands(), branch.getResults()))
          if (varying_.contains(yielded))
            changed |= markVarying(result);
      }
      return;
    }
    if (auto id = dyn_cast<tile::ProgramIdOp>(op)) {
      if (id.getAxis() == tile::GridDim::x)
        allVarying(op->getResults());
      return;
    }
    // Anything else with regions, or that reads memory (another program
    // may have written it in between), differs as far as this knows.
    if (isa<tile::ClusterRankOp>(op) || op->getNumRegions() != 0 || !isMemoryEffectFree(op) ||
        anyVarying(op->getOperands()))
      allVarying(op->getResults());
    for (Region &region : op->getRegions())
      for (Block &block : region)
        allVarying(block.getArguments());
  });
  return changed;
}

} // namespace kiln::gpu
