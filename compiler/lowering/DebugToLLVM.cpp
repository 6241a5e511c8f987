//===- DebugToLLVM.cpp - device print and assert --------------------------===//

#include "compiler/lowering/Lowering.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace kiln::lowering {

using gpu::HwDim;
using gpu::LinearLayout;

namespace {

LLVM::LLVMFuncOp declare(OpBuilder &b, Operation *anchor, StringRef name, Type result, ArrayRef<Type> args) {
  auto module = anchor->getParentOfType<ModuleOp>();
  if (auto f = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return f;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  return LLVM::LLVMFuncOp::create(b, anchor->getLoc(), name, LLVM::LLVMFunctionType::get(result, args));
}

/// A pointer to a NUL-terminated constant string in global memory.
Value cString(OpBuilder &b, Location loc, Operation *anchor, StringRef text) {
  auto module = anchor->getParentOfType<ModuleOp>();
  std::string name = "kiln_str_" + std::to_string(llvm::hash_value(text) & 0xffffffffffull);
  auto global = module.lookupSymbol<LLVM::GlobalOp>(name);
  if (!global) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    std::string data = text.str();
    data.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), data.size());
    global = LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal, name,
                                    b.getStringAttr(data), /*alignment=*/1, /*addrSpace=*/0);
  }
  return LLVM::AddressOfOp::create(b, loc, global);
}

/// vprintf(format, pointer to the packed arguments).
void vprintf(OpBuilder &b, Location loc, Operation *anchor, StringRef format, ArrayRef<Value> args) {
  Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
  auto printf = declare(b, anchor, "vprintf", b.getI32Type(), {ptrType, ptrType});
  SmallVector<Type> types;
  for (Value v : args)
    types.push_back(v.getType());
  auto structType = LLVM::LLVMStructType::getLiteral(b.getContext(), types);
  Value buffer = LLVM::AllocaOp::create(b, loc, ptrType, structType, i32Const(b, loc, 1));
  for (size_t i = 0; i < args.size(); ++i) {
    Value field = LLVM::GEPOp::create(b, loc, ptrType, structType, buffer,
                                      ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
    LLVM::StoreOp::create(b, loc, args[i], field);
  }
  LLVM::CallOp::create(b, loc, printf, ValueRange{cString(b, loc, anchor, format), buffer});
}

/// The printf conversion and the argument (as vprintf reads it) of a value.
std::pair<std::string, Value> formatted(OpBuilder &b, Location loc, Value v, Type original, bool hex) {
  Type t = v.getType();
  if (isa<LLVM::LLVMPointerType>(t))
    return {"%p", v};
  if (hex) {
    unsigned bits = t.getIntOrFloatBitWidth();
    Value asInt = isa<FloatType>(t) ? LLVM::BitcastOp::create(b, loc, b.getIntegerType(bits), v).getResult() : v;
    if (bits == 64)
      return {"0x%llx", asInt};
    return {"0x%x", bits < 32 ? LLVM::ZExtOp::create(b, loc, b.getI32Type(), asInt).getResult() : asInt};
  }
  if (isa<FloatType>(t)) // vprintf takes doubles
    return {"%g", t.isF64() ? v : LLVM::FPExtOp::create(b, loc, b.getF64Type(), v).getResult()};
  unsigned bits = t.getIntOrFloatBitWidth();
  if (bits == 64)
    return {"%lld", v};
  if (bits == 1)
    return {"%d", LLVM::ZExtOp::create(b, loc, b.getI32Type(), v)};
  return {"%d", bits < 32 ? LLVM::SExtOp::create(b, loc, b.getI32Type(), v).getResult() : v};
}

std::string escapePercent(StringRef text) {
  std::string out;
  for (char c : text) {
    out.push_back(c);
    if (c == '%')
      out.push_back('%');
  }
  return out;
}

/// One line per element: "pid (x, y, z) idx (i, j) <prefix><value>", from the
/// thread that owns the element.
struct PrintLowering : KilnPattern<tile::PrintOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::PrintOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    if (ctx.amd)
      return op.emitOpError("prints through CUDA's vprintf, which AMD GPUs lack: Kiln does not print from AMD "
                            "kernels yet (the interpreter prints)");
    Location loc = op.getLoc();
    ThreadIds ids = threadIds(rewriter, loc, ctx.threadsPerWarp);
    SmallVector<Value> pid{NVVM::BlockIdXOp::create(rewriter, loc, rewriter.getI32Type()),
                           NVVM::BlockIdYOp::create(rewriter, loc, rewriter.getI32Type()),
                           NVVM::BlockIdZOp::create(rewriter, loc, rewriter.getI32Type())};
    std::string prefix = escapePercent(op.getPrefix());
    if (op.getArgs().empty()) {
      Value first = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, ids.thread, i32Const(rewriter, loc, 0));
      auto branch = scf::IfOp::create(rewriter, loc, first, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(branch.thenBlock());
      vprintf(rewriter, loc, op, "pid (%d, %d, %d) " + prefix + "\n", pid);
      rewriter.eraseOp(op);
      return success();
    }
    for (auto [original, lowered] : llvm::zip(op.getArgs(), adaptor.getArgs())) {
      auto tensor = dyn_cast<RankedTensorType>(original.getType());
      SmallVector<Value> values = registersOf(rewriter, loc, lowered);
      Value owner = tensor ? isOwner(rewriter, loc, layoutOf(tensor), ids)
                           : LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, ids.thread,
                                                  i32Const(rewriter, loc, 0)).getResult();
      SmallVector<Value> thread;
      LinearLayout layout;
      if (tensor) {
        layout = layoutOf(tensor);
        thread = threadCoords(rewriter, loc, layout, ids);
      }
      auto branch = scf::IfOp::create(rewriter, loc, owner, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(branch.thenBlock());
      for (size_t r = 0; r < values.size(); ++r) {
        SmallVector<Value> args(pid.begin(), pid.end());
        std::string format = "pid (%d, %d, %d) ";
        if (tensor) {
          SmallVector<Value> coord = registerCoords(rewriter, loc, layout, r, thread);
          format += "idx (";
          for (size_t d = 0; d < coord.size(); ++d) {
            format += d ? ", %d" : "%d";
            args.push_back(coord[d]);
          }
          format += ") ";
        }
        auto [conversion, value] = formatted(rewriter, loc, values[r], getElementTypeOrSelf(original.getType()), op.getHex());
        args.push_back(value);
        vprintf(rewriter, loc, op, format + prefix + conversion + "\n", args);
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// If any element is false: __assertfail(message, file, line, function, 1),
/// which prints and stops the kernel.
struct AssertLowering : KilnPattern<tile::AssertOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::AssertOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    if (ctx.amd)
      return op.emitOpError("reports through CUDA's __assertfail, which AMD GPUs lack: Kiln does not check "
                            "device asserts in AMD kernels yet (the interpreter does)");
    Location loc = op.getLoc();
    Value all = LLVM::ConstantOp::create(rewriter, loc, rewriter.getI1Type(), rewriter.getBoolAttr(true));
    for (Value v : registersOf(rewriter, loc, adaptor.getCondition()))
      all = LLVM::AndOp::create(rewriter, loc, all, v);
    Value failed = LLVM::XOrOp::create(rewriter, loc, all,
                                       LLVM::ConstantOp::create(rewriter, loc, rewriter.getI1Type(), rewriter.getBoolAttr(true)));
    std::string file = "<unknown>";
    unsigned line = 0;
    if (auto at = dyn_cast<FileLineColLoc>(loc)) {
      file = at.getFilename().str();
      line = at.getLine();
    }
    auto branch = scf::IfOp::create(rewriter, loc, failed, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(branch.thenBlock());
    Type ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
    auto fail = declare(rewriter, op, "__assertfail", LLVM::LLVMVoidType::get(rewriter.getContext()),
                        {ptrType, ptrType, rewriter.getI32Type(), ptrType, rewriter.getI64Type()});
    LLVM::CallOp::create(rewriter, loc, fail,
                         ValueRange{cString(rewriter, loc, op, op.getMessage()), cString(rewriter, loc, op, file),
                                    i32Const(rewriter, loc, line), cString(rewriter, loc, op, "kernel"),
                                    i64Const(rewriter, loc, 1)});
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void populateDebugPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<PrintLowering, AssertLowering>(context);
}

} // namespace kiln::lowering
