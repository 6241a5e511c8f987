//===- PipelineLoops.cpp - async copies of dot operands, stages ahead -----===//
//
// For a loop
//
//     for k: a = load(ptr(k, s)); acc = dot(a, b, acc); s = next(k, s)
//
// where `ptr` and `next` are pure arithmetic on the induction variable k and
// on loop-carried "address state" s, the load becomes
//
//     ring = local_alloc [S slots]
//     for i < S-1: async_copy(ptr(k_i, s_i) -> ring[i]); commit     (prologue)
//     for k: async_wait(S-2)            // slot k's copy landed; slot k-1 is free
//            a = local_load(ring[k % S])
//            async_copy(ptr(k + (S-1)*step, s') -> ring[(k+S-1) % S]); commit
//            acc = dot(a, b, acc)
//     async_wait(0)
//
// with the address computation cloned to run S-1 iterations ahead (its own
// loop-carried state s'), and copies past the loop's end predicated off (they
// write zeros and read nothing). Per iteration each thread commits exactly
// one group, so "at most S-2 pending" means the oldest group in the ring is
// complete; the barrier in async_wait also orders the previous iteration's
// reads of the slot about to be overwritten before the new copy.
//
// A wgmma dot fed by rings only, accumulating into a loop-carried value,
// stays in flight for one more iteration (warpgroup_wait 1 after it, 0 after
// the loop): iteration k's tensor cores overlap iteration k+1's waits and
// address math. Its slot is then still being read while iteration k+1
// refills the ring, so the rings get S+1 slots: at iteration k the barrier
// proves every warpgroup finished iteration k-2's dot, and slot (k-2) mod
// (S+1) = (k+S-1) mod (S+1) is the one refilled.
//
//===----------------------------------------------------------------------===//

#include "compiler/transforms/Passes.h"

#include "compiler/analysis/AxisInfo.h"
#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/gpu/Mma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {

#define GEN_PASS_DEF_PIPELINELOOPS
#include "compiler/transforms/Passes.h.inc"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// Shared memory the rings of one program may take (H100: 227 KB per
/// block; the rest is left to scratch).
constexpr int64_t kRingBudgetBytes = 192 * 1024;

int64_t elementBytes(Type t) { return std::max<unsigned>(1, t.getIntOrFloatBitWidth() / 8); }

/// The last dimension's size of a 2-D operand (N for B).
int64_t columnsOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape()[1]; }

/// A load that can become an async copy, and what its copies need.
struct Candidate {
  mutable tile::LoadOp load; // (op handles are used through const refs)
  unsigned contiguousDim; ///< the tile dimension its vectors run along
};

/// The loop-body operations that `roots` depend on, in program order, and
/// the loop-carried values among their inputs; fails when something they
/// depend on is not pure address arithmetic.
struct AddressSlice {
  llvm::SetVector<Operation *> ops;
  llvm::SetVector<unsigned> carried; ///< iter_arg numbers
};

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

class LoopPipeliner {
public:
  LoopPipeliner(scf::ForOp loop, int stages, int computeCapability, int numWarps, const AxisInfoAnalysis &axis)
      : loop_(loop), stages_(stages), computeCapability_(computeCapability), numWarps_(numWarps), axis_(axis) {}

  void run() {
    SmallVector<Candidate> candidates = findCandidates();
    if (candidates.empty())
      return;
    inFlight_ = findInFlightDot(candidates);
    slots_ = inFlight_ ? stages_ + 1 : stages_;
    SmallVector<Value> roots;
    for (const Candidate &c : candidates) {
      roots.push_back(c.load.getPtr());
      roots.push_back(c.load.getMask());
    }
    AddressSlice slice;
    if (!collectSlice(loop_, roots, slice))
      return;
    rewrite(candidates, slice);
  }

private:
  /// The bytes one copy moves (0: not copyable) and the dimension it runs
  /// along, for a load in a blocked/linear layout.
  std::pair<int64_t, unsigned> copyVector(tile::LoadOp load) {
    auto tensor = cast<RankedTensorType>(load.getPtr().getType());
    LinearLayout layout = linearLayoutOf(tensor);
    if (layout.bits(HwDim::Register) == 0)
      return {0, 0};
    const Coord &first = layout.basis(HwDim::Register, 0);
    int dim = -1;
    for (int d = 0; d < layout.rank(); ++d)
      if (first[d])
        dim = d;
    if (dim < 0)
      return {0, 0};
    int64_t bytes = elementBytes(cast<RankedTensorType>(load.getType()).getElementType());
    int64_t width = std::min<int64_t>(layout.contiguousRegisters(dim),
                                      axis_.vectorWidth(load.getPtr(), dim, bytes, load.getMask()));
    return {width * bytes, static_cast<unsigned>(dim)};
  }

  SmallVector<Candidate> findCandidates() {
    SmallVector<Candidate> found;
    for (auto dot : loop_.getBody()->getOps<tile::DotOp>()) {
      if (!usesMma(dot, computeCapability_))
        continue;
      bool wgmma = isWgmmaDot(dot, computeCapability_, numWarps_);
      for (Value operand : {dot.getA(), dot.getB()}) {
        unsigned kDim = operand == dot.getA() ? 1 : 0;
        auto load = operand.getDefiningOp<tile::LoadOp>();
        if (!load || load->getBlock() != loop_.getBody() || !load->hasOneUse() || load.getIsVolatile())
          continue;
        if (Value other = load.getOther())
          if (!matchPattern(other, m_AnyZeroFloat()) && !matchPattern(other, m_Zero()))
            continue; // masked-off copies fill zeros, nothing else
        auto [bytes, dim] = copyVector(load);
        if (bytes < 4)
          continue; // cp.async moves 4, 8 or 16 bytes
        bool nMajorB = kDim == 0 && columnsOf(operand) % 64 == 0 && wgmmaTakesNMajorB(dot);
        if (wgmma && dim != kDim && !nMajorB)
          continue; // wgmma reads K-major slots (N-major too for B); this operand is staged K-major instead
        auto type = cast<RankedTensorType>(load.getType());
        int64_t slotBytes = type.getNumElements() * elementBytes(type.getElementType());
        if (ringBytes_ + stages_ * slotBytes > kRingBudgetBytes)
          continue;
        ringBytes_ += stages_ * slotBytes;
        found.push_back({load, dim});
        fenceAsyncProxy_ |= wgmma;
      }
    }
    return found;
  }

  /// The loop's one wgmma dot, when it may stay in flight across an
  /// iteration: both operands come from rings, its accumulator is a
  /// loop-carried f32 value that nothing else in the loop reads (its
  /// registers are being written until the next iteration's wait), and the
  /// rings still fit with one more slot each.
  tile::DotOp findInFlightDot(ArrayRef<Candidate> candidates) {
    auto dots = loop_.getBody()->getOps<tile::DotOp>();
    if (!llvm::hasSingleElement(dots))
      return {};
    tile::DotOp dot = *dots.begin();
    if (!isWgmmaDot(dot, computeCapability_, numWarps_) || dot.getType() != dot.getC().getType() ||
        !dot.getType().getElementType().isF32())
      return {};
    auto fromRing = [&](Value operand) {
      return llvm::any_of(candidates, [&](const Candidate &c) { return c.load.getResult() == operand; });
    };
    if (!fromRing(dot.getA()) || !fromRing(dot.getB()))
      return {};
    auto carried = dyn_cast<BlockArgument>(dot.getC());
    if (!carried || carried.getOwner() != loop_.getBody() || carried == loop_.getInductionVar() ||
        !carried.hasOneUse() || !dot->hasOneUse())
      return {};
    unsigned index = carried.getArgNumber() - loop_.getNumInductionVars();
    if (loop_.getYieldedValues()[index] != dot.getResult())
      return {};
    if (ringBytes_ * (stages_ + 1) / stages_ > kRingBudgetBytes)
      return {};
    carriedIndex_ = index;
    return dot;
  }

  /// `lb + i * step` and whether it is below the upper bound.
  std::pair<Value, Value> iterationAhead(OpBuilder &b, Location loc, Value iv, int64_t i) {
    Type type = iv.getType();
    Value steps = arith::MulIOp::create(b, loc, loop_.getStep(),
                                        arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, i)));
    Value at = arith::AddIOp::create(b, loc, iv, steps);
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, at, loop_.getUpperBound());
    return {at, inRange};
  }

  /// Clones the slice with the induction variable and the carried address
  /// state replaced, then issues the copies into `slot` and commits.
  /// Returns the next address state.
  SmallVector<Value> issue(OpBuilder &b, Location loc, ArrayRef<Candidate> candidates,
                           const AddressSlice &slice, ArrayRef<Value> buffers, Value iv, Value inRange,
                           ArrayRef<Value> state, Value slot) {
    IRMapping map;
    map.map(loop_.getInductionVar(), iv);
    for (auto [index, value] : llvm::zip(slice.carried, state))
      map.map(loop_.getRegionIterArgs()[index], value);
    for (Operation *op : slice.ops)
      b.clone(*op, map);
    for (auto [c, buffer] : llvm::zip(candidates, buffers)) {
      Value mask = c.load.getMask() ? map.lookupOrDefault(c.load.getMask()) : Value();
      AsyncCopyOp::create(b, loc, map.lookupOrDefault(c.load.getPtr()), buffer, slot, mask, inRange);
    }
    AsyncCommitOp::create(b, loc);
    SmallVector<Value> next;
    for (unsigned index : slice.carried)
      next.push_back(map.lookupOrDefault(loop_.getYieldedValues()[index]));
    return next;
  }

  void rewrite(ArrayRef<Candidate> candidates, const AddressSlice &slice) {
    Location loc = loop_.getLoc();
    MLIRContext *context = loop_.getContext();
    IRRewriter b(context);
    b.setInsertionPoint(loop_);
    auto i32 = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v)); };

    // The rings.
    SmallVector<Value> buffers;
    for (const Candidate &c : candidates) {
      auto type = cast<RankedTensorType>(c.load.getType());
      SmallVector<int64_t> shape{slots_};
      llvm::append_range(shape, type.getShape());
      unsigned other = 1 - c.contiguousDim;
      auto encoding = swizzledEncoding(context, type.getShape()[c.contiguousDim],
                                       elementBytes(type.getElementType()), {c.contiguousDim, other});
      buffers.push_back(LocalAllocOp::create(b, loc, RankedTensorType::get(shape, type.getElementType(), encoding)));
    }

    // Prologue: the first S-1 iterations' copies.
    SmallVector<Value> state;
    for (unsigned index : slice.carried)
      state.push_back(loop_.getInitArgs()[index]);
    for (int i = 0; i < stages_ - 1; ++i) {
      auto [iv, inRange] = iterationAhead(b, loc, loop_.getLowerBound(), i);
      state = issue(b, loc, candidates, slice, buffers, iv, inRange, state, i32(i));
    }

    // The loop carries the ahead state and the two slot numbers.
    SmallVector<Value> inits = state;
    inits.push_back(i32(0));
    inits.push_back(i32(stages_ - 1));
    // (Called with the new loop's empty body, which the old body's
    // operations then follow: what is built here comes first.)
    auto yields = [&](OpBuilder &, Location, ArrayRef<BlockArgument> args) -> SmallVector<Value> {
      Block *body = args.front().getOwner();
      Value readSlot = args[args.size() - 2], writeSlot = args.back();
      OpBuilder inner(context);
      inner.setInsertionPointToStart(body);
      auto wait = AsyncWaitOp::create(inner, loc, stages_ - 2);
      if (fenceAsyncProxy_)
        wait->setAttr(kFenceAsyncProxy, UnitAttr::get(context));
      for (auto [c, buffer] : llvm::zip(candidates, buffers)) {
        auto read = LocalLoadOp::create(inner, loc, c.load.getType(), buffer, readSlot);
        c.load.getResult().replaceAllUsesWith(read);
      }
      Value iv = body->getArgument(0);
      auto [ahead, inRange] = iterationAhead(inner, loc, iv, stages_ - 1);
      SmallVector<Value> aheadState(args.begin(), args.end() - 2);
      SmallVector<Value> next =
          issue(inner, loc, candidates, slice, buffers, ahead, inRange, aheadState, writeSlot);
      auto advance = [&](Value slot) -> Value {
        Value plus = arith::AddIOp::create(inner, loc, slot,
                                           arith::ConstantOp::create(inner, loc, inner.getI32IntegerAttr(1)));
        Value wraps = arith::CmpIOp::create(inner, loc, arith::CmpIPredicate::eq, plus,
                                            arith::ConstantOp::create(inner, loc, inner.getI32IntegerAttr(slots_)));
        return arith::SelectOp::create(inner, loc, wraps,
                                       arith::ConstantOp::create(inner, loc, inner.getI32IntegerAttr(0)), plus);
      };
      next.push_back(advance(readSlot));
      next.push_back(advance(writeSlot));
      return next;
    };
    FailureOr<LoopLikeOpInterface> replaced =
        cast<LoopLikeOpInterface>(loop_.getOperation())
            .replaceWithAdditionalYields(b, inits, /*replaceInitOperandUsesInLoop=*/false, yields);
    if (failed(replaced))
      return;
    auto newLoop = cast<scf::ForOp>(replaced->getOperation());
    for (const Candidate &c : candidates)
      c.load.erase();
    b.setInsertionPointAfter(newLoop);
    AsyncWaitOp::create(b, loc, 0); // nothing may still write the rings after the loop
    if (inFlight_)
      keepInFlight(b, newLoop);
  }

  /// Leaves the dot's group in flight until the next iteration's dot has
  /// been issued, and waits for the last one after the loop. (Issuing the
  /// next copies after the dot instead measured 2-4 % slower on the H100.)
  void keepInFlight(IRRewriter &b, scf::ForOp newLoop) {
    Location loc = inFlight_.getLoc();
    b.setInsertionPointAfter(inFlight_);
    auto partial = WarpgroupWaitOp::create(b, loc, inFlight_.getType(), inFlight_.getResult(), 1);
    newLoop.getBody()->getTerminator()->setOperand(carriedIndex_, partial);
    b.setInsertionPointAfter(newLoop);
    Value result = newLoop.getResult(carriedIndex_);
    auto final = WarpgroupWaitOp::create(b, loc, result.getType(), result, 0);
    result.replaceAllUsesExcept(final, final);
  }

  scf::ForOp loop_;
  int stages_;
  int computeCapability_;
  int numWarps_;
  bool fenceAsyncProxy_ = false; ///< a ring feeds wgmma (the async proxy)
  int64_t ringBytes_ = 0;
  int slots_ = 0;            ///< slots per ring
  tile::DotOp inFlight_;     ///< the wgmma dot left in flight, if any
  unsigned carriedIndex_ = 0; ///< its accumulator's iter_arg number
  const AxisInfoAnalysis &axis_;
};

struct PipelineLoops : impl::PipelineLoopsBase<PipelineLoops> {
  using PipelineLoopsBase::PipelineLoopsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = module->getAttrOfType<StringAttr>(kTargetAttr);
    int cc = target ? computeCapabilityOf(target.getValue()) : 0;
    if (numStages < 2 || cc < 80)
      return;
    AxisInfoAnalysis axis(module);
    SmallVector<scf::ForOp> loops;
    module.walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      LoopPipeliner(loop, numStages, cc, getNumWarps(module), axis).run();
  }
};

} // namespace
} // namespace kiln
