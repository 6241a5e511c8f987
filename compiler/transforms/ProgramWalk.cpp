//===- ProgramWalk.cpp - a persistent program's loop over its tiles -------===//

#include "compiler/transforms/ProgramWalk.h"

namespace kiln {

using namespace mlir;

scf::ForOp enclosingWalk(scf::ForOp loop) {
  auto walk = dyn_cast_or_null<scf::ForOp>(loop->getParentOp());
  if (!walk || !isa<tile::FuncOp>(walk->getParentOp()))
    return {};
  for (auto inner : walk.getBody()->getOps<scf::ForOp>())
    if (!inner.getBody()->getOps<scf::ForOp>().empty())
      return {};
  return walk;
}

bool atProgramTop(scf::ForOp loop) { return isa<tile::FuncOp>(loop->getParentOp()) || enclosingWalk(loop); }

bool walksTiles(scf::ForOp loop) {
  for (auto inner : loop.getBody()->getOps<scf::ForOp>())
    if (!inner.getBody()->getOps<tile::DotOp>().empty())
      return enclosingWalk(inner) == loop;
  return false;
}

} // namespace kiln
