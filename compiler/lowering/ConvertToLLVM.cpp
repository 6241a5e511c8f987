//===- ConvertToLLVM.cpp - the passes lowering the GPU level to LLVM ------===//

#include "compiler/lowering/Lowering.h"
#include "compiler/transforms/Passes.h"

#include "compiler/analysis/AxisInfo.h"
#include "compiler/dialect/gpu/Mma.h"

#include <kiln/target.h>

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {

#define GEN_PASS_DEF_CONVERTKGPUTOLLVM
#define GEN_PASS_DEF_FINALIZELLVM
#include "compiler/transforms/Passes.h.inc"

using namespace mlir;
using namespace kiln::lowering;

namespace {

bool hasTensors(Operation *op) {
  auto tensor = [](Type t) { return isa<RankedTensorType>(t); };
  return llvm::any_of(op->getOperandTypes(), tensor) || llvm::any_of(op->getResultTypes(), tensor);
}

/// Whether `alloc` holds copy-engine barriers (an mbarrier_init sets it up).
bool holdsBarriers(gpu::LocalAllocOp alloc) {
  return llvm::any_of(alloc->getUsers(), [](Operation *user) { return isa<gpu::MBarrierInitOp>(user); });
}

/// The ancestor, in the block of `alloc`, of its last user (null: unused).
Operation *lastUseInBlock(gpu::LocalAllocOp alloc) {
  Operation *last = nullptr;
  for (Operation *user : alloc->getUsers())
    if (Operation *at = alloc->getBlock()->findAncestorOpInBlock(*user); at && (!last || last->isBeforeInBlock(at)))
      last = at;
  return last;
}

/// Whether `alloc` is a ring that cp.async or the copy engine writes, or
/// threads store registers into (kgpu-prefetch-operands), and threads read:
/// its last reader and every write into it are done once each thread has
/// left the loop (and its `async_wait 0`, or its wait on the last slot's
/// barrier: the pipeliner starts no copy past the loop's end) and passed a
/// barrier.
bool copiedByThreads(gpu::LocalAllocOp alloc) {
  return llvm::all_of(alloc->getUsers(), [](Operation *user) {
    auto store = dyn_cast<gpu::LocalStoreOp>(user);
    return isa<gpu::AsyncCopyOp, gpu::TmaLoadOp, gpu::LocalLoadOp>(user) || (store && store.getUnsynchronized());
  });
}

/// Places the pipelining rings (the buffers without barriers) from `base`,
/// 1024-byte aligned (the 128-byte swizzle atoms of wgmma and the copy
/// engine), and returns where they end. A ring of a later loop may take
/// the memory of one whose loop ended before it in the same block (causal
/// attention's two loops): a barrier right after its allocation, before its
/// first copies, then keeps every thread's last reads of the old ring first.
/// (Not in a kernel with a producer warpgroup, whose warps meet the others
/// only at their rings' barriers.)
int64_t placeRings(ModuleOp module, int64_t base) {
  const bool programBarriers = gpu::getProducerWarps(module) == 0;
  struct Placed {
    gpu::LocalAllocOp alloc;
    Operation *last; ///< the last user's ancestor in the alloc's block
    int64_t offset, bytes;
  };
  SmallVector<Placed> placed;
  int64_t end = base;
  module.walk([&](gpu::LocalAllocOp alloc) {
    if (holdsBarriers(alloc))
      return;
    auto type = alloc.getType();
    int64_t bytes = type.getNumElements() * gpu::elementBytes(type.getElementType());
    Operation *last = lastUseInBlock(alloc);
    if (!last)
      last = alloc;
    auto deadBefore = [&](const Placed &p) {
      return programBarriers && copiedByThreads(alloc) && copiedByThreads(p.alloc) &&
             p.alloc->getBlock() == alloc->getBlock() &&
             p.last->isBeforeInBlock(alloc);
    };
    auto overlaps = [&](const Placed &p, int64_t offset) { return offset < p.offset + p.bytes && p.offset < offset + bytes; };
    int64_t offset = base;
    for (bool moved = true; moved;) {
      moved = false;
      for (const Placed &p : placed)
        if (!deadBefore(p) && overlaps(p, offset)) {
          offset = llvm::alignTo(p.offset + p.bytes, 1024);
          moved = true;
        }
    }
    if (llvm::any_of(placed, [&](const Placed &p) { return deadBefore(p) && overlaps(p, offset); })) {
      OpBuilder builder(alloc->getContext());
      builder.setInsertionPointAfter(alloc);
      gpu::BarrierOp::create(builder, alloc.getLoc());
    }
    alloc->setAttr("kgpu.offset", IntegerAttr::get(IntegerType::get(alloc->getContext(), 32), offset));
    placed.push_back({alloc, last, offset, bytes});
    end = std::max(end, offset + bytes);
  });
  return end;
}

struct ConvertKGpuToLLVM : impl::ConvertKGpuToLLVMBase<ConvertKGpuToLLVM> {
  using ConvertKGpuToLLVMBase::ConvertKGpuToLLVMBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    int numWarps = gpu::getNumWarps(module), threadsPerWarp = gpu::getThreadsPerWarp(module);
    std::string arch = "sm_90a";
    if (auto target = module->getAttrOfType<StringAttr>(gpu::kTargetAttr))
      arch = target.str();
    recomputeAfterLoops(module);

    // Shared memory: every scratch use is bracketed by barriers, so all of
    // them share offset 0 and the program needs the largest. Those after
    // the last use of the buffers below (an epilogue's conversion after the
    // K loop, which waited for all of its copies and dots) may overlap them.
    // (Barriers that the other programs of a cluster arrive on live to the
    // end: a program may leave its loop while the others still hand its
    // slots back.)
    llvm::SmallVector<Operation *> lastBufferUsers; // per buffer: the last user's ancestor in its block
    module.walk([&](gpu::LocalAllocOp alloc) {
      if (llvm::any_of(alloc->getUsers(), [](Operation *user) {
            auto init = dyn_cast<gpu::MBarrierInitOp>(user);
            return init && init.getCluster();
          })) {
        lastBufferUsers.push_back(alloc->getBlock()->getTerminator());
        return;
      }
      if (Operation *last = lastUseInBlock(alloc))
        lastBufferUsers.push_back(last);
    });
    auto afterBuffers = [&](Operation *op) {
      return llvm::all_of(lastBufferUsers, [&](Operation *last) {
        Operation *at = last->getBlock()->findAncestorOpInBlock(*op);
        return !at || last->isBeforeInBlock(at);
      });
    };
    int64_t shared = 0, sharedAfterBuffers = 0;
    module.walk([&](Operation *op) {
      if (int64_t bytes = scratchBytes(op, numWarps, threadsPerWarp)) {
        int64_t &slot = afterBuffers(op) ? sharedAfterBuffers : shared;
        slot = std::max(slot, bytes);
      }
    });
    // Buffers come after it: the copy engine's barriers (the buffers an
    // mbarrier_init sets up, 8 bytes each, alive for the whole program),
    // then the pipelining rings (placeRings).
    module.walk([&](gpu::LocalAllocOp alloc) {
      if (!holdsBarriers(alloc))
        return;
      auto type = alloc.getType();
      shared = llvm::alignTo(shared, 8);
      alloc->setAttr("kgpu.offset", IntegerAttr::get(IntegerType::get(context, 32), shared));
      shared += type.getNumElements() * gpu::elementBytes(type.getElementType());
    });
    shared = placeRings(module, llvm::alignTo(shared, 1024));
    shared = std::max(shared, sharedAfterBuffers);
    // Last, the copy engine's store staging: as many column blocks of the
    // largest stored block as the rest of shared memory holds (a program's
    // share of it, when several must fit on a multiprocessor).
    SmallVector<tile::DescriptorStoreOp> stores;
    module.walk([&](tile::DescriptorStoreOp store) { stores.push_back(store); });
    if (!stores.empty()) {
      const int64_t programs = std::max(1, static_cast<int>(minBlocksPerSm));
      const int64_t limit =
          std::min<int64_t>(max_shared_memory_per_program(computeCapability),
                            gpu::kSharedPerMultiprocessorBytes / programs - gpu::kSharedReservedPerProgramBytes);
      shared = llvm::alignTo(shared, 1024);
      int64_t staging = 0;
      for (tile::DescriptorStoreOp store : stores) {
        auto block = cast<RankedTensorType>(store.getValue().getType());
        const int64_t columns = copyEngineStoreColumns(block, limit - shared);
        if (columns == 0) {
          store.emitOpError("leaves no room in shared memory to stage a copy-engine store: the program already takes ")
              << shared << " of " << limit << " bytes (fewer pipeline stages or a smaller block fit)";
          signalPassFailure();
          return;
        }
        Type i32 = IntegerType::get(context, 32);
        store->setAttr(kStagingOffsetAttr, IntegerAttr::get(i32, shared));
        store->setAttr(kStagingColumnsAttr, IntegerAttr::get(i32, columns));
        staging = std::max(staging, block.getShape()[0] * columns * gpu::elementBytes(block.getElementType()));
      }
      shared += staging;
      module->setAttr(kBulkStoresAttr, UnitAttr::get(context));
    }
    // More than the target gives a program would fail only at launch, and
    // less plainly (or, on a GPU with more, only there).
    const bool amd = targetsAmd(module);
    if (amd && shared > gpu::kAmdLdsBytes) {
      module.emitError() << "the kernel needs " << shared << " bytes of shared memory; " << arch
                         << " gives a workgroup at most " << gpu::kAmdLdsBytes
                         << " bytes of LDS (fewer pipeline stages or smaller blocks need less)";
      signalPassFailure();
      return;
    }
    if (const int64_t limit = max_shared_memory_per_program(computeCapability); !amd && shared > limit) {
      module.emitError() << "the kernel needs " << shared << " bytes of shared memory; a GPU of compute capability "
                         << computeCapability / 10 << "." << computeCapability % 10 << " gives a program at most "
                         << limit << " (fewer pipeline stages or smaller blocks need less)";
      signalPassFailure();
      return;
    }
    module->setAttr("kgpu.shared_memory", IntegerAttr::get(IntegerType::get(context, 32), shared));

    gpu::AxisInfoAnalysis axis(module);
    KilnTypeConverter types(context);
    // (An AMD module has no NVIDIA capability, whatever the option says:
    // no NVIDIA instruction may be chosen for it.)
    LoweringContext lowering{types, numWarps, threadsPerWarp, arch, amd ? 0 : int(computeCapability), axis, amd,
                             gpu::getProducerWarps(module), minBlocksPerSm};

    ConversionTarget target(*context);
    target.addLegalDialect<LLVM::LLVMDialect, NVVM::NVVMDialect, ROCDL::ROCDLDialect>();
    target.addIllegalDialect<tile::TileDialect, gpu::KGpuDialect>();
    target.addLegalOp<ModuleOp>();
    target.addDynamicallyLegalDialect<arith::ArithDialect, math::MathDialect>(
        [](Operation *op) { return !hasTensors(op); });
    RewritePatternSet patterns(context);
    scf::populateSCFStructuralTypeConversionsAndLegality(types, patterns, target);
    populateFuncPatterns(patterns, lowering);
    populateElementwisePatterns(patterns, lowering);
    populateViewPatterns(patterns, lowering);
    populateMemoryPatterns(patterns, lowering);
    populateReducePatterns(patterns, lowering);
    populateScanPatterns(patterns, lowering);
    populateDotPatterns(patterns, lowering);
    populateMmaPatterns(patterns, lowering);
    populateMfmaPatterns(patterns, lowering);
    populateWgmmaPatterns(patterns, lowering);
    populateSharedPatterns(patterns, lowering);
    populateTmaPatterns(patterns, lowering);
    populateDebugPatterns(patterns, lowering);
    if (failed(applyPartialConversion(module, target, std::move(patterns)))) {
      signalPassFailure();
      return;
    }
    // Occupancy asked for: ptxas then limits each thread's registers so that
    // this many programs fit on a multiprocessor (spilling if it must). A
    // warp-specialized program asks for one, the register cap at entry
    // that setmaxnreg needs.
    const int blocks = minBlocksPerSm > 0 ? minBlocksPerSm : lowering.producerWarps > 0 ? 1 : 0;
    if (blocks > 0 && !amd)
      module.walk([&](LLVM::LLVMFuncOp func) {
        if (func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
          func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                        IntegerAttr::get(IntegerType::get(context, 32), blocks));
      });
  }
};

/// f32 exp, exp2, log, log2 and rsqrt as the GPU's approximate instructions.
template <class Op> struct FastMath : OpRewritePattern<Op> {
  FastMath(MLIRContext *context, StringRef intrinsic, double before, double after)
      : OpRewritePattern<Op>(context, /*benefit=*/2), intrinsic(intrinsic), before(before), after(after) {}
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return failure();
    Location loc = op.getLoc();
    Value x = op.getOperand();
    if (before != 1.0)
      x = LLVM::FMulOp::create(rewriter, loc, x,
                               LLVM::ConstantOp::create(rewriter, loc, rewriter.getF32Type(), rewriter.getF32FloatAttr(before)));
    Value y = LLVM::CallIntrinsicOp::create(rewriter, loc, rewriter.getF32Type(), rewriter.getStringAttr(intrinsic),
                                            ValueRange{x})
                  .getResult(0);
    if (after != 1.0)
      y = LLVM::FMulOp::create(rewriter, loc, y,
                               LLVM::ConstantOp::create(rewriter, loc, rewriter.getF32Type(), rewriter.getF32FloatAttr(after)));
    rewriter.replaceOp(op, y);
    return success();
  }
  std::string intrinsic;
  double before, after;
};

/// Float to integer saturates and gives 0 for NaN (llvm.fpto[su]i.sat).
template <class Op> struct SaturatingFloatToInt : ConvertOpToLLVMPattern<Op> {
  using ConvertOpToLLVMPattern<Op>::ConvertOpToLLVMPattern;
  LogicalResult matchAndRewrite(Op op, typename Op::Adaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Type to = op.getType(), from = adaptor.getIn().getType();
    if (!isa<IntegerType>(to) || !isa<FloatType>(from))
      return failure();
    constexpr bool isSigned = std::is_same_v<Op, arith::FPToSIOp>;
    auto typeName = [](Type t) {
      return (isa<FloatType>(t) ? "f" : "i") + std::to_string(t.getIntOrFloatBitWidth());
    };
    std::string name = std::string(isSigned ? "llvm.fptosi.sat." : "llvm.fptoui.sat.") + typeName(to) + "." + typeName(from);
    rewriter.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(op, to, rewriter.getStringAttr(name), ValueRange{adaptor.getIn()});
    return success();
  }
};

struct FinalizeLLVM : impl::FinalizeLLVMBase<FinalizeLLVM> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    // Transcendentals on f64 would need libdevice.
    WalkResult unsupported = module.walk([&](Operation *op) {
      if (isa<math::ExpOp, math::Exp2Op, math::LogOp, math::Log2Op, math::SinOp, math::CosOp, math::TanhOp,
              math::ErfOp, math::ErfcOp, math::PowFOp>(op) &&
          op->getResult(0).getType().isF64()) {
        op->emitError("'") << op->getName() << "' on f64 is not supported on the GPU yet (f32 is)";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (unsupported.wasInterrupted())
      return signalPassFailure();

    {
      RewritePatternSet patterns(context);
      constexpr double log2e = 1.4426950408889634, ln2 = 0.6931471805599453;
      const bool amd = targetsAmd(module);
      const ApproximateMath approx = approximateMath(amd);
      patterns.add<FastMath<math::ExpOp>>(context, approx.exp2, log2e, 1.0);
      patterns.add<FastMath<math::Exp2Op>>(context, approx.exp2, 1.0, 1.0);
      patterns.add<FastMath<math::LogOp>>(context, approx.log2, 1.0, ln2);
      patterns.add<FastMath<math::Log2Op>>(context, approx.log2, 1.0, 1.0);
      patterns.add<FastMath<math::RsqrtOp>>(context, approx.rsqrt, 1.0, 1.0);
      populatePolynomialApproximateTanhPattern(patterns);
      populateErfPatterns(patterns, amd);
      populateMathPolynomialApproximationPatterns(patterns,
                                                  [](StringRef name) { return name == "math.sin" || name == "math.cos"; });
      math::populateExpansionPatterns(patterns, {"powf"});
      if (failed(applyPatternsGreedily(module, std::move(patterns))))
        return signalPassFailure();
    }

    LLVMTypeConverter types(context);
    ConversionTarget target(*context);
    target.addLegalDialect<LLVM::LLVMDialect, NVVM::NVVMDialect, ROCDL::ROCDLDialect>();
    target.addLegalOp<ModuleOp>();
    RewritePatternSet patterns(context);
    patterns.add<SaturatingFloatToInt<arith::FPToSIOp>, SaturatingFloatToInt<arith::FPToUIOp>>(types, /*benefit=*/2);
    arith::populateArithToLLVMConversionPatterns(types, patterns);
    populateMathToLLVMConversionPatterns(types, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(types, patterns);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
