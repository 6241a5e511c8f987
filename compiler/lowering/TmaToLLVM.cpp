//===- TmaToLLVM.cpp - the copy engine (TMA) and its transaction barriers -===//
//
// Copy-engine loads are started by one thread (thread 0) and complete on an
// `mbarrier` in shared memory: that thread arrives on the slot's barrier
// announcing the bytes (`mbarrier.arrive.expect_tx`) and issues the boxes
// (`cp.async.bulk.tensor`), which count those bytes down as they land;
// every thread then waits for the barrier's phase (`mbarrier.try_wait.parity`).
// The tensor map is a kernel parameter passed by value (`.param`, 64-byte
// aligned, grid constant): its generic address is what the copy takes.
//
// Copy-engine stores go the other way from a staging buffer and complete as
// bulk groups of the issuing thread (DescriptorStoreLowering below).
//
// A warp-specialized program runs a producer warpgroup past its consumers:
// `kgpu.producer` becomes "if this is the producer: give registers up
// (setmaxnreg.dec), its first thread runs the region, then it exits; else
// take them (setmaxnreg.inc)", and the consumers hand ring slots back with
// one arrival per warp (`mbarrier.arrive`). Its consumer warpgroups take
// turns on the tensor cores through named barriers: warpgroup w waits on
// barrier `first + w` (`bar.sync`, the two warpgroups' threads) and passes
// the turn on with `bar.arrive` on the next one's.
//
// In a thread-block cluster, a copy shared by the cluster's programs is
// split by rows: each program's producer copies its part into the same slot
// of every program (`.multicast::cluster`), completing on each one's
// barrier; consumers hand slots back on every program's barrier (`mapa`
// gives the other programs' addresses of it); and the barriers' set-up
// ends with a barrier of the whole cluster, before anyone else uses them.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "compiler/dialect/gpu/Mma.h"
#include "compiler/dialect/gpu/Tma.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace kiln::lowering {

namespace {

/// The shared address (i32) of barrier `slot` of a lowered barrier buffer.
Value barrierAddress(OpBuilder &b, Location loc, Value barriers, Value slot) {
  Value offset = LLVM::MulOp::create(b, loc, slot, i32Const(b, loc, 8));
  return LLVM::AddOp::create(b, loc, sharedAddress(b, loc, barriers), offset);
}

/// 1 in the thread that issues the copy engine's work where `pred` holds,
/// else 0 (i32, for a PTX predicate): thread 0, or in the producer
/// (`producer`) the one thread running it.
Value inIssuingThread(OpBuilder &b, Location loc, Value pred, bool producer = false) {
  if (producer)
    return LLVM::ZExtOp::create(b, loc, b.getI32Type(), pred);
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  Value first = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, tid, i32Const(b, loc, 0));
  if (pred)
    first = LLVM::AndOp::create(b, loc, first, pred);
  return LLVM::ZExtOp::create(b, loc, b.getI32Type(), first);
}

/// `instruction` (whose operands start at $1) in the threads where $0 != 0.
std::string predicated(const std::string &instruction) {
  return "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p " + instruction + " }";
}

/// `instruction` (operand $1: a barrier's address) on every barrier of a
/// buffer, in thread 0.
void inThreadZeroOnEach(OpBuilder &b, Location loc, Value buffer, Value lowered, const std::string &instruction) {
  Value first = inIssuingThread(b, loc, Value());
  const int64_t slots = cast<RankedTensorType>(buffer.getType()).getShape()[0];
  for (int64_t slot = 0; slot < slots; ++slot)
    ptx(b, loc, Type(), predicated(instruction), "r,r", {first, barrierAddress(b, loc, lowered, i32Const(b, loc, slot))});
}

struct BarrierLowering : KilnPattern<gpu::BarrierOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::BarrierOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    barrier(rewriter, op.getLoc());
    rewriter.eraseOp(op);
    return success();
  }
};

/// Waits, in consumer warpgroup `warpgroup`, until the previous one passed
/// it the turn: bar.sync on its barrier, counting both warpgroups' threads.
void lowerTurn(OpBuilder &b, Location loc, gpu::WaitTurnOp op, Value warpgroup, int) {
  Value id = LLVM::AddOp::create(b, loc, warpgroup, i32Const(b, loc, op.getBarrier()));
  NVVM::BarrierOp::create(b, loc, Type(), id, i32Const(b, loc, 2 * 128), NVVM::BarrierReductionAttr(), Value());
}

/// Passes the turn from consumer warpgroup `warpgroup` to the next (the
/// first after the last): bar.arrive on that one's barrier, in the
/// warpgroups `op` names.
void lowerTurn(OpBuilder &b, Location loc, gpu::PassTurnOp op, Value warpgroup, int warpgroups) {
  Value last = i32Const(b, loc, warpgroups - 1);
  Value isLast = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, warpgroup, last);
  Value passes = op.getOnlyLast()     ? isLast
                 : op.getExceptLast() ? LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, warpgroup, last)
                                      : Value();
  Value pred = passes ? LLVM::ZExtOp::create(b, loc, b.getI32Type(), passes).getResult() : i32Const(b, loc, 1);
  Value next = LLVM::SelectOp::create(b, loc, isLast, i32Const(b, loc, 0),
                                      LLVM::AddOp::create(b, loc, warpgroup, i32Const(b, loc, 1)));
  Value id = LLVM::AddOp::create(b, loc, next, i32Const(b, loc, op.getBarrier()));
  ptx(b, loc, Type(), predicated("bar.arrive $1, " + std::to_string(2 * 128) + ";"), "r,r", {pred, id});
}

/// A turn op in each consumer warpgroup (w = thread / 128); nothing where
/// the program has one.
template <class TurnOp> struct TurnLowering : KilnPattern<TurnOp> {
  using KilnPattern<TurnOp>::KilnPattern;
  LogicalResult matchAndRewrite(TurnOp op, typename TurnOp::Adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    const int warpgroups = std::max(1, gpu::getNumWarps(op->template getParentOfType<ModuleOp>()) / 4);
    if (warpgroups > 1) {
      Value tid = NVVM::ThreadIdXOp::create(rewriter, loc, rewriter.getI32Type());
      lowerTurn(rewriter, loc, op, LLVM::UDivOp::create(rewriter, loc, tid, i32Const(rewriter, loc, 128)), warpgroups);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct MBarrierInitLowering : KilnPattern<gpu::MBarrierInitOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::MBarrierInitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    inThreadZeroOnEach(rewriter, loc, op.getBarriers(), adaptor.getBarriers(),
                       "mbarrier.init.shared::cta.b64 [$1], " + std::to_string(op.getCount()) + ";");
    // The initialization before the copy engine or any other thread (the
    // producer warpgroup's too: it has not split off yet; with `cluster`,
    // the other programs' too) uses them.
    ptx(rewriter, loc, Type(), "fence.mbarrier_init.release.cluster;", "", {});
    if (op.getCluster())
      ptx(rewriter, loc, Type(), "barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;", "",
          {});
    else
      NVVM::Barrier0Op::create(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

struct MBarrierInvalLowering : KilnPattern<gpu::MBarrierInvalOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::MBarrierInvalOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    barrier(rewriter, loc); // no thread still waits on them
    inThreadZeroOnEach(rewriter, loc, op.getBarriers(), adaptor.getBarriers(), "mbarrier.inval.shared::cta.b64 [$1];");
    rewriter.eraseOp(op);
    return success();
  }
};

struct MBarrierExpectLowering : KilnPattern<gpu::MBarrierExpectOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::MBarrierExpectOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ptx(rewriter, loc, Type(),
        predicated("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], " + std::to_string(op.getBytes()) + ";"),
        "r,r",
        {inIssuingThread(rewriter, loc, adaptor.getPred(), op.getProducer()),
         barrierAddress(rewriter, loc, adaptor.getBarriers(), adaptor.getSlot())});
    rewriter.eraseOp(op);
    return success();
  }
};

struct MBarrierWaitLowering : KilnPattern<gpu::MBarrierWaitOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::MBarrierWaitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    // Labels inside a { } scope are local to it, so the loop may be inlined
    // any number of times.
    ptx(rewriter, loc, Type(),
        "{ .reg .pred done; waitLoop: mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; "
        "@!done bra waitLoop; }",
        "r,r", {barrierAddress(rewriter, loc, adaptor.getBarriers(), adaptor.getSlot()), adaptor.getPhase()});
    rewriter.eraseOp(op);
    return success();
  }
};

struct TmaLoadLowering : KilnPattern<gpu::TmaLoadOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::TmaLoadOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto bufferType = op.getBuffer().getType();
    Type element = ctx.types.elementType(bufferType);
    const int64_t bytes = storageBytes(element);
    auto encoding = cast<gpu::SharedEncodingAttr>(bufferType.getEncoding());
    ArrayRef<int64_t> tile = bufferType.getShape().drop_front();
    if (tile.size() != 2)
      return rewriter.notifyMatchFailure(op, "the copy engine fills 2-d tiles");
    // Rows of the box run along the tile's contiguous dimension (a tile
    // read transposed holds the block as it arrived).
    const unsigned contiguous = encoding.getOrder()[0];
    std::optional<gpu::TmaBox> box = gpu::tmaBoxFor(tile[1 - contiguous], tile[contiguous], bytes);
    if (!box)
      return rewriter.notifyMatchFailure(op, "the copy engine cannot fill this tile");
    SwizzledTile slot = bufferSlot(rewriter, loc, adaptor.getBuffer(), bufferType, element, adaptor.getSlot());
    Value destination = sharedAddress(rewriter, loc, slot.base);
    Value barrierAt = barrierAddress(rewriter, loc, adaptor.getBarriers(), adaptor.getSlot());
    Value first = inIssuingThread(rewriter, loc, adaptor.getPred(), op.getProducer());
    ValueRange coords = adaptor.getCoords(); // outermost first: row, column
    Value row = coords[0];
    // Shared by a cluster: this program's part of the rows, into every program.
    const int64_t programs = op.getMulticast();
    SmallVector<Value> operands{first, Value(), adaptor.getMap(), Value(), Value(), barrierAt};
    std::string constraints = "r,r,l,r,r,r", suffix;
    if (programs > 1) {
      if (!gpu::multicastSplits(*box, programs))
        return rewriter.notifyMatchFailure(op, "the tile's rows do not split into the cluster's parts");
      const int64_t part = box->rows / programs, rowBytes = box->boxCols * bytes;
      Value rank = NVVM::ClusterId::create(rewriter, loc, rewriter.getI32Type());
      row = LLVM::AddOp::create(rewriter, loc, row, LLVM::MulOp::create(rewriter, loc, rank, i32Const(rewriter, loc, part)));
      destination = LLVM::AddOp::create(rewriter, loc, destination,
                                        LLVM::MulOp::create(rewriter, loc, rank, i32Const(rewriter, loc, part * rowBytes)));
      operands.push_back(LLVM::ConstantOp::create(rewriter, loc, rewriter.getI16Type(),
                                                  rewriter.getI16IntegerAttr((1 << programs) - 1)));
      constraints += ",h";
      suffix = ".multicast::cluster";
    }
    const std::string copy = predicated("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" +
                                        suffix + " [$1], [$2, {$3, $4}], [$5]" + (programs > 1 ? ", $6;" : ";"));
    for (int64_t j = 0; j < box->copies; ++j) { // 128-byte column blocks, one after another
      operands[3] = LLVM::AddOp::create(rewriter, loc, coords[1], i32Const(rewriter, loc, j * box->boxCols));
      operands[1] = LLVM::AddOp::create(rewriter, loc, destination, i32Const(rewriter, loc, j * box->rows * 128));
      operands[4] = row;
      ptx(rewriter, loc, Type(), copy, constraints, operands);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct MBarrierArriveLowering : KilnPattern<gpu::MBarrierArriveOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::MBarrierArriveOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ThreadIds ids = threadIds(rewriter, loc, ctx.threadsPerWarp);
    Value lane0 = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, ids.lane, i32Const(rewriter, loc, 0));
    Value arrive = LLVM::ZExtOp::create(rewriter, loc, rewriter.getI32Type(),
                                        LLVM::AndOp::create(rewriter, loc, lane0, adaptor.getPred()));
    Value at = barrierAddress(rewriter, loc, adaptor.getBarriers(), adaptor.getSlot());
    if (op.getCluster() <= 1) {
      ptx(rewriter, loc, Type(), predicated("mbarrier.arrive.shared::cta.b64 _, [$1];"), "r,r", {arrive, at});
    } else {
      // The same barrier in every program of the cluster, its own included.
      // (Release at the program's scope, as for the own barrier: the slot's
      // reads are the completed wgmma's. `.release.cluster` would put a
      // memory barrier in every step.)
      std::string arrivals = "{ .reg .pred p; .reg .b32 remote; setp.ne.b32 p, $0, 0; ";
      for (int rank = 0; rank < static_cast<int>(op.getCluster()); ++rank)
        arrivals += "mapa.shared::cluster.u32 remote, $1, " + std::to_string(rank) +
                    "; @p mbarrier.arrive.shared::cluster.b64 _, [remote]; ";
      ptx(rewriter, loc, Type(), arrivals + "}", "r,r", {arrive, at});
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// The registers each producer thread keeps (the copies' arithmetic needs
/// few; setmaxnreg's floor is 24).
constexpr int kProducerRegisters = 40;

/// The registers each consumer thread may grow to once the producer
/// warpgroup gave its own up: a program's share of the multiprocessor's 64K
/// registers (`programs` of them at once) less the producer's, in
/// setmaxnreg's steps of 8, at most 256; 0 when that is not a step more
/// than every thread gets at entry (ptxas splits registers per quarter of
/// the multiprocessor, so warps count in fours).
int consumerRegisters(int consumerWarps, int producerWarps, int programs) {
  const int quarterWarps = programs * ((consumerWarps + producerWarps + 3) / 4);
  const int entry = std::min(255, 16384 / (32 * quarterWarps) / 8 * 8);
  const int grown = std::min(256, (2048 / programs - producerWarps * kProducerRegisters) / consumerWarps / 8 * 8);
  return grown >= entry + 8 ? grown : 0;
}

/// if (thread >= consumers) { setmaxnreg.dec; if (thread == consumers) { region } exit; }
/// else { setmaxnreg.inc }
/// (each warpgroup's role one branch of one if/else, as ptxas needs to
/// honour setmaxnreg; the consumers' code follows, reached only by them.)
struct ProducerLowering : KilnPattern<gpu::ProducerOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::ProducerOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    const int grown = consumerRegisters(ctx.numWarps, ctx.producerWarps, std::max(1, ctx.minBlocksPerSm));
    Value tid = NVVM::ThreadIdXOp::create(rewriter, loc, rewriter.getI32Type());
    Value consumers = i32Const(rewriter, loc, ctx.numWarps * ctx.threadsPerWarp);
    Value inProducer = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::uge, tid, consumers);
    auto role = scf::IfOp::create(rewriter, loc, inProducer, /*withElseRegion=*/grown > 0);
    rewriter.setInsertionPointToStart(role.thenBlock());
    if (grown > 0)
      ptx(rewriter, loc, Type(), "setmaxnreg.dec.sync.aligned.u32 " + std::to_string(kProducerRegisters) + ";", "", {});
    Value issuer = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, tid, consumers);
    auto thread = scf::IfOp::create(rewriter, loc, issuer, /*withElseRegion=*/false);
    rewriter.inlineBlockBefore(&op.getBody().front(), thread.thenBlock()->getTerminator());
    rewriter.setInsertionPointAfter(thread);
    ptx(rewriter, loc, Type(), "exit;", "", {});
    if (grown > 0) {
      rewriter.setInsertionPointToStart(role.elseBlock());
      ptx(rewriter, loc, Type(), "setmaxnreg.inc.sync.aligned.u32 " + std::to_string(grown) + ";", "", {});
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// Descriptor loads reach this point only as copy-engine loads that the
/// pipeliner did not take: LowerDescriptors rewrote every other one.
struct UnpipelinedDescriptorLoad : KilnPattern<tile::DescriptorLoadOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::DescriptorLoadOp op, OpAdaptor, ConversionPatternRewriter &) const override {
    return op.emitOpError("reached the lowering: run kgpu-lower-descriptors, which rewrites every descriptor "
                          "access but the ones it keeps for the copy engine, and kgpu-pipeline-loops with the same "
                          "target and stages, which turns the loads kept into copies");
  }
};

/// A copy-engine store, a run of column blocks at a time: the issuing
/// thread waits until the previous store's copies have read the staging
/// buffer; every thread writes its elements there (the 128-byte swizzle of
/// the box, as loads arrive) and fences them for the async proxy; after a
/// barrier the issuing thread starts one copy per box
/// (`cp.async.bulk.tensor` shared -> global, clipped at the tensor's edges)
/// and commits them as a bulk group. Nobody waits for the writes to land:
/// the program goes on (in a persistent loop, to its next tile) and waits
/// for the reads only before the staging buffer is reused or it returns.
struct DescriptorStoreLowering : KilnPattern<tile::DescriptorStoreOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::DescriptorStoreOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto offset = op->getAttrOfType<IntegerAttr>(kStagingOffsetAttr);
    auto columns = op->getAttrOfType<IntegerAttr>(kStagingColumnsAttr);
    if (!offset || !columns)
      return op.emitOpError("reached the lowering without a staging buffer: run kgpu-lower-descriptors, which "
                            "rewrites every descriptor access but the ones it keeps for the copy engine, then "
                            "kgpu-to-llvm, which lays the staging buffer out");
    Location loc = op.getLoc();
    auto block = cast<RankedTensorType>(op.getValue().getType());
    Type element = ctx.types.elementType(block);
    const int64_t bytes = gpu::elementBytes(block.getElementType());
    const int64_t rows = block.getShape()[0], cols = block.getShape()[1], step = columns.getInt();
    std::optional<gpu::TmaBox> box = gpu::tmaBoxFor(rows, cols, bytes);
    if (!box)
      return rewriter.notifyMatchFailure(op, "the copy engine cannot store this block");
    SmallVector<Value> values = unpack(rewriter, loc, adaptor.getValue());
    gpu::LinearLayout layout = layoutOf(block);
    Value issuer = inIssuingThread(rewriter, loc, Value());
    ValueRange coords = adaptor.getOffsets(); // outermost first: row, column
    const std::string copy = predicated("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {$2, $3}], [$4];");
    for (int64_t first = 0; first < cols; first += step) {
      ptx(rewriter, loc, Type(), predicated("cp.async.bulk.wait_group.read 0;"), "r", {issuer});
      barrier(rewriter, loc);
      SwizzledTile staged =
          stageColumns(rewriter, loc, op, values, element, layout, first, step, offset.getInt(), ctx.threadsPerWarp);
      ptx(rewriter, loc, Type(), "fence.proxy.async.shared::cta;", "", {});
      barrier(rewriter, loc);
      Value source = sharedAddress(rewriter, loc, staged.base);
      for (int64_t j = 0; j < step / box->boxCols; ++j) { // column blocks, one after another
        Value column = LLVM::AddOp::create(rewriter, loc, coords[1], i32Const(rewriter, loc, first + j * box->boxCols));
        Value from = LLVM::AddOp::create(rewriter, loc, source, i32Const(rewriter, loc, j * rows * box->boxCols * bytes));
        ptx(rewriter, loc, Type(), copy, "r,l,r,r,r", {issuer, adaptor.getMap(), column, coords[0], from});
      }
      ptx(rewriter, loc, Type(), predicated("cp.async.bulk.commit_group;"), "r", {issuer});
    }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void populateTmaPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<BarrierLowering, TurnLowering<gpu::WaitTurnOp>, TurnLowering<gpu::PassTurnOp>, MBarrierInitLowering,
               MBarrierInvalLowering, MBarrierExpectLowering, MBarrierWaitLowering, MBarrierArriveLowering,
               ProducerLowering, TmaLoadLowering, UnpipelinedDescriptorLoad, DescriptorStoreLowering>(context);
}

int64_t copyEngineStoreColumns(RankedTensorType block, int64_t budgetBytes) {
  const int64_t rows = block.getShape()[0], cols = block.getShape()[1];
  const int64_t bytes = gpu::elementBytes(block.getElementType());
  std::optional<gpu::TmaBox> box = gpu::tmaBoxFor(rows, cols, bytes);
  if (!box)
    return 0;
  // The columns a thread's lanes and warps spread over: a staging narrower
  // than that would need per-thread choices of registers.
  gpu::LinearLayout layout = gpu::linearLayoutOf(block);
  int64_t threadSpan = 1;
  for (gpu::HwDim h : {gpu::HwDim::Lane, gpu::HwDim::Warp})
    for (const gpu::Coord &basis : layout.bases(h))
      threadSpan = std::max<int64_t>(threadSpan, 2 * int64_t(basis[1]));
  for (int64_t columns = cols; columns >= box->boxCols; columns /= 2) {
    if (columns < cols && columns < threadSpan)
      break;
    if (rows * columns * bytes <= budgetBytes)
      return columns;
  }
  return 0;
}

} // namespace kiln::lowering
