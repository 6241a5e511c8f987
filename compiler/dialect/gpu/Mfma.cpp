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

} // namespace

std::optional<MfmaShape> mfmaShape(tile::DotOp op, std::string_view target) {
  if (!hasMatrixCores(target))
    return std::nullopt;
  auto a = op.getA().getType(), b = op.getB().getType(), c = op.getC().getType();
  if (a.getRank() != 2)
    return std::nullopt;
  Type element = a.getElementType();
  if (b.getElementType() != element || !(element.isF16() || element.isBF16()))
    return std::nullopt;
  Type acc = c.getElementType();
  if (!(acc.isF32() || (acc.isF16() && element.isF16())))
    return std::nullopt;
  int64_t M = a.getShape()[0], K = a.getShape()[1], N = b.getShape()[1];
  if (M % 32 == 0 && N % 32 == 0 && K % 8 == 0)
    return MfmaShape{.piece = 32, .kStep = 8, .accumulators = 16};
  if (M % 16 == 0 && N % 16 == 0 && K % 16 == 0)
    return MfmaShape{.piece = 16, .kStep = 16, .accumulators = 4};
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
