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
// (With cp.async copies into mma.sync dots and S >= 3, the copies and their
// address arithmetic move after the iteration's dot, where they overlap its
// tensor-core instructions; the wait and its barrier stay at the top.)
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
// address math. Its slot is then still being read at iteration k+1.
// Copy-engine rings refill before the dot, so they get S+1 slots: at
// iteration k the barrier proves every warpgroup finished iteration k-2's
// dot, and slot (k-2) mod (S+1) = (k+S-1) mod (S+1) is the one refilled.
// cp.async rings do the same where a slot more fits without fewer programs
// a multiprocessor: one barrier an iteration instead of two. (Issued after
// the dot instead, between it and its wait, their copies ran slower.)
// Rings of pointer loads moved to the copy engine (RaisePointerLoads) take
// no spare slot where it would cost a program either, and refill as below,
// with no barrier before the dot: each thread's wait on the slot's
// transaction barrier already makes the copy visible to it.
// Otherwise the iteration issues its dot right after the barrier, then
// waits for the previous dot (warpgroup_wait 1), passes a second barrier
// (the wait orders only its own warp) and only then refills that dot's
// slot, (k-1) mod S = (k+S-1) mod S: S slots. A loop over several tiles'
// K steps may restart the accumulator from zero (select(first, 0, acc),
// which wgmma does through scale-d) and store a tile inside a branch, which
// then waits for the dot first (warpgroup_wait 0 at the branch's start).
//
// Descriptor loads that LowerDescriptors kept are filled by the copy engine
// instead: one thread announces the slot's bytes on the slot's transaction
// barrier (mbarrier_expect) and starts the boxes (tma_load); each iteration
// every thread waits for the barrier's phase (parity carried with the read
// slot), then the program barrier orders the refill after everyone's reads
// as above. The barriers are set up before the prologue and invalidated
// after the loop, so a loop run once per tile starts afresh each time.
//
// Warp specialization (option warp-specialize): a loop at the top of the
// kernel fed only by the copy engine into a wgmma dot left in flight gets a
// producer warpgroup instead of a prologue and ahead copies:
//
//     full[S+1], empty[S+1] = barriers (empty: one arrival per consumer warp)
//     producer {                        // one thread of an extra warpgroup
//       for k: wait empty[k % (S+1)]    // parity starts at 1: free at first
//              expect full[k % (S+1)]; tma_load ...
//     }                                 // then that warpgroup exits
//     for k: wait full[k % (S+1)]       // consumers: no program barrier
//            acc = dot(ring[k % (S+1)]); warpgroup_wait 1
//            arrive empty[(k-1) % (S+1)] if k > first   // dot k-1 is done
//
// so the copies never wait for the slowest consumer warp's barrier, and run
// on into the next tile while the consumers store one (a loop over tiles).
// The producer computes what the copies' addresses need from before the
// loop again (scalar arithmetic, and scalar loads after which nothing has
// written memory yet). It is a whole warpgroup (the
// lowering moves its registers to the consumers with setmaxnreg).
// A loop that chains dots (attention) gets the same producer, with the
// option or where LowerDescriptors marked it (kgpu.warp_specialize): its
// last dot stays in flight across the back edge (chainOf), and the
// consumers hand slot k-1 back after iteration k's first dot, whose own
// wait completed the last dot that read it. Where the first dot reads one
// ring and the last another (attention's keys and values), each ring has
// its own barrier pair (chainSplit): the consumers wait for a block where
// it is first read (at the top of an iteration not rotated, where a spare
// slot holds the blocks long before), and hand the first dot's slot back
// in its own iteration, once that dot completed. Later loops of chained dots
// (causal attention's diagonal block) continue the same ring
// (ProducerRing): a second fill loop in the producer, a second consumer
// loop reading on from the first's slot and parity. Loops of chained dots
// inside a walk over tiles (a persistent program's loop at the kernel's
// top, ProgramWalk.h) get the same producer, which walks the tiles too:
// producer and consumers carry their slot and parity across tiles, and
// each loop hands its last slot back once its last dot completed.
//
//===----------------------------------------------------------------------===//

#include "compiler/transforms/Passes.h"

#include "compiler/analysis/AxisInfo.h"
#include "compiler/analysis/ClusterUniformity.h"
#include "compiler/transforms/AddressSlice.h"
#include "compiler/transforms/HeldOperands.h"
#include "compiler/transforms/MmaFragments.h"
#include "compiler/transforms/OverlapChain.h"
#include "compiler/transforms/ProgramWalk.h"
#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/gpu/Mma.h"
#include "compiler/dialect/gpu/Tma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {

#define GEN_PASS_DEF_PIPELINELOOPS
#include "compiler/transforms/Passes.h.inc"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// The last dimension's size of a 2-D operand (N for B).
int64_t columnsOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape()[1]; }

/// A load that can become an async copy (cp.async from each thread, or the
/// copy engine for a descriptor load), and what its copies need.
struct Candidate {
  Operation *load;
  unsigned contiguousDim; ///< the tile dimension its vectors run along
  bool tma;               ///< a descriptor load, copied by the copy engine
  Operation *transpose = nullptr; ///< (tma) the tile.trans the dot reads, if any

  /// The value the dot reads (which the ring slot replaces).
  Value result() const { return (transpose ? transpose : load)->getResult(0); }
  RankedTensorType type() const { return cast<RankedTensorType>(result().getType()); }
  /// What its address depends on: pointers and mask, or the offsets.
  SmallVector<Value> addressRoots() const {
    if (auto d = dyn_cast<tile::DescriptorLoadOp>(load))
      return llvm::to_vector(d.getOffsets());
    auto l = cast<tile::LoadOp>(load);
    return {l.getPtr(), l.getMask()};
  }
};

/// Whether any candidate is filled by the copy engine.
bool usesCopyEngine(ArrayRef<Candidate> candidates) {
  return llvm::any_of(candidates, [](const Candidate &c) { return c.tma; });
}

/// A producer's transaction ("full") and hand-back ("empty") barriers, a
/// pair per slot: one pair for every candidate, or, for a split chain
/// (chainSplit), one each, so that a candidate's slot goes back to the
/// producer as soon as the dot reading it completed.
struct RingBarriers {
  SmallVector<Value> full, empty;
  std::optional<std::pair<unsigned, unsigned>> split; ///< (chainSplit) the first and last dots' candidates
  bool perCandidate() const { return split.has_value(); }
  Value fullOf(unsigned candidate) const { return full[perCandidate() ? candidate : 0]; }
  Value emptyOf(unsigned candidate) const { return empty[perCandidate() ? candidate : 0]; }
};

/// The ring a producer warpgroup fills for the loops of chained dots of a
/// kernel, one loop after another (causal attention's two): the slots,
/// their barriers, where the producer's fills and the consumers' reads
/// have got to.
struct ProducerRing {
  SmallVector<Type> blocks;           ///< the candidates' blocks
  SmallVector<unsigned> contiguousDims;
  SmallVector<Value> buffers;
  RingBarriers barriers;
  int slots = 0;
  ProducerOp producer;
  scf::ForOp producerWalk;            ///< (in a walk over tiles) the producer's walk
  Value fillSlot, fillPhase;          ///< after the producer's last loop
  /// (in a walk) The consumers' walk, given the read slot and parity as
  /// its last two carried values.
  scf::ForOp consumerWalk;
  scf::ForOp consumer;                ///< the last consumer loop (results: ..., slot, phase)
  PassTurnOp finalPass;               ///< (turns) the pass after the last consumer loop
};

class LoopPipeliner {
public:
  LoopPipeliner(scf::ForOp loop, int stages, int computeCapability, int numWarps, bool warpSpecialize,
                bool pingPong, bool overlapChain, const AxisInfoAnalysis &axis,
                const llvm::DenseSet<Operation *> &rereadable, std::optional<ProducerRing> &ring, int64_t heldBytes)
      : loop_(loop), stages_(stages), computeCapability_(computeCapability), numWarps_(numWarps),
        warpSpecialize_(warpSpecialize), pingPong_(pingPong), overlapChain_(overlapChain), axis_(axis),
        rereadable_(rereadable), ring_(ring), walk_(enclosingWalk(loop)), heldBytes_(heldBytes) {}

  void run() {
    SmallVector<Candidate> candidates = findCandidates();
    if (candidates.empty())
      return;
    AddressSlice slice;
    if (!sliceOf(candidates, slice)) {
      // Copy-engine loads must become copies (LowerDescriptors kept them
      // after proving their offsets computable ahead); pointer loads whose
      // addresses are not stay as they are.
      llvm::erase_if(candidates, [](const Candidate &c) { return !c.tma; });
      if (candidates.empty() || !sliceOf(candidates, slice))
        return;
    }
    inFlight_ = findInFlightDot(candidates);
    const bool pointerRingsInFlight = inFlight_ && !usesCopyEngine(candidates);
    refillBeforeDot_ = pointerRingsInFlight && spareSlotFits();
    // Rings of copies moved from pointer loads to the copy engine do
    // without the spare slot as cp.async rings do, where it would cost a
    // program a multiprocessor (a descriptor's rings always take it).
    const bool addedRingsInFlight = inFlight_ && !warpSpecialize_ && onlyAddedMaps(candidates);
    refillAfterRelease_ = (pointerRingsInFlight || addedRingsInFlight) && !spareSlotFits();
    slots_ = inFlight_ && !refillAfterRelease_ ? stages_ + 1 : stages_;
    SmallVector<Operation *> before;
    if (warpSpecialize_ && !inFlight_)
      chain_ = chainOf(loop_, [&](Value v) {
        return llvm::any_of(candidates, [&](const Candidate &c) { return c.result() == v; });
      });
    if (warpSpecialize_ && canSpecialize(candidates, slice, before)) {
      // A chain's slot is handed back an iteration after it was read (its
      // last dot stays in flight): a spare slot keeps the producer as far
      // ahead as the stages ask, where it fits.
      if (chain_ && ringBytes_ * (stages_ + 1) / stages_ <= budget())
        slots_ = stages_ + 1;
      if (continuesRing(candidates))
        slots_ = ring_->slots;
      specialize(candidates, slice, before);
    } else {
      chain_.reset();
      rewrite(candidates, slice);
    }
  }

private:
  /// The address computation of all candidates, if it can run ahead.
  bool sliceOf(ArrayRef<Candidate> candidates, AddressSlice &slice) {
    SmallVector<Value> roots;
    for (const Candidate &c : candidates)
      llvm::append_range(roots, c.addressRoots());
    slice = AddressSlice();
    return collectSlice(loop_, roots, slice);
  }

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
    // Descriptor loads first: LowerDescriptors kept only those whose rings
    // fit, and reserved their shared memory.
    for (auto load : loop_.getBody()->getOps<tile::DescriptorLoadOp>()) {
      auto type = cast<RankedTensorType>(load.getType());
      ringBytes_ += stages_ * type.getNumElements() * elementBytes(type.getElementType());
      // A transposed block is stored as it arrives: its rows run along the
      // dot operand's dimension 0.
      auto transpose = dyn_cast<tile::TransOp>(*load->getUsers().begin());
      found.push_back({load, transpose ? 0u : 1u, /*tma=*/true, transpose});
    }
    const bool descriptorRings = !found.empty();
    struct PointerLoad {
      tile::LoadOp load;
      unsigned dim;
      int64_t slotBytes;
    };
    SmallVector<PointerLoad> pointerLoads;
    // (A load several dots read -- a tile that is one product's A and
    // another's B, as in attention's backward -- is one ring whose slot
    // every dot reads; each must take its vectors' direction.)
    auto readByDotsOnly = [&](tile::LoadOp load) {
      return llvm::all_of(load->getUsers(), [&](Operation *user) {
        auto dot = dyn_cast<tile::DotOp>(user);
        return dot && dot->getBlock() == loop_.getBody() && usesMma(dot, computeCapability_);
      });
    };
    llvm::DenseMap<Operation *, int> dotReads; // a load's uses seen so far
    for (auto dot : loop_.getBody()->getOps<tile::DotOp>()) {
      if (!usesMma(dot, computeCapability_))
        continue;
      bool wgmma = isWgmmaDot(dot, computeCapability_, numWarps_);
      for (Value operand : {dot.getA(), dot.getB()}) {
        unsigned kDim = operand == dot.getA() ? 1 : 0;
        auto load = operand.getDefiningOp<tile::LoadOp>();
        if (!load || load->getBlock() != loop_.getBody() || load.getIsVolatile() || !readByDotsOnly(load))
          continue;
        if (Value other = load.getOther())
          if (!matchPattern(other, m_AnyZeroFloat()) && !matchPattern(other, m_Zero()))
            continue; // masked-off copies fill zeros, nothing else
        auto [bytes, dim] = copyVector(load);
        if (bytes < 4)
          continue; // cp.async moves 4, 8 or 16 bytes
        bool nMajorB = kDim == 0 && columnsOf(operand) % 64 == 0 && wgmmaTakesNMajorB(dot);
        if (wgmma && dim != kDim && !nMajorB) {
          dotReads[load] = -1; // (then not a ring for any of its dots)
          continue; // wgmma reads K-major slots (N-major too for B); this operand is staged K-major instead
        }
        int &reads = dotReads[load];
        if (reads < 0 || ++reads < static_cast<int>(std::distance(load->use_begin(), load->use_end())))
          continue; // (a ring once every dot reading it takes one)
        auto type = cast<RankedTensorType>(load.getType());
        pointerLoads.push_back({load, dim, type.getNumElements() * elementBytes(type.getElementType())});
      }
    }
    // Rings too deep for shared memory get fewer stages, not fewer
    // operands: an operand left out is staged through registers every
    // iteration and the dot waits for it, far slower than a stage less.
    // (Copy-engine rings were sized by LowerDescriptors: then the pointer
    // rings take what room is left, as they come.)
    int64_t pointerSlotBytes = 0;
    for (const PointerLoad &p : pointerLoads)
      pointerSlotBytes += p.slotBytes;
    if (!descriptorRings && pointerSlotBytes > 0 && budget() / pointerSlotBytes >= 2)
      stages_ = static_cast<int>(std::min<int64_t>(stages_, budget() / pointerSlotBytes));
    for (const PointerLoad &p : pointerLoads) {
      if (ringBytes_ + stages_ * p.slotBytes > budget())
        continue;
      ringBytes_ += stages_ * p.slotBytes;
      found.push_back({p.load, p.dim, /*tma=*/false});
    }
    return found;
  }

  /// The loop's one wgmma dot, when it may stay in flight across an
  /// iteration: both operands come from rings, its accumulator is a
  /// loop-carried f32 value that nothing else in the loop reads (its
  /// registers are being written until the next iteration's wait) --
  /// directly, or restarted from zero on a condition (a loop over several
  /// tiles) -- its result is carried on and otherwise read only inside
  /// branches (a tile's epilogue, which waits for it), and the rings still
  /// fit with one more slot each.
  tile::DotOp findInFlightDot(ArrayRef<Candidate> candidates) {
    auto dots = loop_.getBody()->getOps<tile::DotOp>();
    if (!llvm::hasSingleElement(dots))
      return {};
    tile::DotOp dot = *dots.begin();
    if (!isWgmmaDot(dot, computeCapability_, numWarps_) || dot.getType() != dot.getC().getType() ||
        !dot.getType().getElementType().isF32())
      return {};
    auto fromRing = [&](Value operand) {
      return llvm::any_of(candidates, [&](const Candidate &c) { return c.result() == operand; });
    };
    if (!fromRing(dot.getA()) || !fromRing(dot.getB()))
      return {};
    Value accumulator = dot.getC();
    if (std::optional<AccumulatorReset> reset = accumulatorReset(dot)) {
      auto select = dot.getC().getDefiningOp<arith::SelectOp>();
      if (!select || !select->hasOneUse() || select.getFalseValue() != reset->accumulator)
        return {};
      accumulator = reset->accumulator;
    }
    auto carried = dyn_cast<BlockArgument>(accumulator);
    if (!carried || carried.getOwner() != loop_.getBody() || carried == loop_.getInductionVar() ||
        !carried.hasOneUse())
      return {};
    unsigned index = carried.getArgNumber() - loop_.getNumInductionVars();
    Operation *yield = loop_.getBody()->getTerminator();
    if (loop_.getYieldedValues()[index] != dot.getResult())
      return {};
    for (OpOperand &use : dot->getUses()) {
      if (use.getOwner() == yield) {
        if (use.getOperandNumber() != index)
          return {};
        continue;
      }
      Operation *ancestor = loop_.getBody()->findAncestorOpInBlock(*use.getOwner());
      if (ancestor == use.getOwner() || !isa<scf::IfOp>(ancestor))
        return {};
    }
    // Copy-engine rings refill a slot as soon as the barrier proves it
    // read, so an in-flight dot's slot needs one more; cp.async rings take
    // one where it fits (spareSlotFits), else refill after the dot's
    // release (rewrite).
    if (usesCopyEngine(candidates) && ringBytes_ * (stages_ + 1) / stages_ > budget())
      return {};
    carriedIndex_ = index;
    return dot;
  }

  /// Whether every candidate is a copy-engine load through a tensor map the
  /// compiler added for a pointer load.
  bool onlyAddedMaps(ArrayRef<Candidate> candidates) const {
    auto func = loop_->getParentOfType<tile::FuncOp>();
    return func && llvm::all_of(candidates, [&](const Candidate &c) {
      auto load = dyn_cast<tile::DescriptorLoadOp>(c.load);
      auto map = load ? dyn_cast<BlockArgument>(load.getMap()) : BlockArgument();
      return map && func.getArgAttr(map.getArgNumber(), kAddedMapAttr);
    });
  }

  /// Whether the rings take one more slot each within their budget and
  /// with as many programs sharing a multiprocessor's shared memory.
  bool spareSlotFits() const {
    const int64_t spare = ringBytes_ * (stages_ + 1) / stages_;
    auto programs = [](int64_t bytes) {
      return kSharedPerMultiprocessorBytes / (bytes + kSharedReservedPerProgramBytes);
    };
    return spare <= budget() && programs(heldBytes_ + spare) == programs(heldBytes_ + ringBytes_);
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
  /// state replaced, then issues the copies into `slot` (cp.async ones
  /// committed as one group; copy-engine ones announced on the slot's
  /// barrier first). Returns the next address state.
  /// (`outer` maps values from before the loop, for a producer that
  /// computed them again; `producer`: the copies are issued by the producer
  /// warpgroup's thread; `multicast[i]`: candidate i's copies are shared by
  /// the programs of a cluster of that many. With a barrier per candidate,
  /// `beforeCopy(i)` runs before candidate i's copy is announced.)
  SmallVector<Value> issue(OpBuilder &b, Location loc, ArrayRef<Candidate> candidates,
                           const AddressSlice &slice, ArrayRef<Value> buffers, ArrayRef<Value> barriers, Value iv,
                           Value inRange, ArrayRef<Value> state, Value slot, const IRMapping *outer = nullptr,
                           bool producer = false, ArrayRef<int> multicast = {},
                           llvm::function_ref<void(unsigned)> beforeCopy = nullptr) {
    IRMapping map = outer ? *outer : IRMapping();
    map.map(loop_.getInductionVar(), iv);
    for (auto [index, value] : llvm::zip(slice.carried, state))
      map.map(loop_.getRegionIterArgs()[index], value);
    for (Operation *op : slice.ops)
      b.clone(*op, map);
    const bool perCandidate = barriers.size() > 1;
    auto bytesOf = [](const Candidate &c) {
      return c.tma ? c.type().getNumElements() * elementBytes(c.type().getElementType()) : 0;
    };
    int64_t tmaBytes = 0;
    for (const Candidate &c : candidates)
      tmaBytes += bytesOf(c);
    if (tmaBytes > 0 && !perCandidate)
      MBarrierExpectOp::create(b, loc, barriers.front(), slot, static_cast<int32_t>(tmaBytes), inRange, producer);
    bool pointerCopies = false;
    for (auto [i, c, buffer] : llvm::enumerate(candidates, buffers)) {
      if (auto d = dyn_cast<tile::DescriptorLoadOp>(c.load)) {
        Value barrier = barriers[perCandidate ? i : 0];
        if (perCandidate) {
          if (beforeCopy)
            beforeCopy(i);
          MBarrierExpectOp::create(b, loc, barrier, slot, static_cast<int32_t>(bytesOf(c)), inRange, producer);
        }
        SmallVector<Value> coords;
        for (Value offset : d.getOffsets())
          coords.push_back(map.lookupOrDefault(offset));
        TmaLoadOp::create(b, loc, d.getMap(), coords, buffer, slot, barrier, inRange, producer,
                          multicast.empty() ? 1 : multicast[i]);
        continue;
      }
      auto load = cast<tile::LoadOp>(c.load);
      Value mask = load.getMask() ? map.lookupOrDefault(load.getMask()) : Value();
      AsyncCopyOp::create(b, loc, map.lookupOrDefault(load.getPtr()), buffer, slot, mask, inRange);
      pointerCopies = true;
    }
    if (pointerCopies)
      AsyncCommitOp::create(b, loc);
    SmallVector<Value> next;
    for (unsigned index : slice.carried)
      next.push_back(map.lookupOrDefault(loop_.getYieldedValues()[index]));
    return next;
  }

  /// A ring of slots_ slots for each candidate, in its swizzled encoding.
  SmallVector<Value> allocateRings(OpBuilder &b, Location loc, ArrayRef<Candidate> candidates) {
    SmallVector<Value> buffers;
    for (const Candidate &c : candidates) {
      auto type = c.type();
      SmallVector<int64_t> shape{slots_};
      llvm::append_range(shape, type.getShape());
      unsigned other = 1 - c.contiguousDim;
      auto encoding = swizzledEncoding(b.getContext(), type.getShape()[c.contiguousDim],
                                       elementBytes(type.getElementType()), {c.contiguousDim, other});
      buffers.push_back(LocalAllocOp::create(b, loc, RankedTensorType::get(shape, type.getElementType(), encoding)));
    }
    return buffers;
  }

  /// One transaction barrier per slot, set up to complete a phase on
  /// `arrivals` arrivals (and the bytes announced); with `cluster`, visible
  /// to the other programs of the cluster once set up.
  Value barriersFor(OpBuilder &b, Location loc, int arrivals, bool cluster = false) {
    auto flat = SharedEncodingAttr::get(b.getContext(), 1, 1, 1, {0});
    Value barriers = LocalAllocOp::create(b, loc, RankedTensorType::get({slots_}, b.getI64Type(), flat));
    MBarrierInitOp::create(b, loc, barriers, arrivals, cluster);
    return barriers;
  }

  /// `slot + 1` modulo the ring's slots.
  Value nextSlot(OpBuilder &b, Location loc, Value slot) {
    auto c32 = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v)); };
    Value plus = arith::AddIOp::create(b, loc, slot, c32(1));
    Value wraps = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, plus, c32(slots_));
    return arith::SelectOp::create(b, loc, wraps, c32(0), plus);
  }

  /// `slot - 1` modulo the ring's slots.
  Value previousSlot(OpBuilder &b, Location loc, Value slot) {
    auto c32 = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v)); };
    Value wraps = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, slot, c32(0));
    return arith::SelectOp::create(b, loc, wraps, c32(slots_ - 1), arith::SubIOp::create(b, loc, slot, c32(1)));
  }

  /// A barrier's parity to wait for next: flipped when the slot wrapped to 0.
  Value nextPhase(OpBuilder &b, Location loc, Value next, Value phase) {
    auto c32 = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v)); };
    Value wrapped = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, next, c32(0));
    return arith::SelectOp::create(b, loc, wrapped, arith::XOrIOp::create(b, loc, phase, c32(1)), phase);
  }

  /// The loop rebuilt with `inits` as more carried values (`yields` builds
  /// their next values at the top of the body, where the candidates' ring
  /// reads go), the candidates' loads erased; null if it cannot be.
  scf::ForOp carryMore(IRRewriter &b, ValueRange inits, const NewYieldValuesFn &yields,
                       ArrayRef<Candidate> candidates) {
    FailureOr<LoopLikeOpInterface> replaced = cast<LoopLikeOpInterface>(loop_.getOperation())
                                                  .replaceWithAdditionalYields(b, inits, /*replaceInitOperandUsesInLoop=*/false, yields);
    if (failed(replaced))
      return {};
    for (const Candidate &c : candidates) {
      if (c.transpose)
        c.transpose->erase();
      c.load->erase();
    }
    return cast<scf::ForOp>(replaced->getOperation());
  }

  /// Whether the loop can have a producer warpgroup: every operand comes by the
  /// copy engine into the one wgmma dot left in flight, or into a chain of
  /// dots whose last stays in flight (chainOf), the loop sits at the top of
  /// the kernel (it runs once, so the producer can run it whole and exit)
  /// or, a chain's, in a walk over tiles (ProgramWalk.h: the producer walks
  /// them too), the kernel's other loops of dots (a chain's) join its ring
  /// after it (the rings of another could not share its memory: they meet
  /// at program barriers, the producer never does), and what its copies
  /// need from before the loop is scalar arithmetic on the kernel's
  /// arguments (and the walk's counter) and scalar loads the producer may
  /// issue again (`before`, in program order: the kernel's top first, then
  /// the walk's), which the producer computes again.
  bool canSpecialize(ArrayRef<Candidate> candidates, const AddressSlice &slice, SmallVector<Operation *> &before) {
    auto func = loop_->getParentOfType<tile::FuncOp>();
    auto module = loop_->getParentOfType<ModuleOp>();
    if ((!inFlight_ && !chain_) || !func || numWarps_ + kProducerWarps > 32 ||
        !llvm::all_of(candidates, [](const Candidate &c) { return c.tma; }))
      return false;
    // (In a walk: a chain whose blocks all stream through the ring, in
    // programs without clusters.)
    if (loop_->getParentOp() != func.getOperation() &&
        (!walk_ || !chain_ || heldBytes_ > 0 || tile::clusterSizeOf(func) > 1))
      return false;
    if (getProducerWarps(module) > 0 && !continuesRing(candidates))
      return false;
    if (chain_ && !ring_) {
      // The kernel's other loops of dots join this one's producer: they
      // come after it, in the same block, marked to (LowerDescriptors
      // checked their blocks).
      bool others = true;
      func.walk([&](scf::ForOp other) {
        if (other != loop_ && !other.getBody()->getOps<tile::DotOp>().empty())
          others &= other->hasAttr(kWarpSpecializeAttr) && other->getParentOp() == loop_->getParentOp() &&
                    loop_->isBeforeInBlock(other);
      });
      if (!others)
        return false;
    }
    auto scalar = [](Type t) { return !isa<ShapedType>(t); };
    SmallVector<Value> work{loop_.getLowerBound(), loop_.getUpperBound(), loop_.getStep()};
    if (walk_)
      llvm::append_range(work, ValueRange{walk_.getLowerBound(), walk_.getUpperBound(), walk_.getStep()});
    for (unsigned index : slice.carried)
      work.push_back(loop_.getInitArgs()[index]);
    for (Operation *op : slice.ops) {
      if (!llvm::all_of(op->getResultTypes(), scalar))
        return false;
      llvm::append_range(work, op->getOperands());
    }
    for (const Candidate &c : candidates)
      llvm::append_range(work, c.addressRoots());
    Block *top = &func.getBody().front();
    Block *walkBody = walk_ ? walk_.getBody() : nullptr;
    llvm::SetVector<Operation *> needed;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner() != top && arg.getOwner() != loop_.getBody() &&
            !(walk_ && arg == walk_.getInductionVar()))
          return false;
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (def->getBlock() == loop_.getBody())
        continue; // the slice's own (cloned with it)
      if ((def->getBlock() != top && def->getBlock() != walkBody) || def->getNumRegions() != 0 ||
          !llvm::all_of(def->getResultTypes(), scalar) ||
          !(isMemoryEffectFree(def) || rereadable_.contains(def)))
        return false;
      if (needed.insert(def))
        llvm::append_range(work, def->getOperands());
    }
    before.assign(needed.begin(), needed.end());
    llvm::sort(before, [&](Operation *x, Operation *y) {
      if (x->getBlock() != y->getBlock())
        return x->getBlock() == top;
      return x->isBeforeInBlock(y);
    });
    return true;
  }

  /// A chain of two rings, one read only by the first dot and one only by
  /// the last (attention's keys and values): their candidates' numbers. Each
  /// gets its own barrier pair, so that the first dot's slot goes back to
  /// the producer as soon as that dot completed instead of with the last
  /// dot's, an iteration later: the producer refills it that much sooner
  /// (FlashAttention-3's separate pipelines for K and V).
  std::optional<std::pair<unsigned, unsigned>> chainSplit(ArrayRef<Candidate> candidates) const {
    if (!chain_ || candidates.size() != 2)
      return std::nullopt;
    auto readOnlyBy = [](const Candidate &c, tile::DotOp dot) {
      return c.result().hasOneUse() && c.result().use_begin()->getOwner() == dot.getOperation() &&
             c.result().use_begin()->getOperandNumber() == 1;
    };
    for (unsigned first : {0u, 1u})
      if (readOnlyBy(candidates[first], chain_->first) && readOnlyBy(candidates[1 - first], chain_->last))
        return std::pair{first, 1 - first};
    return std::nullopt;
  }

  /// Whether this loop of chained dots continues the ring a producer fills
  /// for an earlier loop: same blocks (split alike), a positive constant
  /// step (so that a loop that ran is one whose upper bound passed its
  /// lower).
  bool continuesRing(ArrayRef<Candidate> candidates) {
    if (!ring_ || !chain_ || candidates.size() != ring_->blocks.size() ||
        chainSplit(candidates) != ring_->barriers.split)
      return false;
    APInt step;
    if (!matchPattern(loop_.getStep(), m_ConstantInt(&step)) || !step.isStrictlyPositive())
      return false;
    for (auto [c, block, dim] : llvm::zip(candidates, ring_->blocks, ring_->contiguousDims))
      if (c.type() != block || c.contiguousDim != dim)
        return false;
    return true;
  }

  /// For each candidate, the programs that share its copies: the module's
  /// cluster size where every program of a cluster runs the loop as often
  /// and copies the same block (cluster-uniform bounds and coordinates), the
  /// block splits into the cluster's parts, and no other access uses its
  /// tensor map (whose box becomes one part); else 1.
  SmallVector<int> sharedByCluster(ArrayRef<Candidate> candidates, tile::FuncOp func) {
    SmallVector<int> programs(candidates.size(), 1);
    const int cluster = tile::clusterSizeOf(func);
    if (cluster <= 1)
      return programs;
    ClusterUniformity uniform(func);
    if (!uniform.isUniform(loop_.getLowerBound()) || !uniform.isUniform(loop_.getUpperBound()) ||
        !uniform.isUniform(loop_.getStep()))
      return programs;
    for (auto [i, c] : llvm::enumerate(candidates)) {
      auto d = dyn_cast<tile::DescriptorLoadOp>(c.load);
      if (!d || !llvm::all_of(d.getOffsets(), [&](Value v) { return uniform.isUniform(v); }) ||
          !llvm::all_of(d.getMap().getUsers(), [&](Operation *user) { return user == d; }))
        continue;
      ArrayRef<int64_t> tile = c.type().getShape();
      std::optional<TmaBox> box =
          tmaBoxFor(tile[1 - c.contiguousDim], tile[c.contiguousDim], elementBytes(c.type().getElementType()));
      if (box && multicastSplits(*box, cluster) && recordsBox(func, d.getMap()))
        programs[i] = cluster;
    }
    return programs;
  }

  /// Whether `entry` of the module's kgpu.tensor_maps is tensor map `map`'s
  /// (a kernel parameter).
  static bool describes(DictionaryAttr entry, Value map) {
    auto parameter = dyn_cast<BlockArgument>(map);
    return parameter && cast<IntegerAttr>(entry.get("parameter")).getInt() == parameter.getArgNumber();
  }

  /// Whether LowerDescriptors recorded a box for tensor map `map`.
  static bool recordsBox(tile::FuncOp func, Value map) {
    auto maps = func->getParentOfType<ModuleOp>()->getAttrOfType<ArrayAttr>(kTensorMapsAttr);
    return maps && llvm::any_of(maps.getAsRange<DictionaryAttr>(),
                                [&](DictionaryAttr entry) { return describes(entry, map); });
  }

  /// Divides the rows of the box recorded for tensor map `map` by `parts`.
  static void shrinkBox(tile::FuncOp func, Value map, int parts) {
    auto module = func->getParentOfType<ModuleOp>();
    Builder b(module.getContext());
    SmallVector<Attribute> entries;
    for (auto entry : module->getAttrOfType<ArrayAttr>(kTensorMapsAttr).getAsRange<DictionaryAttr>()) {
      if (!describes(entry, map)) {
        entries.push_back(entry);
        continue;
      }
      SmallVector<int32_t> box(cast<DenseI32ArrayAttr>(entry.get("box")).asArrayRef());
      box[0] /= parts;
      NamedAttrList fields(entry);
      fields.set("box", b.getDenseI32ArrayAttr(box));
      entries.push_back(fields.getDictionary(module.getContext()));
    }
    module->setAttr(kTensorMapsAttr, b.getArrayAttr(entries));
  }

  /// The producer/consumer form (header): the producer region at the top of
  /// the kernel, the loop itself left to the consumers.
  ///
  /// In a cluster whose programs share some copies (multicast), each slot's
  /// "empty" barrier counts the consumer warps of every program, which all
  /// arrive on every program's barrier: a producer refills a slot of every
  /// program only once all of them have read it. Each "full" barrier still
  /// expects the whole slot's bytes, part of them copied by the other
  /// programs. The producer waits, before it exits, until its slots' last
  /// hand-backs arrived (the other programs' consumers arrive on this
  /// program's barriers until then; the consumers hand the last slot back
  /// after the loop, so this also proves the other programs received this
  /// producer's last copies).
  void specialize(ArrayRef<Candidate> candidates, const AddressSlice &slice, ArrayRef<Operation *> before) {
    Location loc = loop_.getLoc();
    MLIRContext *context = loop_.getContext();
    auto func = loop_->getParentOfType<tile::FuncOp>();
    IRRewriter b(context);
    b.setInsertionPointToStart(&func.getBody().front());
    auto i32 = [&](OpBuilder &at, int64_t v) -> Value {
      return arith::ConstantOp::create(at, loc, at.getI32IntegerAttr(v));
    };
    // A later loop of chained dots continues the ring of the first: the
    // producer fills its slots next, the consumers read them next.
    const bool continues = continuesRing(candidates);
    SmallVector<int> multicast = continues ? SmallVector<int>(candidates.size(), 1) : sharedByCluster(candidates, func);
    const int sharing = *llvm::max_element(multicast);
    SmallVector<Value> buffers;
    RingBarriers barriers;
    ProducerOp producer;
    if (continues) {
      buffers = ring_->buffers;
      barriers = ring_->barriers;
      producer = ring_->producer;
      if (ring_->producerWalk)
        b.setInsertionPoint(ring_->producerWalk.getBody()->getTerminator());
      else
        b.setInsertionPointToEnd(&producer.getBody().front());
    } else {
      buffers = allocateRings(b, loc, candidates);
      if (sharing == 1)
        barriers.split = chainSplit(candidates);
      for (size_t pairs = barriers.perCandidate() ? candidates.size() : 1; barriers.full.size() < pairs;) {
        barriers.full.push_back(barriersFor(b, loc, 1, sharing > 1));
        barriers.empty.push_back(barriersFor(b, loc, numWarps_ * sharing, sharing > 1));
      }
      producer = ProducerOp::create(b, loc);
      b.createBlock(&producer.getBody());
    }
    const Value full = barriers.full.front(), empty = barriers.empty.front(); // (one pair: every candidate's)
    // In a walk over tiles the producer walks them too, carrying where its
    // fills have got to from one tile's loops to the next's.
    IRMapping outer;
    scf::ForOp producerWalk = continues ? ring_->producerWalk : scf::ForOp();
    // (What the kernel's top computes is computed once, before the
    // producer's walk: a scalar load read again in every tile could see
    // what the consumers stored meanwhile.)
    auto inWalk = [&](Operation *op) { return walk_ && op->getBlock() == walk_.getBody(); };
    {
      OpBuilder::InsertionGuard guard(b);
      if (producerWalk)
        b.setInsertionPoint(producerWalk);
      for (Operation *op : before)
        if (!inWalk(op))
          b.clone(*op, outer);
    }
    if (producerWalk)
      outer.map(walk_.getInductionVar(), producerWalk.getInductionVar());
    if (walk_ && !continues) {
      producerWalk = scf::ForOp::create(b, loc, outer.lookupOrDefault(walk_.getLowerBound()),
                                        outer.lookupOrDefault(walk_.getUpperBound()),
                                        outer.lookupOrDefault(walk_.getStep()), ValueRange{i32(b, 0), i32(b, 1)});
      b.setInsertionPointToStart(producerWalk.getBody());
      outer.map(walk_.getInductionVar(), producerWalk.getInductionVar());
    }
    for (Operation *op : before)
      if (inWalk(op))
        b.clone(*op, outer);
    SmallVector<Value> inits;
    for (unsigned index : slice.carried)
      inits.push_back(outer.lookupOrDefault(loop_.getInitArgs()[index]));
    const size_t state = inits.size();
    Value firstSlot = continues ? ring_->fillSlot : producerWalk ? producerWalk.getRegionIterArg(0) : i32(b, 0);
    // (The parity to wait for on its empty barrier: the slots are free at first.)
    Value firstPhase = continues ? ring_->fillPhase : producerWalk ? producerWalk.getRegionIterArg(1) : i32(b, 1);
    inits.push_back(firstSlot); // the slot to fill
    inits.push_back(firstPhase);
    auto fill = scf::ForOp::create(
        b, loc, outer.lookupOrDefault(loop_.getLowerBound()), outer.lookupOrDefault(loop_.getUpperBound()),
        outer.lookupOrDefault(loop_.getStep()), inits,
        [&](OpBuilder &inner, Location, Value iv, ValueRange args) {
          Value slot = args[state], phase = args[state + 1];
          auto waitForSlot = [&](unsigned candidate) {
            MBarrierWaitOp::create(inner, loc, barriers.emptyOf(candidate), slot, phase);
          };
          if (!barriers.perCandidate())
            waitForSlot(0);
          Value always = arith::ConstantOp::create(inner, loc, inner.getBoolAttr(true));
          SmallVector<Value> carried(args.take_front(state));
          SmallVector<Value> next = issue(inner, loc, candidates, slice, buffers, barriers.full, iv, always, carried,
                                          slot, &outer, /*producer=*/true, multicast, waitForSlot);
          Value following = nextSlot(inner, loc, slot);
          next.push_back(following);
          next.push_back(nextPhase(inner, loc, following, phase));
          scf::YieldOp::create(inner, loc, next);
        });
    if (producerWalk) {
      SmallVector<Value, 2> filled{fill.getResult(state), fill.getResult(state + 1)}; // (a ValueRange would outlive its list)
      if (continues)
        producerWalk.getBody()->getTerminator()->setOperands(filled);
      else
        scf::YieldOp::create(b, loc, filled);
    }
    if (sharing > 1) {
      // The consumers hand back every slot (the last one after the loop):
      // wait as if filling slots_ more iterations.
      Value from = i32(b, 0), to = i32(b, slots_), step = i32(b, 1);
      scf::ForOp::create(b, loc, from, to, step, ValueRange{fill.getResult(state), fill.getResult(state + 1)},
                         [&](OpBuilder &inner, Location, Value, ValueRange args) {
                           MBarrierWaitOp::create(inner, loc, empty, args[0], args[1]);
                           Value following = nextSlot(inner, loc, args[0]);
                           scf::YieldOp::create(inner, loc,
                                                ValueRange{following, nextPhase(inner, loc, following, args[1])});
                         });
    }
    if (chain_ && sharing == 1) {
      if (!continues) {
        ring_.emplace();
        for (const Candidate &c : candidates) {
          ring_->blocks.push_back(c.type());
          ring_->contiguousDims.push_back(c.contiguousDim);
        }
        ring_->buffers = buffers;
        ring_->barriers = barriers;
        ring_->slots = slots_;
        ring_->producer = producer;
        ring_->producerWalk = producerWalk;
      }
      ring_->fillSlot = fill.getResult(state);
      ring_->fillPhase = fill.getResult(state + 1);
    }
    // A whole warpgroup, so that setmaxnreg can move its registers to the
    // consumers (registers are shared per quarter of the multiprocessor: a
    // lone extra warp would cap every thread as a warpgroup would).
    loop_->getParentOfType<ModuleOp>()->setAttr(kProducerWarpsAttr, b.getI32IntegerAttr(kProducerWarps));

    // The consumers: wait for the slot's copies, read it, and hand the slot
    // of the previous iteration back once its dot has completed.
    b.setInsertionPoint(loop_);
    SmallVector<Operation *> waits, reads;
    auto yields = [&](OpBuilder &, Location, ArrayRef<BlockArgument> args) -> SmallVector<Value> {
      Block *body = args.front().getOwner();
      Value readSlot = args[0], phase = args[1];
      OpBuilder inner(context);
      inner.setInsertionPointToStart(body);
      if (!barriers.perCandidate())
        MBarrierWaitOp::create(inner, loc, full, readSlot, phase);
      for (auto [i, c, buffer] : llvm::enumerate(candidates, buffers)) {
        // (A candidate's own wait moves to its first reader, below.)
        if (barriers.perCandidate())
          waits.push_back(MBarrierWaitOp::create(inner, loc, barriers.fullOf(i), readSlot, phase));
        reads.push_back(LocalLoadOp::create(inner, loc, c.type(), buffer, readSlot));
        c.result().replaceAllUsesWith(reads.back()->getResult(0));
      }
      Value following = nextSlot(inner, loc, readSlot);
      return {following, nextPhase(inner, loc, following, phase)};
    };
    // (The maps of shared copies hold one part, read before carryMore erases the loads.)
    SmallVector<Value> sharedMaps;
    for (auto [c, programs] : llvm::zip(candidates, multicast))
      if (programs > 1)
        sharedMaps.push_back(cast<tile::DescriptorLoadOp>(c.load).getMap());
    SmallVector<Value> readFrom{i32(b, 0), i32(b, 0)};
    scf::ForOp previousLoop = continues ? ring_->consumer : scf::ForOp();
    if (previousLoop) {
      const unsigned n = previousLoop.getNumResults();
      readFrom = {previousLoop.getResult(n - 2), previousLoop.getResult(n - 1)};
    } else if (walk_) {
      // The consumers' walk carries where their reads have got to from one
      // tile's loops to the next's.
      if (!carryReadsThroughWalk(b))
        return;
      const unsigned n = ring_->consumerWalk.getNumRegionIterArgs();
      readFrom = {ring_->consumerWalk.getRegionIterArg(n - 2), ring_->consumerWalk.getRegionIterArg(n - 1)};
      b.setInsertionPoint(loop_);
    }
    scf::ForOp newLoop = carryMore(b, readFrom, yields, candidates);
    if (!newLoop)
      return;
    if (walk_) {
      Operation *walkYield = ring_->consumerWalk.getBody()->getTerminator();
      const unsigned n = walkYield->getNumOperands(), results = newLoop.getNumResults();
      walkYield->setOperand(n - 2, newLoop.getResult(results - 2));
      walkYield->setOperand(n - 1, newLoop.getResult(results - 1));
    }
    // With a barrier pair per candidate, each waits for its block where it
    // is first read: attention's values after the softmax (in a loop not
    // rotated, see below).
    for (auto [wait, read] : llvm::zip(waits, reads)) {
      Operation *firstReader = nullptr;
      for (Operation *user : read->getUsers())
        if (Operation *ancestor = newLoop.getBody()->findAncestorOpInBlock(*user))
          if (!firstReader || ancestor->isBeforeInBlock(firstReader))
            firstReader = ancestor;
      if (!firstReader)
        continue;
      wait->moveBefore(firstReader);
      read->moveBefore(firstReader);
    }
    // (Split: the first dot's slot goes back in its own iteration, the last
    // dot's an iteration later.)
    const std::optional<std::pair<unsigned, unsigned>> &split = barriers.split;
    const Value emptyFirst = split ? barriers.emptyOf(split->first) : Value();
    const Value emptyLast = split ? barriers.emptyOf(split->second) : empty;
    // The previous loop's last slot. (In a walk every loop hands its last
    // slot back itself, below.)
    if (previousLoop && !walk_)
      handBackLastSlot(b, previousLoop, emptyLast);
    if (chain_ && sharing == 1)
      ring_->consumer = newLoop;
    for (Value map : sharedMaps)
      shrinkBox(func, map, sharing);
    // A slot is handed back once the last dot reading it completed: the
    // in-flight dot's at the next iteration's wait for it, a chain's at the
    // next iteration's first dot (whose own wait completes every group).
    if (chain_) {
      const bool turns = pingPong_ && sharing == 1 && numWarps_ >= 8 && numWarps_ % 4 == 0 && !walk_ &&
                         !turnMeetsABarrier(newLoop, *chain_);
      // Without turns, a warpgroup's softmax runs under its own last dot
      // (OverlapChain.h), which hands its slots back itself: where the
      // chain is the kernel's only loop of dots (a loop continued by
      // another, causal attention's, would complete its last dot before the
      // next loop's first instead of under it) and its first dot reads A
      // from registers or its rings are split (attention at D 256 reads its
      // queries from shared memory: with one barrier pair, the next block's
      // keys waited for the previous block's P V, in a ring of two slots).
      // (Rotated with turns as well, as FlashAttention-3 does at D <= 128,
      // it measured slower than either alone: docs/schedules.md.) Its
      // waits stay where the loop had them.
      if (!turns && sharing == 1 && overlapChain_ && chain_->registerA && onlyLoopOfDots(func, newLoop) &&
          (split || wgmmaReadsRegisterA(chain_->first, numWarps_)) &&
          overlapChain(b, newLoop, chain_->first, chain_->last, chain_->index, emptyFirst, emptyLast,
                       /*handBackLast=*/static_cast<bool>(walk_)))
        return;
      // Where a ring's wait goes: with a spare slot, every block landed
      // long before it is read, and a wait in the middle of the softmax (a
      // loop, where ptxas schedules no instruction across) costs more than
      // it gains: the blocks are waited for at the top of the iteration as
      // with one barrier pair. Without one (D 256's two slots), the values'
      // copy starts only once the P V that read their slot completed, and
      // their wait stays with their reader.
      if (slots_ > stages_)
        for (size_t i = waits.size(); i-- > 0;) { // (in the candidates' order)
          reads[i]->moveBefore(&newLoop.getBody()->front());
          waits[i]->moveBefore(reads[i]);
        }
      keepLastInFlight(b, newLoop, *chain_);
      if (walk_)
        handBackLastSlot(b, newLoop, emptyLast);
      b.setInsertionPointAfter(turns ? takeTurns(b, newLoop, continues) : chain_->first.getOperation());
    } else {
      keepInFlight(b, newLoop);
      b.setInsertionPointAfter(newLoop.getBody()->getTerminator()->getOperand(carriedIndex_).getDefiningOp());
    }
    Value current = newLoop.getRegionIterArgs()[newLoop.getNumRegionIterArgs() - 2];
    if (emptyFirst)
      MBarrierArriveOp::create(b, loc, emptyFirst, current, arith::ConstantOp::create(b, loc, b.getBoolAttr(true)), 1);
    Value previous = previousSlot(b, loc, current);
    Value notFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, newLoop.getInductionVar(),
                                           newLoop.getLowerBound());
    MBarrierArriveOp::create(b, loc, emptyLast, previous, notFirst, sharing);
    if (sharing > 1) {
      // In a cluster the last iteration's slot is handed back too, once its
      // dot completed (the wait keepInFlight put after the loop): then the
      // producer's last waits also prove every program received its last
      // multicast copies before it exits. The slot comes from the trip
      // count, not from the loop's carried slot: keeping that live past the
      // loop cost the 128x256 tile's consumers a spill.
      b.setInsertionPointAfter(cast<WarpgroupWaitOp>(newLoop->getNextNode()));
      Type type = newLoop.getUpperBound().getType();
      auto constant = [&](int64_t v) -> Value { return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v)); };
      Value step = newLoop.getStep();
      Value span = arith::SubIOp::create(b, loc, newLoop.getUpperBound(), newLoop.getLowerBound());
      Value trips = arith::DivSIOp::create(
          b, loc, arith::AddIOp::create(b, loc, span, arith::SubIOp::create(b, loc, step, constant(1))), step);
      Value ran = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, trips, constant(0));
      Value lastTrip = arith::SelectOp::create(b, loc, ran, arith::SubIOp::create(b, loc, trips, constant(1)), constant(0));
      Value last = arith::RemSIOp::create(b, loc, lastTrip, constant(slots_));
      if (type != b.getI32Type())
        last = arith::TruncIOp::create(b, loc, b.getI32Type(), last);
      MBarrierArriveOp::create(b, loc, empty, last, ran, sharing);
    }
  }

  /// Gives the walk over tiles around the loop two more carried values,
  /// the consumers' read slot and parity (from 0 and 0; yielded unchanged
  /// until a loop's results take their place).
  bool carryReadsThroughWalk(IRRewriter &b) {
    b.setInsertionPoint(walk_);
    Value zero = arith::ConstantOp::create(b, walk_.getLoc(), b.getI32IntegerAttr(0));
    auto unchanged = [](OpBuilder &, Location, ArrayRef<BlockArgument> args) {
      return SmallVector<Value>(args.begin(), args.end());
    };
    auto walk = cast<LoopLikeOpInterface>(walk_.getOperation());
    FailureOr<LoopLikeOpInterface> replaced =
        walk.replaceWithAdditionalYields(b, ValueRange{zero, zero}, /*replaceInitOperandUsesInLoop=*/false, unchanged);
    if (failed(replaced))
      return false;
    walk_ = cast<scf::ForOp>(replaced->getOperation());
    ring_->consumerWalk = walk_;
    return true;
  }

  /// Hands the last slot consumer loop `loop` read back once its last dot
  /// completed (the wait after the loop), if it ran: the producer fills it
  /// for the loop that continues the ring, or a later tile's.
  void handBackLastSlot(IRRewriter &b, scf::ForOp loop, Value emptyLast) {
    Location loc = loop.getLoc();
    b.setInsertionPointAfter(cast<WarpgroupWaitOp>(loop->getNextNode()));
    Value last = previousSlot(b, loc, loop.getResult(loop.getNumResults() - 2));
    Value ran = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, loop.getUpperBound(), loop.getLowerBound());
    MBarrierArriveOp::create(b, loc, emptyLast, last, ran, 1);
  }

  void rewrite(ArrayRef<Candidate> candidates, const AddressSlice &slice) {
    Location loc = loop_.getLoc();
    MLIRContext *context = loop_.getContext();
    IRRewriter b(context);
    b.setInsertionPoint(loop_);
    auto i32 = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v)); };
    const bool tma = usesCopyEngine(candidates);
    const bool pointerCopies = llvm::any_of(candidates, [](const Candidate &c) { return !c.tma; });

    // The rings, and the copy engine's barriers (one per slot).
    SmallVector<Value> buffers = allocateRings(b, loc, candidates);
    Value barriers = tma ? barriersFor(b, loc, 1) : Value();

    // Prologue: the first S-1 iterations' copies.
    SmallVector<Value> state;
    for (unsigned index : slice.carried)
      state.push_back(loop_.getInitArgs()[index]);
    for (int i = 0; i < stages_ - 1; ++i) {
      auto [iv, inRange] = iterationAhead(b, loc, loop_.getLowerBound(), i);
      state = issue(b, loc, candidates, slice, buffers, barriers, iv, inRange, state, i32(i));
    }

    // The loop carries the ahead state, the two slot numbers and (with the
    // copy engine) the phase of the read slot's barrier.
    SmallVector<Value> inits = state;
    inits.push_back(i32(0));
    inits.push_back(i32(stages_ - 1));
    const size_t added = tma ? 3 : 2;
    SmallVector<Operation *> issued; // the ahead copies and their address arithmetic
    if (tma)
      inits.push_back(i32(0));
    // (Called with the new loop's empty body, which the old body's
    // operations then follow: what is built here comes first.)
    auto yields = [&](OpBuilder &, Location, ArrayRef<BlockArgument> args) -> SmallVector<Value> {
      Block *body = args.front().getOwner();
      Value readSlot = args[args.size() - added], writeSlot = args[args.size() - added + 1];
      Value phase = tma ? Value(args.back()) : Value();
      OpBuilder inner(context);
      inner.setInsertionPointToStart(body);
      if (tma)
        MBarrierWaitOp::create(inner, loc, barriers, readSlot, phase);
      // (No proxy fence between cp.async's writes and wgmma's reads: the
      // wait and the barrier order them, as in Triton's and CUTLASS's
      // cp.async mainloops; the fence cost a memory barrier per iteration.)
      if (pointerCopies)
        AsyncWaitOp::create(inner, loc, stages_ - 2);
      else if (!refillAfterRelease_) // (else the release's barrier, below)
        BarrierOp::create(inner, loc); // every thread is done with the slot refilled below
      for (auto [c, buffer] : llvm::zip(candidates, buffers)) {
        auto read = LocalLoadOp::create(inner, loc, c.type(), buffer, readSlot);
        c.result().replaceAllUsesWith(read);
      }
      Value iv = body->getArgument(0);
      auto [ahead, inRange] = iterationAhead(inner, loc, iv, stages_ - 1);
      SmallVector<Value> aheadState(args.begin(), args.end() - added);
      Operation *lastBefore = &body->back();
      SmallVector<Value> next =
          issue(inner, loc, candidates, slice, buffers, barriers, ahead, inRange, aheadState, writeSlot);
      for (Operation &op : llvm::make_range(std::next(lastBefore->getIterator()), body->end()))
        issued.push_back(&op);
      Value nextRead = nextSlot(inner, loc, readSlot);
      next.push_back(nextRead);
      next.push_back(nextSlot(inner, loc, writeSlot));
      if (tma) // the barrier's next phase when the read slot wraps
        next.push_back(nextPhase(inner, loc, nextRead, phase));
      return next;
    };
    scf::ForOp newLoop = carryMore(b, inits, yields, candidates);
    if (!newLoop)
      return;
    // An mma.sync dot's iteration issues its copies last: their address
    // arithmetic then fills the issue slots between the dot's last
    // mma.sync instead of delaying its first. Two stages would leave them
    // no time to land.
    // Copy-engine rings do so in a loop of several wgmma dots, whose last
    // dot then stays in flight across the back edge (chainLastDot).
    if ((!tma || wgmmaDotCount(newLoop) >= 2) && !inFlight_ && stages_ >= 3) {
      for (Operation *op : issued)
        op->moveBefore(newLoop.getBody()->getTerminator());
      chainLastDot(b, newLoop, issued);
    }
    // A single mma.sync dot reading the rings then runs K step by K step,
    // its first step's fragments carried from the iteration before
    // (MmaFragments.h), the copies after that step's mma.sync.
    if (!tma && !inFlight_) {
      if (scf::ForOp carried = carryMmaFragments(newLoop, issued, stages_ - 2, numWarps_, computeCapability_))
        newLoop = carried;
    }
    b.setInsertionPointAfter(newLoop);
    if (pointerCopies)
      AsyncWaitOp::create(b, loc, 0); // nothing may still write the rings after the loop
    if (tma) // (every copy started was waited for in the loop)
      MBarrierInvalOp::create(b, loc, barriers);
    if (inFlight_)
      keepInFlight(b, newLoop);
    // cp.async into an in-flight wgmma dot, as a ring of num_stages slots:
    // the iteration's dot is issued right after the copies it reads are in
    // (nothing delays the tensor cores' next group), then `wgmma.wait_group
    // 1` releases this warp's part of the previous dot and a barrier
    // everyone's (the wait orders only its own warp), and only then are
    // that dot's slot's copies issued, num_stages - 1 iterations ahead.
    if (refillAfterRelease_) {
      Operation *release = newLoop.getBody()->getTerminator()->getOperand(carriedIndex_).getDefiningOp();
      b.setInsertionPointAfter(release);
      Operation *barrier = BarrierOp::create(b, loc);
      Operation *at = barrier;
      for (Operation *op : issued) {
        op->moveAfter(at);
        at = op;
      }
    }
  }

  /// With several wgmma dots in the loop (attention: S = Q K^T, then
  /// O += P V), the last one's group stays in flight across the back edge
  /// when its accumulator is carried and first read, in the next iteration,
  /// after that iteration's first dot: the first dot's own wait (a dot not
  /// left in flight waits for every group) completes it as well, so the
  /// tensor cores run it while the rest of the iteration (the reductions
  /// after it, the next copies) and the next one's start are issued. Its
  /// operands come from rings (`fromRing`), or A from the registers wgmma
  /// reads, computed from the first dot's result, so that nothing rewrites
  /// those registers before the wait.
  struct Chain {
    tile::DotOp first, last;
    unsigned index;      ///< the last dot's accumulator's iter_arg number
    Operation *firstUse; ///< where the next iteration first reads it
    bool registerA;
  };
  std::optional<Chain> chainOf(scf::ForOp loop, llvm::function_ref<bool(Value)> fromRing) const {
    Block *body = loop.getBody();
    SmallVector<tile::DotOp> dots;
    for (auto dot : body->getOps<tile::DotOp>())
      if (isWgmmaDot(dot, computeCapability_, numWarps_))
        dots.push_back(dot);
    if (dots.size() < 2)
      return std::nullopt;
    tile::DotOp first = dots.front(), last = dots.back();
    if (last.getType() != last.getC().getType() || !last.getType().getElementType().isF32() ||
        !last->hasOneUse() || *last->getUsers().begin() != body->getTerminator())
      return std::nullopt;
    unsigned index = last->getUses().begin()->getOperandNumber();
    BlockArgument carried = loop.getRegionIterArg(index);
    Operation *firstUse = nullptr;
    for (Operation *user : carried.getUsers()) {
      Operation *ancestor = body->findAncestorOpInBlock(*user);
      if (!ancestor || !first->isBeforeInBlock(ancestor))
        return std::nullopt; // read before the first dot's wait: nothing to overlap
      if (!firstUse || ancestor->isBeforeInBlock(firstUse))
        firstUse = ancestor;
    }
    if (!firstUse)
      return std::nullopt;
    // (An A staged through shared memory would share the staging space
    // with the next iteration's first dot.)
    const bool registerA = wgmmaReadsRegisterA(last, numWarps_);
    if (!fromRing(last.getB()) || (!registerA && !fromRing(last.getA())) ||
        (registerA && !dependsOn(last.getA(), first.getResult(), body)))
      return std::nullopt;
    return Chain{first, last, index, firstUse, registerA};
  }

  /// Whether `op` (or an op it holds) may wait for every consumer thread
  /// at a program barrier: stores into shared memory, waits for copies,
  /// layout conversions, reductions and scans across warps, dots that stage
  /// an operand through shared memory, copy-engine stores.
  bool meetsABarrier(Operation *op) const {
    bool meets = false;
    op->walk([&](Operation *inner) {
      auto acrossWarps = [](Value v, int32_t axis) {
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!type || !type.getEncoding())
          return true;
        LinearLayout layout = linearLayoutOf(type);
        for (int bit = 0; bit < layout.bits(HwDim::Warp); ++bit)
          if (layout.basis(HwDim::Warp, bit)[axis] != 0)
            return true;
        return false;
      };
      if (isa<BarrierOp, AsyncWaitOp, LocalStoreOp, ConvertLayoutOp, tile::DescriptorStoreOp>(inner))
        meets = true;
      else if (auto reduce = dyn_cast<tile::ReduceOp>(inner))
        meets |= llvm::any_of(reduce.getSrcs(), [&](Value v) { return acrossWarps(v, reduce.getAxis()); });
      else if (auto scan = dyn_cast<tile::ScanOp>(inner))
        meets |= llvm::any_of(scan.getSrcs(), [&](Value v) { return acrossWarps(v, scan.getAxis()); });
      else if (auto dot = dyn_cast<tile::DotOp>(inner))
        meets |= !isWgmmaDot(dot, computeCapability_, numWarps_) || !ringSlotLoad(dot.getB()) ||
                 !(ringSlotLoad(dot.getA()) || wgmmaReadsRegisterA(dot, numWarps_));
    });
    return meets;
  }

  /// Whether a consumer warpgroup's turn (from the chain's last dot to the
  /// next iteration's first) holds an op that may wait at a program
  /// barrier: the other warpgroups, waiting for their turn, would never
  /// reach it. (Such a loop runs without turns.)
  bool turnMeetsABarrier(scf::ForOp loop, Chain chain) const {
    for (Operation &op : *loop.getBody())
      if ((op.isBeforeInBlock(chain.first) || chain.last->isBeforeInBlock(&op)) && &op != chain.last.getOperation() &&
          meetsABarrier(&op))
        return true;
    return false;
  }


  /// The consumer warpgroups of a producer's chain take turns on the
  /// tensor cores (ping-pong), in a fixed order through named barriers: a
  /// warpgroup's turn is issuing its last dot of one iteration and its
  /// first of the next (issued, not completed), so one warpgroup's dots run
  /// while the others compute their softmax, instead of all of them
  /// queueing their dots at once and then all waiting. The last warpgroup
  /// hands the first its first turn before the kernel's first such loop; a
  /// loop passes the turn on after it (after its last dot completed),
  /// except, after the kernel's last such loop, the last warpgroup, whose
  /// pass no warpgroup would wait for (PassTurnOp). Returns the wait that
  /// completes the first dot: the previous slot is handed back after it.
  Operation *takeTurns(IRRewriter &b, scf::ForOp loop, bool continues) {
    Location loc = loop.getLoc();
    const int32_t barrier = kFirstTurnBarrier;
    b.setInsertionPoint(loop);
    // (A loop continuing one without turns opens them as a first loop does.)
    if (continues && ring_->finalPass)
      ring_->finalPass.setExceptLast(false);
    else
      PassTurnOp::create(b, loc, barrier, /*only_last=*/true, /*except_last=*/false);
    WaitTurnOp::create(b, loc, barrier);
    b.setInsertionPoint(chain_->last);
    WaitTurnOp::create(b, loc, barrier);
    tile::DotOp first = chain_->first;
    b.setInsertionPointAfter(first);
    PassTurnOp::create(b, loc, barrier, false, false);
    // (The first dot is waited for right after the pass: nothing rewrites
    // a register A, attention's Q, while its group is in flight.)
    if (wgmmaReadsRegisterA(first, numWarps_))
      first->setAttr(kInFlightRegisterA, b.getUnitAttr());
    auto issued = WarpgroupWaitOp::create(b, loc, first.getType(), first.getResult(), 0);
    first.getResult().replaceAllUsesExcept(issued, issued);
    // (After the wait that completes the loop's last dot, which follows it.)
    b.setInsertionPointAfter(loop->getNextNode());
    ring_->finalPass = PassTurnOp::create(b, loc, barrier, false, /*except_last=*/true);
    return issued;
  }

  /// Whether `loop` is the only loop of `func` holding dots.
  static bool onlyLoopOfDots(tile::FuncOp func, scf::ForOp loop) {
    bool only = true;
    func.walk([&](scf::ForOp other) {
      only &= other == loop || other->isAncestor(loop) || other.getBody()->getOps<tile::DotOp>().empty();
    });
    return only;
  }

  /// Leaves the chain's last dot in flight (chainOf) and waits for it after
  /// the loop.
  void keepLastInFlight(IRRewriter &b, scf::ForOp loop, Chain chain) {
    Location loc = chain.last.getLoc();
    Block *body = loop.getBody();
    BlockArgument carried = loop.getRegionIterArg(chain.index);
    b.setInsertionPointAfter(chain.last);
    auto partial = WarpgroupWaitOp::create(b, loc, chain.last.getType(), chain.last.getResult(), 1);
    body->getTerminator()->setOperand(chain.index, partial);
    if (chain.registerA)
      chain.last->setAttr(kInFlightRegisterA, b.getUnitAttr());
    b.setInsertionPoint(chain.firstUse);
    auto ready = WarpgroupWaitOp::create(b, loc, carried.getType(), carried, 0);
    carried.replaceAllUsesExcept(ready, ready);
    waitAfterLoop(b, loc, loop, chain.index);
  }

  /// The last dot of a loop of several, over rings refilled by the
  /// iteration's copies (`issued`, last in the iteration), stays in flight
  /// (chainOf): its slot is read until the next iteration's first wait, so
  /// the refill waits behind a barrier every warp reaches past it.
  void chainLastDot(IRRewriter &b, scf::ForOp loop, ArrayRef<Operation *> issued) {
    if (issued.empty())
      return;
    std::optional<Chain> chain = chainOf(loop, [](Value v) { return static_cast<bool>(ringSlotLoad(v)); });
    if (!chain)
      return;
    keepLastInFlight(b, loop, *chain);
    b.setInsertionPoint(issued.front());
    BarrierOp::create(b, chain->last.getLoc());
  }

  int wgmmaDotCount(scf::ForOp loop) const {
    return static_cast<int>(llvm::count_if(loop.getBody()->getOps<tile::DotOp>(), [&](tile::DotOp dot) {
      return isWgmmaDot(dot, computeCapability_, numWarps_);
    }));
  }

  /// After `loop`, waits for the group still in flight in its result
  /// `index`, which is read from then on.
  static void waitAfterLoop(IRRewriter &b, Location loc, scf::ForOp loop, unsigned index) {
    b.setInsertionPointAfter(loop);
    Value result = loop.getResult(index);
    auto final = WarpgroupWaitOp::create(b, loc, result.getType(), result, 0);
    result.replaceAllUsesExcept(final, final);
  }

  /// Whether `value` is computed (within `body`) from `source`, also
  /// through what a branch yields (a mask applied to some blocks only).
  static bool dependsOn(Value value, Value source, Block *body) {
    SmallVector<Value> work{value};
    llvm::DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (v == source)
        return true;
      Operation *def = v.getDefiningOp();
      if (!def || !body->findAncestorOpInBlock(*def) || !seen.insert(v).second)
        continue;
      llvm::append_range(work, def->getOperands());
      def->walk([&](Operation *nested) {
        if (nested != def)
          llvm::append_range(work, nested->getOperands());
      });
    }
    return false;
  }

  /// Leaves the dot's group in flight until the next iteration's dot has
  /// been issued, and waits for the last one after the loop. A branch that
  /// reads the dot waits for it at its start. (The next copies stay
  /// before the dot: issued between the dot and its wait, their address
  /// arithmetic delays the next group.)
  void keepInFlight(IRRewriter &b, scf::ForOp newLoop) {
    Location loc = inFlight_.getLoc();
    b.setInsertionPointAfter(inFlight_);
    auto partial = WarpgroupWaitOp::create(b, loc, inFlight_.getType(), inFlight_.getResult(), 1);
    newLoop.getBody()->getTerminator()->setOperand(carriedIndex_, partial);
    llvm::DenseMap<Region *, Value> completeIn;
    for (OpOperand &use : llvm::make_early_inc_range(inFlight_->getUses())) {
      if (use.getOwner() == partial)
        continue;
      Operation *branch = newLoop.getBody()->findAncestorOpInBlock(*use.getOwner());
      Region *region = use.getOwner()->getParentRegion();
      while (region->getParentOp() != branch)
        region = region->getParentOp()->getParentRegion();
      Value &complete = completeIn[region];
      if (!complete) {
        b.setInsertionPointToStart(&region->front());
        complete = WarpgroupWaitOp::create(b, loc, partial.getType(), partial, 0);
      }
      use.set(complete);
    }
    waitAfterLoop(b, loc, newLoop, carriedIndex_);
  }

  scf::ForOp loop_;
  int stages_;
  int computeCapability_;
  int numWarps_;
  bool warpSpecialize_;
  bool pingPong_; ///< a producer's consumer warpgroups take turns (takeTurns)
  bool overlapChain_; ///< a producer's chain without turns is rotated (OverlapChain.h)
  /// An in-flight dot fed by cp.async rings (or rings of raised pointer
  /// loads): each iteration refills the slot of the dot before it once the
  /// dot's release proves it read...
  bool refillAfterRelease_ = false;
  /// ...or, where a spare slot fits, the slot of the dot two iterations
  /// back, before its own dot (as copy-engine rings).
  bool refillBeforeDot_ = false;
  int64_t ringBytes_ = 0;
  /// The rings' share of shared memory: what the blocks held across the
  /// loop in shared memory (HeldOperands.h) leave of the budget.
  int64_t budget() const { return kRingBudgetBytes - heldBytes_; }
  int slots_ = 0;            ///< slots per ring
  tile::DotOp inFlight_;     ///< the wgmma dot left in flight, if any
  std::optional<Chain> chain_; ///< (a producer's loop) the chain whose last dot stays in flight
  unsigned carriedIndex_ = 0; ///< its accumulator's iter_arg number
  const AxisInfoAnalysis &axis_;
  const llvm::DenseSet<Operation *> &rereadable_; ///< scalar loads a producer may issue again (rereadableLoads)
  std::optional<ProducerRing> &ring_; ///< the kernel's producer ring of chained dots, once made
  scf::ForOp walk_;                   ///< the walk over tiles around the loop (ProgramWalk.h), if any
  int64_t heldBytes_; ///< the held blocks the loop's dots read from shared memory
};

/// Whether `pointer` points into a parameter the kernel only reads (a
/// `ConstPtr`, marked `tile.readonly`): plain offsets from it.
bool pointsIntoReadOnlyParameter(Value pointer, tile::FuncOp func) {
  while (auto add = pointer.getDefiningOp<tile::AddPtrOp>())
    pointer = add.getPtr();
  auto arg = dyn_cast<BlockArgument>(pointer);
  return arg && arg.getOwner() == &func.getBody().front() &&
         func.getArgAttr(arg.getArgNumber(), "tile.readonly");
}

/// The scalar loads that a producer may issue again and read what the
/// consumers' own read: at the top of `func`, plain loads before anything
/// of the kernel writes memory (a packed batch's sequence starts); in a
/// walk over tiles (ProgramWalk.h), which stores each tile's results before
/// the next tile's loads, plain loads through a parameter the kernel only
/// reads, whose memory a kernel takes as unchanged while it runs (a walk's
/// tile read from a table). (Taken before the pipeliner adds its own
/// operations.)
llvm::DenseSet<Operation *> rereadableLoads(tile::FuncOp func) {
  llvm::DenseSet<Operation *> loads;
  auto plainScalar = [](tile::LoadOp load) {
    return load && !load.getIsVolatile() && !isa<ShapedType>(load.getType());
  };
  for (Operation &op : func.getBody().front()) {
    auto load = dyn_cast<tile::LoadOp>(op);
    if (plainScalar(load)) {
      loads.insert(load);
      continue;
    }
    std::optional<SmallVector<MemoryEffects::EffectInstance>> effects = getEffectsRecursively(&op);
    if (!effects || llvm::any_of(*effects, [](const MemoryEffects::EffectInstance &e) {
          return isa<MemoryEffects::Write>(e.getEffect());
        }))
      break;
  }
  for (auto walk : func.getBody().front().getOps<scf::ForOp>())
    if (walksTiles(walk))
      for (auto load : walk.getBody()->getOps<tile::LoadOp>())
        if (plainScalar(load) && pointsIntoReadOnlyParameter(load.getPtr(), func))
          loads.insert(load);
  return loads;
}

struct PipelineLoops : impl::PipelineLoopsBase<PipelineLoops> {
  using PipelineLoopsBase::PipelineLoopsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = module->getAttrOfType<StringAttr>(kTargetAttr);
    int cc = target ? compute_capability_of(target.getValue()) : 0;
    if (numStages < 2 || cc < 80)
      return;
    AxisInfoAnalysis axis(module);
    for (auto func : module.getOps<tile::FuncOp>()) {
      const int numWarps = getNumWarps(module);
      SmallVector<scf::ForOp> loops;
      llvm::DenseMap<Operation *, int64_t> heldBytes;
      // (A walk over tiles is not pipelined itself: its loops are, and the
      // producer of theirs replaces it with one carrying more values.)
      func.walk([&](scf::ForOp loop) {
        if (walksTiles(loop))
          return;
        loops.push_back(loop);
        heldBytes[loop] = heldSharedBytes(loop, cc, numWarps);
      });
      std::optional<ProducerRing> ring;
      const llvm::DenseSet<Operation *> rereadable = rereadableLoads(func);
      storeHeldOperands(func, cc, numWarps);
      for (scf::ForOp loop : loops) {
        const bool producer = cc >= 90 && (warpSpecialize || loop->hasAttr(kWarpSpecializeAttr));
        loop->removeAttr(kWarpSpecializeAttr);
        LoopPipeliner(loop, numStages, cc, numWarps, producer, pingPong, overlapChain, axis, rereadable, ring,
                      heldBytes[loop])
            .run();
      }
    }
  }
};

} // namespace
} // namespace kiln
