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
// (Mma.h); another layout is converted on the way in and out. Operands
// already in the mma operand layout (#kgpu.mma_operand: a K loop's
// fragments carried in registers, MmaFragments.cpp) are used as they are;
// a kgpu.local_load into that layout is the same ldmatrix reads.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "compiler/dialect/gpu/Mma.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

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

/// Reads this warp's mma.sync fragments of an operand tile in shared
/// memory: A's pieces of 16 rows at rows wm*16 + i*16*warps.m, B's pieces
/// of 8 columns at wn*8 + j*8*warps.n, in pairs (one ldmatrix.x4 reads two),
/// each at a K offset. Registers come raw (b32), as ldmatrix gives them.
class FragmentReader {
public:
  FragmentReader(OpBuilder &b, Location loc, gpu::MmaWarps warps, bool tf32, int threadsPerWarp)
      : b_(b), loc_(loc), warps_(warps), tf32_(tf32), chunk_(tf32 ? 4 : 8) {
    ThreadIds ids = threadIds(b, loc, threadsPerWarp);
    Value wn = LLVM::URemOp::create(b, loc, ids.warp, c32(warps.n));
    Value wm = LLVM::URemOp::create(b, loc, LLVM::UDivOp::create(b, loc, ids.warp, c32(warps.n)), c32(warps.m));
    warpRow_ = mul(wm, 16);
    warpCol_ = mul(wn, 8);
    Value piece = LLVM::LShrOp::create(b, loc, ids.lane, c32(3)); // which 8x8 piece this lane addresses
    pieceRow_ = LLVM::AndOp::create(b, loc, ids.lane, c32(7));
    pieceBit0_ = LLVM::AndOp::create(b, loc, piece, c32(1));
    pieceBit1_ = LLVM::LShrOp::create(b, loc, piece, c32(1));
    // A fragment register's row within its 8 (lane / 4) and K within its
    // chunk (lane % 4), for fragments read element by element.
    group_ = LLVM::LShrOp::create(b, loc, ids.lane, c32(2));
    inGroup_ = LLVM::AndOp::create(b, loc, ids.lane, c32(3));
  }

  /// A's four registers of this warp's piece `rep` (plus `rowOffset` rows)
  /// at K offset `k`: (rows +0, k +0), (+8, +0), (+0, +chunk), (+8, +chunk).
  SmallVector<Value> a(const OperandTile &t, int64_t rowOffset, int64_t rep, int64_t k) {
    Value rows = add(warpRow_, c32(rowOffset + rep * 16 * warps_.m));
    if (!tf32_ || t.kContiguous())
      return pieces(t, add(rows, mul(pieceBit0_, 8)), add(c32(k), mul(pieceBit1_, chunk_)));
    Value row = add(rows, group_), col = add(c32(k), inGroup_);
    return {element(t, row, col), element(t, add(row, c32(8)), col), element(t, row, add(col, c32(4))),
            element(t, add(row, c32(8)), add(col, c32(4)))};
  }

  /// B's registers of this warp's pieces 2 * pair and 2 * pair + 1 (plus
  /// `colOffset` columns) at K offset `k`: (piece 0, k +0), (0, +chunk),
  /// (1, +0), (1, +chunk).
  SmallVector<Value> bPair(const OperandTile &t, int64_t colOffset, int64_t pair, int64_t k) {
    Value cols = add(warpCol_, c32(colOffset + 2 * pair * 8 * warps_.n));
    if (!tf32_ || t.kContiguous())
      return pieces(t, add(cols, mul(pieceBit1_, 8 * warps_.n)), add(c32(k), mul(pieceBit0_, chunk_)));
    SmallVector<Value> regs;
    for (int64_t p = 0; p < 2; ++p) {
      Value col = add(cols, add(group_, c32(p * 8 * warps_.n))), row = add(c32(k), inGroup_);
      regs.push_back(element(t, col, row));
      regs.push_back(element(t, col, add(row, c32(4))));
    }
    return regs;
  }

private:
  Value c32(int64_t v) { return i32Const(b_, loc_, v); }
  Value add(Value x, Value y) { return LLVM::AddOp::create(b_, loc_, x, y); }
  Value mul(Value x, int64_t y) { return LLVM::MulOp::create(b_, loc_, x, c32(y)); }

  /// ldmatrix pieces at outer offset `outer` (M or N) and K offset `k`:
  /// rows are the outer dimension when K is contiguous, K otherwise.
  SmallVector<Value> pieces(const OperandTile &t, Value outer, Value k) {
    if (t.kContiguous())
      return ldmatrix(b_, loc_, t.tile, add(outer, pieceRow_), k, /*trans=*/false);
    return ldmatrix(b_, loc_, t.tile, add(k, pieceRow_), outer, /*trans=*/true);
  }
  /// One element per register (tf32 with K not contiguous): (outer, k).
  Value element(const OperandTile &t, Value outer, Value k) {
    Value offset = t.kContiguous() ? t.tile.offset(b_, loc_, outer, k) : t.tile.offset(b_, loc_, k, outer);
    Value value = LLVM::LoadOp::create(b_, loc_, b_.getF32Type(), gep(b_, loc_, t.tile.base, t.tile.element, offset));
    return LLVM::BitcastOp::create(b_, loc_, b_.getI32Type(), value);
  }

  OpBuilder &b_;
  Location loc_;
  gpu::MmaWarps warps_;
  bool tf32_;
  int64_t chunk_; ///< K elements of one 8x8 ldmatrix piece's row: 16 bytes
  Value warpRow_, warpCol_, pieceRow_, pieceBit0_, pieceBit1_, group_, inGroup_;
};

/// The lowered members of a tensor in an mma operand layout (f32, or two
/// 16-bit elements as a vector: KilnTypeConverter) as the b32 registers
/// mma.sync takes, and back.
SmallVector<Value> toRegisters(OpBuilder &b, Location loc, ArrayRef<Value> members) {
  SmallVector<Value> regs;
  for (Value m : members)
    regs.push_back(LLVM::BitcastOp::create(b, loc, b.getI32Type(), m));
  return regs;
}
SmallVector<Value> fromRegisters(OpBuilder &b, Location loc, ArrayRef<Value> regs, Type member) {
  SmallVector<Value> members;
  for (Value r : regs)
    members.push_back(LLVM::BitcastOp::create(b, loc, member, r));
  return members;
}

/// A K-step window of a ring slot read into an mma operand layout: the
/// layout's registers in its order (K steps, then pieces), by ldmatrix.
/// (tf32 with K not contiguous is read element by element.)
struct FragmentLoadLowering : KilnPattern<gpu::LocalLoadOp> {
  FragmentLoadLowering(const LoweringContext &context) : KilnPattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(gpu::LocalLoadOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    auto encoding = dyn_cast_or_null<gpu::MmaOperandEncodingAttr>(op.getType().getEncoding());
    if (!encoding)
      return failure();
    Location loc = op.getLoc();
    Type element = ctx.types.elementType(op.getType());
    const bool isA = encoding.getOperand() == 0, tf32 = encoding.getBits() == 32;
    OperandTile t{bufferSlot(rewriter, loc, adaptor.getBuffer(), op.getBuffer().getType(), element, adaptor.getSlot()),
                  isA ? 1 : 0};
    ArrayRef<int64_t> shape = op.getType().getShape();
    SmallVector<int64_t> offsets(2, 0);
    if (std::optional<ArrayRef<int64_t>> window = op.getOffsets())
      offsets.assign(window->begin(), window->end());
    const int kDim = isA ? 1 : 0, outerDim = 1 - kDim;
    const int64_t kStep = encoding.getKStep(), K = shape[kDim];
    gpu::MmaWarps warps{static_cast<int>(encoding.getWarpsM()), static_cast<int>(encoding.getWarpsN())};
    // Pieces of this warp along the outer dimension: A's 16 rows, B's pairs of 8 columns.
    const int64_t reps = isA ? shape[0] / (16 * warps.m) : shape[1] / (16 * warps.n);
    FragmentReader reader(rewriter, loc, warps, tf32, ctx.threadsPerWarp);
    SmallVector<Value> regs;
    for (int64_t k = 0; k < K; k += kStep)
      for (int64_t rep = 0; rep < reps; ++rep)
        llvm::append_range(regs, isA ? reader.a(t, offsets[outerDim], rep, offsets[kDim] + k)
                                     : reader.bPair(t, offsets[outerDim], rep, offsets[kDim] + k));
    auto type = cast<LLVM::LLVMStructType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, pack(rewriter, loc, type, fromRegisters(rewriter, loc, regs, type.getBody().front())));
    return success();
  }
};

struct MmaDotLowering : KilnPattern<tile::DotOp> {
  MmaDotLowering(const LoweringContext &context) : KilnPattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(tile::DotOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    if (!gpu::usesMma(op, ctx.computeCapability) || gpu::isFp8Dot(op)) // (fp8: wgmma's alone)
      return failure();
    Location loc = op.getLoc();
    auto aType = op.getA().getType(), bType = op.getB().getType(), cType = op.getC().getType();
    int64_t M = aType.getShape()[0], K = aType.getShape()[1], N = bType.getShape()[1];
    Type element = ctx.types.elementType(aType);
    Type f32 = rewriter.getF32Type();
    const bool tf32 = element.isF32(), split = tf32 && op.getPrecision() == tile::InputPrecision::tf32x3;
    const int64_t kStep = gpu::mmaKStep(element);

    Value operands[2] = {op.getA(), op.getB()};
    for (unsigned operand = 0; operand < 2; ++operand)
      if (gpu::inMmaOperandLayout(operands[operand]) &&
          cast<RankedTensorType>(operands[operand].getType()).getEncoding() !=
              gpu::mmaOperandEncoding(op, operand, ctx.numWarps))
        return rewriter.notifyMatchFailure(op, "an operand's fragments are laid out for another warp arrangement");

    // Operand tiles: a ring slot, or the registers staged in scratch; none
    // for operands already in the instruction's registers.
    auto tiles = dotOperandTiles(rewriter, loc, op, adaptor.getA(), adaptor.getB(), element, DotReader::mmaSync,
                                 ctx.threadsPerWarp);
    SmallVector<Value> aRegs, bRegs; // operands already in registers
    if (!tiles[0])
      aRegs = toRegisters(rewriter, loc, unpack(rewriter, loc, adaptor.getA()));
    if (!tiles[1])
      bRegs = toRegisters(rewriter, loc, unpack(rewriter, loc, adaptor.getB()));

    // The accumulator, in the MMA layout, as f32. One restarted from zero
    // on a condition (a persistent program's first K step of a tile) is
    // read as is: the branch below drops it.
    LinearLayout mma = gpu::mmaAccumulatorLayout(M, N, ctx.numWarps);
    Type cElement = ctx.types.elementType(cType);
    std::optional<gpu::AccumulatorReset> reset = gpu::accumulatorReset(op);
    Value c = reset ? rewriter.getRemappedValue(reset->accumulator) : adaptor.getC();
    auto from = reset ? cast<RankedTensorType>(reset->accumulator.getType()) : cType;
    SmallVector<Value> acc = convertRegisters(rewriter, loc, op, unpack(rewriter, loc, c), cElement,
                                              layoutOf(from), mma, ctx.threadsPerWarp);
    for (Value &v : acc)
      if (v.getType() != f32)
        v = LLVM::FPExtOp::create(rewriter, loc, f32, v);

    gpu::MmaWarps warps = gpu::mmaWarps(M, N, ctx.numWarps);
    int64_t mReps = M / (16 * warps.m), nTiles = N / (8 * warps.n);
    FragmentReader reader(rewriter, loc, warps, tf32, ctx.threadsPerWarp);
    std::string shape = tf32 ? "tf32" : element.isBF16() ? "bf16" : "f16";
    auto instruction = [&](const std::string &c) {
      return "mma.sync.aligned.m16n8k" + std::to_string(kStep) + ".row.col.f32." + shape + "." + shape +
             ".f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, " + c + ";";
    };
    const std::string text = instruction("{$10, $11, $12, $13}");
    // From zero: the same instruction with C a zero register of its own, so
    // that LLVM cannot merge it with the accumulating one (see `reset`).
    const std::string fromZero = "{ .reg .f32 z; mov.b32 z, 0; " + instruction("{z, z, z, z}") + " }";
    std::vector<bool> startsFromZero(acc.size() / 4, false); // per 16x8 piece
    auto accType = LLVM::LLVMStructType::getLiteral(rewriter.getContext(), {f32, f32, f32, f32});
    auto mmaSync = [&](ArrayRef<Value> aFragment, ArrayRef<Value> bFragment, int64_t r) {
      SmallVector<Value> operands(aFragment);
      llvm::append_range(operands, bFragment);
      const bool fresh = startsFromZero[r / 4];
      startsFromZero[r / 4] = false;
      if (!fresh)
        for (int q = 0; q < 4; ++q)
          operands.push_back(acc[r + q]);
      Value out = ptx(rewriter, loc, accType, fresh ? fromZero : text,
                      fresh ? "=f,=f,=f,=f,r,r,r,r,r,r" : "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", operands,
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
    // Registers a K step of the operand layouts holds: A 4 per piece of
    // 16 rows, B 2 per piece of 8 columns.
    auto loadStep = [&](int64_t k) {
      const int64_t step = k / kStep;
      StepFragments f;
      for (int64_t i = 0; i < mReps; ++i)
        f.a.push_back(fragment(tiles[0] ? reader.a(OperandTile{*tiles[0], 1}, 0, i, k)
                                        : SmallVector<Value>(ArrayRef(aRegs).slice(4 * (step * mReps + i), 4))));
      f.b.resize(nTiles);
      for (int64_t p = 0; p < nTiles / 2; ++p) {
        Fragment pair = fragment(tiles[1] ? reader.bPair(OperandTile{*tiles[1], 0}, 0, p, k)
                                          : SmallVector<Value>(ArrayRef(bRegs).slice(2 * (step * nTiles + 2 * p), 4)));
        auto half = [&](ArrayRef<Value> regs, int h) { return SmallVector<Value>(regs.slice(2 * h, 2)); };
        f.b[2 * p] = {half(pair.main, 0), split ? half(pair.error, 0) : SmallVector<Value>{}};
        f.b[2 * p + 1] = {half(pair.main, 1), split ? half(pair.error, 1) : SmallVector<Value>{}};
      }
      return f;
    };
    // Each K step's fragments are read before the previous step's mma.sync
    // are issued, so their ldmatrix latency hides behind those.
    auto accumulate = [&] {
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
    };
    if (!reset) {
      accumulate();
    } else {
      // mma.sync has no scale-d: selecting zero into every accumulator
      // register costs a select each per K loop iteration, where a uniform
      // branch around two copies of the product costs one. The restarting
      // side's first mma.sync of each piece reads a zero register instead
      // of C: different inline assembly, which LLVM does not merge with the
      // other side's into one fed by selects.
      SmallVector<Type> types(acc.size(), f32);
      auto branch = scf::IfOp::create(rewriter, loc, types, rewriter.getRemappedValue(reset->condition),
                                      /*withElseRegion=*/true);
      const SmallVector<Value> kept = acc;
      for (bool restart : {true, false}) {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(restart ? branch.thenBlock() : branch.elseBlock());
        acc = kept;
        startsFromZero.assign(startsFromZero.size(), restart);
        accumulate();
        scf::YieldOp::create(rewriter, loc, acc);
      }
      acc = SmallVector<Value>(branch.getResults());
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
  patterns.add<MmaDotLowering, FragmentLoadLowering>(context);
}

} // namespace kiln::lowering
