//===- LowerDescriptors.cpp - copy-engine loads, or masked pointer loads --===//
//
// Runs first at the GPU level, before layouts: which descriptor accesses
// the copy engine (TMA) will serve is decided here, once, so that layout
// assignment, the pipeliner and the lowering need not agree on it again.
// The loads it keeps are exactly the ones PipelineLoops turns into
// `kgpu.tma_load`s; the stores it keeps are lowered as copy-engine stores
// from a staging buffer in shared memory (TmaToLLVM.cpp). Everything else
// becomes
//
//     idx_d = offset_d + range(0, shape_d)          (i64, per dimension)
//     ptr   = base + sum_d idx_d * stride_d
//     load(ptr, mask = AND_d (0 <= idx_d < size_d), other = 0)
//
// (stores alike, without `other`), which every target and the rest of the
// pipeline already handle: axis info sees the unit stride the
// specialization made a constant, so such loads still vectorize.
//
//===----------------------------------------------------------------------===//

#include "compiler/transforms/Passes.h"

#include "compiler/analysis/AxisInfo.h"
#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/gpu/Mma.h"
#include "compiler/dialect/gpu/Tma.h"
#include "compiler/transforms/AddressSlice.h"
#include "compiler/transforms/HeldOperands.h"
#include "compiler/transforms/ProgramWalk.h"
#include "compiler/transforms/RaisePointerLoads.h"

#include "mlir/IR/Matchers.h"

namespace kiln {

#define GEN_PASS_DEF_LOWERDESCRIPTORS
#include "compiler/transforms/Passes.h.inc"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// The largest power of two (up to 16) known to divide `v`: a constant, or
/// an argument (sign-extended or not) the specialization proved divisible.
int64_t knownDivisor(Value v, tile::FuncOp func) {
  if (auto ext = v.getDefiningOp<arith::ExtSIOp>())
    v = ext.getIn();
  APInt constant;
  if (matchPattern(v, m_ConstantInt(&constant))) {
    int64_t c = constant.getSExtValue();
    return c == 0 ? 16 : std::min<int64_t>(16, c & -c);
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &func.getBody().front())
    return 1;
  auto divisibility = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "tile.divisibility");
  return divisibility ? divisibility.getInt() : 1;
}

/// Whether the access's base, sizes and strides are the kernel parameters
/// that follow its tensor map (or the constant 1 a launch specialized one
/// of them to): the launch builds the map from those parameters, so only
/// then does the copy engine see the tensor the access describes. (A map
/// the compiler added for pointer loads names its own parameters.)
template <class Access> bool describedByItsParameters(Access access, tile::FuncOp func) {
  Block &entry = func.getBody().front();
  auto map = dyn_cast<BlockArgument>(access.getMap());
  if (!map || map.getOwner() != &entry)
    return false;
  if (func.getArgAttr(map.getArgNumber(), kAddedMapAttr))
    return true;
  const unsigned first = map.getArgNumber(), rank = access.getSizes().size();
  auto isParameter = [&](Value v, unsigned position, bool mayBeOne) {
    if (position >= entry.getNumArguments())
      return false;
    return v == entry.getArgument(position) || (mayBeOne && matchPattern(v, m_One()));
  };
  if (!isParameter(access.getBase(), first + 1, false))
    return false;
  for (unsigned d = 0; d < rank; ++d)
    if (!isParameter(access.getSizes()[d], first + 2 + d, true) ||
        !isParameter(access.getStrides()[d], first + 2 + rank + d, true))
      return false;
  return true;
}

/// The block a descriptor access reads or writes.
RankedTensorType blockOf(tile::DescriptorLoadOp load) { return cast<RankedTensorType>(load.getType()); }
RankedTensorType blockOf(tile::DescriptorStoreOp store) { return cast<RankedTensorType>(store.getValue().getType()); }

/// What the copy engine needs of the tensor itself: a 16-byte aligned base,
/// a unit innermost stride and the other strides multiples of 16 bytes.
template <class Access> bool tensorFitsCopyEngine(Access access, tile::FuncOp func) {
  if (!describedByItsParameters(access, func))
    return false;
  auto base = cast<BlockArgument>(access.getBase());
  auto alignment = func.getArgAttrOfType<IntegerAttr>(base.getArgNumber(), "tile.divisibility");
  if (!alignment || alignment.getInt() < 16)
    return false;
  auto strides = access.getStrides();
  if (!matchPattern(strides.back(), m_One()))
    return false;
  int64_t bytes = elementBytes(blockOf(access).getElementType());
  for (Value stride : strides.drop_back())
    if (knownDivisor(stride, func) * bytes % 16 != 0)
      return false;
  return true;
}

/// The dot operand a descriptor load becomes: the block itself, or its
/// transpose (an operand stored the other way round); null otherwise.
Value dotOperandOf(tile::DescriptorLoadOp load) {
  Operation *user = *load->getUsers().begin();
  if (auto trans = dyn_cast<tile::TransOp>(user))
    return trans->hasOneUse() && trans->getBlock() == load->getBlock() ? trans.getResult() : Value();
  return load.getResult();
}

class Decider {
public:
  /// (The held blocks a loop reads from shared memory take their part of
  /// its ring budget from the start.)
  Decider(tile::FuncOp func, int computeCapability, int numStages, int numWarps)
      : func_(func), computeCapability_(computeCapability), numStages_(numStages), numWarps_(numWarps), axis_(func) {
    func.walk([&](scf::ForOp loop) {
      if (int64_t held = heldSharedBytes(loop, computeCapability, numWarps))
        ringBytes_[loop] = held;
    });
  }
  int computeCapability() const { return computeCapability_; }
  int numWarps() const { return numWarps_; }

  /// Whether `load` is read by the copy engine; records its box if so.
  bool keep(tile::DescriptorLoadOp load) {
    if (computeCapability_ < 90 || numStages_ < 2)
      return false;
    auto type = cast<RankedTensorType>(load.getType());
    if (type.getRank() != 2 || !load->hasOneUse())
      return false;
    auto loop = dyn_cast<scf::ForOp>(load->getParentOp());
    Value operand = dotOperandOf(load);
    auto dot = operand ? dyn_cast<tile::DotOp>(*operand.getUsers().begin()) : tile::DotOp();
    if (!loop || !dot || dot->getBlock() != load->getBlock() || !takesTensorCores(dot) ||
        (dot.getA() != operand && dot.getB() != operand))
      return false;
    if (!tensorFitsCopyEngine(load, func_))
      return false;
    std::optional<TmaBox> box = boxFor(load);
    if (!box)
      return false;
    AddressSlice slice;
    if (!collectSlice(loop, llvm::to_vector(load.getOffsets()), slice))
      return false;
    int64_t ring = ringBytesOf(type, loop);
    if (ringBytes_[loop] + ring > kRingBudgetBytes)
      return false;
    ringBytes_[loop] += ring;
    boxes_[cast<BlockArgument>(load.getMap()).getArgNumber()] = *box;
    return true;
  }

  /// Whether `dot` runs on the tensor cores. An fp8 dot is wgmma's only
  /// where both operands are K-major in shared memory (AssignLayouts marks
  /// it so later): here, A a block of rows along K and B the transpose of
  /// one, both from descriptors. (An N-major B moved to the copy engine
  /// would leave the dot on FMAs, reading a ring.)
  bool takesTensorCores(tile::DotOp dot) {
    if (!isFp8Dot(dot))
      return usesMma(dot, computeCapability_);
    return wgmmaShapeFits(dot, computeCapability_, numWarps_) && kMajor(dot.getA(), 1) && kMajor(dot.getB(), 0);
  }

  /// Whether a dot operand is read from memory with its K dimension
  /// (`kDim`) contiguous: a descriptor's block along its last dimension (or
  /// its transpose along the first), a pointer block along the dimension
  /// it is most contiguous in (a load being raised is still one).
  bool kMajor(Value operand, unsigned kDim) {
    if (operand.getDefiningOp<tile::DescriptorLoadOp>())
      return kDim == 1;
    if (auto trans = operand.getDefiningOp<tile::TransOp>())
      return trans.getSrc().getDefiningOp<tile::DescriptorLoadOp>() && kDim == 0;
    auto load = operand.getDefiningOp<tile::LoadOp>();
    if (!load || !isa<RankedTensorType>(load.getPtr().getType()))
      return false;
    gpu::AxisInfo info = axis_.get(load.getPtr());
    return info.contiguity[kDim] >= 16 && info.contiguity[kDim] >= info.contiguity[1 - kDim];
  }

  /// Whether `store` is written by the copy engine (any 2-d block of a
  /// tensor it can describe, on Hopper); records its box if so.
  bool keep(tile::DescriptorStoreOp store) {
    if (computeCapability_ < 90 || blockOf(store).getRank() != 2 || !tensorFitsCopyEngine(store, func_))
      return false;
    std::optional<TmaBox> box = boxFor(store);
    if (!box)
      return false;
    boxes_[cast<BlockArgument>(store.getMap()).getArgNumber()] = *box;
    return true;
  }

  /// The boxes the copy engine moves `access`'s block in, when its tensor
  /// map may hold them: one box per descriptor.
  template <class Access> std::optional<TmaBox> boxFor(Access access) {
    RankedTensorType type = blockOf(access);
    std::optional<TmaBox> box = tmaBoxFor(type.getShape()[0], type.getShape()[1], elementBytes(type.getElementType()));
    if (!box)
      return std::nullopt;
    auto known = boxes_.find(cast<BlockArgument>(access.getMap()).getArgNumber());
    if (known != boxes_.end() &&
        (known->second.rows != box->rows || known->second.boxCols != box->boxCols ||
         known->second.swizzleBytes != box->swizzleBytes))
      return std::nullopt;
    return box;
  }

  /// The ring a copy-engine load of `block` in `loop` takes: num_stages +
  /// 1 slots (a wgmma dot in flight keeps one more), unless takeStagesOnly.
  int64_t ringBytesOf(RankedTensorType block, Operation *loop) const {
    const int slots = stagesOnly_.contains(loop) ? numStages_ : numStages_ + 1;
    return slots * block.getNumElements() * elementBytes(block.getElementType());
  }
  /// Rings of `loop` take num_stages slots: a producer's chain of dots
  /// needs no spare slot (PipelineLoops adds one where it fits).
  void takeStagesOnly(Operation *loop) { stagesOnly_.insert(loop); }
  /// Whether `bytes` more of copy-engine rings fit beside those `loop` has.
  bool ringsFit(Operation *loop, int64_t bytes) const {
    auto known = ringBytes_.find(loop);
    return (known == ringBytes_.end() ? 0 : known->second) + bytes <= kRingBudgetBytes;
  }

  /// Notes where the launch finds the parts of a map the compiler added.
  void recordSources(unsigned parameter, const TensorMapSpec &sources) { sources_[parameter] = sources; }

  /// The module's kgpu.tensor_maps entries.
  void record(SmallVectorImpl<Attribute> &entries) {
    Builder b(func_.getContext());
    for (const auto &[parameter, box] : boxes_) {
      NamedAttrList fields;
      fields.append("parameter", b.getI32IntegerAttr(static_cast<int32_t>(parameter)));
      fields.append("box", b.getDenseI32ArrayAttr({static_cast<int32_t>(box.rows), static_cast<int32_t>(box.boxCols)}));
      fields.append("swizzle", b.getI32IntegerAttr(box.swizzleBytes));
      if (auto added = sources_.find(parameter); added != sources_.end()) {
        fields.append("base", b.getI32IntegerAttr(added->second.base));
        if (added->second.offset_rows)
          fields.append("offset_rows", b.getUnitAttr());
        if (added->second.offset_columns)
          fields.append("offset_columns", b.getUnitAttr());
        for (auto [field, sources] : {std::pair{"sizes", &added->second.sizes},
                                      std::pair{"strides", &added->second.strides}}) {
          SmallVector<int32_t> parameters;
          SmallVector<int64_t> constants;
          for (const TensorMapSource &source : *sources) {
            parameters.push_back(source.parameter);
            constants.push_back(source.constant);
          }
          fields.append(std::string(field) + "_parameters", b.getDenseI32ArrayAttr(parameters));
          fields.append(std::string(field) + "_constants", b.getDenseI64ArrayAttr(constants));
        }
      }
      entries.push_back(fields.getDictionary(func_.getContext()));
    }
  }

private:
  tile::FuncOp func_;
  int computeCapability_, numStages_, numWarps_;
  gpu::AxisInfoAnalysis axis_; ///< (of the pointer loads as the function came)
  std::map<unsigned, TmaBox> boxes_;
  std::map<unsigned, TensorMapSpec> sources_;
  llvm::DenseMap<Operation *, int64_t> ringBytes_;
  llvm::DenseSet<Operation *> stagesOnly_;
};

/// The addresses and in-bounds mask of a descriptor access's block.
std::pair<Value, Value> blockAddresses(OpBuilder &b, Location loc, Value base, ValueRange sizes, ValueRange strides,
                                       ValueRange offsets, ArrayRef<int64_t> shape) {
  Type i64 = b.getI64Type(), i32 = b.getI32Type(), i1 = b.getI1Type();
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto full = [&](Type element) { return RankedTensorType::get(shape, element); };
  auto splat = [&](Value scalar, Type type) { return tile::SplatOp::create(b, loc, type, scalar).getResult(); };
  Value offset, mask;
  for (int64_t d = 0; d < rank; ++d) {
    // This dimension's indices, as a rank-d block of 1s but along d.
    auto line = RankedTensorType::get({shape[d]}, i32);
    Value index = arith::AddIOp::create(b, loc, splat(offsets[d], line),
                                        tile::RangeOp::create(b, loc, line, 0, static_cast<uint32_t>(shape[d])));
    Value wide = arith::ExtSIOp::create(b, loc, RankedTensorType::get({shape[d]}, i64), index);
    SmallVector<int64_t> unit(rank, 1);
    unit[d] = shape[d];
    auto spread = [&](Value v, Type element) -> Value {
      for (int64_t axis = 0; axis < rank; ++axis) {
        if (axis == d)
          continue;
        auto vt = cast<RankedTensorType>(v.getType());
        SmallVector<int64_t> grown(vt.getShape());
        grown.insert(grown.begin() + axis, 1);
        v = tile::ExpandDimsOp::create(b, loc, RankedTensorType::get(grown, element), v, static_cast<uint32_t>(axis));
      }
      return rank > 1 ? tile::BroadcastOp::create(b, loc, full(element), v).getResult() : v;
    };
    auto lineType = RankedTensorType::get({shape[d]}, i64);
    Value term = matchPattern(strides[d], m_One())
                     ? wide
                     : arith::MulIOp::create(b, loc, wide, splat(strides[d], lineType)).getResult();
    Value inside = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, wide,
                              arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lineType, int64_t(0)))),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, wide, splat(sizes[d], lineType)));
    Value termFull = spread(term, i64), insideFull = spread(inside, i1);
    offset = offset ? arith::AddIOp::create(b, loc, offset, termFull).getResult() : termFull;
    mask = mask ? arith::AndIOp::create(b, loc, mask, insideFull).getResult() : insideFull;
  }
  Type ptrs = full(base.getType());
  Value addresses = tile::AddPtrOp::create(b, loc, ptrs, splat(base, ptrs), offset);
  return {addresses, mask};
}

void expand(tile::DescriptorLoadOp load) {
  OpBuilder b(load);
  Location loc = load.getLoc();
  auto type = cast<RankedTensorType>(load.getType());
  auto [addresses, mask] = blockAddresses(b, loc, load.getBase(), load.getSizes(), load.getStrides(),
                                          load.getOffsets(), type.getShape());
  Value zero = arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
  load.replaceAllUsesWith(tile::LoadOp::create(b, loc, addresses, mask, zero).getResult());
  load.erase();
}

void expand(tile::DescriptorStoreOp store) {
  OpBuilder b(store);
  Location loc = store.getLoc();
  auto type = cast<RankedTensorType>(store.getValue().getType());
  auto [addresses, mask] = blockAddresses(b, loc, store.getBase(), store.getSizes(), store.getStrides(),
                                          store.getOffsets(), type.getShape());
  tile::StoreOp::create(b, loc, addresses, store.getValue(), mask, tile::CacheModifier::none,
                        tile::EvictionPolicy::normal);
  store.erase();
}

/// Whether `loop` chains dots (attention's `Q Kᵀ`, then `P V`).
bool chainsDots(scf::ForOp loop) {
  auto dots = loop.getBody()->getOps<tile::DotOp>();
  return std::distance(dots.begin(), dots.end()) >= 2;
}

/// The blocks a loop's dots read from loads in the loop, in order.
SmallVector<Type> loadedOperands(scf::ForOp loop) {
  SmallVector<Type> types;
  for (auto dot : loop.getBody()->getOps<tile::DotOp>())
    for (Value operand : {dot.getA(), dot.getB()})
      if (loadedIn(loop, operand))
        types.push_back(operand.getType());
  return types;
}

/// Registers a thread of a loop's plain schedule holds across an
/// iteration (loopRegisters), and the bytes of its rings and of the held
/// blocks it reads from shared memory.
std::pair<int, int64_t> plainFootprint(scf::ForOp loop, int computeCapability, int numWarps, int numStages) {
  int64_t ringBytes = heldSharedBytes(loop, computeCapability, numWarps);
  for (auto dot : loop.getBody()->getOps<tile::DotOp>())
    for (Value operand : {dot.getA(), dot.getB()})
      if (loadedIn(loop, operand)) {
        auto type = cast<RankedTensorType>(operand.getType());
        ringBytes += numStages * type.getNumElements() * elementBytes(type.getElementType());
      }
  return {loopRegisters(loop, computeCapability, numWarps), ringBytes};
}

/// The loops that chain dots and get a producer warpgroup feeding their
/// operands by the copy engine: asked (`warpSpecialize`), or where the
/// plain schedule would hold one program a multiprocessor anyway (a
/// producer takes the multiprocessor's registers for one program). Every
/// loop of dots of the kernel must be such a loop at a program's top (at the
/// kernel's, or all in one walk over tiles: ProgramWalk.h), reading blocks
/// of the same shapes: one producer fills one ring for them, one loop after
/// another (causal attention's two). Without a producer the
/// operands stay per-thread copies: with every thread waiting on each
/// slot's transaction barrier and the program's barrier before each
/// refill, the copy engine measured no faster there, and at 128-key
/// blocks slower (docs/schedules.md, section 2).
llvm::DenseSet<Operation *> chainsGettingProducer(tile::FuncOp func, int computeCapability, int numWarps,
                                                  int numStages, bool warpSpecialize) {
  SmallVector<scf::ForOp> loops;
  bool fits = true;
  func.walk([&](scf::ForOp loop) {
    if (loop.getBody()->getOps<tile::DotOp>().empty())
      return;
    fits &= chainsDots(loop) && atProgramTop(loop) &&
            (loops.empty() || (loadedOperands(loop) == loadedOperands(loops.front()) &&
                               loop->getParentOp() == loops.front()->getParentOp()));
    loops.push_back(loop);
  });
  llvm::DenseSet<Operation *> chosen;
  if (!fits || loops.empty())
    return chosen;
  bool oneProgram = true;
  for (scf::ForOp loop : loops) {
    auto [registers, ringBytes] = plainFootprint(loop, computeCapability, numWarps, numStages);
    oneProgram &= hopperProgramsPerMultiprocessor(registers, numWarps * 32, ringBytes) == 1;
  }
  if (warpSpecialize || oneProgram)
    for (scf::ForOp loop : loops)
      chosen.insert(loop);
  return chosen;
}

/// Moves the pointer-block loads that read a box of a tensor to the copy
/// engine. A loop's rings are taken for all of them or none: where they do
/// not all fit at the asked depth, the loads stay per-thread copies, whose
/// rings the pipeliner shortens instead of leaving an operand unpipelined.
void raisePointerLoads(tile::FuncOp func, Decider &decider, int numStages, bool warpSpecialize) {
  SmallVector<tile::LoadOp> pointerLoads;
  llvm::DenseSet<Operation *> producerLoops =
      chainsGettingProducer(func, decider.computeCapability(), decider.numWarps(), numStages, warpSpecialize);
  func.walk([&](tile::LoadOp load) {
    auto loop = dyn_cast<scf::ForOp>(load->getParentOp());
    if (loop && (!chainsDots(loop) || producerLoops.contains(loop)))
      pointerLoads.push_back(load);
  });
  // What each loop's raised loads would take (a box holds the block's
  // elements); a producer's rings without their spare slot where they do
  // not fit with it.
  auto ringBytesOf = [&](Operation *loop) {
    int64_t bytes = 0;
    for (tile::LoadOp load : pointerLoads)
      if (load->getParentOp() == loop && readsABox(load, func))
        bytes += decider.ringBytesOf(cast<RankedTensorType>(load.getType()), loop);
    return bytes;
  };
  llvm::SetVector<Operation *> loops;
  for (tile::LoadOp load : pointerLoads)
    loops.insert(load->getParentOp());
  llvm::DenseSet<Operation *> fitting;
  for (Operation *loop : loops) {
    if (!decider.ringsFit(loop, ringBytesOf(loop)) && producerLoops.contains(loop))
      decider.takeStagesOnly(loop);
    if (decider.ringsFit(loop, ringBytesOf(loop)))
      fitting.insert(loop);
  }
  for (tile::LoadOp load : pointerLoads) {
    if (!fitting.contains(load->getParentOp()))
      continue;
    std::optional<RaisedLoad> raised = raisePointerLoad(load, func);
    if (!raised)
      continue;
    auto map = cast<BlockArgument>(raised->load.getMap());
    if (!decider.keep(raised->load)) {
      abandonRaisedLoad(*raised, func); // (its map is the last parameter)
      continue;
    }
    decider.recordSources(map.getArgNumber(), raised->sources);
    commitRaisedLoad(*raised);
  }
  // Loops that chain dots whose operands all come by the copy engine now
  // get their producer (PipelineLoops): all of them, or none.
  bool allRaised = true;
  for (Operation *loop : producerLoops) {
    Block *body = &loop->getRegion(0).front();
    for (auto dot : body->getOps<tile::DotOp>())
      for (Value operand : {dot.getA(), dot.getB()})
        if (auto load = operand.getDefiningOp<tile::LoadOp>())
          allRaised &= load->getBlock() != body;
  }
  if (allRaised)
    for (Operation *loop : producerLoops)
      loop->setAttr(kWarpSpecializeAttr, UnitAttr::get(loop->getContext()));
}

struct LowerDescriptors : impl::LowerDescriptorsBase<LowerDescriptors> {
  using LowerDescriptorsBase::LowerDescriptorsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Attribute> maps;
    for (auto func : module.getOps<tile::FuncOp>()) {
      Decider decider(func, compute_capability_of(target), numStages, numWarps);
      SmallVector<tile::DescriptorLoadOp> loads;
      SmallVector<tile::DescriptorStoreOp> stores;
      func.walk([&](tile::DescriptorLoadOp load) { loads.push_back(load); });
      func.walk([&](tile::DescriptorStoreOp store) { stores.push_back(store); });
      for (tile::DescriptorLoadOp load : loads)
        if (!decider.keep(load))
          expand(load);
      // Pointer loads that read a box of a tensor: descriptor loads through
      // a tensor map the compiler adds, where the copy engine takes them.
      if (copyEngine)
        raisePointerLoads(func, decider, numStages, warpSpecialize);
      for (tile::DescriptorStoreOp store : stores)
        if (!decider.keep(store))
          expand(store);
      decider.record(maps);
    }
    if (!maps.empty())
      module->setAttr(kTensorMapsAttr, ArrayAttr::get(module.getContext(), maps));
  }
};

} // namespace
} // namespace kiln
