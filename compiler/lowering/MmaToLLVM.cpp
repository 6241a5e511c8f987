//===- MmaToLLVM.cpp - tile.dot on tensor cores (mma.sync) ----------------===//
//
// Operands come from XOR-swizzled shared memory: a slot of a pipelining
// ring when the operand is a kgpu.local_load (PipelineLoops.cpp), otherwise
// the operand's registers are first stored to scratch in that form. Each
// warp then walks K in steps of one instruction's K (16 for f16/bf16,
// m16n8k16; 8 for tf32, m16n8k8), reading each step's fragments one step
// ahead of its mma.sync: `ldmatrix.x4` gives a 16-row piece of A
// (or two 8-column pieces of B) in exactly the registers `mma.sync` wants;
// `.trans` serves 16-bit operands whose M (or N) dimension is the
// contiguous one. ldmatrix cannot transpose 32-bit elements, so such tf32
// operands are read one element per register instead. tf32 operands are
// rounded to nearest (ties away, `cvt.rna`) as they arrive; tf32x3 also
// keeps each one's rounding error as a second tf32 part and adds the two
// cross products before the main one. The accumulator is in the MMA layout
// (Mma.h); another layout is converted on the way in and out.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "compiler/dialect/gpu/Mma.h"

using namespace mlir;

namespace kiln::lowering {

using gpu::LinearLayout;

namespace {

/// Where an operand's tile lives in shared memory, and which of its
/// dimensions is K.
struct OperandTile {
  SwizzledTile tile;
  int kDim;
  bool kContiguous() const { return static_cast<int>(tile.contiguousDim) == kDim; }
};

/// `ldmatrix.x4` of four 8x8 pieces; lane l addresses row l % 8 of piece
/// l / 8, given as (row, col) of the stored tile.
SmallVector<Value> ldmatrix(OpBuilder &b, Location loc, const SwizzledTile &tile, Value row, Value col, bool trans) {
  Value address = gep(b, loc, tile.base, tile.element, tile.offset(b, loc, row, col));
  Type i32 = b.getI32Type();
  auto type = LLVM::LLVMStructType::getLiteral(b.getContext(), {i32, i32, i32, i32});
  std::string text = std::string("ldmatrix.sync.aligned.m8n8.x4") + (trans ? ".trans" : "") +
                     ".shared.b16 {$0, $1, $2, $3}, [$4];";
  // Volatile: shared memory changes under it (async copies, staging).
  Value loaded = ptx(b, loc, type, text, "=r,=r,=r,=r,r", {sharedAddress(b, loc, address)}, /*sideEffects=*/true);
  return unpack(b, loc, loaded);
}

/// An f32 rounded to tf32 (the b32 register mma.sync takes).
Value roundToTf32(OpBuilder &b, Location loc, Value f32) {
  return ptx(b, loc, b.getI32Type(), "cvt.rna.tf32.f32 $0, $1;", "=r,f", {f32}, /*sideEffects=*/false);
}

/// One operand fragment of a K step: its registers as mma.sync takes them
/// and, for tf32x3, the rounding errors of those registers as tf32.
struct Fragment {
  SmallVector<Value> main, error;
};

/// Rounds the f32 values of a tf32 fragment (given as b32 registers).
Fragment roundFragment(OpBuilder &b, Location loc, ArrayRef<Value> raw, bool split) {
  Fragment f;
  Type f32 = b.getF32Type();
  for (Value r : raw) {
    Value x = LLVM::BitcastOp::create(b, loc, f32, r);
    Value hi = roundToTf32(b, loc, x);
    f.main.push_back(hi);
    if (split)
      f.error.push_back(roundToTf32(
          b, loc, LLVM::FSubOp::create(b, loc, x, LLVM::BitcastOp::create(b, loc, f32, hi)).getResult()));
  }
  return f;
}

struct MmaDotLowering : KilnPattern<tile::DotOp> {
  MmaDotLowering(const LoweringContext &context) : KilnPattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(tile::DotOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    if (!gpu::usesMma(op, ctx.computeCapability))
      return failure();
    Location loc = op.getLoc();
    auto aType = op.getA().getType(), bType = op.getB().getType(), cType = op.getC().getType();
    int64_t M = aType.getShape()[0], K = aType.getShape()[1], N = bType.getShape()[1];
    Type element = ctx.types.elementType(aType);
    Type f32 = rewriter.getF32Type(), i32 = rewriter.getI32Type();
    const bool tf32 = element.isF32(), split = tf32 && op.getPrecision() == tile::InputPrecision::tf32x3;
    // One 8x8 ldmatrix piece is 8 rows of 16 bytes: 8 16-bit elements, or 4 tf32.
    const int64_t chunk = tf32 ? 4 : 8, kStep = 2 * chunk;

    // Operand tiles: a ring slot, or the registers staged in scratch.
    auto [aTile, bTile] = dotOperandTiles(rewriter, loc, op, adaptor.getA(), adaptor.getB(), element,
                                          /*forWgmma=*/false, ctx.threadsPerWarp);
    OperandTile a{aTile, 1}, b{bTile, 0};

    // The accumulator, in the MMA layout, as f32.
    LinearLayout mma = gpu::mmaAccumulatorLayout(M, N, ctx.numWarps);
    Type cElement = ctx.types.elementType(cType);
    SmallVector<Value> acc = convertRegisters(rewriter, loc, op, unpack(rewriter, loc, adaptor.getC()), cElement,
                                              layoutOf(cType), mma, ctx.threadsPerWarp);
    for (Value &v : acc)
      if (v.getType() != f32)
        v = LLVM::FPExtOp::create(rewriter, loc, f32, v);

    // This warp's place: pieces at rows wm*16 + i*16*warps.m, columns
    // wn*8 + j*8*warps.n.
    gpu::MmaWarps warps = gpu::mmaWarps(M, N, ctx.numWarps);
    int64_t mReps = M / (16 * warps.m), nTiles = N / (8 * warps.n);
    ThreadIds ids = threadIds(rewriter, loc, ctx.threadsPerWarp);
    auto c32 = [&](int64_t v) { return i32Const(rewriter, loc, v); };
    auto add = [&](Value x, Value y) { return LLVM::AddOp::create(rewriter, loc, x, y).getResult(); };
    auto mul = [&](Value x, int64_t y) { return LLVM::MulOp::create(rewriter, loc, x, c32(y)).getResult(); };
    Value wn = LLVM::URemOp::create(rewriter, loc, ids.warp, c32(warps.n));
    Value wm = LLVM::URemOp::create(rewriter, loc, LLVM::UDivOp::create(rewriter, loc, ids.warp, c32(warps.n)),
                                    c32(warps.m));
    Value warpRow = mul(wm, 16), warpCol = mul(wn, 8);
    Value piece = LLVM::LShrOp::create(rewriter, loc, ids.lane, c32(3)); // which 8x8 piece this lane addresses
    Value pieceRow = LLVM::AndOp::create(rewriter, loc, ids.lane, c32(7));
    Value pieceBit0 = LLVM::AndOp::create(rewriter, loc, piece, c32(1)), pieceBit1 = LLVM::LShrOp::create(rewriter, loc, piece, c32(1));
    // A fragment register's row within its 8 (lane / 4) and K within its
    // chunk (lane % 4), for fragments read element by element.
    Value group = LLVM::LShrOp::create(rewriter, loc, ids.lane, c32(2));
    Value inGroup = LLVM::AndOp::create(rewriter, loc, ids.lane, c32(3));

    // ldmatrix pieces at outer offset `outer` (M or N) and K offset `k`:
    // rows are the outer dimension when K is contiguous, K otherwise.
    auto ldPieces = [&](const OperandTile &t, Value outer, Value k) {
      if (t.kContiguous())
        return ldmatrix(rewriter, loc, t.tile, add(outer, pieceRow), k, /*trans=*/false);
      return ldmatrix(rewriter, loc, t.tile, add(k, pieceRow), outer, /*trans=*/true);
    };
    // One element per register (tf32 with K not contiguous): (outer, k).
    auto ldElement = [&](const OperandTile &t, Value outer, Value k) -> Value {
      Value offset = t.kContiguous() ? t.tile.offset(rewriter, loc, outer, k) : t.tile.offset(rewriter, loc, k, outer);
      Value value = LLVM::LoadOp::create(rewriter, loc, f32, gep(rewriter, loc, t.tile.base, t.tile.element, offset));
      return LLVM::BitcastOp::create(rewriter, loc, i32, value);
    };
    // A's fragment of 16 rows from `rows` at K step `k`: (rows +0, k +0),
    // (+8, +0), (+0, +chunk), (+8, +chunk).
    auto loadA = [&](Value rows, int64_t k) -> SmallVector<Value> {
      if (!tf32 || a.kContiguous())
        return ldPieces(a, add(rows, mul(pieceBit0, 8)), add(c32(k), mul(pieceBit1, chunk)));
      Value row = add(rows, group), col = add(c32(k), inGroup);
      return {ldElement(a, row, col), ldElement(a, add(row, c32(8)), col), ldElement(a, row, add(col, c32(4))),
              ldElement(a, add(row, c32(8)), add(col, c32(4)))};
    };
    // B's fragments of the 8-column pieces at `cols` and `cols + 8 *
    // warps.n`: (tile 0, k +0), (0, +chunk), (1, +0), (1, +chunk).
    auto loadBPair = [&](Value cols, int64_t k) -> SmallVector<Value> {
      if (!tf32 || b.kContiguous())
        return ldPieces(b, add(cols, mul(pieceBit1, 8 * warps.n)), add(c32(k), mul(pieceBit0, chunk)));
      SmallVector<Value> regs;
      for (int64_t t = 0; t < 2; ++t) {
        Value col = add(cols, add(group, c32(t * 8 * warps.n))), row = add(c32(k), inGroup);
        regs.push_back(ldElement(b, col, row));
        regs.push_back(ldElement(b, col, add(row, c32(4))));
      }
      return regs;
    };
    std::string shape = tf32 ? "tf32" : element.isBF16() ? "bf16" : "f16";
    std::string text = "mma.sync.aligned.m16n8k" + std::to_string(kStep) + ".row.col.f32." + shape + "." + shape +
                       ".f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};";
    auto accType = LLVM::LLVMStructType::getLiteral(rewriter.getContext(), {f32, f32, f32, f32});
    auto mmaSync = [&](ArrayRef<Value> aRegs, ArrayRef<Value> bRegs, int64_t r) {
      SmallVector<Value> operands(aRegs);
      llvm::append_range(operands, bRegs);
      for (int q = 0; q < 4; ++q)
        operands.push_back(acc[r + q]);
      Value out = ptx(rewriter, loc, accType, text, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", operands,
                      /*sideEffects=*/false);
      SmallVector<Value> results = unpack(rewriter, loc, out);
      for (int q = 0; q < 4; ++q)
        acc[r + q] = results[q];
    };
    auto fragment = [&](SmallVector<Value> raw) {
      return tf32 ? roundFragment(rewriter, loc, raw, split) : Fragment{std::move(raw), {}};
    };
    struct StepFragments { // one K step's fragments: A's row pieces, B's column pieces
      SmallVector<Fragment> a, b;
    };
    auto loadStep = [&](int64_t k) {
      StepFragments f;
      for (int64_t i = 0; i < mReps; ++i)
        f.a.push_back(fragment(loadA(add(warpRow, c32(i * 16 * warps.m)), k)));
      f.b.resize(nTiles);
      for (int64_t p = 0; p < nTiles / 2; ++p) {
        Fragment pair = fragment(loadBPair(add(warpCol, c32(2 * p * 8 * warps.n)), k));
        auto half = [&](ArrayRef<Value> regs, int h) { return SmallVector<Value>(regs.slice(2 * h, 2)); };
        f.b[2 * p] = {half(pair.main, 0), split ? half(pair.error, 0) : SmallVector<Value>{}};
        f.b[2 * p + 1] = {half(pair.main, 1), split ? half(pair.error, 1) : SmallVector<Value>{}};
      }
      return f;
    };
    // Each K step's fragments are read before the previous step's mma.sync
    // are issued, so their ldmatrix latency hides behind those (0-3 %
    // faster at 4096^3 bf16 on an H200, 2 % with the pipeliner's copies
    // after the dot and 32-bit shared pointers).
    StepFragments current = loadStep(0);
    for (int64_t k = 0; k < K; k += kStep) {
      StepFragments next;
      if (k + kStep < K)
        next = loadStep(k + kStep);
      for (int64_t i = 0; i < mReps; ++i)
        for (int64_t j = 0; j < nTiles; ++j) {
          int64_t r = 4 * (j + nTiles * i);
          if (split) { // the small cross terms first
            mmaSync(current.a[i].error, current.b[j].main, r);
            mmaSync(current.a[i].main, current.b[j].error, r);
          }
          mmaSync(current.a[i].main, current.b[j].main, r);
        }
      current = std::move(next);
    }

    for (Value &v : acc)
      if (cElement != f32)
        v = LLVM::FPTruncOp::create(rewriter, loc, cElement, v);
    SmallVector<Value> result = convertRegisters(rewriter, loc, op, acc, cElement, mma, layoutOf(op.getType()),
                                                 ctx.threadsPerWarp);
    rewriter.replaceOp(op, pack(rewriter, loc, getTypeConverter()->convertType(op.getType()), result));
    return success();
  }
};

} // namespace

void populateMmaPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<MmaDotLowering>(context);
}

} // namespace kiln::lowering
