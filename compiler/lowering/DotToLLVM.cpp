//===- DotToLLVM.cpp - tile.dot with fused multiply-adds ------------------===//
//
// The fallback for every shape and type: a and b move (through shared
// memory) to layouts in which each thread holds, for each of its output
// elements, the whole row of a and column of b; then each output register
// accumulates K products in its accumulator's precision.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

using namespace mlir;

namespace kiln::lowering {

using gpu::Coord;
using gpu::HwDim;
using gpu::LinearLayout;

namespace {

/// The operand layout for `c`'s layout: operand dimension `keep` (M for a,
/// N for b) follows c's; K is all in registers; c's other dimension is
/// broadcast.
LinearLayout operandLayout(const LinearLayout &c, ArrayRef<int64_t> shape, int kDim, int keep, int drop) {
  int rank = c.rank();
  auto project = [&](const Coord &basis) {
    Coord out(rank, 0);
    for (int d = 0; d < rank; ++d)
      if (d != drop)
        out[d == keep ? keep : d] = basis[d];
    out[drop] = 0;
    return out;
  };
  std::array<std::vector<Coord>, gpu::kHwDims> bases;
  for (int64_t k = 1; k < shape[kDim]; k *= 2) {
    Coord basis(rank, 0);
    basis[kDim] = static_cast<int32_t>(k);
    bases[0].push_back(basis);
  }
  for (int h = 0; h < gpu::kHwDims; ++h)
    for (const Coord &basis : c.bases(static_cast<HwDim>(h)))
      bases[h].push_back(project(basis));
  return LinearLayout(bases, std::vector<int64_t>(shape.begin(), shape.end()));
}

struct DotLowering : KilnPattern<tile::DotOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::DotOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto aType = op.getA().getType(), bType = op.getB().getType(), cType = op.getC().getType();
    int rank = aType.getRank(), m = rank - 2, kA = rank - 1, kB = rank - 2, n = rank - 1;
    LinearLayout cLayout = layoutOf(cType);
    for (HwDim h : {HwDim::Register, HwDim::Lane, HwDim::Warp})
      for (const Coord &basis : cLayout.bases(h))
        if (llvm::count_if(basis, [](int32_t x) { return x != 0; }) > 1)
          return rewriter.notifyMatchFailure(op, "accumulator layout mixes dimensions");
    // a: keeps M (c's dimension m), drops N; b: keeps N, drops M.
    LinearLayout aLayout = operandLayout(cLayout.mapped([&](const Coord &x) { return x; }, aType.getShape().vec()),
                                         aType.getShape(), kA, m, n);
    LinearLayout bLayout = operandLayout(cLayout.mapped([&](const Coord &x) { return x; }, bType.getShape().vec()),
                                         bType.getShape(), kB, n, m);
    Type aElement = ctx.types.elementType(aType), cElement = ctx.types.elementType(cType);
    SmallVector<Value> a = convertRegisters(rewriter, loc, op, unpack(rewriter, loc, adaptor.getA()), aElement,
                                            layoutOf(aType), aLayout, ctx.threadsPerWarp);
    SmallVector<Value> b = convertRegisters(rewriter, loc, op, unpack(rewriter, loc, adaptor.getB()), aElement,
                                            layoutOf(bType), bLayout, ctx.threadsPerWarp);
    SmallVector<Value> c = unpack(rewriter, loc, adaptor.getC());

    Type aScalar = aType.getElementType();
    Type f32 = rewriter.getF32Type();
    bool integer = isa<IntegerType>(aScalar);
    bool f64 = aScalar.isF64();
    Type math = integer ? rewriter.getI32Type() : f64 ? rewriter.getF64Type() : f32;
    auto widen = [&](Value v) -> Value {
      if (integer)
        return LLVM::SExtOp::create(rewriter, loc, math, v);
      if (v.getType() == math)
        return v;
      if (tile::isFloat8(aScalar))
        return widenFp8(rewriter, loc, v, isa<Float8E4M3FNType>(aScalar), ctx.computeCapability);
      return LLVM::FPExtOp::create(rewriter, loc, math, v);
    };
    for (Value &v : a)
      v = widen(v);
    for (Value &v : b)
      v = widen(v);
    tile::InputPrecision precision = op.getPrecision();
    SmallVector<Value> aLow, bLow;
    if (aScalar.isF32() && precision != tile::InputPrecision::ieee) {
      for (Value &v : a) {
        Value hi = tf32Rounded(rewriter, loc, v);
        aLow.push_back(tf32Rounded(rewriter, loc, LLVM::FSubOp::create(rewriter, loc, v, hi)));
        v = hi;
      }
      for (Value &v : b) {
        Value hi = tf32Rounded(rewriter, loc, v);
        bLow.push_back(tf32Rounded(rewriter, loc, LLVM::FSubOp::create(rewriter, loc, v, hi)));
        v = hi;
      }
    }
    bool threePass = precision == tile::InputPrecision::tf32x3 && aScalar.isF32();
    int64_t K = aType.getShape()[kA];
    SmallVector<Value> result;
    for (int r = 0; r < cLayout.registers(); ++r) {
      Coord out = cLayout.applyOne(HwDim::Register, r);
      Value acc = c[r];
      if (!integer && acc.getType() != math)
        acc = LLVM::FPExtOp::create(rewriter, loc, math, acc); // f16 accumulators compute in f32
      for (int64_t k = 0; k < K; ++k) {
        Coord ac = out, bc = out;
        ac[n] = 0;
        ac[kA] = static_cast<int32_t>(k);
        bc[m] = 0;
        bc[kB] = static_cast<int32_t>(k);
        int ai = aLayout.findRegister(ac), bi = bLayout.findRegister(bc);
        assert(ai >= 0 && bi >= 0 && "operand layouts hold every row and column of their thread");
        if (integer) {
          acc = LLVM::AddOp::create(rewriter, loc, acc, LLVM::MulOp::create(rewriter, loc, a[ai], b[bi]));
          continue;
        }
        if (threePass) {
          acc = LLVM::FMAOp::create(rewriter, loc, a[ai], bLow[bi], acc);
          acc = LLVM::FMAOp::create(rewriter, loc, aLow[ai], b[bi], acc);
        }
        acc = LLVM::FMAOp::create(rewriter, loc, a[ai], b[bi], acc);
      }
      if (acc.getType() != cElement)
        acc = LLVM::FPTruncOp::create(rewriter, loc, cElement, acc);
      result.push_back(acc);
    }
    rewriter.replaceOp(op, pack(rewriter, loc, getTypeConverter()->convertType(op.getType()), result));
    return success();
  }
};

} // namespace

Value tf32Rounded(OpBuilder &b, Location loc, Value x) {
  if (!targetsAmd(b)) {
    Value bits = ptx(b, loc, b.getI32Type(), "cvt.rna.tf32.f32 $0, $1;", "=r,f", {x}, false);
    return LLVM::BitcastOp::create(b, loc, b.getF32Type(), bits);
  }
  // cvt.rna's rounding in integers: to the nearest of the 10 mantissa bits
  // kept, ties away from zero (the magnitude's bits round up), which may
  // carry into the exponent as it should; infinities and NaNs pass.
  Type i32 = b.getI32Type();
  Value bits = LLVM::BitcastOp::create(b, loc, i32, x);
  Value exponent = LLVM::AndOp::create(b, loc, bits, i32Const(b, loc, 0x7f800000));
  Value finite = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, exponent, i32Const(b, loc, 0x7f800000));
  Value rounded = LLVM::AndOp::create(b, loc, LLVM::AddOp::create(b, loc, bits, i32Const(b, loc, 0x1000)),
                                      i32Const(b, loc, static_cast<int32_t>(0xffffe000u)));
  return LLVM::BitcastOp::create(b, loc, b.getF32Type(), LLVM::SelectOp::create(b, loc, finite, rounded, bits));
}

void populateDotPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<DotLowering>(context);
}

} // namespace kiln::lowering
