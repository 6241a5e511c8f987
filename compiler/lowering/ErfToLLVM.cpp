//===- ErfToLLVM.cpp - erf on f32 without division ------------------------===//
//
// erf(x) = x * P(x^2)             for |x| < 1
//        = sign(x) (1 - 2^Q(t))   for t = min(|x|, 4) >= 1 (erf is 1 in f32
//                                 beyond ~3.9)
// with P (degree 5) and Q (degree 8, in u = t - 2.5) Chebyshev fits, made
// for Kiln with mpmath, of erf(x)/x on x^2 in [0, 1] and of log2(erfc(t)) on
// t in [1, 4]. Both are evaluated (Horner, FMAs) and selected: no branch, no
// division; 2^Q is ex2.approx.ftz (Q >= -27 here, so flushing denormals
// changes nothing and saves the instruction's range fix-up). Measured
// against mpmath on 100k points: at
// most 2.4 ulp from the coefficients' rounding, plus ex2.approx's ~0.6 ulp
// for |x| >= 1. (MLIR's generic approximation divides, which dominated
// fused GELU kernels: they are bound by arithmetic in 16-bit formats.)
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace kiln::lowering {

namespace {

constexpr float kSmall[] = {-0.0005648059886880219f, 0.004921761807054281f, -0.026715055108070374f,
                            0.11280316859483719f,   -0.37612342834472656f, 1.1283791065216064f};
constexpr float kLarge[] = {2.361910219406127e-06f, -1.920950489875395e-05f, 0.00011150788486702368f,
                            -0.0006061086896806955f, 0.0031238726805895567f, -0.015665564686059952f,
                            -1.3617507219314575f,    -7.722285747528076f,     -11.262853622436523f};

struct ErfF32 : OpRewritePattern<math::ErfOp> {
  ErfF32(MLIRContext *context) : OpRewritePattern(context, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(math::ErfOp op, PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return failure();
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto c = [&](float v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)).getResult(); };
    auto horner = [&](ArrayRef<float> coefficients, Value at) {
      Value acc = c(coefficients[0]);
      for (float k : coefficients.drop_front())
        acc = math::FmaOp::create(b, loc, acc, at, c(k));
      return acc;
    };
    Value x = op.getOperand();
    Value t = math::AbsFOp::create(b, loc, x);
    Value small = arith::MulFOp::create(b, loc, horner(kSmall, arith::MulFOp::create(b, loc, x, x)), x);
    Value clamped = arith::MinimumFOp::create(b, loc, arith::MaximumFOp::create(b, loc, t, c(1.0f)), c(4.0f));
    Value q = horner(kLarge, arith::SubFOp::create(b, loc, clamped, c(2.5f)));
    Value power = LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(), b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
                                                ValueRange{q})
                      .getResult(0);
    Value large = math::CopySignOp::create(b, loc, arith::SubFOp::create(b, loc, c(1.0f), power), x);
    // |x| < 1, or NaN (unordered): `small` carries a NaN through (x * P(x^2)).
    Value useSmall = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ULT, t, c(1.0f));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, useSmall, small, large);
    return success();
  }
};

} // namespace

void populateErfPatterns(RewritePatternSet &patterns) { patterns.add<ErfF32>(patterns.getContext()); }

} // namespace kiln::lowering
