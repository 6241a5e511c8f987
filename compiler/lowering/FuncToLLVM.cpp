//===- FuncToLLVM.cpp - kernels and the program grid ----------------------===//

#include "compiler/lowering/Lowering.h"

using namespace mlir;

namespace kiln::lowering {

namespace {

/// tile.func -> llvm.func marked as a kernel of num_warps * 32 threads (and
/// a warp-specialized program's producer warps).
struct FuncLowering : KilnPattern<tile::FuncOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::FuncOp func, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    TypeConverter::SignatureConversion signature(func.getNumArguments());
    SmallVector<Type> arguments;
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      Type converted = getTypeConverter()->convertType(type);
      if (!converted)
        return rewriter.notifyMatchFailure(func, "argument type does not lower");
      signature.addInputs(i, converted);
      arguments.push_back(converted);
    }
    const int cluster = tile::clusterSizeOf(func);
    if (cluster > 1 && ctx.computeCapability < 90)
      return func.emitOpError("cluster_size ") << cluster << " needs thread-block clusters, which " << ctx.arch
                                               << " lacks (sm_90 or newer)";
    auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(rewriter.getContext()), arguments);
    auto kernel = LLVM::LLVMFuncOp::create(rewriter, func.getLoc(), func.getSymName(), type);
    kernel->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), rewriter.getUnitAttr());
    kernel->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                    rewriter.getDenseI32ArrayAttr({ctx.launchedWarps() * ctx.threadsPerWarp, 1, 1}));
    // (.reqnctapercluster: the driver launches it in clusters, no launch attribute needed.)
    if (cluster > 1)
      kernel->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(), rewriter.getDenseI32ArrayAttr({cluster, 1, 1}));
    // Tensor maps: 128 bytes in the parameter space, 64-byte aligned, whose
    // address the copy engine takes (grid constant: never copied to local
    // memory).
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
      if (isa<tile::TensorMapType>(type)) {
        auto bytes = LLVM::LLVMArrayType::get(rewriter.getI8Type(), 128);
        kernel.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(), TypeAttr::get(bytes));
        kernel.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(), rewriter.getI64IntegerAttr(64));
        kernel.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(), rewriter.getUnitAttr());
      }
    rewriter.inlineRegionBefore(func.getBody(), kernel.getBody(), kernel.end());
    if (failed(rewriter.convertRegionTypes(&kernel.getBody(), *getTypeConverter(), &signature)))
      return failure();
    rewriter.eraseOp(func);
    return success();
  }
};

struct ReturnLowering : KilnPattern<tile::ReturnOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::ReturnOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    // Shared memory outlives the program only until it returns: copy-engine
    // stores still reading their staging buffer must finish first (a no-op
    // in threads that issued none).
    if (op->getParentOfType<ModuleOp>()->hasAttr(kBulkStoresAttr))
      ptx(rewriter, op.getLoc(), Type(), "cp.async.bulk.wait_group.read 0;", "", {});
    rewriter.replaceOpWithNewOp<LLVM::ReturnOp>(op, ValueRange{});
    return success();
  }
};

template <class Op, class X, class Y, class Z> struct GridLowering : KilnPattern<Op> {
  using KilnPattern<Op>::KilnPattern;
  LogicalResult matchAndRewrite(Op op, typename Op::Adaptor, ConversionPatternRewriter &rewriter) const override {
    Type i32 = rewriter.getI32Type();
    Value v;
    switch (op.getAxis()) {
    case tile::GridDim::x: v = X::create(rewriter, op.getLoc(), i32); break;
    case tile::GridDim::y: v = Y::create(rewriter, op.getLoc(), i32); break;
    case tile::GridDim::z: v = Z::create(rewriter, op.getLoc(), i32); break;
    }
    rewriter.replaceOp(op, v);
    return success();
  }
};

/// %clusterid.x and %cluster_ctarank (clusters run along x only); without
/// clusters the program id itself and 0.
struct ClusterIdLowering : KilnPattern<tile::ClusterIdOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::ClusterIdOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    Type i32 = rewriter.getI32Type();
    if (tile::clusterSizeOf(op) > 1)
      rewriter.replaceOp(op, NVVM::ClusterIdXOp::create(rewriter, op.getLoc(), i32));
    else
      rewriter.replaceOp(op, NVVM::BlockIdXOp::create(rewriter, op.getLoc(), i32));
    return success();
  }
};

struct ClusterRankLowering : KilnPattern<tile::ClusterRankOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::ClusterRankOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    if (tile::clusterSizeOf(op) > 1)
      rewriter.replaceOp(op, NVVM::ClusterId::create(rewriter, op.getLoc(), rewriter.getI32Type()));
    else
      rewriter.replaceOp(op, i32Const(rewriter, op.getLoc(), 0));
    return success();
  }
};

} // namespace

void populateFuncPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<FuncLowering, ReturnLowering,
               GridLowering<tile::ProgramIdOp, NVVM::BlockIdXOp, NVVM::BlockIdYOp, NVVM::BlockIdZOp>,
               GridLowering<tile::NumProgramsOp, NVVM::GridDimXOp, NVVM::GridDimYOp, NVVM::GridDimZOp>,
               ClusterIdLowering, ClusterRankLowering>(
      context);
}

} // namespace kiln::lowering
