//===- ErfToLLVM.cpp - erf and erfc on f32 without division ---------------===//
//
// erf(x) = x * P(x^2)             for |x| < 1
//        = sign(x) (1 - 2^Q(t))   for t = min(|x|, 4) >= 1 (erf is 1 in f32
//                                 beyond ~3.9)
// with P (degree 5) and Q (degree 8, in u = t - 2.5) Chebyshev fits, made
// for Kiln with mpmath, of erf(x)/x on x^2 in [0, 1] and of log2(erfc(t)) on
// t in [1, 4]. Both are evaluated (Horner, FMAs) and selected: no branch, no
// division; 2^Q is the target's approximate exp2 (ex2.approx.ftz on NVIDIA,
// v_exp_f32 on AMD; Q >= -27 here, so flushing denormals changes nothing
// and saves the instruction's range fix-up). Measured on NVIDIA
// against mpmath on 100k points: at
// most 2.4 ulp from the coefficients' rounding, plus ex2.approx's ~0.6 ulp
// for |x| >= 1. (MLIR's generic approximation divides, which dominated
// fused GELU kernels: they are bound by arithmetic in 16-bit formats.)
//
// erfc(x) = e                     for x >= 0
//         = 2 - e                 for x < 0, with a = |x|,
// e = t * 2^(R(t) - a^2 log2(e)), t = 1 / (1 + a/2)
// one formula for every a (t runs over (0, 1]): R (degree 9) is a Chebyshev
// fit of log2(erfc(a) / t) + a^2 log2(e) on t in [1/5.65, 1] (a <= 9.3,
// where erfc leaves f32's normal range), made for Kiln with mpmath. One
// rcp.approx and one ex2.approx, ~17 instructions against erf's ~24, and
// relative accuracy where erfc is small, which 1 - erf(x) loses: GELU is
// x/2 erfc(-x/sqrt 2). Simulated in f32 with mpmath on 25k points: <= 6
// ulp for a < 1 and for x < 0; for large positive x the rounding of the
// exponent (~a^2 log2 e, in f32) dominates, 13 ulp at a < 3, 95 at a < 9.3
// (1.1e-5 relative; exp has the same trait). Results below 2^-126 flush to 0.
// fast_erfc (the op with fastmath afn) fits R with degree 5: 1.4e-5 relative,
// four FMAs fewer, for values that end in 16-bit formats.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;

namespace kiln::lowering {

namespace {

Value f32Constant(OpBuilder &b, Location loc, float v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)).getResult();
}

/// The polynomial with `coefficients` (highest power first) at `at`, by FMAs.
Value horner(OpBuilder &b, Location loc, ArrayRef<float> coefficients, Value at) {
  Value acc = f32Constant(b, loc, coefficients.front());
  for (float k : coefficients.drop_front())
    acc = math::FmaOp::create(b, loc, acc, at, f32Constant(b, loc, k));
  return acc;
}

/// An f32 -> f32 intrinsic (the approximate exp2 and reciprocal).
Value intrinsic(OpBuilder &b, Location loc, const char *name, Value v) {
  return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(), b.getStringAttr(name), ValueRange{v}).getResult(0);
}

/// An f32 math op's rewrite, ahead of the generic lowering (benefit 2);
/// other types are left to it.
template <class Op> struct F32Rewrite : OpRewritePattern<Op> {
  F32Rewrite(MLIRContext *context, ApproximateMath approx)
      : OpRewritePattern<Op>(context, /*benefit=*/2), approx(approx) {}
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const final {
    if (!op.getType().isF32())
      return failure();
    rewriteF32(op, rewriter, op.getLoc());
    return success();
  }
  /// Replaces `op` (f32).
  virtual void rewriteF32(Op op, PatternRewriter &b, Location loc) const = 0;
  ApproximateMath approx;
};

constexpr float kSmall[] = {-0.0005648059886880219f, 0.004921761807054281f, -0.026715055108070374f,
                            0.11280316859483719f,   -0.37612342834472656f, 1.1283791065216064f};
constexpr float kLarge[] = {2.361910219406127e-06f, -1.920950489875395e-05f, 0.00011150788486702368f,
                            -0.0006061086896806955f, 0.0031238726805895567f, -0.015665564686059952f,
                            -1.3617507219314575f,    -7.722285747528076f,     -11.262853622436523f};

struct ErfF32 : F32Rewrite<math::ErfOp> {
  using F32Rewrite::F32Rewrite;
  void rewriteF32(math::ErfOp op, PatternRewriter &b, Location loc) const override {
    auto c = [&](float v) { return f32Constant(b, loc, v); };
    Value x = op.getOperand();
    Value t = math::AbsFOp::create(b, loc, x);
    Value small = arith::MulFOp::create(b, loc, horner(b, loc, kSmall, arith::MulFOp::create(b, loc, x, x)), x);
    Value clamped = arith::MinimumFOp::create(b, loc, arith::MaximumFOp::create(b, loc, t, c(1.0f)), c(4.0f));
    Value q = horner(b, loc, kLarge, arith::SubFOp::create(b, loc, clamped, c(2.5f)));
    Value power = intrinsic(b, loc, approx.exp2, q);
    Value large = math::CopySignOp::create(b, loc, arith::SubFOp::create(b, loc, c(1.0f), power), x);
    // |x| < 1, or NaN (unordered): `small` carries a NaN through (x * P(x^2)).
    Value useSmall = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ULT, t, c(1.0f));
    b.replaceOpWithNewOp<arith::SelectOp>(op, useSmall, small, large);
  }
};

constexpr float kErfcTail[] = {0.20357878506183624f,  -0.9518259763717651f,  1.5961965322494507f,
                               -0.9061222672462463f,  -0.19884297251701355f, 0.046986956149339676f,
                               0.03414352610707283f,  0.5612073540687561f,   1.4403127431869507f,
                               -1.8256345987319946f};
/// fast_erfc (fastmath afn): degree 5, the same fit; 1.4e-5 relative at most
/// in the same f32 simulation.
constexpr float kErfcTailFast[] = {0.3453531563282013f, -1.0691167116165161f, 0.7367390394210815f,
                                   0.3394755721092224f, 1.4753940105438232f,  -1.8278254270553589f};

struct ErfcF32 : F32Rewrite<math::ErfcOp> {
  using F32Rewrite::F32Rewrite;
  void rewriteF32(math::ErfcOp op, PatternRewriter &b, Location loc) const override {
    auto c = [&](float v) { return f32Constant(b, loc, v); };
    // erfc(x * s) for a constant s (GELU's -1/sqrt 2) folds s into the
    // constants below instead of multiplying first: a = |x| |s|.
    Value x = op.getOperand();
    double scale = 1.0;
    if (Operation *scaling = x.getDefiningOp(); scaling && isa<arith::MulFOp, LLVM::FMulOp>(scaling))
      for (int i = 0; i < 2; ++i) {
        FloatAttr constant;
        if (matchPattern(scaling->getOperand(i), m_Constant(&constant)) && std::isnormal(constant.getValueAsDouble())) {
          scale = constant.getValueAsDouble();
          x = scaling->getOperand(1 - i);
          break;
        }
      }
    // erfc(..) * 2^k (GELU's halving) adds k to the exponent instead of
    // multiplying after; the multiply is replaced by the result.
    Operation *scaledResult = nullptr;
    int powerOfTwo = 0;
    if (op->hasOneUse()) {
      Operation *user = *op->getUsers().begin();
      FloatAttr constant;
      if (isa<arith::MulFOp, LLVM::FMulOp>(user))
        for (Value factor : user->getOperands()) {
          int exponent = 0;
          if (factor != op.getResult() && matchPattern(factor, m_Constant(&constant)) &&
              std::frexp(constant.getValueAsDouble(), &exponent) == 0.5) {
            scaledResult = user;
            powerOfTwo = exponent - 1;
          }
        }
    }
    const double log2e = 1.4426950408889634;
    Value absX = math::AbsFOp::create(b, loc, x);
    // t = 1 / (1 + a/2) in (0, 1]; at a = inf it is 0 and the exponent -inf, so e = 0.
    Value t = intrinsic(b, loc, approx.reciprocal,
                            math::FmaOp::create(b, loc, absX, c(static_cast<float>(0.5 * std::fabs(scale))), c(1.0f)));
    const bool fast = bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::afn);
    SmallVector<float> tail(fast ? ArrayRef<float>(kErfcTailFast) : ArrayRef<float>(kErfcTail));
    tail.back() += powerOfTwo; // R's constant term carries the factor 2^k
    Value r = horner(b, loc, tail, t);
    // -a^2 log2(e) + R(t), as (-|x| s^2 log2(e)) |x| + R(t)
    Value slope = arith::MulFOp::create(b, loc, absX, c(static_cast<float>(-scale * scale * log2e)));
    Value exponent = math::FmaOp::create(b, loc, slope, absX, r);
    Value e = arith::MulFOp::create(b, loc, t, intrinsic(b, loc, approx.exp2, exponent));
    // x s < 0: 2 - e; NaN stays NaN through e.
    Value negative = arith::CmpFOp::create(b, loc, scale > 0 ? arith::CmpFPredicate::OLT : arith::CmpFPredicate::OGT,
                                           x, c(0.0f));
    Value two = c(std::ldexp(2.0f, powerOfTwo));
    Value result = arith::SelectOp::create(b, loc, negative, arith::SubFOp::create(b, loc, two, e), e);
    if (scaledResult)
      b.replaceOp(scaledResult, result);
    b.replaceOp(op, result);
  }
};

} // namespace

void populateErfPatterns(RewritePatternSet &patterns, bool amd) {
  patterns.add<ErfF32, ErfcF32>(patterns.getContext(), approximateMath(amd));
}

} // namespace kiln::lowering
