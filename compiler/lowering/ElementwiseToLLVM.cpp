//===- ElementwiseToLLVM.cpp - per-register operations --------------------===//
//
// Elementwise operations on blocks become the same operation on each
// register (arith and math on scalars, lowered afterwards by the standard
// conversions); splat, range and pointer arithmetic compute each register's
// value directly.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace kiln::lowering {

namespace {

bool hasTensorTypes(Operation *op) {
  auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
  return llvm::any_of(op->getOperandTypes(), isTensor) || llvm::any_of(op->getResultTypes(), isTensor);
}

/// arith/math operations on blocks: the same operation per register.
struct ElementwiseLowering : ConversionPattern {
  ElementwiseLowering(const LoweringContext &context)
      : ConversionPattern(context.types, MatchAnyOpTypeTag(), /*benefit=*/1, &context.types.getContext()),
        ctx(context) {}

  LogicalResult matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                                ConversionPatternRewriter &rewriter) const override {
    StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
    if ((dialect != "arith" && dialect != "math") || !hasTensorTypes(op) || op->getNumResults() != 1)
      return failure();
    Location loc = op->getLoc();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Type structType = getTypeConverter()->convertType(resultType);
    int registers = cast<LLVM::LLVMStructType>(structType).getBody().size();
    Type element = ctx.types.elementType(resultType);

    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto dense = dyn_cast<SplatElementsAttr>(constant.getValue());
      if (!dense)
        return rewriter.notifyMatchFailure(op, "only splat tensor constants lower");
      Attribute scalar = dense.getSplatValue<Attribute>();
      Value value = arith::ConstantOp::create(rewriter, loc, cast<TypedAttr>(scalar));
      Value converted = rewriter.getRemappedValue(value);
      SmallVector<Value> values(registers, converted ? converted : value);
      rewriter.replaceOp(op, pack(rewriter, loc, structType, values));
      return success();
    }

    SmallVector<SmallVector<Value>> inputs;
    for (Value operand : operands)
      inputs.push_back(registersOf(rewriter, loc, operand));
    SmallVector<Value> results;
    for (int r = 0; r < registers; ++r) {
      OperationState state(loc, op->getName());
      for (auto &input : inputs)
        state.addOperands(input.size() == 1 ? input[0] : input[r]);
      state.addTypes(element);
      state.addAttributes(op->getAttrs());
      results.push_back(rewriter.create(state)->getResult(0));
    }
    rewriter.replaceOp(op, pack(rewriter, loc, structType, results));
    return success();
  }

  const LoweringContext &ctx;
};

struct SplatLowering : KilnPattern<tile::SplatOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::SplatOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Type structType = getTypeConverter()->convertType(op.getType());
    int registers = cast<LLVM::LLVMStructType>(structType).getBody().size();
    SmallVector<Value> values(registers, adaptor.getSrc());
    rewriter.replaceOp(op, pack(rewriter, op.getLoc(), structType, values));
    return success();
  }
};

/// Register r of lane l of warp w holds start + its coordinate.
struct RangeLowering : KilnPattern<tile::RangeOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::RangeOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    gpu::LinearLayout layout = layoutOf(op.getType());
    // After a loop, afresh: a range merged with one from before the loop
    // would stay live through it (RecomputeAfterLoops.cpp).
    ThreadIds ids = afterLoop(op) ? freshThreadIds(rewriter, loc, ctx.threadsPerWarp)
                                  : threadIds(rewriter, loc, ctx.threadsPerWarp);
    SmallVector<Value> thread = threadCoords(rewriter, loc, layout, ids);
    Value start = i32Const(rewriter, loc, static_cast<int32_t>(op.getStart()));
    SmallVector<Value> values;
    for (int r = 0; r < layout.registers(); ++r)
      values.push_back(LLVM::AddOp::create(rewriter, loc, registerCoords(rewriter, loc, layout, r, thread)[0], start));
    rewriter.replaceOp(op, pack(rewriter, loc, getTypeConverter()->convertType(op.getType()), values));
    return success();
  }
};

/// A per-register operation for tile ops with one operand and one result.
template <class Op> struct PerRegister : KilnPattern<Op> {
  using KilnPattern<Op>::KilnPattern;
  virtual Value lowerOne(OpBuilder &b, Location loc, Op op, ArrayRef<Value> operands, Type element) const = 0;

  LogicalResult matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<SmallVector<Value>> inputs;
    for (Value operand : adaptor.getOperands())
      inputs.push_back(registersOf(rewriter, loc, operand));
    Type resultType = op->getResult(0).getType();
    Type element = this->ctx.types.elementType(resultType);
    size_t registers = 1;
    for (auto &input : inputs)
      registers = std::max(registers, input.size());
    SmallVector<Value> results;
    for (size_t r = 0; r < registers; ++r) {
      SmallVector<Value> scalars;
      for (auto &input : inputs)
        scalars.push_back(input.size() == 1 ? input[0] : input[r]);
      results.push_back(lowerOne(rewriter, loc, op, scalars, element));
    }
    if (isa<RankedTensorType>(resultType))
      rewriter.replaceOp(op, pack(rewriter, loc, this->getTypeConverter()->convertType(resultType), results));
    else
      rewriter.replaceOp(op, results[0]);
    return success();
  }
};

struct AddPtrLowering : PerRegister<tile::AddPtrOp> {
  using PerRegister::PerRegister;
  Value lowerOne(OpBuilder &b, Location loc, tile::AddPtrOp op, ArrayRef<Value> v, Type) const override {
    auto ptr = cast<tile::PointerType>(getElementTypeOrSelf(op.getType()));
    Type pointee = ctx.types.elementType(ptr.getPointeeType());
    return gep(b, loc, v[0], pointee, v[1]);
  }
};

struct BitcastLowering : PerRegister<tile::BitcastOp> {
  using PerRegister::PerRegister;
  Value lowerOne(OpBuilder &b, Location loc, tile::BitcastOp, ArrayRef<Value> v, Type element) const override {
    if (v[0].getType() == element)
      return v[0];
    return LLVM::BitcastOp::create(b, loc, element, v[0]);
  }
};

struct IntToPtrLowering : PerRegister<tile::IntToPtrOp> {
  using PerRegister::PerRegister;
  Value lowerOne(OpBuilder &b, Location loc, tile::IntToPtrOp, ArrayRef<Value> v, Type element) const override {
    return LLVM::IntToPtrOp::create(b, loc, element, v[0]);
  }
};

struct PtrToIntLowering : PerRegister<tile::PtrToIntOp> {
  using PerRegister::PerRegister;
  Value lowerOne(OpBuilder &b, Location loc, tile::PtrToIntOp, ArrayRef<Value> v, Type element) const override {
    return LLVM::PtrToIntOp::create(b, loc, element, v[0]);
  }
};

struct HintLowering : KilnPattern<tile::HintOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::HintOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getSrc());
    return success();
  }
};

/// Conversions to and from 8-bit floats: widening is exact; narrowing goes
/// through f32 and rounds once (to nearest even, or toward zero), saturating
/// at the largest finite value.
struct FpToFpLowering : PerRegister<tile::FpToFpOp> {
  using PerRegister::PerRegister;
  Value lowerOne(OpBuilder &b, Location loc, tile::FpToFpOp op, ArrayRef<Value> v, Type) const override {
    Type from = getElementTypeOrSelf(op.getSrc().getType()), to = getElementTypeOrSelf(op.getType());
    if (tile::isFloat8(to)) {
      Value x = v[0];
      if (from.isF16() || from.isBF16())
        x = LLVM::FPExtOp::create(b, loc, b.getF32Type(), x); // exact
      else if (from.isF64())
        x = LLVM::FPTruncOp::create(b, loc, b.getF32Type(), x); // f64 -> fp8 via f32 (documented)
      else if (tile::isFloat8(from)) // e4m3 <-> e5m2 through f32 (exact)
        x = widenFp8(b, loc, x, isa<Float8E4M3FNType>(from), ctx.computeCapability);
      bool towardZero = op.getRounding() && *op.getRounding() == tile::RoundingMode::rtz;
      return narrowToFp8(b, loc, x, isa<Float8E4M3FNType>(to), towardZero, ctx.computeCapability);
    }
    Value f32 = widenFp8(b, loc, v[0], isa<Float8E4M3FNType>(from), ctx.computeCapability);
    if (to.isF32())
      return f32;
    if (to.isF64())
      return LLVM::FPExtOp::create(b, loc, b.getF64Type(), f32);
    return LLVM::FPTruncOp::create(b, loc, to, f32); // f16/bf16: exact
  }
};

} // namespace

void populateElementwisePatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<ElementwiseLowering>(context);
  patterns.add<SplatLowering, RangeLowering, AddPtrLowering, BitcastLowering, IntToPtrLowering,
               PtrToIntLowering, HintLowering, FpToFpLowering>(context);
}

} // namespace kiln::lowering
