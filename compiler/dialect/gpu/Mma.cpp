//===- Mma.cpp - tensor-core dots: when, and in which layouts -------------===//

#include "compiler/dialect/gpu/Mma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln::gpu {

namespace {

/// Whether `op`'s operands, accumulator and shape suit the tensor cores of
/// `computeCapability` (fp8: Hopper's wgmma alone).
bool tensorCoresTake(tile::DotOp op, int computeCapability) {
  if (computeCapability < 80)
    return false;
  auto a = op.getA().getType(), b = op.getB().getType(), c = op.getC().getType();
  if (a.getRank() != 2)
    return false;
  Type element = a.getElementType();
  Type acc = c.getElementType();
  int64_t M = a.getShape()[0], K = a.getShape()[1], N = b.getShape()[1];
  if (isFp8Dot(op))
    return computeCapability == 90 && tile::isFloat8(element) && tile::isFloat8(b.getElementType()) &&
           acc.isF32() && M % 16 == 0 && N % 16 == 0 && K % 32 == 0;
  if (b.getElementType() != element)
    return false;
  if (element.isF32()) // tf32: m16n8k8; ieee f32 stays on FMAs
    return op.getPrecision() != tile::InputPrecision::ieee && acc.isF32() && M % 16 == 0 && N % 16 == 0 &&
           K % 8 == 0;
  if (!(element.isF16() || element.isBF16()))
    return false;
  if (!(acc.isF32() || (acc.isF16() && element.isF16())))
    return false;
  return M % 16 == 0 && N % 16 == 0 && K % 16 == 0;
}

} // namespace

bool isFp8Dot(tile::DotOp op) {
  return tile::isFloat8(op.getA().getType().getElementType()) || tile::isFloat8(op.getB().getType().getElementType());
}

bool usesMma(tile::DotOp op, int computeCapability) {
  // (fp8 has no mma.sync here: it is wgmma's, or the FMAs'.)
  return tensorCoresTake(op, computeCapability) && (!isFp8Dot(op) || op->hasAttr(kWgmmaAttr));
}

MmaWarps mmaWarps(int64_t M, int64_t N, int numWarps) {
  // Square-ish warp tiles: each new warp halves the longer side (in 16x8
  // pieces), but a warp keeps at least 16 rows and 16 columns so that B
  // loads come as pairs of 8-column pieces.
  MmaWarps warps;
  for (int left = numWarps; left > 1; left /= 2) {
    bool canM = M / (16 * warps.m) >= 2, canN = N / (16 * warps.n) >= 2;
    if (canN && (!canM || N / (8 * warps.n) > M / (16 * warps.m)))
      warps.n *= 2;
    else if (canM)
      warps.m *= 2;
    else
      break;
  }
  return warps;
}

LinearLayout mmaAccumulatorLayout(int64_t M, int64_t N, int numWarps) {
  MmaWarps warps = mmaWarps(M, N, numWarps);
  std::array<std::vector<Coord>, kHwDims> bases;
  auto &regs = bases[0], &lanes = bases[1], &warpBases = bases[2];
  regs = {{0, 1}, {8, 0}};
  lanes = {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}};
  for (int w = 1; w < warps.n; w *= 2)
    warpBases.push_back({0, 8 * w});
  for (int w = 1; w < warps.m; w *= 2)
    warpBases.push_back({16 * w, 0});
  for (int w = warps.m * warps.n; w < numWarps; w *= 2)
    warpBases.push_back({0, 0}); // spare warps hold copies
  for (int64_t n = 8 * warps.n; n < N; n *= 2)
    regs.push_back({0, static_cast<int32_t>(n)});
  for (int64_t m = 16 * warps.m; m < M; m *= 2)
    regs.push_back({static_cast<int32_t>(m), 0});
  return LinearLayout(bases, {M, N});
}

MmaOperandEncodingAttr mmaOperandEncoding(tile::DotOp op, unsigned operand, int numWarps) {
  int64_t M = op.getA().getType().getShape()[0], N = op.getB().getType().getShape()[1];
  MmaWarps warps = mmaWarps(M, N, numWarps);
  unsigned bits = op.getA().getType().getElementType().getIntOrFloatBitWidth();
  return MmaOperandEncodingAttr::get(op.getContext(), operand, warps.m, warps.n, numWarps, bits);
}

bool inMmaOperandLayout(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa_and_nonnull<MmaOperandEncodingAttr>(type.getEncoding());
}

int64_t mmaKStep(Type element) { return element.getIntOrFloatBitWidth() == 16 ? 16 : 8; }

LocalLoadOp ringSlotLoad(Value operand) {
  auto local = operand.getDefiningOp<LocalLoadOp>();
  return local && local.readsWholeSlot() ? local : LocalLoadOp();
}

bool wgmmaShapeFits(tile::DotOp op, int computeCapability, int numWarps) {
  if (computeCapability != 90 || !tensorCoresTake(op, computeCapability) || numWarps % 4 != 0)
    return false;
  // tf32x3 splits each operand in registers; wgmma reads them from memory.
  if (op.getA().getType().getElementType().isF32() && op.getPrecision() != tile::InputPrecision::tf32)
    return false;
  if (!op.getC().getType().getElementType().isF32())
    return false;
  int64_t M = op.getA().getType().getShape()[0], K = op.getA().getType().getShape()[1];
  int64_t N = op.getB().getType().getShape()[1];
  int64_t rowBytes = K * (op.getA().getType().getElementType().getIntOrFloatBitWidth() / 8);
  // 16-bit K rows longer than an atom are stored as 128-byte column blocks
  // one after another, which wgmma reads a block at a time.
  bool rowsFit = rowBytes == 32 || rowBytes == 64 || rowBytes == 128 ||
                 (rowBytes % 128 == 0 && op.getA().getType().getElementType().getIntOrFloatBitWidth() == 16);
  return M % (64 * (numWarps / 4)) == 0 && N <= 256 && rowsFit;
}

LinearLayout wgmmaAccumulatorLayout(int64_t M, int64_t N, int numWarps) {
  std::array<std::vector<Coord>, kHwDims> bases;
  auto &regs = bases[0], &lanes = bases[1], &warps = bases[2];
  regs = {{0, 1}, {8, 0}};
  for (int64_t n = 8; n < N; n *= 2)
    regs.push_back({0, static_cast<int32_t>(n)});
  lanes = {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}};
  for (int w = 1; w < numWarps; w *= 2)
    warps.push_back({16 * w, 0});
  for (int64_t m = 16 * numWarps; m < M; m *= 2)
    regs.push_back({static_cast<int32_t>(m), 0});
  return LinearLayout(bases, {M, N});
}

bool wgmmaTakesNMajorB(tile::DotOp op) { return op.getA().getType().getElementType().getIntOrFloatBitWidth() == 16; }

bool wgmmaTakesRegisterA(tile::DotOp op) { return op.getA().getType().getElementType().getIntOrFloatBitWidth() == 16; }

LinearLayout wgmmaRegisterALayout(int64_t M, int64_t K, int numWarps) { return wgmmaAccumulatorLayout(M, K, numWarps); }

bool wgmmaReadsRegisterA(tile::DotOp op, int numWarps) {
  auto a = op.getA().getType();
  return !ringSlotLoad(op.getA()) && wgmmaTakesRegisterA(op) &&
         linearLayoutOf(a) == wgmmaRegisterALayout(a.getShape()[0], a.getShape()[1], numWarps);
}

bool isWgmmaDot(tile::DotOp op, int computeCapability, int numWarps) {
  auto c = op.getC().getType();
  if (!op->hasAttr(kWgmmaAttr) || !wgmmaShapeFits(op, computeCapability, numWarps) ||
      !isa_and_nonnull<LayoutEncodingAttr>(c.getEncoding()))
    return false;
  return linearLayoutOf(c) == wgmmaAccumulatorLayout(c.getShape()[0], c.getShape()[1], numWarps);
}

namespace {

/// `v` with layout conversions looked through.
Value throughConversions(Value v) {
  while (auto convert = v.getDefiningOp<ConvertLayoutOp>())
    v = convert.getSrc();
  return v;
}

} // namespace

std::optional<AccumulatorReset> accumulatorReset(tile::DotOp op) {
  auto select = throughConversions(op.getC()).getDefiningOp<arith::SelectOp>();
  if (!select)
    return std::nullopt;
  Value zero = throughConversions(select.getTrueValue());
  if (auto splat = zero.getDefiningOp<tile::SplatOp>())
    zero = splat.getSrc();
  if (!matchPattern(zero, m_AnyZeroFloat()))
    return std::nullopt;
  Value condition = throughConversions(select.getCondition());
  if (auto splat = condition.getDefiningOp<tile::SplatOp>())
    condition = splat.getSrc();
  if (!condition.getType().isInteger(1))
    return std::nullopt;
  return AccumulatorReset{condition, select.getFalseValue()};
}

int64_t elementBytes(Type type) { return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8); }

Swizzle swizzleOf(int64_t contiguous, int64_t elementBytes) {
  const int64_t rowBytes = contiguous * elementBytes;
  return Swizzle{.vec = std::max<int64_t>(1, 16 / elementBytes),
                 .perPhase = std::max<int64_t>(1, 128 / std::max<int64_t>(rowBytes, 1)),
                 .maxPhase = std::clamp<int64_t>(rowBytes / 16, 1, 8)};
}

SharedEncodingAttr swizzledEncoding(MLIRContext *context, int64_t contiguous, int64_t elementBytes,
                                    ArrayRef<unsigned> order) {
  const Swizzle swizzle = swizzleOf(contiguous, elementBytes);
  return SharedEncodingAttr::get(context, static_cast<unsigned>(swizzle.vec), static_cast<unsigned>(swizzle.perPhase),
                                 static_cast<unsigned>(swizzle.maxPhase), order);
}

} // namespace kiln::gpu
