//===- SharedToLLVM.cpp - shared-memory buffers and async copies ----------===//
//
// kgpu.local_alloc is an offset into the program's shared memory (placed
// by ConvertKGpuToLLVM after the scratch region); async copies are
// `cp.async` of the load's vectors (4, 8 or 16 bytes, zero-filled where
// masked off); waits are `cp.async.wait_group` then a barrier.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "compiler/dialect/gpu/Mma.h"

using namespace mlir;

namespace kiln::lowering {

using gpu::Coord;
using gpu::HwDim;
using gpu::LinearLayout;

SwizzledTile::SwizzledTile(Value base, Type element, ArrayRef<int64_t> tileShape, gpu::SharedEncodingAttr encoding)
    : base(base), element(element), vec(encoding.getVec()), perPhase(encoding.getPerPhase()),
      maxPhase(encoding.getMaxPhase()), contiguousDim(encoding.getOrder()[0]) {
  cols = tileShape[contiguousDim];
  rows = tileShape[1 - contiguousDim];
}

int64_t SwizzledTile::blockCols() const {
  return std::min<int64_t>(cols, atomBytes / (element.getIntOrFloatBitWidth() / 8));
}

Value SwizzledTile::offset(OpBuilder &b, Location loc, Value row, Value col) const {
  auto c = [&](int64_t v) { return i32Const(b, loc, v); };
  // Rows longer than 128 bytes are stored as 128-byte-wide column blocks,
  // one after another (each rows x 128 bytes): the swizzle atoms wgmma reads
  // N-major operands in; ldmatrix and copies see the same banks either way.
  const int64_t blockCols = this->blockCols();
  Value block = LLVM::UDivOp::create(b, loc, col, c(blockCols));
  Value inBlock = LLVM::URemOp::create(b, loc, col, c(blockCols));
  Value phase = LLVM::URemOp::create(b, loc, LLVM::UDivOp::create(b, loc, row, c(perPhase)), c(maxPhase));
  Value chunk = LLVM::XOrOp::create(b, loc, LLVM::UDivOp::create(b, loc, inBlock, c(vec)), phase);
  Value within = LLVM::URemOp::create(b, loc, inBlock, c(vec));
  Value rowStart = LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, block, c(rows * blockCols)),
                                       LLVM::MulOp::create(b, loc, row, c(blockCols)));
  return LLVM::AddOp::create(b, loc, rowStart,
                             LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, chunk, c(vec)), within));
}

Value SwizzledTile::address(OpBuilder &b, Location loc, ArrayRef<Value> coord) const {
  return gep(b, loc, base, element, offset(b, loc, coord[1 - contiguousDim], coord[contiguousDim]));
}

std::optional<int64_t> SwizzledTile::registerDelta(const LinearLayout &layout, int r) const {
  const Coord fixed = layout.applyOne(HwDim::Register, r);
  for (int d = 0; d < layout.rank(); ++d) {
    int64_t threadBits = 0;
    for (HwDim h : {HwDim::Lane, HwDim::Warp})
      for (int bit = 0; bit < layout.bits(h); ++bit)
        threadBits |= layout.basis(h, bit)[d];
    if (fixed[d] & threadBits)
      return std::nullopt; // XORed into a thread's bits: no constant step
  }
  const int64_t row = fixed[1 - contiguousDim], col = fixed[contiguousDim];
  const int64_t blockCols = this->blockCols();
  if (row % (int64_t(perPhase) * maxPhase) != 0 || col % blockCols != 0)
    return std::nullopt;
  return col / blockCols * rows * blockCols + row * blockCols;
}

std::array<std::optional<SwizzledTile>, 2> dotOperandTiles(ConversionPatternRewriter &rewriter, Location loc,
                                                           tile::DotOp op, Value loweredA, Value loweredB,
                                                           Type element, DotReader reader, int threadsPerWarp,
                                                           bool aFromRegisters) {
  const bool kMajor = reader != DotReader::mmaSync;
  auto staged = [](Value operand) { return !gpu::ringSlotLoad(operand) && !gpu::inMmaOperandLayout(operand); };
  bool staging = (!aFromRegisters && staged(op.getA())) || staged(op.getB());
  if (staging)
    barrier(rewriter, loc); // earlier users of the scratch are done
  int64_t scratch = 0;
  auto tileOf = [&](Value operand, Value lowered, int kDim) -> std::optional<SwizzledTile> {
    auto type = cast<RankedTensorType>(operand.getType());
    if (gpu::inMmaOperandLayout(operand))
      return std::nullopt; // already in the instruction's registers
    if (auto local = gpu::ringSlotLoad(operand))
      return bufferSlot(rewriter, loc, rewriter.getRemappedValue(local.getBuffer()), local.getBuffer().getType(),
                        element, rewriter.getRemappedValue(local.getSlot()));
    SwizzledTile t = stageSwizzled(rewriter, loc, op, unpack(rewriter, loc, lowered), element, layoutOf(type),
                                   /*contiguousDim=*/kMajor ? kDim : -1, /*fallbackDim=*/kDim, scratch,
                                   threadsPerWarp);
    scratch += type.getNumElements() * (element.getIntOrFloatBitWidth() / 8);
    return t;
  };
  std::optional<SwizzledTile> a = aFromRegisters ? std::nullopt : tileOf(op.getA(), loweredA, 1);
  std::array<std::optional<SwizzledTile>, 2> tiles{a, tileOf(op.getB(), loweredB, 0)};
  if (staging) {
    if (reader == DotReader::wgmma) // this thread's stores before the async proxy reads them, for everyone
      ptx(rewriter, loc, Type(), "fence.proxy.async.shared::cta;", "", {});
    barrier(rewriter, loc);
  }
  return tiles;
}

SwizzledTile bufferSlot(OpBuilder &b, Location loc, Value buffer, RankedTensorType type, Type llvmElement,
                        Value slot) {
  auto encoding = cast<gpu::SharedEncodingAttr>(type.getEncoding());
  ArrayRef<int64_t> tile = type.getShape().drop_front();
  Value start = LLVM::MulOp::create(b, loc, slot, i32Const(b, loc, tile[0] * tile[1]));
  return SwizzledTile(gep(b, loc, buffer, llvmElement, start), llvmElement, tile, encoding);
}

Value sharedAddress(OpBuilder &b, Location loc, Value pointer) {
  return LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), pointer);
}

namespace {

/// The dimension a layout's registers run along (its first register
/// basis), when it holds at least two consecutive elements; else -1.
int contiguousDimOf(const LinearLayout &layout) {
  if (layout.bits(HwDim::Register) == 0)
    return -1;
  const Coord &first = layout.basis(HwDim::Register, 0);
  for (int d = 0; d < layout.rank(); ++d)
    if (first[d] == 1 && layout.contiguousRegisters(d) >= 2)
      return d;
  return -1;
}

/// How many consecutive registers along `dim` can go in one vector store
/// of at most `limit` elements: every other basis must keep the runs
/// aligned.
int storeRun(const LinearLayout &layout, int dim, int limit) {
  int run = std::min(layout.contiguousRegisters(dim), limit);
  auto aligned = [&](const Coord &basis) { return basis[dim] % run == 0; };
  for (HwDim h : {HwDim::Register, HwDim::Lane, HwDim::Warp})
    for (int bit = 0; bit < layout.bits(h); ++bit)
      if (!(h == HwDim::Register && (1 << bit) < run) && !aligned(layout.basis(h, bit)))
        return 1;
  return std::max(run, 1);
}

/// Stores the registers of `layout` into `tile` in vectors of up to `vec`
/// elements along `contiguous`: all of them (columns = 0), or those whose
/// coordinate along dimension 1 lies in [firstColumn, firstColumn +
/// columns), shifted left by firstColumn. Which registers those are must not
/// depend on the thread (the caller checks).
void storeRegisters(OpBuilder &b, Location loc, const SwizzledTile &tile, ArrayRef<Value> values, Type element,
                    const LinearLayout &layout, int contiguous, int vec, int64_t firstColumn, int64_t columns,
                    int threadsPerWarp) {
  const int64_t bytes = storageBytes(element);
  ThreadIds ids = threadIds(b, loc, threadsPerWarp);
  SmallVector<Value> thread = threadCoords(b, loc, layout, ids);
  Value owner = ownerIfCopies(b, loc, layout, ids);
  int run = storeRun(layout, contiguous, vec);
  auto vectorType = VectorType::get(run, element);
  for (int r = 0; r < layout.registers(); r += run) {
    SmallVector<Value> coord = registerCoords(b, loc, layout, r, thread);
    if (columns > 0) {
      const int64_t column = layout.applyOne(HwDim::Register, r)[1];
      if (column < firstColumn || column >= firstColumn + columns)
        continue;
      if (firstColumn != 0)
        coord[1] = LLVM::SubOp::create(b, loc, coord[1], i32Const(b, loc, firstColumn));
    }
    Value address = tile.address(b, loc, coord);
    Value vector = LLVM::UndefOp::create(b, loc, vectorType);
    for (int j = 0; j < run; ++j)
      vector = LLVM::InsertElementOp::create(b, loc, vector, values[r + j], i32Const(b, loc, j));
    storeShared(b, loc, address, vector, owner, /*alignment=*/run * bytes);
  }
}

} // namespace

SwizzledTile stageSwizzled(OpBuilder &b, Location loc, Operation *anchor, ArrayRef<Value> values, Type element,
                           const LinearLayout &layout, int contiguousDim, int fallbackDim, int64_t offset,
                           int threadsPerWarp) {
  int contiguous = contiguousDim >= 0 ? contiguousDim : contiguousDimOf(layout);
  if (contiguous < 0)
    contiguous = fallbackDim;
  unsigned order[] = {static_cast<unsigned>(contiguous), static_cast<unsigned>(1 - contiguous)};
  int64_t bytes = storageBytes(element);
  auto encoding = gpu::swizzledEncoding(b.getContext(), layout.shape()[contiguous], bytes, order);
  Value base = gep(b, loc, sharedBase(b, loc, anchor), b.getI8Type(), i32Const(b, loc, offset));
  SwizzledTile tile(base, element, layout.shape(), encoding);
  storeRegisters(b, loc, tile, values, element, layout, contiguous, static_cast<int>(encoding.getVec()),
                 /*firstColumn=*/0, /*columns=*/0, threadsPerWarp);
  return tile;
}

SwizzledTile stageColumns(OpBuilder &b, Location loc, Operation *anchor, ArrayRef<Value> values, Type element,
                          const LinearLayout &layout, int64_t firstColumn, int64_t columns, int64_t offset,
                          int threadsPerWarp) {
  unsigned order[] = {1, 0};
  int64_t bytes = storageBytes(element);
  auto encoding = gpu::swizzledEncoding(b.getContext(), columns, bytes, order);
  Value base = gep(b, loc, sharedBase(b, loc, anchor), b.getI8Type(), i32Const(b, loc, offset));
  SwizzledTile tile(base, element, {layout.shape()[0], columns}, encoding);
  storeRegisters(b, loc, tile, values, element, layout, /*contiguous=*/1, static_cast<int>(encoding.getVec()),
                 firstColumn, columns, threadsPerWarp);
  return tile;
}

namespace {

struct LocalAllocLowering : KilnPattern<gpu::LocalAllocOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::LocalAllocOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    auto offset = op->getAttrOfType<IntegerAttr>("kgpu.offset");
    if (!offset)
      return rewriter.notifyMatchFailure(op, "no shared-memory offset assigned");
    Location loc = op.getLoc();
    Value base = sharedBase(rewriter, loc, op);
    rewriter.replaceOp(op, gep(rewriter, loc, base, rewriter.getI8Type(), i32Const(rewriter, loc, offset.getInt())));
    return success();
  }
};

struct AsyncCopyLowering : KilnPattern<gpu::AsyncCopyOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::AsyncCopyOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto bufferType = op.getBuffer().getType();
    Type element = ctx.types.elementType(bufferType);
    int64_t width = accessWidth(ctx, op.getPtr(), op.getMask(), element);
    int64_t bytes = width * storageBytes(element);
    if (bytes != 4 && bytes != 8 && bytes != 16)
      return rewriter.notifyMatchFailure(op, "cp.async moves 4, 8 or 16 bytes");
    SwizzledTile tile = bufferSlot(rewriter, loc, adaptor.getBuffer(), bufferType, element, adaptor.getSlot());
    SmallVector<Value> ptrs = unpack(rewriter, loc, adaptor.getPtr());
    SmallVector<Value> masks;
    if (adaptor.getMask())
      masks = unpack(rewriter, loc, adaptor.getMask());
    LinearLayout layout = layoutOf(op.getPtr().getType());
    ThreadIds ids = threadIds(rewriter, loc, ctx.threadsPerWarp);
    SmallVector<Value> thread = threadCoords(rewriter, loc, layout, ids);
    // 16-byte copies may bypass L1 (.cg); smaller ones must go through it.
    std::string text = std::string("cp.async.") + (bytes == 16 ? "cg" : "ca") + ".shared.global [$0], [$1], " +
                       std::to_string(bytes) + ", $2;";
    // Threads holding copies of an element would copy it at once to one
    // place (a race, however equal the bytes): their owner alone copies.
    Value owner = ownerIfCopies(rewriter, loc, layout, ids);
    if (owner)
      text = "{ .reg .pred p; setp.ne.b32 p, $3, 0; @p " + text + " }";
    // Masked-off copies write zeros and read nothing: the ignore-src
    // predicate (one predicate per copy; a byte count chosen by selects
    // would cost ptxas two selects and a compare per copy).
    Value yes = LLVM::ConstantOp::create(rewriter, loc, rewriter.getI1Type(), rewriter.getBoolAttr(true));
    // Registers a constant step from the first share its address (the
    // step folds into the instruction's offset: fewer registers live in a
    // pipelined loop, no per-copy arithmetic).
    Value first = tile.address(rewriter, loc, registerCoords(rewriter, loc, layout, 0, thread));
    for (size_t r = 0; r < ptrs.size(); r += width) {
      std::optional<int64_t> delta = tile.registerDelta(layout, static_cast<int>(r));
      Value dst = delta ? gep(rewriter, loc, first, element, i32Const(rewriter, loc, *delta))
                        : tile.address(rewriter, loc, registerCoords(rewriter, loc, layout, r, thread));
      Value copy = adaptor.getPred();
      if (!masks.empty())
        copy = LLVM::AndOp::create(rewriter, loc, copy, masks[r]);
      Value ignore = LLVM::XOrOp::create(rewriter, loc, copy, yes);
      SmallVector<Value> operands{sharedAddress(rewriter, loc, dst), ptrs[r], ignore};
      if (owner)
        operands.push_back(LLVM::ZExtOp::create(rewriter, loc, rewriter.getI32Type(), owner));
      ptx(rewriter, loc, Type(), text, owner ? "r,l,b,r" : "r,l,b", operands);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct AsyncCommitLowering : KilnPattern<gpu::AsyncCommitOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::AsyncCommitOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    ptx(rewriter, op.getLoc(), Type(), "cp.async.commit_group;", "", {});
    rewriter.eraseOp(op);
    return success();
  }
};

struct AsyncWaitLowering : KilnPattern<gpu::AsyncWaitOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::AsyncWaitOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    ptx(rewriter, op.getLoc(), Type(), "cp.async.wait_group " + std::to_string(op.getPending()) + ";", "", {});
    barrier(rewriter, op.getLoc());
    rewriter.eraseOp(op);
    return success();
  }
};

struct LocalLoadLowering : KilnPattern<gpu::LocalLoadOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::LocalLoadOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = ctx.types.elementType(op.getType());
    SwizzledTile tile = bufferSlot(rewriter, loc, adaptor.getBuffer(), op.getBuffer().getType(), element,
                                   adaptor.getSlot());
    LinearLayout layout = layoutOf(op.getType());
    ThreadIds ids = threadIds(rewriter, loc, ctx.threadsPerWarp);
    SmallVector<Value> thread = threadCoords(rewriter, loc, layout, ids);
    std::optional<ArrayRef<int64_t>> offsets = op.getOffsets();
    SmallVector<Value> values;
    for (int r = 0; r < layout.registers(); ++r) {
      SmallVector<Value> coord = registerCoords(rewriter, loc, layout, r, thread);
      if (offsets) // a window of the slot
        for (auto [c, offset] : llvm::zip(coord, *offsets))
          c = LLVM::AddOp::create(rewriter, loc, c, i32Const(rewriter, loc, offset));
      values.push_back(LLVM::LoadOp::create(rewriter, loc, element, tile.address(rewriter, loc, coord)));
    }
    rewriter.replaceOp(op, pack(rewriter, loc, getTypeConverter()->convertType(op.getType()), values));
    return success();
  }
};

/// After a barrier (every thread's reads of the slot before it are done,
/// wgmma's among them: a held block stored again in an outer loop), each
/// thread's registers into the slot's swizzled tile, in vectors along the
/// buffer's contiguous dimension; then, for wgmma's reads through the async
/// proxy (NVIDIA's) and every other thread's, a proxy fence and a barrier.
/// An unsynchronized store is the stores alone.
struct LocalStoreLowering : KilnPattern<gpu::LocalStoreOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::LocalStoreOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto bufferType = op.getBuffer().getType();
    Type element = ctx.types.elementType(bufferType);
    SwizzledTile tile = bufferSlot(rewriter, loc, adaptor.getBuffer(), bufferType, element, adaptor.getSlot());
    const bool synchronized = !op.getUnsynchronized();
    if (synchronized)
      barrier(rewriter, loc);
    storeRegisters(rewriter, loc, tile, unpack(rewriter, loc, adaptor.getValue()), element,
                   layoutOf(op.getValue().getType()), static_cast<int>(tile.contiguousDim),
                   static_cast<int>(tile.vec), /*firstColumn=*/0, /*columns=*/0, ctx.threadsPerWarp);
    if (synchronized) {
      if (!ctx.amd)
        ptx(rewriter, loc, Type(), "fence.proxy.async.shared::cta;", "", {});
      barrier(rewriter, loc);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void populateSharedPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<LocalAllocLowering, AsyncCopyLowering, AsyncCommitLowering, AsyncWaitLowering, LocalLoadLowering,
               LocalStoreLowering>(context);
}

} // namespace kiln::lowering
