//===- Registration.cpp ---------------------------------------------------===//

#include "compiler/Registration.h"

#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/tile/Tile.h"
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Transforms/Passes.h"

namespace kiln {

void registerKilnDialects(mlir::DialectRegistry &registry) {
  registry.insert<tile::TileDialect, gpu::KGpuDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::scf::SCFDialect, mlir::cf::ControlFlowDialect,
                  mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect, mlir::ROCDL::ROCDLDialect>();
}

void loadKilnDialects(mlir::MLIRContext &context) {
  mlir::DialectRegistry registry;
  registerKilnDialects(registry);
  context.appendDialectRegistry(registry);
  // What tracing builds; the LLVM and NVVM dialects (large, and only needed
  // to compile for a GPU) load when the passes that make their ops run.
  context.loadDialect<tile::TileDialect, mlir::arith::ArithDialect, mlir::math::MathDialect, mlir::scf::SCFDialect>();
}

void registerKilnPasses() {
  registerKilnCompilerPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerLoopInvariantCodeMotionPass();
  mlir::registerSymbolDCEPass();
}

} // namespace kiln
