//===- MmaToLLVM.cpp - tile.dot on tensor cores (mma.sync m16n8k16) -------===//
//
// Operands come from XOR-swizzled shared memory: a slot of a pipelining
// ring when the operand is a kgpu.local_load (PipelineLoops.cpp), otherwise
// the operand's registers are first stored to scratch in that form. Each
// warp then walks K in steps of 16: `ldmatrix.x4` gives a 16x16 piece of A
// (or two 8-column pieces of B) in exactly the registers `mma.sync` wants;
// `.trans` serves operands whose M (or N) dimension is the contiguous one.
// The accumulator is in the MMA layout (Mma.h); another layout is converted
// on the way in and out.
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

struct MmaDotLowering : KilnPattern<tile::DotOp> {
  MmaDotLowering(const LoweringContext &context) : KilnPattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(tile::DotOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    if (!gpu::usesMma(op, ctx.computeCapability))
      return failure();
    Location loc = op.getLoc();
    auto aType = op.getA().getType(), bType = op.getB().getType(), cType = op.getC().getType();
    int64_t M = aType.getShape()[0], K = aType.getShape()[1], N = bType.getShape()[1];
    Type element = ctx.types.elementType(aType);
    Type f32 = rewriter.getF32Type();

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
    Value piece = LLVM::LShrOp::create(rewriter, loc, ids.lane, c32(3)); // which 8x8 piece this lane addresses
    Value pieceRow = LLVM::AndOp::create(rewriter, loc, ids.lane, c32(7));
    Value pieceLow = mul(LLVM::AndOp::create(rewriter, loc, piece, c32(1)), 8);  // (piece & 1) * 8
    Value pieceHigh = mul(LLVM::LShrOp::create(rewriter, loc, piece, c32(1)), 8); // (piece >> 1) * 8
    Value warpRow = mul(wm, 16), warpCol = mul(wn, 8);

    // Loads pieces at outer offset `outer` (M or N) and K offset `k`: rows
    // are the outer dimension when K is contiguous, K otherwise.
    auto load = [&](const OperandTile &t, Value outer, Value k) {
      if (t.kContiguous())
        return ldmatrix(rewriter, loc, t.tile, add(outer, pieceRow), k, /*trans=*/false);
      return ldmatrix(rewriter, loc, t.tile, add(k, pieceRow), outer, /*trans=*/true);
    };
    std::string shape = element.isBF16() ? "bf16" : "f16";
    std::string text = "mma.sync.aligned.m16n8k16.row.col.f32." + shape + "." + shape +
                       ".f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};";
    auto accType = LLVM::LLVMStructType::getLiteral(rewriter.getContext(), {f32, f32, f32, f32});
    for (int64_t k = 0; k < K; k += 16) {
      // A: pieces (rows +0, k +0), (+8, +0), (+0, +8), (+8, +8).
      SmallVector<SmallVector<Value>> aRegs;
      for (int64_t i = 0; i < mReps; ++i) {
        Value rows = add(add(warpRow, c32(i * 16 * warps.m)), pieceLow);
        aRegs.push_back(load(a, rows, add(c32(k), pieceHigh)));
      }
      // B: pieces (tile 2p, k +0), (2p, +8), (2p+1, +0), (2p+1, +8).
      SmallVector<SmallVector<Value>> bRegs(nTiles);
      for (int64_t p = 0; p < nTiles / 2; ++p) {
        Value cols = add(add(warpCol, c32(2 * p * 8 * warps.n)), mul(LLVM::LShrOp::create(rewriter, loc, piece, c32(1)), 8 * warps.n));
        SmallVector<Value> regs = load(b, cols, add(c32(k), pieceLow));
        bRegs[2 * p] = {regs[0], regs[1]};
        bRegs[2 * p + 1] = {regs[2], regs[3]};
      }
      for (int64_t i = 0; i < mReps; ++i)
        for (int64_t j = 0; j < nTiles; ++j) {
          int64_t r = 4 * (j + nTiles * i);
          SmallVector<Value> operands(aRegs[i]);
          llvm::append_range(operands, bRegs[j]);
          for (int q = 0; q < 4; ++q)
            operands.push_back(acc[r + q]);
          Value out = ptx(rewriter, loc, accType, text, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", operands,
                          /*sideEffects=*/false);
          SmallVector<Value> results = unpack(rewriter, loc, out);
          for (int q = 0; q < 4; ++q)
            acc[r + q] = results[q];
        }
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
