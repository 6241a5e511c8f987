//===- Mfma.cpp - dots on AMD matrix cores: when, and in which layouts ----===//

#include "compiler/dialect/gpu/Mfma.h"

#include "compiler/dialect/gpu/KGpu.h"

using namespace mlir;

namespace kiln::gpu {

namespace {

/// CDNA 2 and 3 (gfx90a, gfx94x), whose matrix cores run the f16 and
/// bf16_1k instructions used here (gfx908 has no bf16_1k).
bool hasMatrixCores(std::string_view target) {
  std::optional<Target> parsed = parse_target(target);
  return parsed && parsed->vendor == GpuVendor::amd && parsed->major == 9 &&
         ((parsed->minor == 0 && parsed->stepping == 0xa) || parsed->minor == 4);
}

/// CDNA 3 (gfx94x), whose matrix cores also take xf32 (gone again in
/// gfx950, which Kiln does not target).
bool hasXf32(std::string_view target) {
  std::optional<Target> parsed = parse_target(target);
  return hasMatrixCores(target) && parsed->minor == 4;
}

} // namespace

std::optional<MfmaShape> mfmaShape(tile::DotOp op, std::string_view target) {
  if (!hasMatrixCores(target))
    return std::nullopt;
  auto a = op.getA().getType(), b = op.getB().getType(), c = op.getC().getType();
  if (a.getRank() != 2)
    return std::nullopt;
  Type element = a.getElementType(), acc = c.getElementType();
  if (b.getElementType() != element)
    return std::nullopt;
  const bool sixteenBit = element.isF16() || element.isBF16();
  const bool xf32 = element.isF32() && acc.isF32() && op.getPrecision() != tile::InputPrecision::ieee && hasXf32(target);
  if (!(sixteenBit && (acc.isF32() || (acc.isF16() && element.isF16()))) && !xf32)
    return std::nullopt;
  const int64_t perLane = xf32 ? 2 : 4;
  int64_t M = a.getShape()[0], K = a.getShape()[1], N = b.getShape()[1];
  if (M % 32 == 0 && N % 32 == 0 && K % (2 * perLane) == 0)
    return MfmaShape{.piece = 32, .kStep = 2 * perLane, .accumulators = 16, .perLane = perLane};
  if (M % 16 == 0 && N % 16 == 0 && K % (4 * perLane) == 0)
    return MfmaShape{.piece = 16, .kStep = 4 * perLane, .accumulators = 4, .perLane = perLane};
  return std::nullopt;
}

MfmaWaves mfmaWaves(int64_t M, int64_t N, int numWarps, const MfmaShape &shape) {
  // Square-ish wavefront tiles: each new wavefront halves the side with
  // more pieces (N first on a tie) while it has two.
  MfmaWaves waves;
  const int64_t P = shape.piece;
  for (int left = numWarps; left > 1; left /= 2) {
    int64_t piecesM = M / (P * waves.m), piecesN = N / (P * waves.n);
    if (piecesN >= 2 && piecesN >= piecesM)
      waves.n *= 2;
    else if (piecesM >= 2)
      waves.m *= 2;
    else
      break;
  }
  return waves;
}

LinearLayout mfmaAccumulatorLayout(int64_t M, int64_t N, int numWarps, const MfmaShape &shape) {
  MfmaWaves waves = mfmaWaves(M, N, numWarps, shape);
  const int32_t P = static_cast<int32_t>(shape.piece);
  std::array<std::vector<Coord>, kHwDims> bases;
  auto &regs = bases[0], &lanes = bases[1], &warpBases = bases[2];
  if (P == 32) {
    regs = {{1, 0}, {2, 0}, {8, 0}, {16, 0}};
    lanes = {{0, 1}, {0, 2}, {0, 4}, {0, 8}, {0, 16}, {4, 0}};
  } else {
    regs = {{1, 0}, {2, 0}};
    lanes = {{0, 1}, {0, 2}, {0, 4}, {0, 8}, {4, 0}, {8, 0}};
  }
  for (int w = 1; w < waves.n; w *= 2)
    warpBases.push_back({0, P * w});
  for (int w = 1; w < waves.m; w *= 2)
    warpBases.push_back({P * w, 0});
  for (int w = waves.m * waves.n; w < numWarps; w *= 2)
    warpBases.push_back({0, 0}); // spare wavefronts hold copies
  for (int64_t n = P * waves.n; n < N; n *= 2)
    regs.push_back({0, static_cast<int32_t>(n)});
  for (int64_t m = P * waves.m; m < M; m *= 2)
    regs.push_back({static_cast<int32_t>(m), 0});
  return LinearLayout(bases, {M, N});
}

} // namespace kiln::gpu
