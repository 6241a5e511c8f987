//===- Passes.td - Kiln's passes ---------------------------*- tablegen -*-===//

#ifndef KILN_PASSES
#define KILN_PASSES

include "mlir/Pass/PassBase.td"

def AssignLayouts : Pass<"kgpu-assign-layouts", "mlir::ModuleOp"> {
  let summary = "Give every block a layout over the GPU's threads";
  let description = [{
    Moves a tile-level module to the GPU level. Values that must share a
    layout (operands and results of elementwise operations, loads and stores,
    loop-carried values) form classes; the memory accesses anchor their
    classes to coalesced layouts chosen from axis info (16-byte vectors
    along the most contiguous dimension), larger accesses first; layouts
    then propagate across broadcasts, expand_dims, reductions and
    transposes to the remaining classes, which default to blocked layouts.
    Conversions are inserted only where the relations disagree.
  }];
  let options = [
    Option<"numWarps", "num-warps", "int", "4", "warps per program">,
    Option<"threadsPerWarp", "threads-per-warp", "int", "32", "threads per warp">,
    Option<"target", "target", "std::string", "\"sm_90a\"", "GPU target">
  ];
  let dependentDialects = ["::kiln::gpu::KGpuDialect"];
}

def ConvertKGpuToLLVM : Pass<"kgpu-to-llvm", "mlir::ModuleOp"> {
  let summary = "Lower the GPU level to per-thread LLVM and NVVM";
  let description = [{
    Every block becomes, in each thread, a struct of its registers; kernels
    become llvm.func kernels of num_warps * 32 threads; memory accesses,
    shuffles, barriers and conversions become inline PTX and NVVM
    operations. Scalar arith/math operations stay for kiln-finalize-llvm.
    Records the shared memory a program needs as `kgpu.shared_memory`.
  }];
  let options = [
    Option<"computeCapability", "compute-capability", "int", "90", "target compute capability">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect"];
}

def FinalizeLLVM : Pass<"kiln-finalize-llvm", "mlir::ModuleOp"> {
  let summary = "Lower the remaining scalar arith, math and control flow to LLVM";
  let description = [{
    f32 exp/exp2/log/log2/rsqrt become the GPU's approximate instructions
    (ex2/lg2/rsqrt.approx: a few ulps); tanh, erf, sin and cos polynomial
    approximations; pow expands to exp and log. Float to integer conversions
    saturate (NaN gives 0). Transcendental math on f64 is reported as
    unsupported.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"];
}

def TestAxisInfo : Pass<"kgpu-test-axis-info", "mlir::ModuleOp"> {
  let summary = "Report the axis info of every integer and pointer value (for tests)";
}

#endif // KILN_PASSES
