//===- MmaFragments.cpp - carry mma.sync fragments across a K loop --------===//
//
// A pipelined mma.sync K loop otherwise starts each iteration with its
// wait and barrier, then reads its first K step's fragments, and only then
// issues tensor-core work: every warp idles at that point, and warps that
// share a scheduler reach it together. Here the wait moves before the last
// K step's mma.sync and the next slot's first fragments are read right
// after it, into registers the loop carries (CUTLASS's Ampere main loop
// has the same shape). The rings stay safe to refill: every fragment of
// slot k is read before iteration k's barrier, and the copies refilling
// slot k come in iteration k+1, after it.
//
//===----------------------------------------------------------------------===//

#include "compiler/transforms/MmaFragments.h"

#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/gpu/Mma.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// Whether `op`, with what it holds, reads or writes global memory only
/// (as a persistent loop's epilogue does): never the rings.
bool touchesOnlyGlobalMemory(Operation *op) {
  std::optional<SmallVector<MemoryEffects::EffectInstance>> effects = getEffectsRecursively(op);
  return effects && llvm::all_of(*effects, [](const MemoryEffects::EffectInstance &effect) {
           return isa<tile::GlobalMemory>(effect.getResource());
         });
}

/// The loop's one mma.sync dot reading two whole ring slots at the same
/// slot (a loop-carried number), with its wait, if the body has that form
/// and nothing else in it touches shared memory.
struct RingDotLoop {
  tile::DotOp dot;
  LocalLoadOp a, b;
  AsyncWaitOp wait;
  BlockArgument slot;
};

std::optional<RingDotLoop> matchRingDotLoop(scf::ForOp loop, ArrayRef<Operation *> copies, int computeCapability, int numWarps) {
  Block *body = loop.getBody();
  auto dots = body->getOps<tile::DotOp>();
  auto waits = body->getOps<AsyncWaitOp>();
  if (!llvm::hasSingleElement(dots) || !llvm::hasSingleElement(waits))
    return std::nullopt;
  RingDotLoop s{*dots.begin(), {}, {}, *waits.begin(), {}};
  if (!usesMma(s.dot, computeCapability) || isWgmmaDot(s.dot, computeCapability, numWarps))
    return std::nullopt;
  s.a = ringSlotLoad(s.dot.getA());
  s.b = ringSlotLoad(s.dot.getB());
  if (!s.a || !s.b || s.a.getSlot() != s.b.getSlot() ||
      !s.a->hasOneUse() || !s.b->hasOneUse() || s.a->getBlock() != body || s.b->getBlock() != body)
    return std::nullopt;
  s.slot = dyn_cast<BlockArgument>(s.a.getSlot());
  if (!s.slot || s.slot.getOwner() != body || s.slot == loop.getInductionVar())
    return std::nullopt;
  // The next iteration's slot must be known before the dot.
  Value next = loop.getYieldedValues()[s.slot.getArgNumber() - loop.getNumInductionVars()];
  if (Operation *def = next.getDefiningOp(); def && (def->getBlock() != body || !def->isBeforeInBlock(s.dot)))
    return std::nullopt;
  llvm::SmallPtrSet<Operation *, 32> known(copies.begin(), copies.end());
  known.insert({s.dot, s.a, s.b, s.wait, body->getTerminator()});
  for (Operation &op : *body)
    if (!known.contains(&op) && !touchesOnlyGlobalMemory(&op))
      return std::nullopt;
  return s;
}

} // namespace

scf::ForOp carryMmaFragments(scf::ForOp loop, ArrayRef<Operation *> copies, int pending, int numWarps,
                       int computeCapability) {
  std::optional<RingDotLoop> s = matchRingDotLoop(loop, copies, computeCapability, numWarps);
  if (!s)
    return {};
  tile::DotOp dot = s->dot;
  Location loc = dot.getLoc();
  auto aType = dot.getA().getType(), bType = dot.getB().getType();
  Type element = aType.getElementType();
  const int64_t M = aType.getShape()[0], K = aType.getShape()[1], N = bType.getShape()[1];
  const int64_t kStep = mmaKStep(element), steps = K / kStep;
  auto aStep = RankedTensorType::get({M, kStep}, element, mmaOperandEncoding(dot, 0, numWarps));
  auto bStep = RankedTensorType::get({kStep, N}, element, mmaOperandEncoding(dot, 1, numWarps));
  Value aRing = s->a.getBuffer(), bRing = s->b.getBuffer();
  auto fragments = [&](OpBuilder &b, Value slot, int64_t step) -> std::pair<Value, Value> {
    int64_t k = step * kStep;
    return {LocalLoadOp::create(b, loc, aStep, aRing, slot, b.getDenseI64ArrayAttr({0, k})),
            LocalLoadOp::create(b, loc, bStep, bRing, slot, b.getDenseI64ArrayAttr({k, 0}))};
  };

  // Before the loop: the first slot landed, its first step read.
  IRRewriter rewriter(loop.getContext());
  rewriter.setInsertionPoint(loop);
  AsyncWaitOp::create(rewriter, loc, pending);
  const unsigned slotIndex = s->slot.getArgNumber() - loop.getNumInductionVars();
  auto [a0, b0] = fragments(rewriter, loop.getInitArgs()[slotIndex], 0);
  Value nextSlot = loop.getYieldedValues()[slotIndex];

  // (Built in the old body, which the new loop then takes over, with the
  // new loop's carried fragments.)
  auto yields = [&](OpBuilder &, Location, ArrayRef<BlockArgument> carried) -> SmallVector<Value> {
    OpBuilder b(dot);
    std::pair<Value, Value> current{carried[0], carried[1]}, following;
    Value acc = dot.getC();
    for (int64_t step = 0; step < steps; ++step) {
      b.setInsertionPoint(dot);
      std::pair<Value, Value> next;
      if (step + 1 < steps) {
        next = fragments(b, s->slot, step + 1);
      } else {
        s->wait->moveBefore(dot);
        following = fragments(b, nextSlot, 0);
      }
      IRMapping map;
      map.map(dot.getA(), current.first);
      map.map(dot.getB(), current.second);
      map.map(dot.getC(), acc);
      Operation *partial = b.clone(*dot, map);
      acc = partial->getResult(0);
      // The ahead copies go after the first step's mma.sync (before the
      // wait, which counts their group).
      if (step == 0) {
        Operation *after = partial;
        for (Operation *op : copies) {
          if (steps == 1)
            op->moveBefore(s->wait);
          else
            op->moveAfter(after);
          after = op;
        }
      }
      current = next;
    }
    dot.getResult().replaceAllUsesWith(acc);
    return {following.first, following.second};
  };
  FailureOr<LoopLikeOpInterface> replaced = cast<LoopLikeOpInterface>(loop.getOperation())
                                                .replaceWithAdditionalYields(rewriter, {a0, b0},
                                                                             /*replaceInitOperandUsesInLoop=*/false, yields);
  if (failed(replaced))
    return {};
  dot->erase();
  s->a->erase();
  s->b->erase();
  return cast<scf::ForOp>(replaced->getOperation());
}

} // namespace kiln
