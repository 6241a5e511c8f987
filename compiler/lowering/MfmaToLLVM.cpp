//===- MfmaToLLVM.cpp - tile.dot on AMD matrix cores (v_mfma) -------------===//
//
// Both operands are staged K-major in XOR-swizzled LDS (dotOperandTiles),
// so that each lane reads its run of K of one row of A (one column of B)
// as one vector: ds_read_b64, or ds_read_b128 where two instructions' K
// are read together. The K order inside such a pair is a permutation the
// two operands share: lane block b's run of 2n (n = the instruction's K a
// lane, 4 of 16-bit operands) holds K 2nb..2nb+2n-1 of the pair, its first
// n going to the first instruction and the rest to the second, where the
// instructions' own order would give it nb..nb+n-1 of each. A dot sums
// over K, so any order both operands agree on is the same product. f32
// operands (xf32, gfx942) are rounded to tf32 first, so that the product
// is the one the interpreter and NVIDIA's tensor cores compute whatever
// the matrix cores do with the low mantissa bits; tf32x3 adds the
// products of each operand's rounded remainder with the other. The accumulator lives in the MFMA layout (Mfma.h), each piece's
// registers one vector of f32 as the instruction takes them; layout
// assignment anchors a K loop's accumulator there, so converting in and
// out costs nothing inside the loop.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "compiler/dialect/gpu/Mfma.h"
#include "compiler/dialect/gpu/Mma.h"

#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"

using namespace mlir;

namespace kiln::lowering {

using gpu::LinearLayout;

namespace {

/// Reads runs of K from an operand tile: `kDim` is the operand's K
/// dimension (1 for A, 0 for B).
class RunReader {
public:
  RunReader(OpBuilder &b, Location loc, const SwizzledTile &tile, int kDim) : b_(b), loc_(loc), tile_(tile), kDim_(kDim) {}

  /// `run` consecutive K (from `k`) of row (A) or column (B) `outer`, as a
  /// vector of the tile's element.
  Value read(Value outer, Value k, int64_t run) {
    auto type = VectorType::get({run}, tile_.element);
    const int64_t bytes = gpu::elementBytes(tile_.element);
    if (static_cast<int>(tile_.contiguousDim) == kDim_ && run <= tile_.vec)
      return LLVM::LoadOp::create(b_, loc_, type, at(outer, k), run * bytes);
    Value vector = LLVM::PoisonOp::create(b_, loc_, type);
    for (int64_t i = 0; i < run; ++i) {
      Value element = LLVM::LoadOp::create(b_, loc_, tile_.element,
                                           at(outer, LLVM::AddOp::create(b_, loc_, k, i32Const(b_, loc_, i))));
      vector = LLVM::InsertElementOp::create(b_, loc_, vector, element, i32Const(b_, loc_, i));
    }
    return vector;
  }

private:
  /// The address of (outer, k): offsets take (strided, contiguous).
  Value at(Value outer, Value k) {
    const bool kContiguous = static_cast<int>(tile_.contiguousDim) == kDim_;
    Value offset = kContiguous ? tile_.offset(b_, loc_, outer, k) : tile_.offset(b_, loc_, k, outer);
    return gep(b_, loc_, tile_.base, tile_.element, offset);
  }

  OpBuilder &b_;
  Location loc_;
  const SwizzledTile &tile_;
  int kDim_;
};

/// The `perLane` operand elements of instruction `g` of a run, as the
/// instruction takes them: f16 and f32 as they are, bf16 as i16 (the _1k
/// instructions).
Value operandOf(OpBuilder &b, Location loc, Value run, int64_t g, int64_t perLane) {
  auto type = cast<VectorType>(run.getType());
  Value part = run;
  if (type.getNumElements() != perLane) {
    SmallVector<int32_t> mask;
    for (int64_t i = 0; i < perLane; ++i)
      mask.push_back(static_cast<int32_t>(perLane * g + i));
    part = LLVM::ShuffleVectorOp::create(b, loc, run, run, mask);
  }
  if (type.getElementType().isBF16())
    part = LLVM::BitcastOp::create(b, loc, VectorType::get({perLane}, b.getI16Type()), part);
  return part;
}

/// `run` rounded to tf32 element by element, and (with `remainder`) what
/// the rounding left, rounded too.
Value tf32Of(OpBuilder &b, Location loc, Value run, Value *remainder) {
  auto type = cast<VectorType>(run.getType());
  Value high = LLVM::PoisonOp::create(b, loc, type), low = high;
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    Value index = i32Const(b, loc, i);
    Value x = LLVM::ExtractElementOp::create(b, loc, run, index);
    Value rounded = tf32Rounded(b, loc, x);
    high = LLVM::InsertElementOp::create(b, loc, high, rounded, index);
    if (remainder)
      low = LLVM::InsertElementOp::create(b, loc, low, tf32Rounded(b, loc, LLVM::FSubOp::create(b, loc, x, rounded)),
                                          index);
  }
  if (remainder)
    *remainder = low;
  return high;
}

/// One v_mfma of `shape` for operands of `element` type: acc + a * b.
Value mfma(OpBuilder &b, Location loc, const gpu::MfmaShape &shape, Type element, Value a, Value bOperand,
           Value acc) {
  Value zero = i32Const(b, loc, 0); // cbsz, abid, blgp: no broadcast between blocks
  SmallVector<Value> args{a, bOperand, acc, zero, zero, zero};
  Type type = acc.getType();
  if (element.isF32())
    return shape.piece == 32 ? ROCDL::mfma_f32_32x32x4_xf32::create(b, loc, type, args).getResult()
                             : ROCDL::mfma_f32_16x16x8_xf32::create(b, loc, type, args).getResult();
  const bool bf16 = element.isBF16();
  if (shape.piece == 32)
    return bf16 ? ROCDL::mfma_f32_32x32x8bf16_1k::create(b, loc, type, args).getResult()
                : ROCDL::mfma_f32_32x32x8f16::create(b, loc, type, args).getResult();
  return bf16 ? ROCDL::mfma_f32_16x16x16bf16_1k::create(b, loc, type, args).getResult()
              : ROCDL::mfma_f32_16x16x16f16::create(b, loc, type, args).getResult();
}

struct MfmaDotLowering : KilnPattern<tile::DotOp> {
  MfmaDotLowering(const LoweringContext &context) : KilnPattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(tile::DotOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    std::optional<gpu::MfmaShape> shape = ctx.amd ? gpu::mfmaShape(op, ctx.arch) : std::nullopt;
    if (!shape)
      return failure();
    if (gpu::inMmaOperandLayout(op.getA()) || gpu::inMmaOperandLayout(op.getB()))
      return rewriter.notifyMatchFailure(op, "operands in NVIDIA's mma registers");
    Location loc = op.getLoc();
    auto aType = op.getA().getType(), bType = op.getB().getType(), cType = op.getC().getType();
    const int64_t M = aType.getShape()[0], K = aType.getShape()[1], N = bType.getShape()[1];
    Type element = ctx.types.elementType(aType);
    Type f32 = rewriter.getF32Type();
    // The accumulator in the MFMA layout, as f32 (converted before the
    // operands take the scratch a conversion would go through).
    const LinearLayout layout = gpu::mfmaAccumulatorLayout(M, N, ctx.numWarps, *shape);
    Type cElement = ctx.types.elementType(cType);
    SmallVector<Value> acc = convertRegisters(rewriter, loc, op, unpack(rewriter, loc, adaptor.getC()), cElement,
                                              layoutOf(cType), layout, ctx.threadsPerWarp);
    for (Value &v : acc)
      if (v.getType() != f32)
        v = LLVM::FPExtOp::create(rewriter, loc, f32, v);

    auto tiles = dotOperandTiles(rewriter, loc, op, adaptor.getA(), adaptor.getB(), element, DotReader::mfma,
                                 ctx.threadsPerWarp);
    RunReader aReader(rewriter, loc, *tiles[0], 1), bReader(rewriter, loc, *tiles[1], 0);

    // This wavefront's pieces: rows wm*P + i*P*waves.m, columns
    // wn*P + j*P*waves.n; this lane's row (column) in a piece and K block.
    const gpu::MfmaWaves waves = gpu::mfmaWaves(M, N, ctx.numWarps, *shape);
    const int64_t P = shape->piece, mReps = M / (P * waves.m), nReps = N / (P * waves.n);
    auto c32 = [&](int64_t v) { return i32Const(rewriter, loc, v); };
    auto add = [&](Value x, Value y) { return LLVM::AddOp::create(rewriter, loc, x, y).getResult(); };
    auto mul = [&](Value x, int64_t y) { return LLVM::MulOp::create(rewriter, loc, x, c32(y)).getResult(); };
    ThreadIds ids = threadIds(rewriter, loc, ctx.threadsPerWarp);
    Value wn = LLVM::URemOp::create(rewriter, loc, ids.warp, c32(waves.n));
    Value wm = LLVM::URemOp::create(rewriter, loc, LLVM::UDivOp::create(rewriter, loc, ids.warp, c32(waves.n)),
                                    c32(waves.m));
    Value inPiece = LLVM::URemOp::create(rewriter, loc, ids.lane, c32(P));
    Value kBlock = LLVM::UDivOp::create(rewriter, loc, ids.lane, c32(P));
    Value aRow = add(mul(wm, P), inPiece), bCol = add(mul(wn, P), inPiece);

    // Pairs of instructions read their K together where K holds whole
    // pairs and a 16-byte chunk of the tiles holds the pair's run.
    const int64_t perLane = shape->perLane;
    const int64_t together =
        K % (2 * shape->kStep) == 0 && tiles[0]->vec >= 2 * perLane && tiles[1]->vec >= 2 * perLane ? 2 : 1;
    const int64_t run = perLane * together, span = together * shape->kStep;
    const bool xf32 = element.isF32(), threePass = xf32 && op.getPrecision() == tile::InputPrecision::tf32x3;
    auto vectorType = VectorType::get({shape->accumulators}, f32);
    SmallVector<Value> pieces; // per (i, j): the piece's accumulator vector
    for (int64_t i = 0; i < mReps; ++i)
      for (int64_t j = 0; j < nReps; ++j) {
        Value v = LLVM::PoisonOp::create(rewriter, loc, vectorType);
        for (int64_t r = 0; r < shape->accumulators; ++r)
          v = LLVM::InsertElementOp::create(rewriter, loc, v, acc[r + shape->accumulators * (j + nReps * i)],
                                            c32(r));
        pieces.push_back(v);
      }
    for (int64_t k0 = 0; k0 < K; k0 += span) {
      Value k = add(c32(k0), mul(kBlock, run));
      SmallVector<Value> aRuns, bRuns, aLows(mReps), bLows(nReps);
      for (int64_t i = 0; i < mReps; ++i)
        aRuns.push_back(aReader.read(add(aRow, c32(i * P * waves.m)), k, run));
      for (int64_t j = 0; j < nReps; ++j)
        bRuns.push_back(bReader.read(add(bCol, c32(j * P * waves.n)), k, run));
      if (xf32) {
        for (int64_t i = 0; i < mReps; ++i)
          aRuns[i] = tf32Of(rewriter, loc, aRuns[i], threePass ? &aLows[i] : nullptr);
        for (int64_t j = 0; j < nReps; ++j)
          bRuns[j] = tf32Of(rewriter, loc, bRuns[j], threePass ? &bLows[j] : nullptr);
      }
      auto part = [&](Value run, int64_t g) { return operandOf(rewriter, loc, run, g, perLane); };
      for (int64_t g = 0; g < together; ++g)
        for (int64_t i = 0; i < mReps; ++i)
          for (int64_t j = 0; j < nReps; ++j) {
            Value &piece = pieces[j + nReps * i];
            // (tf32x3: the small products first, then the large one.)
            if (threePass) {
              piece = mfma(rewriter, loc, *shape, element, part(aRuns[i], g), part(bLows[j], g), piece);
              piece = mfma(rewriter, loc, *shape, element, part(aLows[i], g), part(bRuns[j], g), piece);
            }
            piece = mfma(rewriter, loc, *shape, element, part(aRuns[i], g), part(bRuns[j], g), piece);
          }
    }
    for (int64_t i = 0; i < mReps; ++i)
      for (int64_t j = 0; j < nReps; ++j)
        for (int64_t r = 0; r < shape->accumulators; ++r)
          acc[r + shape->accumulators * (j + nReps * i)] =
              LLVM::ExtractElementOp::create(rewriter, loc, pieces[j + nReps * i], c32(r));

    for (Value &v : acc)
      if (cElement != f32)
        v = LLVM::FPTruncOp::create(rewriter, loc, cElement, v);
    SmallVector<Value> result = convertRegisters(rewriter, loc, op, acc, cElement, layout, layoutOf(op.getType()),
                                                 ctx.threadsPerWarp);
    rewriter.replaceOp(op, pack(rewriter, loc, getTypeConverter()->convertType(op.getType()), result));
    return success();
  }
};

} // namespace

void populateMfmaPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<MfmaDotLowering>(context);
}

} // namespace kiln::lowering
