//===- AssignLayouts.cpp - choose a layout for every block ----------------===//
//
// 1. Values that must share a layout form classes (union-find): operands and
//    results of elementwise operations, the pointer/mask/value of memory
//    operations, and the values a loop or branch carries. (A tensor-core
//    result stored after the loops is the exception: the store converts it.)
// 2. Memory accesses anchor their classes to a coalesced layout: 16-byte
//    vectors along the pointer's most contiguous dimension (axis info),
//    threads spread along it first. Larger accesses win. Tensor-core dots
//    anchor their accumulators to the MMA layout above all else (Mma.h;
//    AMD matrix cores: Mfma.h).
// 3. Layouts flow from assigned classes to neighbours across the operations
//    that change shapes (broadcast, expand_dims, reduce, trans, reshape,
//    join, split); classes still without one get the default blocked layout.
// 4. Types are rewritten; where a shape-changing operation's operand and
//    result layouts do not fit together, a kgpu.convert_layout goes in.
//
//===----------------------------------------------------------------------===//

#include "compiler/transforms/Passes.h"
#include "compiler/transforms/ProgramWalk.h"

#include "compiler/analysis/AxisInfo.h"
#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/gpu/Mfma.h"
#include "compiler/dialect/gpu/Mma.h"
#include "compiler/dialect/gpu/Staging.h"
#include "compiler/transforms/HeldOperands.h"
#include "kiln/target.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <deque>
#include <limits>

namespace kiln {

#define GEN_PASS_DEF_ASSIGNLAYOUTS
#include "compiler/transforms/Passes.h.inc"

using namespace mlir;
using namespace kiln::gpu;

namespace {

RankedTensorType tensorOf(Value v) { return dyn_cast<RankedTensorType>(v.getType()); }

/// Operations whose tensor operands and results all share one layout.
bool isElementwise(Operation *op) {
  return isElementwiseArith(op) ||
         isa<tile::AddPtrOp, tile::BitcastOp, tile::FpToFpOp, tile::IntToPtrOp, tile::PtrToIntOp,
             tile::HintOp, tile::LoadOp, tile::StoreOp, tile::AtomicRMWOp, tile::AtomicCASOp,
             tile::ScanOp>(op);
}

/// The blocked layout for `shape` with `sizePerThread` and `order`, its
/// threads spread along `order` (lanes first, then warps).
BlockedEncodingAttr blockedFor(MLIRContext *context, ArrayRef<int64_t> shape,
                               SmallVector<unsigned> spt, ArrayRef<unsigned> order, int numWarps,
                               int threadsPerWarp) {
  size_t rank = shape.size();
  SmallVector<unsigned> tpw(rank, 1), wpc(rank, 1);
  int64_t lanes = threadsPerWarp, warps = numWarps;
  for (unsigned d : order)
    while (lanes > 1 && int64_t(tpw[d]) * spt[d] < shape[d]) {
      tpw[d] *= 2;
      lanes /= 2;
    }
  for (unsigned d : order)
    while (warps > 1 && int64_t(tpw[d]) * spt[d] * wpc[d] < shape[d]) {
      wpc[d] *= 2;
      warps /= 2;
    }
  tpw[order.back()] *= lanes;
  wpc[order.back()] *= warps;
  return BlockedEncodingAttr::get(context, spt, tpw, wpc, order);
}

int64_t pointeeBytes(Value ptr) {
  auto p = cast<tile::PointerType>(getElementTypeOrSelf(ptr.getType()));
  Type pointee = p.getPointeeType();
  if (isa<tile::PointerType>(pointee))
    return 8;
  return std::max(1u, pointee.getIntOrFloatBitWidth() / 8);
}

/// A shape-changing relation between two classes' values.
struct Relation {
  Operation *op;
  Value src, dst;
};

/// Whether `v` is an index block: made from scalars by splats (of any
/// element type), splat constants, ranges, shape changes and integer
/// arithmetic, in at most `budget` operations.
bool indexBlock(Value v, int &budget) {
  auto type = tensorOf(v);
  Operation *def = v.getDefiningOp();
  if (!type || !def || --budget < 0 || def->getNumResults() != 1 || def->getNumRegions() != 0)
    return false;
  if (isa<tile::SplatOp>(def))
    return true;
  if (auto constant = dyn_cast<arith::ConstantOp>(def))
    return isa<SplatElementsAttr>(constant.getValue());
  if (!type.getElementType().isIntOrIndex())
    return false;
  if (isa<tile::RangeOp>(def))
    return true;
  if (!(isElementwiseArith(def) || isa<tile::ExpandDimsOp, tile::BroadcastOp>(def)))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) { return !tensorOf(operand) || indexBlock(operand, budget); });
}

/// A copy of index block `v`, every block it is made from copied too.
Value copyIndexBlock(OpBuilder &b, Value v) {
  Operation *def = v.getDefiningOp();
  IRMapping map;
  for (Value operand : def->getOperands())
    if (tensorOf(operand))
      map.map(operand, copyIndexBlock(b, operand));
  return b.clone(*def, map)->getResult(0);
}

/// Index blocks are often one SSA value used by unrelated computations
/// (CSE merged them: A's and B's address arithmetic of a square tile share
/// `dense<64>`; a matmul's row indices feed A's loads and C's store).
/// Sharing one would put those computations in one class and give all of
/// them one layout, the wrong one for all but one (A then loaded one
/// element at a time along B's vectors, or each of its elements by four
/// threads in the store's layout). Each use gets its own copy instead:
/// cheap in registers, and merged again where the layouts agree.
void unshareIndexBlocks(tile::FuncOp func) {
  constexpr int kMaxCopied = 16; // operations per copied block
  SmallVector<Operation *> shared;
  func.walk([&](Operation *op) {
    if (op->getNumResults() != 1 || op->getResult(0).use_empty() || op->getResult(0).hasOneUse())
      return;
    int budget = kMaxCopied;
    if (indexBlock(op->getResult(0), budget))
      shared.push_back(op);
  });
  for (Operation *op : shared) {
    OpBuilder b(op);
    b.setInsertionPointAfter(op);
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : op->getResult(0).getUses())
      uses.push_back(&use);
    for (OpOperand *use : llvm::drop_begin(uses))
      use->set(copyIndexBlock(b, op->getResult(0)));
  }
}

class Assigner {
public:
  Assigner(tile::FuncOp func, int numWarps, int threadsPerWarp, std::string target)
      : func_(func), context_(func.getContext()), numWarps_(numWarps), threadsPerWarp_(threadsPerWarp),
        computeCapability_(compute_capability_of(target)), target_(std::move(target)), axis_(func) {}

  void run() {
    collect();
    chooseAnchors();
    assign();
    materialize();
  }

private:
  Value leader(Value v) { return classes_.getLeaderValue(v); }
  void join(Value a, Value b) {
    if (tensorOf(a) && tensorOf(b) && tensorOf(a).getShape() == tensorOf(b).getShape())
      classes_.unionSets(a, b);
  }
  void add(Value v) {
    if (tensorOf(v)) {
      classes_.insert(v);
      if (!order_.count(v))
        order_[v] = order_.size();
    }
  }

  /// Step 1: classes and relations.
  void collect() {
    func_.walk([&](Operation *op) {
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            add(arg);
      for (Value v : op->getResults())
        add(v);
    });
    func_.walk([&](Operation *op) {
      SmallVector<Value> tensors;
      for (Value v : op->getOperands())
        if (tensorOf(v))
          tensors.push_back(v);
      for (Value v : op->getResults())
        if (tensorOf(v))
          tensors.push_back(v);
      if (auto store = dyn_cast<tile::StoreOp>(op)) {
        // The value joins the pointer's class later, unless it is staged
        // (joinStoredValues).
        if (store.getMask())
          join(store.getPtr(), store.getMask());
        stores_.push_back(store);
        return;
      }
      if (isElementwise(op)) {
        for (Value v : tensors)
          join(tensors.front(), v);
        return;
      }
      llvm::TypeSwitch<Operation *>(op)
          .Case([&](tile::ReduceOp r) {
            for (Value src : r.getSrcs())
              join(r.getSrcs().front(), src);
            for (Value result : r.getResults()) {
              join(r.getResults().front(), result);
              if (tensorOf(result))
                relations_.push_back({op, r.getSrcs().front(), result});
            }
          })
          .Case([&](tile::DotOp d) { join(d.getC(), d.getResult()); })
          .Case<tile::BroadcastOp, tile::ExpandDimsOp, tile::TransOp, tile::ReshapeOp,
                tile::SplitOp>([&](Operation *) {
            // (split's two results share a class: one relation covers both)
            relations_.push_back({op, op->getOperand(0), op->getResult(0)});
            for (Value result : op->getResults())
              join(op->getResult(0), result);
          })
          .Case([&](tile::JoinOp j) {
            join(j.getLhs(), j.getRhs());
            relations_.push_back({op, j.getLhs(), j.getResult()});
          })
          .Case([&](scf::ForOp loop) {
            auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
            for (auto [init, arg, next, result] : llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs(),
                                                            yield.getOperands(), loop.getResults())) {
              join(init, arg);
              join(arg, next);
              join(arg, result);
            }
          })
          .Case([&](scf::IfOp branch) {
            if (branch.getNumResults() == 0)
              return;
            for (auto [result, a, b] : llvm::zip(branch.getResults(), branch.thenYield().getOperands(),
                                                 branch.elseYield().getOperands())) {
              join(result, a);
              join(result, b);
            }
          })
          .Case([&](scf::WhileOp loop) {
            auto condition = loop.getConditionOp();
            auto yield = loop.getYieldOp();
            for (auto [init, arg, next] :
                 llvm::zip(loop.getInits(), loop.getBeforeArguments(), yield.getOperands())) {
              join(init, arg);
              join(arg, next);
            }
            for (auto [forwarded, arg, result] : llvm::zip(condition.getArgs(), loop.getAfterArguments(),
                                                           loop.getResults())) {
              join(forwarded, arg);
              join(arg, result);
            }
          });
    });
    joinStoredValues();
  }

  /// A tensor-core result stored after the loops (a matmul's epilogue)
  /// keeps its accumulator layout up to the store, which then converts it,
  /// through shared memory, to the store's coalesced layout: 16-byte
  /// vectors where the accumulator's rows give each thread 2 elements side
  /// by side, and the store's addresses computed in the layout they are
  /// stored in. The staging space after the loops overlaps the pipelining
  /// rings (ConvertKGpuToLLVM); in a walk over tiles (ProgramWalk.h) it
  /// comes before them, which stay in use. It is not taken where it could
  /// not (a store inside another loop, a cluster's program, whose barriers
  /// live to the end) or where it would be more than half of a program's
  /// shared memory. Any other stored value shares its pointer's class.
  void joinStoredValues() {
    llvm::DenseSet<Value> accumulators;
    func_.walk([&](tile::DotOp dot) {
      if (usesMma(dot, computeCapability_))
        accumulators.insert(leader(dot.getC()));
    });
    const bool clustered = tile::clusterSizeOf(func_) > 1;
    const int64_t stagingLimit = max_shared_memory_per_program(computeCapability_) / 2;
    for (tile::StoreOp store : stores_) {
      Value value = store.getValue();
      auto type = tensorOf(value);
      auto loop = store->getParentOfType<LoopLikeOpInterface>();
      auto walk = dyn_cast_or_null<scf::ForOp>(loop ? loop.getOperation() : nullptr);
      // (In a walk the staging space comes before rings that may take
      // their whole budget, and the barriers after it a slot of 1 KiB.)
      const bool inWalk = walk && store->getParentOp() == walk && walksTiles(walk);
      const bool besideRings = type && gpu::stagingBytes(type.getShape(), pointeeBytes(store.getPtr())) +
                                               gpu::kRingBudgetBytes + 1024 <=
                                           max_shared_memory_per_program(computeCapability_);
      bool staged = type && !clustered && accumulators.contains(leader(value)) &&
                    (!loop || (inWalk && besideRings)) && storeVectorBytes(store) >= 16 &&
                    type.getNumElements() * pointeeBytes(store.getPtr()) <= stagingLimit;
      if (staged)
        staged_.push_back(store);
      else
        join(store.getPtr(), value);
    }
  }

  /// The bytes one thread's vector of `store` moves in its coalesced layout.
  int64_t storeVectorBytes(tile::StoreOp store) {
    Value ptr = store.getPtr();
    if (!tensorOf(ptr))
      return 0;
    int64_t bytes = pointeeBytes(ptr);
    return axis_.vectorWidth(ptr, dimsByContiguity(ptr).front(), bytes, store.getMask()) * bytes;
  }

  /// A pointer block's dimensions, most contiguous first (ties: the last).
  SmallVector<unsigned> dimsByContiguity(Value ptr) {
    AxisInfo info = axis_.get(ptr);
    SmallVector<unsigned> order;
    for (unsigned d = tensorOf(ptr).getRank(); d-- > 0;)
      order.push_back(d);
    std::stable_sort(order.begin(), order.end(),
                     [&](unsigned a, unsigned b) { return info.contiguity[a] > info.contiguity[b]; });
    return order;
  }

  /// Step 2: the coalesced layout each memory access asks for, and the
  /// accumulator layout of each tensor-core dot.
  void chooseAnchors() {
    // wgmma A operands read from registers: (class leader, register layout).
    SmallVector<std::pair<Value, Attribute>> registerOperands;
    func_.walk([&](tile::DotOp dot) {
      auto shape = tensorOf(dot.getC()).getShape();
      if (std::optional<MfmaShape> mfma = mfmaShape(dot, target_)) {
        anchors_[leader(dot.getC())] = {
            LinearEncodingAttr::get(context_, mfmaAccumulatorLayout(shape[0], shape[1], numWarps_, *mfma)),
            std::numeric_limits<int64_t>::max()};
        return;
      }
      // (An fp8 dot is a candidate for wgmma alone: usesMma holds for it
      // once it is marked below.)
      const bool fp8 = isFp8Dot(dot);
      if (fp8 ? !wgmmaShapeFits(dot, computeCapability_, numWarps_) : !usesMma(dot, computeCapability_))
        return;
      // A loaded beside the dot streams through shared memory (a ring in a
      // loop); any other 16-bit A (computed, as attention's P, or loaded
      // once before the loop, as its Q) is read from registers, unless the
      // loop holding it needs them (HeldOperands.h: a buffer then).
      bool aBeside = loadedBeside(dot, dot.getA());
      bool aStreamed = aBeside && loadedAlong(dot.getA(), 1);
      bool aHeldInShared = !aBeside && holdsAInShared(dot, computeCapability_, numWarps_);
      bool aInRegisters = !aBeside && !aHeldInShared && wgmmaTakesRegisterA(dot);
      bool wgmma = wgmmaShapeFits(dot, computeCapability_, numWarps_) &&
                   (aStreamed || aInRegisters || aHeldInShared) &&
                   (loadedAlong(dot.getB(), 0) ||
                    (wgmmaTakesNMajorB(dot) && shape[1] % 64 == 0 && loadedAlong(dot.getB(), 1)));
      if (fp8 && !wgmma)
        return; // (FMAs)
      if (wgmma)
        dot->setAttr(kWgmmaAttr, UnitAttr::get(context_));
      Attribute layout = LinearEncodingAttr::get(
          context_, wgmma ? wgmmaAccumulatorLayout(shape[0], shape[1], numWarps_)
                          : mmaAccumulatorLayout(shape[0], shape[1], numWarps_));
      anchors_[leader(dot.getC())] = {layout, std::numeric_limits<int64_t>::max()};
      if (wgmma && aInRegisters) {
        // Where A is made, not at the dot: P then stays in the layout the
        // dot before it left (the same one), and Q converts once.
        int64_t k = tensorOf(dot.getA()).getShape()[1];
        registerOperands.push_back(
            {leader(dot.getA()), LinearEncodingAttr::get(context_, wgmmaRegisterALayout(shape[0], k, numWarps_))});
      }
    });
    for (auto [key, layout] : registerOperands)
      anchors_.try_emplace(key, layout, std::numeric_limits<int64_t>::max());
    func_.walk([&](Operation *op) {
      Value ptr, mask;
      if (auto load = dyn_cast<tile::LoadOp>(op))
        ptr = load.getPtr(), mask = load.getMask();
      else if (auto store = dyn_cast<tile::StoreOp>(op))
        ptr = store.getPtr(), mask = store.getMask();
      else if (auto rmw = dyn_cast<tile::AtomicRMWOp>(op))
        ptr = rmw.getPtr(), mask = rmw.getMask();
      else if (auto cas = dyn_cast<tile::AtomicCASOp>(op))
        ptr = cas.getPtr();
      if (!ptr || !tensorOf(ptr))
        return;
      auto shape = tensorOf(ptr).getShape();
      SmallVector<unsigned> order = dimsByContiguity(ptr);
      int64_t bytes = pointeeBytes(ptr);
      int64_t perThread = axis_.vectorWidth(ptr, order[0], bytes, mask);
      int64_t elements = tensorOf(ptr).getNumElements();
      int64_t threads = int64_t(numWarps_) * threadsPerWarp_;
      perThread = std::max<int64_t>(1, std::min(perThread, std::max<int64_t>(1, elements / threads)));
      perThread = std::min<int64_t>(perThread, shape[order[0]]);
      SmallVector<unsigned> spt(shape.size(), 1);
      spt[order[0]] = perThread;
      Attribute layout = blockedFor(context_, shape, spt, order, numWarps_, threadsPerWarp_);
      int64_t weight = elements * bytes * perThread;
      weight = std::min(weight, std::numeric_limits<int64_t>::max() - 1);
      Value key = leader(ptr);
      auto [it, inserted] = anchors_.try_emplace(key, layout, weight);
      if (!inserted && weight > it->second.second)
        it->second = {layout, weight};
    });
  }

  /// Whether `operand` is loaded in the block of `dot` (so a loop around
  /// both can pipeline the load).
  static bool loadedBeside(tile::DotOp dot, Value operand) {
    Operation *def = operand.getDefiningOp();
    return def && isa<tile::LoadOp, tile::DescriptorLoadOp, tile::TransOp>(def) && def->getBlock() == dot->getBlock();
  }

  /// Whether `operand` is loaded with `dim` its most contiguous dimension,
  /// 8 elements or more: then its shared-memory copy is `dim`-major, which
  /// decides whether wgmma can read it. (Descriptor loads still here are
  /// copy-engine loads: LowerDescriptors rewrote the others.)
  bool loadedAlong(Value operand, int dim) {
    // Copy-engine loads fill rows along the descriptor's last dimension.
    if (operand.getDefiningOp<tile::DescriptorLoadOp>())
      return dim == 1 && tensorOf(operand).getShape()[1] >= 8;
    if (auto trans = operand.getDefiningOp<tile::TransOp>())
      if (trans.getSrc().getDefiningOp<tile::DescriptorLoadOp>())
        return dim == 0 && tensorOf(operand).getShape()[0] >= 8;
    auto load = operand.getDefiningOp<tile::LoadOp>();
    if (!load || !tensorOf(load.getPtr()))
      return false;
    AxisInfo info = axis_.get(load.getPtr());
    return info.contiguity[dim] >= 8 && info.contiguity[dim] >= info.contiguity[1 - dim];
  }

  /// The layout `to` needs when `from` has `known`, across relation `r`
  /// (forward: from src to dst), or null when it cannot be derived.
  Attribute derive(const Relation &r, bool forward, Attribute known) {
    Value target = forward ? r.dst : r.src;
    auto shape = tensorOf(target).getShape();
    LinearLayout ll = cast<LayoutEncodingAttr>(known).toLinearLayout(
        tensorOf(forward ? r.src : r.dst).getShape());
    return llvm::TypeSwitch<Operation *, Attribute>(r.op)
        .Case([&](tile::BroadcastOp) -> Attribute {
          if (isa<BlockedEncodingAttr>(known))
            return known; // a blocked layout applies to any shape
          if (forward)
            return {};
          auto srcShape = tensorOf(r.src).getShape();
          return LinearEncodingAttr::get(
              context_, ll.mapped(
                            [&](const Coord &c) {
                              Coord out = c;
                              for (size_t d = 0; d < out.size(); ++d)
                                if (srcShape[d] == 1)
                                  out[d] = 0;
                              return out;
                            },
                            std::vector<int64_t>(srcShape.begin(), srcShape.end())));
        })
        .Case([&](tile::ExpandDimsOp e) -> Attribute {
          unsigned axis = e.getAxis();
          if (!forward)
            return SliceEncodingAttr::get(context_, axis, known);
          auto slice = dyn_cast<SliceEncodingAttr>(known);
          if (!slice || slice.getDim() != axis)
            return {};
          // The parent's layout of the size-1 result: a linear parent's
          // bases along `axis` reach past it, so they become broadcasts
          // (a reduced accumulator expanded back, say); other encodings
          // apply to any shape.
          auto parent = dyn_cast<LinearEncodingAttr>(slice.getParent());
          if (!parent)
            return slice.getParent();
          return LinearEncodingAttr::get(context_, parent.toLinearLayout(shape).mapped(
                                                       [&](const Coord &c) {
                                                         Coord out = c;
                                                         out[axis] = 0;
                                                         return out;
                                                       },
                                                       std::vector<int64_t>(shape.begin(), shape.end())));
        })
        .Case([&](tile::ReduceOp reduce) -> Attribute {
          unsigned axis = reduce.getAxis();
          if (forward)
            return SliceEncodingAttr::get(context_, axis, known);
          auto slice = dyn_cast<SliceEncodingAttr>(known);
          if (!slice || slice.getDim() != axis)
            return {};
          // A linear parent made for a size-1 axis (the layout of an
          // expanded, broadcast row) does not hold the operand's whole
          // axis: the operand keeps a layout of its own, converted after
          // the reduction.
          if (auto parent = dyn_cast<LinearEncodingAttr>(slice.getParent()))
            if (!parent.toLinearLayout(shape).coversShape())
              return {};
          return slice.getParent();
        })
        .Case([&](tile::TransOp t) -> Attribute {
          SmallVector<int32_t> order(t.getOrder());
          // dst dimension i is src dimension order[i].
          auto map = [&](const Coord &c) {
            Coord out(c.size());
            for (size_t i = 0; i < c.size(); ++i) {
              if (forward)
                out[i] = c[order[i]];
              else
                out[order[i]] = c[i];
            }
            return out;
          };
          return LinearEncodingAttr::get(context_,
                                         ll.mapped(map, std::vector<int64_t>(shape.begin(), shape.end())));
        })
        .Case<tile::ReshapeOp, tile::JoinOp, tile::SplitOp>([&](Operation *) -> Attribute {
          auto fromShape = tensorOf(forward ? r.src : r.dst).getShape();
          std::vector<int64_t> from(fromShape.begin(), fromShape.end()), to(shape.begin(), shape.end());
          if (isa<tile::JoinOp, tile::SplitOp>(r.op)) {
            bool adds = isa<tile::JoinOp>(r.op) == forward; // the last dimension of 2 appears
            LinearLayout mapped = ll.mapped(
                [&](const Coord &c) {
                  Coord out = c;
                  if (adds)
                    out.push_back(0);
                  else
                    out.pop_back();
                  return out;
                },
                to);
            if (adds) { // both halves in one thread: a register bit for the new dimension
              auto bases = std::array<std::vector<Coord>, kHwDims>{
                  mapped.bases(HwDim::Register), mapped.bases(HwDim::Lane), mapped.bases(HwDim::Warp)};
              Coord last(to.size(), 0);
              last.back() = 1;
              bases[0].insert(bases[0].begin(), last);
              mapped = LinearLayout(bases, to);
            }
            return LinearEncodingAttr::get(context_, mapped);
          }
          return LinearEncodingAttr::get(context_, ll.mapped(
                                                       [&](const Coord &c) {
                                                         return delinearize(linearIndex(c, from), to);
                                                       },
                                                       to));
        })
        .Default([](Operation *) { return Attribute(); });
  }

  /// Step 3: anchored classes first (largest first), then the rest in
  /// program order, each spreading to its neighbours.
  void assign() {
    // (In program order before sorting, so that equal weights resolve the
    // same way in every run: anchors_ iterates in pointer order.)
    std::vector<std::pair<int64_t, Value>> anchored;
    llvm::DenseSet<Value> listed;
    for (auto &[value, index] : order_) {
      Value key = leader(value);
      auto it = anchors_.find(key);
      if (it != anchors_.end() && listed.insert(key).second)
        anchored.push_back({it->second.second, key});
    }
    std::stable_sort(anchored.begin(), anchored.end(),
                     [](auto &a, auto &b) { return a.first > b.first; });
    for (auto &[weight, key] : anchored)
      if (!layouts_.count(key)) {
        layouts_[key] = anchors_[key].first;
        spread(key);
      }
    std::vector<Value> rest;
    for (auto &[value, index] : order_)
      rest.push_back(value);
    for (Value v : rest) {
      Value key = leader(v);
      if (layouts_.count(key))
        continue;
      layouts_[key] = defaultBlockedEncoding(context_, tensorOf(v).getShape(), numWarps_, threadsPerWarp_);
      spread(key);
    }
  }

  void spread(Value start) {
    std::deque<Value> queue{start};
    while (!queue.empty()) {
      Value key = queue.front();
      queue.pop_front();
      for (const Relation &r : relations_)
        for (bool forward : {true, false}) {
          Value from = forward ? r.src : r.dst, to = forward ? r.dst : r.src;
          if (leader(from) != key || layouts_.count(leader(to)))
            continue;
          if (Attribute layout = derive(r, forward, layouts_[key])) {
            layouts_[leader(to)] = layout;
            queue.push_back(leader(to));
          }
        }
    }
  }

  Type typed(Value v, Attribute layout) { return withEncoding(v.getType(), layout); }

  /// Step 4: rewrite types; insert conversions where relations disagree.
  void materialize() {
    for (auto &[value, index] : order_) {
      value.setType(typed(value, layouts_[leader(value)]));
      if (auto constant = value.getDefiningOp<arith::ConstantOp>())
        if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
          constant.setValueAttr(dense.reshape(cast<ShapedType>(value.getType())));
    }
    OpBuilder builder(context_);
    for (const Relation &r : relations_) {
      Attribute srcLayout = tensorOf(r.src).getEncoding();
      Attribute dstLayout = tensorOf(r.dst).getEncoding();
      if (isa<tile::ReduceOp>(r.op)) {
        // The result must be the slice of the operand's layout.
        Attribute wanted = derive(r, true, srcLayout);
        if (compatible(wanted, dstLayout, r.dst))
          continue;
        auto reduce = cast<tile::ReduceOp>(r.op);
        builder.setInsertionPointAfter(reduce);
        for (Value result : reduce.getResults()) {
          Type finalType = result.getType();
          result.setType(typed(result, wanted));
          auto convert = ConvertLayoutOp::create(builder, reduce.getLoc(), finalType, result);
          result.replaceAllUsesExcept(convert, convert);
        }
        continue;
      }
      // The operand must be what the result's layout asks of it.
      Attribute wanted = derive(r, false, dstLayout);
      if (!wanted || compatible(wanted, srcLayout, r.src))
        continue;
      builder.setInsertionPoint(r.op);
      for (OpOperand &operand : r.op->getOpOperands()) {
        // (An operand a conversion after a reduction already retyped may fit.)
        if (!tensorOf(operand.get()) || operand.get().getType() == typed(operand.get(), wanted))
          continue;
        auto convert = ConvertLayoutOp::create(builder, r.op->getLoc(), typed(operand.get(), wanted),
                                               operand.get());
        operand.set(convert);
      }
    }
    convertStagedValues();
  }

  /// A staged store's value converted to its pointer's layout.
  void convertStagedValues() {
    OpBuilder builder(context_);
    for (tile::StoreOp store : staged_) {
      Value value = store.getValue();
      Attribute wanted = tensorOf(store.getPtr()).getEncoding();
      if (compatible(wanted, tensorOf(value).getEncoding(), value))
        continue;
      builder.setInsertionPoint(store);
      auto convert = ConvertLayoutOp::create(builder, store.getLoc(), typed(value, wanted), value);
      store.getValueMutable().assign(convert);
    }
  }

  /// Whether a value of `layout` can stand where `wanted` is required
  /// (lanes and warps hold the same elements; registers are looked up).
  bool compatible(Attribute wanted, Attribute layout, Value v) {
    if (wanted == layout)
      return true;
    auto shape = tensorOf(v).getShape();
    return cast<LayoutEncodingAttr>(wanted).toLinearLayout(shape).sameThreads(
        cast<LayoutEncodingAttr>(layout).toLinearLayout(shape));
  }

  tile::FuncOp func_;
  MLIRContext *context_;
  int numWarps_, threadsPerWarp_, computeCapability_;
  std::string target_;
  AxisInfoAnalysis axis_;
  llvm::EquivalenceClasses<Value> classes_;
  llvm::MapVector<Value, size_t> order_; ///< every tensor value, in program order
  std::vector<Relation> relations_;
  SmallVector<tile::StoreOp> stores_; ///< every store, its value not yet joined
  SmallVector<tile::StoreOp> staged_; ///< stores converting their value (joinStoredValues)
  llvm::DenseMap<Value, std::pair<Attribute, int64_t>> anchors_; ///< class leader -> (layout, weight)
  llvm::DenseMap<Value, Attribute> layouts_;                      ///< class leader -> layout
};

/// Every tensor's layout fits its shape (a basis past a dimension would
/// address elements that do not exist): the types the assigner wrote are
/// not verified when they are set, so a derivation that goes wrong is
/// caught here rather than as wrong numbers on the GPU.
LogicalResult verifyLayouts(tile::FuncOp func) {
  auto check = [](Value v, Operation *at) {
    auto type = tensorOf(v);
    auto encoding = type ? dyn_cast_or_null<VerifiableTensorEncoding>(type.getEncoding()) : nullptr;
    if (!encoding)
      return success();
    return encoding.verifyEncoding(type.getShape(), type.getElementType(), [&] {
      return at->emitOpError() << "kgpu-assign-layouts produced an invalid layout " << type << ": ";
    });
  };
  WalkResult result = func.walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (failed(check(v, op)))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Value arg : block.getArguments())
          if (failed(check(arg, op)))
            return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

struct AssignLayouts : impl::AssignLayoutsBase<AssignLayouts> {
  using AssignLayoutsBase::AssignLayoutsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(module.getContext());
    std::optional<Target> parsed = parse_target(target);
    const int threadsPerWarp = parsed ? threads_per_warp(*parsed) : 32;
    module->setAttr(kNumWarpsAttr, b.getI32IntegerAttr(numWarps));
    module->setAttr(kThreadsPerWarpAttr, b.getI32IntegerAttr(threadsPerWarp));
    module->setAttr(kTargetAttr, b.getStringAttr(target));
    for (auto func : module.getOps<tile::FuncOp>()) {
      unshareIndexBlocks(func); // before the axis analysis the assigner runs
      Assigner(func, numWarps, threadsPerWarp, target).run();
      if (failed(verifyLayouts(func)))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace kiln
