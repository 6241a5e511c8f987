//===- ReduceToLLVM.cpp - reductions --------------------------------------===//
//
// A reduction combines, in order: the registers of a thread that differ
// only along the axis; then lanes, by butterfly shuffles over the lane bits
// that map into the axis; then warps, through shared memory. The combine
// region is cloned for every combination (scalar arith, lowered later).
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

using namespace mlir;

namespace kiln::lowering {

using gpu::Coord;
using gpu::HwDim;
using gpu::LinearLayout;

namespace {

/// The dimension a basis maps into, or -1 (zero); -2 for several.
int dimensionOf(const Coord &basis) {
  int dim = -1;
  for (size_t d = 0; d < basis.size(); ++d)
    if (basis[d])
      dim = dim == -1 ? static_cast<int>(d) : -2;
  return dim;
}

struct ReduceLowering : KilnPattern<tile::ReduceOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::ReduceOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int axis = static_cast<int32_t>(op.getAxis());
    LinearLayout layout = layoutOf(op.getSrcs().front().getType());
    size_t n = op.getSrcs().size();
    for (HwDim h : {HwDim::Register, HwDim::Lane, HwDim::Warp})
      for (const Coord &basis : layout.bases(h))
        if (dimensionOf(basis) == -2)
          return rewriter.notifyMatchFailure(op, "a layout basis spans several dimensions");
    SmallVector<SmallVector<Value>> values;
    SmallVector<Type> elements;
    for (auto [src, lowered] : llvm::zip(op.getSrcs(), adaptor.getSrcs())) {
      values.push_back(unpack(rewriter, loc, lowered));
      elements.push_back(ctx.types.elementType(src.getType()));
    }
    auto onAxis = [&](HwDim h, int bit) { return dimensionOf(layout.basis(h, bit)) == axis; };

    // 1. Within a thread: registers with equal non-axis bits.
    unsigned axisRegisterBits = 0;
    for (int bit = 0; bit < layout.bits(HwDim::Register); ++bit)
      if (onAxis(HwDim::Register, bit))
        axisRegisterBits |= 1u << bit;
    llvm::MapVector<unsigned, SmallVector<Value>> acc; // key register -> combined values
    for (int r = 0; r < layout.registers(); ++r) {
      unsigned key = r & ~axisRegisterBits;
      SmallVector<Value> next;
      for (size_t k = 0; k < n; ++k)
        next.push_back(values[k][r]);
      auto it = acc.find(key);
      if (it == acc.end())
        acc[key] = next;
      else
        it->second = combineWith(rewriter, op.getCombineOp(), it->second, next);
    }
    // 2. Across lanes: butterflies over the lane bits on the axis.
    for (int bit = 0; bit < layout.bits(HwDim::Lane); ++bit) {
      if (!onAxis(HwDim::Lane, bit))
        continue;
      for (auto &[key, a] : acc) {
        SmallVector<Value> other;
        for (Value v : a)
          other.push_back(shuffle(rewriter, loc, v, NVVM::ShflKind::bfly, 1 << bit));
        a = combineWith(rewriter, op.getCombineOp(), a, other);
      }
    }
    // 3. Across warps: each warp's partial result through shared memory.
    SmallVector<int> warpBits;
    for (int bit = 0; bit < layout.bits(HwDim::Warp); ++bit)
      if (onAxis(HwDim::Warp, bit))
        warpBits.push_back(bit);
    SmallVector<int64_t> outShape(layout.shape().begin(), layout.shape().end());
    outShape.erase(outShape.begin() + axis);
    if (!warpBits.empty()) {
      ThreadIds ids = threadIds(rewriter, loc, ctx.threadsPerWarp);
      SmallVector<Value> thread = threadCoords(rewriter, loc, layout, ids);
      thread.erase(thread.begin() + axis);
      int64_t warpsOnAxis = int64_t(1) << warpBits.size();
      int64_t outElements = 1;
      for (int64_t d : outShape)
        outElements *= d;
      Value warpIndex = i32Const(rewriter, loc, 0);
      for (size_t j = 0; j < warpBits.size(); ++j) {
        Value bitValue = LLVM::AndOp::create(rewriter, loc,
                                             LLVM::LShrOp::create(rewriter, loc, ids.warp, i32Const(rewriter, loc, warpBits[j])),
                                             i32Const(rewriter, loc, 1));
        warpIndex = LLVM::OrOp::create(rewriter, loc, warpIndex,
                                       LLVM::ShlOp::create(rewriter, loc, bitValue, i32Const(rewriter, loc, j)));
      }
      Value base = sharedBase(rewriter, loc, op);
      barrier(rewriter, loc);
      // Offsets of each operand's slot array (4-byte aligned slots at least).
      SmallVector<int64_t> offsets;
      int64_t offset = 0;
      for (size_t k = 0; k < n; ++k) {
        offsets.push_back(offset);
        offset += outElements * warpsOnAxis * std::max<int64_t>(4, storageBytes(elements[k]));
      }
      // One writer a slot: after the butterflies every lane on the axis
      // holds the same partial, and broadcast lanes or warps hold copies.
      unsigned axisLanes = 0;
      for (int bit = 0; bit < layout.bits(HwDim::Lane); ++bit)
        if (onAxis(HwDim::Lane, bit))
          axisLanes |= 1u << bit;
      Value writer = isOwner(rewriter, loc, layout, ids);
      if (axisLanes)
        writer = LLVM::AndOp::create(
            rewriter, loc, writer,
            LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq,
                                 LLVM::AndOp::create(rewriter, loc, ids.lane, i32Const(rewriter, loc, axisLanes)),
                                 i32Const(rewriter, loc, 0)));
      SmallVector<Value> slots;
      for (auto &[key, a] : acc) {
        Coord fixed = layout.applyOne(HwDim::Register, key);
        fixed.erase(fixed.begin() + axis);
        SmallVector<Value> coord;
        for (size_t d = 0; d < fixed.size(); ++d)
          coord.push_back(fixed[d] ? LLVM::XOrOp::create(rewriter, loc, thread[d], i32Const(rewriter, loc, fixed[d])).getResult()
                                   : thread[d]);
        Value index = outShape.empty() ? i32Const(rewriter, loc, 0) : linearize(rewriter, loc, coord, outShape);
        Value slot = LLVM::MulOp::create(rewriter, loc, index, i32Const(rewriter, loc, warpsOnAxis));
        slots.push_back(slot);
        for (size_t k = 0; k < n; ++k) {
          Value at = LLVM::AddOp::create(rewriter, loc, slot, warpIndex);
          Type stored = slotType(elements[k]);
          Value address = gep(rewriter, loc, gep(rewriter, loc, base, rewriter.getI8Type(), i32Const(rewriter, loc, offsets[k])), stored, at);
          storeSharedIf(rewriter, loc, address, toSlot(rewriter, loc, a[k], stored), writer);
        }
      }
      barrier(rewriter, loc);
      size_t i = 0;
      for (auto &[key, a] : acc) {
        SmallVector<Value> total;
        for (int64_t w = 0; w < warpsOnAxis; ++w) {
          SmallVector<Value> part;
          for (size_t k = 0; k < n; ++k) {
            Type stored = slotType(elements[k]);
            Value at = LLVM::AddOp::create(rewriter, loc, slots[i], i32Const(rewriter, loc, w));
            Value address = gep(rewriter, loc, gep(rewriter, loc, base, rewriter.getI8Type(), i32Const(rewriter, loc, offsets[k])), stored, at);
            part.push_back(fromSlot(rewriter, loc, LLVM::LoadOp::create(rewriter, loc, stored, address), elements[k]));
          }
          total = w == 0 ? part : combineWith(rewriter, op.getCombineOp(), total, part);
        }
        a = total;
        ++i;
      }
    }
    // 4. The result registers, by coordinate.
    SmallVector<Value> results;
    for (size_t k = 0; k < n; ++k) {
      auto tensor = dyn_cast<RankedTensorType>(op.getResult(k).getType());
      if (!tensor) {
        results.push_back(acc.begin()->second[k]);
        continue;
      }
      LinearLayout out = layoutOf(tensor);
      SmallVector<Value> registers;
      for (int r = 0; r < out.registers(); ++r) {
        Coord c = out.applyOne(HwDim::Register, r);
        Value found;
        for (auto &[key, a] : acc) {
          Coord fixed = layout.applyOne(HwDim::Register, key);
          fixed.erase(fixed.begin() + axis);
          if (fixed == c) {
            found = a[k];
            break;
          }
        }
        if (!found)
          return rewriter.notifyMatchFailure(op, "the result layout is not the slice of the operand's");
        registers.push_back(found);
      }
      results.push_back(pack(rewriter, loc, getTypeConverter()->convertType(tensor), registers));
    }
    rewriter.replaceOp(op, results);
    return success();
  }

  /// Partial results travel as at least 32-bit values.
  static Type slotType(Type t) {
    if (isa<LLVM::LLVMPointerType>(t) || (isa<IntegerType>(t) && t.getIntOrFloatBitWidth() < 32))
      return isa<LLVM::LLVMPointerType>(t) ? t : IntegerType::get(t.getContext(), 32);
    return t;
  }
  static Value toSlot(OpBuilder &b, Location loc, Value v, Type slot) {
    if (v.getType() == slot)
      return v;
    return LLVM::ZExtOp::create(b, loc, slot, v);
  }
  static Value fromSlot(OpBuilder &b, Location loc, Value v, Type element) {
    if (v.getType() == element)
      return v;
    return LLVM::TruncOp::create(b, loc, element, v);
  }
};

} // namespace

void populateReducePatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<ReduceLowering>(context);
}

} // namespace kiln::lowering
