//===- Float8ToLLVM.cpp - conversions to and from 8-bit floats ------------===//
//
// sm_89 and later convert with cvt (.e4m3x2/.e5m2x2). Earlier GPUs, and
// rounding toward zero anywhere, use integer arithmetic on the f32 bits:
//   widen  e5m2 is the top byte of an f16; e4m3fn (bias 7) placed in an f16's
//          low exponent bits is the value times 2^-8.
//   narrow below the smallest normal, the value is a multiple of the
//          smallest subnormal: scale and round to an integer; above, round
//          the f32 mantissa to M bits (adding half an ulp minus one, plus the
//          kept bit's parity, for nearest even) and rebias the exponent.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

using namespace mlir;

namespace kiln::lowering {

namespace {

constexpr int kHardwareFp8 = 89; ///< the first compute capability with fp8 cvt

struct Fp8Format {
  int exponentBias, mantissaBits;
  uint32_t largestFinite; ///< the magnitude bits of the largest finite value
};
Fp8Format formatOf(bool e4m3) { return e4m3 ? Fp8Format{7, 3, 0x7E} : Fp8Format{15, 2, 0x7B}; }

Value f32Const(OpBuilder &b, Location loc, float v) {
  return LLVM::ConstantOp::create(b, loc, b.getF32Type(), b.getF32FloatAttr(v));
}

} // namespace

Value widenFp8(OpBuilder &b, Location loc, Value byte, bool e4m3, int computeCapability) {
  Type i16 = b.getI16Type(), f16 = b.getF16Type(), f32 = b.getF32Type();
  Value wide = LLVM::ZExtOp::create(b, loc, i16, byte);
  if (computeCapability >= kHardwareFp8) {
    std::string format = e4m3 ? "e4m3x2" : "e5m2x2";
    Value halves = ptx(b, loc, b.getI32Type(), "cvt.rn.f16x2." + format + " $0, $1;", "=r,h", {wide},
                       /*sideEffects=*/false);
    Value low = LLVM::TruncOp::create(b, loc, i16, halves);
    return LLVM::FPExtOp::create(b, loc, f32, LLVM::BitcastOp::create(b, loc, f16, low));
  }
  if (!e4m3) { // e5m2 is an f16 without its low byte
    Value bits = LLVM::ShlOp::create(b, loc, wide, intConst(b, loc, i16, 8));
    return LLVM::FPExtOp::create(b, loc, f32, LLVM::BitcastOp::create(b, loc, f16, bits));
  }
  Value magnitude = LLVM::AndOp::create(b, loc, wide, intConst(b, loc, i16, 0x7F));
  Value asHalf = LLVM::BitcastOp::create(b, loc, f16, LLVM::ShlOp::create(b, loc, magnitude, intConst(b, loc, i16, 7)));
  Value value = LLVM::FMulOp::create(b, loc, LLVM::FPExtOp::create(b, loc, f32, asHalf), f32Const(b, loc, 256.0f));
  Value isNan = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, magnitude, intConst(b, loc, i16, 0x7F));
  value = LLVM::SelectOp::create(b, loc, isNan, f32Const(b, loc, std::numeric_limits<float>::quiet_NaN()), value);
  Value negative = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::uge, wide, intConst(b, loc, i16, 0x80));
  return LLVM::SelectOp::create(b, loc, negative, LLVM::FNegOp::create(b, loc, value), value);
}

Value narrowToFp8(OpBuilder &b, Location loc, Value x, bool e4m3, bool towardZero, int computeCapability) {
  Type i8 = b.getI8Type(), i32 = b.getI32Type(), f32 = b.getF32Type();
  if (computeCapability >= kHardwareFp8 && !towardZero) {
    std::string format = e4m3 ? "e4m3x2" : "e5m2x2";
    Value packed = ptx(b, loc, b.getI16Type(), "cvt.rn.satfinite." + format + ".f32 $0, $1, $2;", "=h,f,f",
                       {f32Const(b, loc, 0.0f), x}, /*sideEffects=*/false);
    return LLVM::TruncOp::create(b, loc, i8, packed);
  }
  Fp8Format f = formatOf(e4m3);
  auto c = [&](int64_t v) { return i32Const(b, loc, v); };
  Value bits = LLVM::BitcastOp::create(b, loc, i32, x);
  Value sign = LLVM::LShrOp::create(b, loc, LLVM::AndOp::create(b, loc, bits, c(int64_t(0x80000000u))), c(24));
  Value magnitude = LLVM::AndOp::create(b, loc, bits, c(0x7FFFFFFF));
  Value isNan = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ugt, magnitude, c(0x7F800000));

  // Below the smallest normal (2^(1-bias)): a count of subnormal steps.
  int32_t smallestNormal = (127 + 1 - f.exponentBias) << 23;
  Value subnormal = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, magnitude, c(smallestNormal));
  Value scaled = LLVM::FMulOp::create(b, loc, LLVM::BitcastOp::create(b, loc, f32, magnitude),
                                      f32Const(b, loc, std::ldexp(1.0f, f.exponentBias - 1 + f.mantissaBits)));
  Value steps = towardZero ? LLVM::FTruncOp::create(b, loc, scaled).getResult()
                           : LLVM::RoundEvenOp::create(b, loc, scaled).getResult();
  Value fromSubnormal = LLVM::FPToUIOp::create(b, loc, i32, steps);

  // Normal: round the mantissa to M bits and rebias.
  int shift = 23 - f.mantissaBits;
  Value rounded = magnitude;
  if (!towardZero) {
    Value kept = LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, magnitude, c(shift)), c(1));
    rounded = LLVM::AddOp::create(b, loc, LLVM::AddOp::create(b, loc, magnitude, c((1 << (shift - 1)) - 1)), kept);
  }
  Value fromNormal = LLVM::SubOp::create(b, loc, LLVM::LShrOp::create(b, loc, rounded, c(shift)),
                                         c((127 - f.exponentBias) << f.mantissaBits));

  Value result = LLVM::SelectOp::create(b, loc, subnormal, fromSubnormal, fromNormal);
  result = LLVM::UMinOp::create(b, loc, result, c(f.largestFinite)); // saturate, infinities too
  result = LLVM::SelectOp::create(b, loc, isNan, c(0x7F), result);
  return LLVM::TruncOp::create(b, loc, i8, LLVM::OrOp::create(b, loc, result, sign));
}

} // namespace kiln::lowering
