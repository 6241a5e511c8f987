//===- WgmmaToLLVM.cpp - tile.dot on Hopper's warpgroup MMA (wgmma) -------===//
//
// When layout assignment gave a dot the wgmma accumulator layout (Mma.h),
// each warpgroup (4 warps) multiplies its 64-row blocks of A by all of B,
// 32 bytes of K at a time (`wgmma.mma_async.m64nNk16` for f16/bf16, `k8`
// for tf32, whose operands the hardware truncates to tf32, `k32` for fp8,
// e4m3 or e5m2 on either side), reading both
// operands straight from shared memory through matrix descriptors. The
// operands must sit K-major in the swizzled layout, which for rows of 32,
// 64 or 128 bytes is exactly the hardware's 32/64/128-byte swizzle (B may
// also be N-major, in 128-byte column blocks: the N-major 128-byte atoms):
// ring slots from PipelineLoops, or registers staged K-major here. A
// 16-bit A that layout assignment left in the register-A layout (a value
// computed in registers, as attention's P; one loaded once, as its Q) is
// read from registers instead (`{a0, a1, a2, a3}`): no staging. The
// accumulator stays in registers across the asynchronous group, which this
// lowering commits and waits for, unless the dot's result goes to a
// kgpu.warpgroup_wait (PipelineLoops leaves it in flight): then that op waits.
// An accumulator restarted from zero by a select (gpu::accumulatorReset)
// becomes the first K step's scale-d operand.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "compiler/dialect/gpu/Mma.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln::lowering {

using gpu::LinearLayout;

namespace {

/// A wgmma matrix descriptor for the tile at shared address `address` (i32):
/// the start address, the leading and stride byte offsets, and the swizzle
/// mode (128-byte rows: 1, 64: 2, 32: 3), each field in 16-byte units.
Value descriptor(OpBuilder &b, Location loc, Value address, int64_t leading, int64_t stride, int64_t rowBytes) {
  Type i64 = b.getI64Type();
  auto c64 = [&](int64_t v) { return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v)).getResult(); };
  int64_t mode = rowBytes == 128 ? 1 : rowBytes == 64 ? 2 : 3;
  int64_t fixed = (((leading >> 4) & 0x3FFF) << 16) | (((stride >> 4) & 0x3FFF) << 32) | (mode << 62);
  Value start = LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, LLVM::ZExtOp::create(b, loc, i64, address), c64(4)),
                                    c64(0x3FFF));
  return LLVM::OrOp::create(b, loc, start, c64(fixed));
}

/// `values` (f32 or 32-bit integers) passed through inline PTX `text` (a
/// wgmma wait or fence), each output tied to its input: the registers
/// cannot be read before it, nor written after it, nor copied elsewhere
/// while wgmma may still use them. Without values, just `text`.
SmallVector<Value> passThrough(OpBuilder &b, Location loc, const std::string &text, ArrayRef<Value> values) {
  if (values.empty()) {
    ptx(b, loc, Type(), text, "", {});
    return {};
  }
  std::string constraints; // outputs, then each input tied to its output
  SmallVector<Type> types;
  for (Value v : values) {
    constraints += v.getType().isF32() ? "=f," : "=r,";
    types.push_back(v.getType());
  }
  for (size_t r = 0; r < values.size(); ++r)
    constraints += std::to_string(r) + (r + 1 < values.size() ? "," : "");
  Value out = ptx(b, loc, LLVM::LLVMStructType::getLiteral(b.getContext(), types), text, constraints, values,
                  /*sideEffects=*/true);
  return unpack(b, loc, out);
}

/// `wgmma.fence` with the registers the next wgmma group reads (f32
/// accumulators, 32-bit A pairs) passed through it: LLVM then computes them
/// before the fence, as PTX requires of every register write the group
/// reads (a write between the two makes ptxas serialize all of the
/// kernel's wgmma groups).
void fenceRegisters(OpBuilder &b, Location loc, MutableArrayRef<Value> accumulators, MutableArrayRef<Value> pairs) {
  SmallVector<Value> values(accumulators.begin(), accumulators.end());
  values.append(pairs.begin(), pairs.end());
  values = passThrough(b, loc, "wgmma.fence.sync.aligned;", values);
  std::copy(values.begin(), values.begin() + accumulators.size(), accumulators.begin());
  std::copy(values.begin() + accumulators.size(), values.end(), pairs.begin());
}

std::string waitText(int64_t pending) {
  return "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";";
}

/// Whether the dot's group is left in flight for kgpu.warpgroup_wait.
bool leftInFlight(tile::DotOp op) {
  return !op->use_empty() && llvm::all_of(op->getUsers(), [](Operation *user) { return isa<gpu::WarpgroupWaitOp>(user); });
}

struct WgmmaDotLowering : KilnPattern<tile::DotOp> {
  WgmmaDotLowering(const LoweringContext &context) : KilnPattern(context, /*benefit=*/3) {}

  LogicalResult matchAndRewrite(tile::DotOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    if (!gpu::isWgmmaDot(op, ctx.computeCapability, ctx.numWarps))
      return failure();
    Location loc = op.getLoc();
    auto aType = op.getA().getType(), bType = op.getB().getType(), cType = op.getC().getType();
    int64_t M = aType.getShape()[0], K = aType.getShape()[1], N = bType.getShape()[1];
    Type element = ctx.types.elementType(aType);
    const int64_t bytes = element.getIntOrFloatBitWidth() / 8, rowBytes = K * bytes;
    const int64_t kStep = 32 / bytes; // one instruction's K: 32 bytes of each K row

    // Operand tiles: ring slots, which must be K-major (B: or N-major), or
    // registers staged K-major.
    if (gpu::inMmaOperandLayout(op.getA()) || gpu::inMmaOperandLayout(op.getB()))
      return rewriter.notifyMatchFailure(op, "operands already in mma.sync's registers");
    auto ringMajor = [](Value operand) -> int {
      auto local = gpu::ringSlotLoad(operand);
      return local ? static_cast<int>(cast<gpu::SharedEncodingAttr>(local.getBuffer().getType().getEncoding()).getOrder()[0])
                   : -1;
    };
    int aMajor = ringMajor(op.getA()), bMajor = ringMajor(op.getB());
    if (aMajor == 0 || (bMajor == 1 && (N % 64 != 0 || !gpu::wgmmaTakesNMajorB(op))))
      return rewriter.notifyMatchFailure(op, "a wgmma operand's slot is neither K-major nor (B, 16-bit) N-major");
    // A already in the registers wgmma reads it from (a computed operand,
    // or one loaded once: layout assignment put it there) is not staged.
    const bool registerA = gpu::wgmmaReadsRegisterA(op, ctx.numWarps);
    auto tiles = dotOperandTiles(rewriter, loc, op, adaptor.getA(), adaptor.getB(), element, DotReader::wgmma,
                                 ctx.threadsPerWarp, registerA);
    const SwizzledTile &b = *tiles[1];
    // B N-major: 128-byte atoms of 64 columns x BLOCK_K rows side by side
    // (leading offset: one atom), 8-row groups 1024 bytes apart; a K step of
    // 16 moves 16 rows down. K-major operands: rows of K, 8-row groups
    // 8 * rowBytes apart, a K step moves 32 bytes along the row.
    const bool bNMajor = b.contiguousDim == 1;

    // The accumulator (already in the wgmma layout; converted otherwise).
    LinearLayout layout = gpu::wgmmaAccumulatorLayout(M, N, ctx.numWarps);
    const bool async = leftInFlight(op);
    if (async && (layoutOf(op.getType()) != layout || !ctx.types.elementType(cType).isF32()))
      return rewriter.notifyMatchFailure(op, "an in-flight wgmma's result must be its f32 accumulator as is");
    if (async && registerA && !op->hasAttr(gpu::kInFlightRegisterA))
      return rewriter.notifyMatchFailure(op, "an in-flight wgmma reads its A from shared memory, unless its "
                                             "registers outlive the group");
    // An accumulator restarted from zero on a condition: scale-d = 0 then
    // ignores it (the select stays unused).
    Type f32 = rewriter.getF32Type();
    std::optional<gpu::AccumulatorReset> reset = gpu::accumulatorReset(op);
    Value c = reset ? rewriter.getRemappedValue(reset->accumulator) : adaptor.getC();
    auto from = reset ? cast<RankedTensorType>(reset->accumulator.getType()) : cType;
    // An accumulator of zeros is not read either (scale-d = 0): registers
    // set to zero between the fence and the wgmma would make ptxas
    // serialize every wgmma group of the kernel.
    const bool fromZero = !reset && matchPattern(op.getC(), m_AnyZeroFloat());
    SmallVector<Value> acc =
        fromZero ? SmallVector<Value>(layout.registers(), LLVM::PoisonOp::create(rewriter, loc, f32))
                 : convertRegisters(rewriter, loc, op, unpack(rewriter, loc, c), f32, layoutOf(from), layout,
                                    ctx.threadsPerWarp);

    // This warpgroup's 64-row blocks: rows 64 * (group + i * groups).
    const int groups = ctx.numWarps / 4;
    const int64_t blocks = M / (64 * groups);
    const int64_t perBlock = N / 2; // accumulator registers of one m64nN
    auto c32 = [&](int64_t v) { return i32Const(rewriter, loc, v); };
    // The warpgroup, read from lane 0: the same in every lane, which ptxas
    // then knows, so the descriptors built from it stay in uniform registers
    // (no moves from each thread's registers before every wgmma). Read once,
    // at the kernel's start: in a loop the shuffle would run every
    // iteration (neither LLVM nor ptxas moves it out).
    Value group;
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(&op->getParentOfType<FunctionOpInterface>().getFunctionBody().front());
      ThreadIds entry = threadIds(rewriter, loc, ctx.threadsPerWarp);
      group = ptx(rewriter, loc, rewriter.getI32Type(), "shfl.sync.idx.b32 $0, $1, 0, 0x1f, -1;", "=r,r",
                  {LLVM::UDivOp::create(rewriter, loc, entry.warp, i32Const(rewriter, loc, 4))},
                  /*sideEffects=*/false);
    }
    Value bBase = sharedAddress(rewriter, loc, b.base);

    // Operands: the accumulator (outputs, then tied inputs), A (a
    // descriptor, or four registers of two 16-bit elements), B's
    // descriptor, scale-d.
    const int64_t aOperands = registerA ? 4 : 1;
    const int64_t bIndex = 2 * perBlock + aOperands, scaleIndex = bIndex + 1;
    // (fp8: each operand its own format, e4m3 or e5m2.)
    auto typeName = [](Type t) -> std::string {
      return t.isF32() ? "tf32" : t.isBF16() ? "bf16" : t.isF16() ? "f16" : isa<Float8E4M3FNType>(t) ? "e4m3" : "e5m2";
    };
    const bool sixteenBit = bytes == 2;
    std::string text = "{ .reg .pred p; setp.ne.b32 p, $" + std::to_string(scaleIndex) +
                       ", 0; wgmma.mma_async.sync.aligned.m64n" + std::to_string(N) + "k" + std::to_string(kStep) +
                       ".f32." + typeName(aType.getElementType()) + "." + typeName(bType.getElementType()) + " {";
    std::string constraints;
    for (int64_t r = 0; r < perBlock; ++r) {
      text += (r ? ", $" : "$") + std::to_string(r);
      constraints += "=f,";
    }
    text += "}, ";
    if (registerA) {
      text += "{";
      for (int64_t r = 0; r < 4; ++r)
        text += (r ? ", $" : "$") + std::to_string(2 * perBlock + r);
      text += "}";
    } else {
      text += "$" + std::to_string(2 * perBlock);
    }
    // Scale-d p, A and B scales 1, then (16-bit only) the transposes
    // (registers have no A transpose).
    text += ", $" + std::to_string(bIndex) + ", p, 1, 1" +
            (sixteenBit ? std::string(registerA ? ", " : ", 0, ") + (bNMajor ? "1" : "0") : std::string()) + "; }";
    for (int64_t r = 0; r < perBlock; ++r)
      constraints += std::to_string(r) + ",";
    constraints += registerA ? "r,r,r,r,l,r" : "l,l,r";
    auto resultType = LLVM::LLVMStructType::getLiteral(rewriter.getContext(), SmallVector<Type>(perBlock, f32));

    // Scale-d: 1 accumulates, 0 starts from zero; only the first K step's
    // instructions may start from zero.
    Value one = c32(1);
    Value firstScale = reset      ? LLVM::SelectOp::create(rewriter, loc, rewriter.getRemappedValue(reset->condition), c32(0), one)
                       : fromZero ? c32(0)
                                  : one;
    // The first K step's descriptors; a later step's are those plus its
    // offset in 16-byte units (the start field, bits 0-13, holds any shared
    // address below 256 KB: adding never carries into the next field), so
    // each step costs one add an operand instead of forming a descriptor.
    // K-major rows longer than 128 bytes lie in 128-byte column blocks of
    // all of the tile's rows, one after another (SwizzledTile): a K step
    // past a block starts in the next one, and rows are 128 bytes apart.
    const int64_t atomRow = std::min<int64_t>(rowBytes, 128);
    auto kMajorOffset = [](int64_t kBytes, int64_t tileRows) { return kBytes / 128 * tileRows * 128 + kBytes % 128; };
    Value bFirst = bNMajor ? descriptor(rewriter, loc, bBase, /*leading=*/K * 128, /*stride=*/1024, /*rowBytes=*/128)
                           : descriptor(rewriter, loc, bBase, /*leading=*/16, /*stride=*/8 * atomRow, atomRow);
    SmallVector<Value> aFirst, aPairs;
    if (registerA) {
      // Block i's K step j is the thread's elements i * K/2 + 8j ... + 7:
      // pairs of them, each one 32-bit register.
      SmallVector<Value> elements = unpack(rewriter, loc, adaptor.getA());
      auto pairType = VectorType::get({2}, element);
      for (size_t e = 0; e + 1 < elements.size(); e += 2) {
        Value pair = LLVM::PoisonOp::create(rewriter, loc, pairType);
        pair = LLVM::InsertElementOp::create(rewriter, loc, pair, elements[e], c32(0));
        pair = LLVM::InsertElementOp::create(rewriter, loc, pair, elements[e + 1], c32(1));
        aPairs.push_back(LLVM::BitcastOp::create(rewriter, loc, rewriter.getI32Type(), pair));
      }
    } else {
      Value aBase = sharedAddress(rewriter, loc, tiles[0]->base);
      for (int64_t i = 0; i < blocks; ++i) {
        Value rows = LLVM::MulOp::create(rewriter, loc, LLVM::AddOp::create(rewriter, loc, group, c32(i * groups)),
                                         c32(64 * atomRow));
        aFirst.push_back(descriptor(rewriter, loc, LLVM::AddOp::create(rewriter, loc, aBase, rows), /*leading=*/16,
                                    /*stride=*/8 * atomRow, atomRow));
      }
    }
    fenceRegisters(rewriter, loc, fromZero ? MutableArrayRef<Value>() : MutableArrayRef<Value>(acc), aPairs);
    auto advanced = [&](Value first, int64_t bytesIn) -> Value {
      if (bytesIn == 0)
        return first;
      Type i64 = rewriter.getI64Type();
      return LLVM::AddOp::create(rewriter, loc, first,
                                 LLVM::ConstantOp::create(rewriter, loc, i64, rewriter.getI64IntegerAttr(bytesIn >> 4)));
    };
    for (int64_t k = 0; k < K; k += kStep) {
      Value bDesc = advanced(bFirst, bNMajor ? k * 128 : kMajorOffset(k * bytes, N));
      for (int64_t i = 0; i < blocks; ++i) {
        SmallVector<Value> operands(acc.begin() + i * perBlock, acc.begin() + (i + 1) * perBlock);
        if (registerA) {
          auto first = aPairs.begin() + i * (K / 4) + k / 4;
          operands.append(first, first + 4);
        } else {
          operands.push_back(advanced(aFirst[i], kMajorOffset(k * bytes, M)));
        }
        operands.push_back(bDesc);
        operands.push_back(k == 0 ? firstScale : one);
        Value out = ptx(rewriter, loc, resultType, text, constraints, operands, /*sideEffects=*/true);
        SmallVector<Value> results = unpack(rewriter, loc, out);
        std::copy(results.begin(), results.end(), acc.begin() + i * perBlock);
      }
    }
    ptx(rewriter, loc, Type(), "wgmma.commit_group.sync.aligned;", "", {});
    // Otherwise the results are read (and the slots refilled) right after.
    if (!async)
      acc = passThrough(rewriter, loc, waitText(0), acc);

    Type cElement = ctx.types.elementType(cType);
    SmallVector<Value> result =
        convertRegisters(rewriter, loc, op, acc, cElement, layout, layoutOf(op.getType()), ctx.threadsPerWarp);
    rewriter.replaceOp(op, pack(rewriter, loc, getTypeConverter()->convertType(op.getType()), result));
    return success();
  }
};

struct WarpgroupWaitLowering : KilnPattern<gpu::WarpgroupWaitOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::WarpgroupWaitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (!ctx.types.elementType(op.getType()).isF32())
      return rewriter.notifyMatchFailure(op, "wgmma accumulators are f32");
    SmallVector<Value> values = passThrough(rewriter, loc, waitText(op.getPending()), unpack(rewriter, loc, adaptor.getAcc()));
    rewriter.replaceOp(op, pack(rewriter, loc, getTypeConverter()->convertType(op.getType()), values));
    return success();
  }
};

} // namespace

void populateWgmmaPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<WgmmaDotLowering, WarpgroupWaitLowering>(context);
}

} // namespace kiln::lowering
