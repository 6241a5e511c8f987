//===- OverlapChain.cpp - a chain's softmax under its own last dot --------===//

#include "compiler/transforms/OverlapChain.h"

#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/gpu/Mma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"

namespace kiln {

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// The ops of `body` that use `value`, directly or inside their regions.
llvm::DenseSet<Operation *> usersIn(Block *body, Value value) {
  llvm::DenseSet<Operation *> users;
  for (Operation *user : value.getUsers())
    if (Operation *ancestor = body->findAncestorOpInBlock(*user))
      users.insert(ancestor);
  return users;
}

} // namespace

bool overlapChain(IRRewriter &b, scf::ForOp loop, tile::DotOp first, tile::DotOp last, unsigned accIndex,
                  Value emptyFirst, Value emptyLast, bool handBackLast) {
  Block *body = loop.getBody();
  const unsigned n = loop.getNumRegionIterArgs();
  APInt step;
  if (n < 2 || !matchPattern(loop.getStep(), m_ConstantInt(&step)) || !step.isStrictlyPositive())
    return false; // (a loop that ran is then one whose upper bound passed its lower)
  BlockArgument readSlot = loop.getRegionIterArg(n - 2);
  auto values = last.getB().getDefiningOp<LocalLoadOp>();
  if (!values || values->getBlock() != body || !values->hasOneUse() || values.getSlot() != readSlot)
    return false;
  // The last dot's A and accumulator are made in the iteration (so carried
  // to the next one), its result only carried on.
  auto madeInBody = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && def->getBlock() == body;
  };
  if (!madeInBody(last.getA()) || !madeInBody(last.getC()) || !last->hasOneUse() ||
      *last->getUsers().begin() != body->getTerminator() ||
      last->getUses().begin()->getOperandNumber() != accIndex || !first->isBeforeInBlock(last))
    return false;
  BlockArgument carried = loop.getRegionIterArg(accIndex);
  const llvm::DenseSet<Operation *> accUsers = usersIn(body, carried);
  if (llvm::any_of(accUsers, [&](Operation *op) { return !first->isBeforeInBlock(op); }))
    return false; // read before the first dot: nothing to overlap with it

  Location loc = last.getLoc();
  auto yielded = [&](IRMapping &map, Operation *terminator) {
    SmallVector<Value> next;
    for (auto [i, v] : llvm::enumerate(terminator->getOperands()))
      next.push_back(map.lookupOrDefault(i == accIndex ? last.getC() : v));
    next.push_back(map.lookupOrDefault(last.getA()));
    next.push_back(map.lookupOrDefault(readSlot));
    return next;
  };
  // The first part of an iteration: every op but the last dot and its read
  // of the values' slot.
  auto firstPart = [&](Operation &op) {
    return &op != last.getOperation() && &op != values.getOperation() && &op != body->getTerminator();
  };
  // A block's last dot on the values read from `slot`, its A and accumulator
  // carried from the iteration that made them.
  auto lastDot = [&](Value a, Value slot, Value accumulator) {
    IRMapping from;
    from.map(readSlot, slot);
    Value slotValues = b.clone(*values, from)->getResult(0);
    auto dot = cast<tile::DotOp>(b.clone(*last));
    dot->setOperands({a, slotValues, accumulator});
    return dot;
  };

  // Hands `slot` back on the barriers `empty` (each consumer warp arrives
  // once); the first dot's slot goes back once that dot completed, where
  // its ring has barriers of its own.
  auto handBack = [&](Value empty, Value slot) {
    MBarrierArriveOp::create(b, loc, empty, slot, arith::ConstantOp::create(b, loc, b.getBoolAttr(true)), 1);
  };
  auto handBackFirst = [&](Value slot) {
    if (emptyFirst)
      handBack(emptyFirst, slot);
  };

  // Prologue: block lo's first part, where the loop runs.
  b.setInsertionPoint(loop);
  Value lower = loop.getLowerBound(), upper = loop.getUpperBound();
  Value ran = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lower, upper);
  SmallVector<Type> types(loop.getResultTypes());
  types.push_back(last.getA().getType());
  types.push_back(b.getI32Type());
  auto prologue = scf::IfOp::create(b, loc, types, ran, /*withElseRegion=*/true);
  {
    b.setInsertionPointToStart(prologue.thenBlock());
    IRMapping map;
    map.map(loop.getInductionVar(), lower);
    for (auto [arg, init] : llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs()))
      map.map(arg, init);
    for (Operation &op : body->without_terminator()) {
      if (!firstPart(op))
        continue;
      b.clone(op, map);
      if (&op == first.getOperation()) // (completed: not in flight here)
        handBackFirst(map.lookupOrDefault(readSlot));
    }
    scf::YieldOp::create(b, loc, yielded(map, body->getTerminator()));
    b.setInsertionPointToStart(prologue.elseBlock());
    SmallVector<Value> none(loop.getInitArgs());
    none.push_back(arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(last.getA().getType()))));
    none.push_back(arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0)));
    scf::YieldOp::create(b, loc, none);
  }

  // The loop from lo + step: block j's first part with block j-1's last dot
  // issued right after block j's first dot.
  b.setInsertionPoint(loop);
  Value from = arith::AddIOp::create(b, loc, lower, loop.getStep());
  auto rotated = scf::ForOp::create(b, loc, from, upper, loop.getStep(), prologue.getResults());
  {
    b.setInsertionPointToStart(rotated.getBody()); // (empty: a loop with carried values gets no terminator)
    BlockArgument previousA = rotated.getRegionIterArg(n), previousSlot = rotated.getRegionIterArg(n + 1);
    IRMapping map;
    map.map(loop.getInductionVar(), rotated.getInductionVar());
    for (auto [arg, now] : llvm::zip(loop.getRegionIterArgs(), rotated.getRegionIterArgs().take_front(n)))
      map.map(arg, now);
    Value accumulator; // block j-1's last dot, in flight
    Value ready;       // ... and completed
    auto complete = [&]() {
      ready = WarpgroupWaitOp::create(b, loc, accumulator.getType(), accumulator, 0);
      handBack(emptyLast, previousSlot);
      map.map(carried, ready);
    };
    for (Operation &op : body->without_terminator()) {
      if (!firstPart(op))
        continue;
      if (accUsers.contains(&op) && !ready)
        complete();
      Operation *copy = b.clone(op, map);
      if (&op != first.getOperation())
        continue;
      tile::DotOp dot = lastDot(previousA, previousSlot, rotated.getRegionIterArg(accIndex)); // block j-1's
      dot->setAttr(kInFlightRegisterA, b.getUnitAttr());
      if (wgmmaReadsRegisterA(first, getNumWarps(loop->getParentOfType<ModuleOp>())))
        copy->setAttr(kInFlightRegisterA, b.getUnitAttr()); // (the queries: never rewritten)
      accumulator = dot.getResult();
      auto products = WarpgroupWaitOp::create(b, loc, first.getType(), copy->getResult(0), 1);
      copy->getResult(0).replaceAllUsesExcept(products, products);
      map.map(first.getResult(), products);
      handBackFirst(map.lookupOrDefault(readSlot));
    }
    if (!ready)
      complete();
    scf::YieldOp::create(b, loc, yielded(map, body->getTerminator()));
  }

  // Epilogue: the last block's last dot, where the loop ran.
  b.setInsertionPoint(loop);
  Value lastA = rotated.getResult(n), lastSlot = rotated.getResult(n + 1), lastC = rotated.getResult(accIndex);
  auto epilogue = scf::IfOp::create(b, loc, TypeRange{last.getType()}, ran, /*withElseRegion=*/true);
  {
    b.setInsertionPointToStart(epilogue.thenBlock());
    tile::DotOp dot = lastDot(lastA, lastSlot, lastC);
    dot->removeAttr(kInFlightRegisterA);
    if (handBackLast) // (the dot completes where it is issued: nothing waits for it later)
      handBack(emptyLast, lastSlot);
    scf::YieldOp::create(b, loc, dot.getResult());
    b.setInsertionPointToStart(epilogue.elseBlock());
    scf::YieldOp::create(b, loc, lastC);
  }
  for (unsigned i = 0; i < loop.getNumResults(); ++i)
    loop.getResult(i).replaceAllUsesWith(i == accIndex ? epilogue.getResult(0) : rotated.getResult(i));
  b.eraseOp(loop);
  return true;
}

} // namespace kiln
