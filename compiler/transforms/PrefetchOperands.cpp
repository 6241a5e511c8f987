//===- PrefetchOperands.cpp - dot operands an iteration ahead, via LDS ----===//
//
// Where threads cannot copy global memory into shared memory
// asynchronously (AMD GPUs: kgpu-pipeline-loops' cp.async and copy-engine
// rings do not exist there), a loop's matrix-core dot stages its operands
// itself: it waits for their global loads, stores them into LDS between
// two barriers and reads them back. This pass hides the loads instead
// under the iteration's products, the way AMD's own compilers do without
// asynchronous copies: for
//
//     for k: a = load(ptr(k, s)); acc = dot(a, b, acc); s = next(k, s)
//
// it makes
//
//     ring = local_alloc [2 slots]
//     ring[0] = load(ptr(lb, s0)) if lb < ub; barrier
//     for k (slot):
//       ptr/next arithmetic                  (moved to the top)
//       r = load(ptr(k + step, next(k, s))) if k + step < ub, else 0
//       acc = dot(ring[slot], b, acc)
//       ring[1 - slot] = r; barrier
//       yield 1 - slot
//
// The loads of iteration k + 1 are issued before iteration k's products
// and waited for only after them, at the stores. One barrier an iteration
// suffices: it orders this iteration's stores before the next one's reads
// of that slot, and this iteration's reads before the next one's stores
// into the other. The loaded registers never cross the back edge: carried
// as loop values, they would be split into 16-bit elements (and so waited
// for) at the loop's head. The next addresses come from a copy of the
// address slice (AddressSlice.h) fed with this iteration's next values of
// the loop-carried state, which is why the slice moves to the top of the
// body first: no state is carried twice.
//
//===----------------------------------------------------------------------===//

#include "compiler/transforms/Passes.h"

#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/gpu/Mfma.h"
#include "compiler/dialect/gpu/Mma.h"
#include "compiler/lowering/Lowering.h"
#include "compiler/transforms/AddressSlice.h"
#include "kiln/target.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

namespace kiln {

#define GEN_PASS_DEF_PREFETCHOPERANDS
#include "compiler/transforms/Passes.h.inc"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// Slots of each ring: the one being read, and the one the next
/// iteration's registers go to.
constexpr int64_t kSlots = 2;
/// Where the lowering places each buffer (placeRings).
constexpr int64_t kBufferAlignment = 1024;

/// A dot operand loaded in the loop's body: its only use.
struct Operand {
  tile::LoadOp load;
  tile::DotOp dot;
  unsigned kDim; ///< the operand's K dimension (1 for A, 0 for B)

  RankedTensorType type() { return cast<RankedTensorType>(load.getType()); }
  int64_t ringBytes() { return kSlots * type().getNumElements() * elementBytes(type().getElementType()); }
  SmallVector<Value> addressRoots() { return {load.getPtr(), load.getMask(), load.getOther()}; }
};

/// The operands of `loop`'s matrix-core dots that its body loads, whose
/// addresses can be computed an iteration ahead.
SmallVector<Operand> prefetchable(scf::ForOp loop, StringRef target) {
  SmallVector<Operand> found;
  for (auto dot : loop.getBody()->getOps<tile::DotOp>()) {
    if (!mfmaShape(dot, target))
      continue;
    for (auto [value, kDim] : {std::pair{dot.getA(), 1u}, std::pair{dot.getB(), 0u}}) {
      auto load = value.getDefiningOp<tile::LoadOp>();
      if (!load || load->getBlock() != loop.getBody() || !load->hasOneUse() || load.getIsVolatile() ||
          !isa_and_nonnull<LayoutEncodingAttr>(cast<RankedTensorType>(load.getType()).getEncoding()))
        continue;
      Operand operand{load, dot, kDim};
      AddressSlice slice;
      if (collectSlice(loop, operand.addressRoots(), slice))
        found.push_back(operand);
    }
  }
  return found;
}

/// The LDS the module would take with `ringed` (operands of one loop)
/// read from rings: the largest scratch of any operation (a dot staging
/// only the operands not ringed) and every buffer after it, each placed
/// as the lowering places them; the rings of other loops are counted whole,
/// even where they could share memory.
int64_t ldsWith(ModuleOp module, ArrayRef<Operand> ringed, int numWarps, int threadsPerWarp) {
  int64_t scratch = 0;
  module.walk([&](Operation *op) {
    int64_t bytes = lowering::scratchBytes(op, numWarps, threadsPerWarp);
    for (Operand o : ringed)
      if (o.dot.getOperation() == op)
        bytes -= stagingBytes(o.type().getShape(), elementBytes(o.type().getElementType()));
    scratch = std::max(scratch, bytes);
  });
  int64_t end = llvm::alignTo(scratch, kBufferAlignment);
  module.walk([&](LocalAllocOp alloc) {
    auto type = alloc.getType();
    end = llvm::alignTo(end, kBufferAlignment) + type.getNumElements() * elementBytes(type.getElementType());
  });
  for (Operand o : ringed)
    end = llvm::alignTo(end, kBufferAlignment) + o.ringBytes();
  return end;
}

/// A two-slot ring for `operand`, K-major and swizzled as the matrix
/// cores' reads want it (as the dot would have staged it).
Value allocateRing(OpBuilder &b, Location loc, Operand operand) {
  RankedTensorType type = operand.type();
  SmallVector<int64_t> shape{kSlots};
  llvm::append_range(shape, type.getShape());
  auto encoding = swizzledEncoding(b.getContext(), type.getShape()[operand.kDim], elementBytes(type.getElementType()),
                                   {operand.kDim, 1 - operand.kDim});
  return LocalAllocOp::create(b, loc, RankedTensorType::get(shape, type.getElementType(), encoding));
}

/// The operands' loads for the iteration at `iv` (the address slice cloned
/// with `map`, which gives the state there), masked off (zeros) where
/// `inRange` is false: that iteration does not run.
SmallVector<Value> loadsAt(OpBuilder &b, Location loc, ArrayRef<Operand> operands, const AddressSlice &slice,
                           IRMapping &map, Value inRange) {
  for (Operation *op : slice.ops)
    b.clone(*op, map);
  SmallVector<Value> loaded;
  for (Operand o : operands) {
    RankedTensorType type = o.type();
    auto maskType = RankedTensorType::get(type.getShape(), b.getI1Type(), type.getEncoding());
    Value mask = tile::SplatOp::create(b, loc, maskType, inRange);
    if (Value own = o.load.getMask())
      mask = arith::AndIOp::create(b, loc, map.lookupOrDefault(own), mask);
    Value other = o.load.getOther() ? map.lookupOrDefault(o.load.getOther())
                                    : arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(type)));
    auto load = tile::LoadOp::create(b, o.load.getLoc(), map.lookupOrDefault(o.load.getPtr()), mask, other);
    load.setCache(o.load.getCache());
    load.setEvict(o.load.getEvict());
    loaded.push_back(load);
  }
  return loaded;
}

/// Stores `values` into slot `slot` of `rings`, then waits for every thread.
void storeSlots(OpBuilder &b, Location loc, ArrayRef<Value> values, ArrayRef<Value> rings, Value slot) {
  for (auto [value, ring] : llvm::zip(values, rings))
    LocalStoreOp::create(b, loc, value, ring, slot, /*unsynchronized=*/true);
  BarrierOp::create(b, loc);
}

/// Rewrites `loop` as the header says, for `operands` (of its body).
void prefetch(scf::ForOp loop, ArrayRef<Operand> operands) {
  AddressSlice slice;
  SmallVector<Value> roots;
  for (Operand o : operands)
    llvm::append_range(roots, o.addressRoots());
  if (!collectSlice(loop, roots, slice))
    return;
  Location loc = loop.getLoc();
  IRRewriter b(loop.getContext());

  // The slice's arithmetic first in the body (it is pure, and depends only
  // on the induction variable, the carried state and itself), so that the
  // next iteration's state is there for the loads that run ahead.
  Block *body = loop.getBody();
  Operation *sliceEnd = nullptr;
  for (Operation *op : slice.ops) {
    if (sliceEnd)
      op->moveAfter(sliceEnd);
    else
      op->moveBefore(body, body->begin());
    sliceEnd = op;
  }

  // The first iteration's operands in slot 0.
  b.setInsertionPoint(loop);
  SmallVector<Value> rings;
  for (Operand o : operands)
    rings.push_back(allocateRing(b, loc, o));
  Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, loop.getLowerBound(), loop.getUpperBound());
  IRMapping before;
  before.map(loop.getInductionVar(), loop.getLowerBound());
  for (unsigned index : slice.carried)
    before.map(loop.getRegionIterArgs()[index], loop.getInitArgs()[index]);
  Value slot0 = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  storeSlots(b, loc, loadsAt(b, loc, operands, slice, before, runs), rings, slot0);

  // (Called while the body is still the old loop's, whose arguments then
  // become the new loop's: `added` is the new loop's slot.)
  auto yields = [&](OpBuilder &ib, Location, ArrayRef<BlockArgument> added) -> SmallVector<Value> {
    Value iv = loop.getInductionVar(), slot = added.front();
    Operation *yield = body->getTerminator();
    if (sliceEnd)
      ib.setInsertionPointAfter(sliceEnd);
    else
      ib.setInsertionPointToStart(body);
    Value next = arith::AddIOp::create(ib, loc, iv, loop.getStep());
    Value inRange = arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::slt, next, loop.getUpperBound());
    IRMapping ahead;
    ahead.map(iv, next);
    for (unsigned index : slice.carried)
      ahead.map(loop.getRegionIterArgs()[index], yield->getOperand(index));
    SmallVector<Value> nextValues = loadsAt(ib, loc, operands, slice, ahead, inRange);
    for (auto [operand, ring] : llvm::zip(operands, rings)) {
      Operand o = operand;
      ib.setInsertionPoint(o.load);
      o.load.getResult().replaceAllUsesWith(LocalLoadOp::create(ib, o.load.getLoc(), o.type(), ring, slot));
    }
    ib.setInsertionPoint(yield);
    Value one = arith::ConstantOp::create(ib, loc, ib.getI32IntegerAttr(1));
    Value other = arith::SubIOp::create(ib, loc, one, slot);
    storeSlots(ib, loc, nextValues, rings, other);
    return {other};
  };
  FailureOr<LoopLikeOpInterface> replaced = cast<LoopLikeOpInterface>(loop.getOperation())
                                                .replaceWithAdditionalYields(b, {slot0}, /*replaceInitOperandUsesInLoop=*/false, yields);
  if (failed(replaced))
    return;
  for (Operand o : operands)
    o.load->erase();
}

struct PrefetchOperands : impl::PrefetchOperandsBase<PrefetchOperands> {
  using PrefetchOperandsBase::PrefetchOperandsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = module->getAttrOfType<StringAttr>(kTargetAttr);
    if (numStages < 2 || !target || !targets_amd(target.getValue()))
      return;
    const int numWarps = getNumWarps(module), threadsPerWarp = getThreadsPerWarp(module);
    SmallVector<scf::ForOp> loops;
    module.walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops) {
      // Operands in order until the LDS is full: one left out is staged
      // by its dot as before.
      SmallVector<Operand> ringed;
      for (Operand o : prefetchable(loop, target.getValue())) {
        ringed.push_back(o);
        if (ldsWith(module, ringed, numWarps, threadsPerWarp) > kAmdLdsBytes)
          ringed.pop_back();
      }
      if (!ringed.empty())
        prefetch(loop, ringed);
    }
  }
};

} // namespace
} // namespace kiln
