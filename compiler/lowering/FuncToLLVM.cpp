//===- FuncToLLVM.cpp - kernels and the program grid ----------------------===//

#include "compiler/lowering/Lowering.h"

#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"

using namespace mlir;

namespace kiln::lowering {

namespace {

/// tile.func -> llvm.func marked as a kernel of num_warps * 32 threads (and
/// a warp-specialized program's producer warps); on AMD, a workgroup of
/// num_warps wavefronts.
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
    if (ctx.amd) {
      const int threads = ctx.launchedWarps() * ctx.threadsPerWarp;
      kernel->setAttr(ROCDL::ROCDLDialect::KernelAttrHelper::getNameStr(), rewriter.getUnitAttr());
      kernel->setAttr(ROCDL::ROCDLDialect::FlatWorkGroupSizeAttrHelper::getNameStr(),
                      rewriter.getStringAttr(std::to_string(threads) + "," + std::to_string(threads)));
      kernel->setAttr(ROCDL::ROCDLDialect::ReqdWorkGroupSizeAttrHelper::getNameStr(),
                      rewriter.getDenseI32ArrayAttr({threads, 1, 1}));
    } else {
      kernel->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), rewriter.getUnitAttr());
      kernel->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                      rewriter.getDenseI32ArrayAttr({ctx.launchedWarps() * ctx.threadsPerWarp, 1, 1}));
    }
    // (.reqnctapercluster: the driver launches it in clusters, no launch attribute needed.)
    if (cluster > 1)
      kernel->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(), rewriter.getDenseI32ArrayAttr({cluster, 1, 1}));
    // Tensor maps: 128 bytes in the parameter space, 64-byte aligned, whose
    // address the copy engine takes (grid constant: never copied to local
    // memory). (AMD GPUs have no copy engine: their descriptors were
    // lowered to pointer loads, and the map is an unused argument.)
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
      if (isa<tile::TensorMapType>(type) && !ctx.amd) {
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

/// The program's id along an axis: %ctaid (NVIDIA), the workgroup id (AMD).
Value programId(OpBuilder &b, Location loc, bool amd, tile::GridDim axis) {
  Type i32 = b.getI32Type();
  auto either = [&](auto rocdl, auto nvvm) -> Value {
    using Rocdl = decltype(rocdl);
    using Nvvm = decltype(nvvm);
    return amd ? Rocdl::create(b, loc, i32).getResult() : Nvvm::create(b, loc, i32).getResult();
  };
  switch (axis) {
  case tile::GridDim::x: return either(ROCDL::BlockIdXOp(), NVVM::BlockIdXOp());
  case tile::GridDim::y: return either(ROCDL::BlockIdYOp(), NVVM::BlockIdYOp());
  case tile::GridDim::z: return either(ROCDL::BlockIdZOp(), NVVM::BlockIdZOp());
  }
  llvm_unreachable("three axes");
}

/// The programs along an axis: %nctaid (NVIDIA); on AMD the dispatch
/// packet's grid size (in work-items, whatever the code object version)
/// over the workgroup's, which the kernel fixes (threads along x, 1 along
/// y and z).
Value programCount(OpBuilder &b, Location loc, const LoweringContext &ctx, tile::GridDim axis) {
  Type i32 = b.getI32Type();
  if (!ctx.amd)
    switch (axis) {
    case tile::GridDim::x: return NVVM::GridDimXOp::create(b, loc, i32);
    case tile::GridDim::y: return NVVM::GridDimYOp::create(b, loc, i32);
    case tile::GridDim::z: return NVVM::GridDimZOp::create(b, loc, i32);
    }
  const int index = axis == tile::GridDim::x ? 0 : axis == tile::GridDim::y ? 1 : 2;
  auto constant = LLVM::LLVMPointerType::get(b.getContext(), /*addressSpace=*/4);
  Value packet = LLVM::CallIntrinsicOp::create(b, loc, constant, b.getStringAttr("llvm.amdgcn.dispatch.ptr"),
                                               ValueRange{})
                     .getResult(0);
  constexpr int kGridSizeOffset = 12; // hsa_kernel_dispatch_packet_t::grid_size_x
  Value field = gep(b, loc, packet, b.getI8Type(), i32Const(b, loc, kGridSizeOffset + 4 * index));
  Value workItems = LLVM::LoadOp::create(b, loc, i32, field, /*alignment=*/4, /*isVolatile=*/false,
                                         /*isNonTemporal=*/false, /*isInvariant=*/true);
  if (index > 0)
    return workItems;
  return LLVM::UDivOp::create(b, loc, workItems, i32Const(b, loc, ctx.launchedWarps() * ctx.threadsPerWarp));
}

struct ProgramIdLowering : KilnPattern<tile::ProgramIdOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::ProgramIdOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, programId(rewriter, op.getLoc(), ctx.amd, op.getAxis()));
    return success();
  }
};

struct NumProgramsLowering : KilnPattern<tile::NumProgramsOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::NumProgramsOp op, OpAdaptor, ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, programCount(rewriter, op.getLoc(), ctx, op.getAxis()));
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
      rewriter.replaceOp(op, programId(rewriter, op.getLoc(), ctx.amd, tile::GridDim::x));
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
  patterns.add<FuncLowering, ReturnLowering, ProgramIdLowering, NumProgramsLowering, ClusterIdLowering,
               ClusterRankLowering>(context);
}

} // namespace kiln::lowering
