//===- RematerializeConversions.cpp - recompute instead of converting -----===//
//
// Layout assignment gives each class of values one layout; a value used in
// two layouts (a K mask built once as a row, used by A's tile and, through
// a transpose, by B's) then needs a kgpu.convert_layout, which goes through
// shared memory between two barriers. Inside a loop that costs two
// barriers an iteration. When the converted value is cheap to compute
// (ranges, splats, constants, elementwise arithmetic, pointer offsets,
// expand_dims, trans, ending at scalars or at values defined before the
// loop), this pass computes it
// again directly in the wanted layout and drops the conversion; values from
// before the loop are converted once, ahead of it.
//
// Outside loops it does the same for chains that end at scalars: a
// conversion there runs once, but what comes out of shared memory is
// opaque to LLVM. A loop's operand pointers formed from converted row
// pointers are then as many unrelated loop-carried values (each advanced
// on its own, their 64-bit halves moved into register pairs before every
// copy) instead of one base and constant offsets.
//
//===----------------------------------------------------------------------===//

#include "compiler/transforms/Passes.h"

#include "compiler/dialect/gpu/KGpu.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace kiln {

#define GEN_PASS_DEF_REMATERIALIZECONVERSIONS
#include "compiler/transforms/Passes.h.inc"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// Operations recomputed per conversion, at most: a mask's chain is 4-6.
constexpr int kMaxRecomputed = 12;

class Rematerializer {
public:
  /// (`loop`: the loop around the conversion, if any.)
  Rematerializer(scf::ForOp loop, ConvertLayoutOp convert) : loop_(loop), convert_(convert) {}

  /// Whether `v` can be had in `layout` without a conversion in the loop.
  bool feasible(Value v, Attribute layout) { return visit(v, layout, /*builder=*/nullptr) != nullptr || !isTensor(v); }

  /// `v` in `layout`, built right before the conversion (values from before
  /// the loop: converted right before the loop).
  Value build(Value v, Attribute layout) {
    OpBuilder b(convert_);
    return visit(v, layout, &b);
  }

private:
  static bool isTensor(Value v) { return isa<RankedTensorType>(v.getType()); }

  /// Returns `v` in `layout` (when building) or a non-null marker (when only
  /// checking); null when it cannot be had without converting in the loop.
  Value visit(Value v, Attribute layout, OpBuilder *b) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return v; // scalars have no layout
    if (type.getEncoding() == layout)
      return v;
    auto key = std::make_pair(v, layout);
    if (auto it = done_.find(key); it != done_.end())
      return it->second;
    Value result = make(v, type, layout, b);
    if (result)
      done_[key] = result;
    return result;
  }

  Value make(Value v, RankedTensorType type, Attribute layout, OpBuilder *b) {
    auto wanted = cast<RankedTensorType>(withEncoding(type, layout));
    Operation *def = v.getDefiningOp();
    // From before the loop: one conversion there.
    if (loop_ && !loop_->isAncestor(def ? def : v.getParentBlock()->getParentOp())) {
      if (!b)
        return v;
      OpBuilder before(loop_);
      return ConvertLayoutOp::create(before, v.getLoc(), wanted, v);
    }
    if (!def || ++recomputed_ > kMaxRecomputed)
      return nullptr; // a value the loop carries, or too long a chain
    if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense || !dense.isSplat())
        return nullptr;
      return b ? arith::ConstantOp::create(*b, def->getLoc(), wanted, dense.reshape(wanted)).getResult() : v;
    }
    if (isa<tile::RangeOp, tile::SplatOp>(def))
      return b ? retyped(*b, def, {}, wanted) : v;
    if (auto trans = dyn_cast<tile::TransOp>(def)) {
      // Result dimension i is operand dimension order[i]: the operand's
      // layout is the wanted one with the dimensions moved back.
      SmallVector<int32_t> order(trans.getOrder());
      auto srcShape = cast<RankedTensorType>(trans.getSrc().getType()).getShape();
      LinearLayout ll = cast<LayoutEncodingAttr>(layout).toLinearLayout(type.getShape());
      LinearLayout back = ll.mapped(
          [&](const Coord &c) {
            Coord out(c.size());
            for (size_t i = 0; i < c.size(); ++i)
              out[order[i]] = c[i];
            return out;
          },
          std::vector<int64_t>(srcShape.begin(), srcShape.end()));
      Value src = visit(trans.getSrc(), LinearEncodingAttr::get(layout.getContext(), back), b);
      if (!src)
        return nullptr;
      return b ? retyped(*b, def, {src}, wanted) : v;
    }
    if (auto expand = dyn_cast<tile::ExpandDimsOp>(def)) {
      Attribute operandLayout = SliceEncodingAttr::get(layout.getContext(), expand.getAxis(), layout);
      Value src = visit(expand.getSrc(), operandLayout, b);
      if (!src)
        return nullptr;
      return b ? retyped(*b, def, {src}, wanted) : v;
    }
    // Pointer offsets too: a persistent program forms its tile's operand
    // pointers from row indices every step.
    if (!(isElementwiseArith(def) || isa<tile::AddPtrOp>(def)) || def->getNumResults() != 1 ||
        def->getNumRegions() != 0)
      return nullptr;
    SmallVector<Value> operands;
    for (Value operand : def->getOperands()) {
      Value in = visit(operand, layout, b);
      if (!in)
        return nullptr;
      operands.push_back(in);
    }
    return b ? retyped(*b, def, operands, wanted) : v;
  }

  /// A copy of `def` with `operands` (none: the same) and the result type
  /// `type`.
  static Value retyped(OpBuilder &b, Operation *def, ArrayRef<Value> operands, Type type) {
    Operation *copy = b.clone(*def);
    if (!operands.empty())
      copy->setOperands(operands);
    copy->getResult(0).setType(type);
    return copy->getResult(0);
  }

  scf::ForOp loop_;
  ConvertLayoutOp convert_;
  llvm::DenseMap<std::pair<Value, Attribute>, Value> done_;
  int recomputed_ = 0;
};

struct RematerializeConversions : impl::RematerializeConversionsBase<RematerializeConversions> {
  void runOnOperation() override {
    SmallVector<std::pair<scf::ForOp, ConvertLayoutOp>> candidates;
    getOperation().walk(
        [&](ConvertLayoutOp convert) { candidates.push_back({convert->getParentOfType<scf::ForOp>(), convert}); });
    for (auto [loop, convert] : candidates) {
      Attribute layout = convert.getType().getEncoding();
      if (!Rematerializer(loop, convert).feasible(convert.getSrc(), layout))
        continue;
      Value recomputed = Rematerializer(loop, convert).build(convert.getSrc(), layout);
      convert.getResult().replaceAllUsesWith(recomputed);
      convert.erase();
    }
  }
};

} // namespace
} // namespace kiln
