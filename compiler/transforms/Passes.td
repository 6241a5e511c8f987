//===- Passes.td - Kiln's passes ---------------------------*- tablegen -*-===//

#ifndef KILN_PASSES
#define KILN_PASSES

include "mlir/Pass/PassBase.td"

def LowerDescriptors : Pass<"kgpu-lower-descriptors", "mlir::ModuleOp"> {
  let summary = "Keep the descriptor loads the copy engine takes; rewrite the rest as masked loads";
  let description = [{
    A `tile.descriptor_load` stays (for PipelineLoops to turn into
    copy-engine copies, `kgpu.tma_load`) when the target is sm_90 or later,
    loops are pipelined (`num-stages` >= 2), the block is 2-d with rows of
    16 bytes or more (a power of two) and at most 256 rows, it (or its
    transpose, its only use) is an operand of a tensor-core dot in the same
    loop body and has no other use,
    its offsets are pure arithmetic on the induction variable and
    loop-invariant or loop-carried values, the specialization proves the
    tensor's base 16-byte aligned, its innermost stride 1 and its other
    strides multiples of 16 bytes, the loop's rings still fit shared
    memory, and every such load of one descriptor uses the same box. The
    boxes are recorded in the module's `kgpu.tensor_maps`. Every other
    descriptor load and every descriptor store becomes the masked pointer
    load or store its definition describes.
  }];
  let options = [
    Option<"numStages", "num-stages", "int", "3", "software-pipelining depth of loops">,
    Option<"target", "target", "std::string", "\"sm_90a\"", "GPU target">,
    Option<"copyEngine", "copy-engine", "bool", "true",
           "also move pointer-block loads that read a box of a tensor to the copy engine">,
    Option<"warpSpecialize", "warp-specialize", "bool", "false",
           "loops will get a producer warpgroup: move the loads of loops that chain dots too">,
    Option<"numWarps", "num-warps", "int", "4", "warps a program (to estimate a loop's registers)">
  ];
  let dependentDialects = ["::kiln::gpu::KGpuDialect", "::mlir::arith::ArithDialect"];
}

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
    Option<"target", "target", "std::string", "\"sm_90a\"",
           "GPU target (its warp's threads: 64 on AMD's gfx9, else 32)">
  ];
  let dependentDialects = ["::kiln::gpu::KGpuDialect"];
}

def RematerializeConversions : Pass<"kgpu-rematerialize-conversions", "mlir::ModuleOp"> {
  let summary = "Recompute cheap values in the wanted layout instead of converting them in loops";
  let description = [{
    A kgpu.convert_layout inside an scf.for whose source is cheap to
    compute (ranges, splats, splat constants, elementwise arithmetic,
    expand_dims, trans; ending at scalars or values defined before the loop, at
    most 12 operations) is replaced by that computation done directly in
    the target layout; values from before the loop are converted once, ahead
    of it. A K mask built once as a row and used by both operands of a dot
    then costs no shared-memory round trip per iteration.
  }];
  let dependentDialects = ["::kiln::gpu::KGpuDialect", "::mlir::arith::ArithDialect"];
}

def PipelineLoops : Pass<"kgpu-pipeline-loops", "mlir::ModuleOp"> {
  let summary = "Overlap the loads of a loop's tensor-core dot operands with its math";
  let description = [{
    In an scf.for whose body loads an operand of a tensor-core dot (Mma.h),
    the load becomes an asynchronous copy (`cp.async`) into a ring of
    `num-stages` shared-memory slots, issued `num-stages - 1` iterations
    ahead: before the loop the first `num-stages - 1` copies start; each
    iteration waits for its slot, starts the copy for a later iteration, and
    the dot reads its slot directly. The address computation of the load
    (everything it depends on inside the loop: the induction variable and
    loop-carried pointers advanced by pure arithmetic) is cloned to run
    ahead. Loads that do not fit (other uses, a non-zero `other`, accesses
    narrower than 4 bytes, addresses that depend on loop results) are left
    as they are.

    With `warp-specialize`, a loop at the top of the kernel whose operands
    all come by the copy engine into a wgmma dot left in flight gets a
    producer warpgroup instead (`kgpu.producer`): one thread of an extra warpgroup runs a
    copy of the loop's address arithmetic and fills every ring slot as soon
    as the consumers hand it back (an "empty" barrier per slot, one arrival
    per consumer warp once the dot that read the slot completed); the
    consumer warps only wait for each slot's "full" barrier and multiply,
    with no barrier of the program in the loop. A loop of chained dots
    whose last dot can stay in flight across the back edge (attention)
    gets one too, with the option or where `kgpu-lower-descriptors` marked
    it `kgpu.warp_specialize`; the kernel's loops of chained dots (causal
    attention's two) then share one producer and one ring, one after another.
    Other loops are pipelined as without it.
  }];
  let options = [
    Option<"numStages", "num-stages", "int", "3", "slots in each ring (1: no pipelining)">,
    Option<"warpSpecialize", "warp-specialize", "bool", "false",
           "give copy-engine loops feeding wgmma a producer warpgroup">,
    Option<"pingPong", "ping-pong", "bool", "false",
           "the consumer warpgroups of a producer's chained dots take turns on the tensor cores">,
    Option<"overlapChain", "overlap-chain", "bool", "false",
           "a producer's chained dots without turns run each warpgroup's elementwise work under its own "
           "last dot (the loop rotated by that dot)">
  ];
  let dependentDialects = ["::kiln::gpu::KGpuDialect", "::mlir::arith::ArithDialect"];
}

def PrefetchOperands : Pass<"kgpu-prefetch-operands", "mlir::ModuleOp"> {
  let summary = "Load a loop's matrix-core dot operands an iteration ahead, through two shared slots";
  let description = [{
    For targets whose threads cannot copy from global into shared memory
    asynchronously (AMD's: no `cp.async`, no copy engine), and so get
    nothing from `kgpu-pipeline-loops`. In an scf.for whose body loads an
    operand of a dot on the matrix cores (Mfma.h) -- the load's only use --
    the load is issued one iteration ahead and stored, at the end of the
    iteration, into the other of two shared-memory slots, which the dot
    reads directly:

        ring[0] = lb < ub ? load(addr(lb)) : 0
        barrier
        for k (slot):
          r = k + step < ub ? load(addr(k + step)) : 0
          acc = dot(local_load ring[slot], ..., acc)
          local_store r -> ring[1 - slot] unsynchronized
          barrier                       // one for all of the iteration's stores
          yield 1 - slot

    so the next step's global loads are in flight while this step's
    products run, and one barrier an iteration orders the slots, where a
    dot staging its operands passes two. Only the slot index crosses the
    back edge: loaded registers carried by the loop would be split into
    their elements, and so waited for, at the loop's head. The address
    computation (pure arithmetic on the induction variable and
    loop-carried values, AddressSlice.h) moves to the top of the body, and
    a copy of it computes the next iteration's addresses from this
    iteration's next values. A loop is pipelined when `num-stages` >= 2
    (deeper is the same: one iteration ahead), its operands' slots fit the
    LDS beside the kernel's scratch (operands that do not fit stay as they
    are), and the load is not volatile. As on NVIDIA GPUs, the loads are
    taken not to read what the loop itself writes.
  }];
  let options = [
    Option<"numStages", "num-stages", "int", "2", "software-pipelining depth (1: none; 2 or more: one iteration ahead)">
  ];
  let dependentDialects = ["::kiln::gpu::KGpuDialect", "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
}

def ConvertKGpuToLLVM : Pass<"kgpu-to-llvm", "mlir::ModuleOp"> {
  let summary = "Lower the GPU level to per-thread LLVM and NVVM";
  let description = [{
    Every block becomes, in each thread, a struct of its registers; kernels
    become llvm.func kernels of num_warps warps; memory accesses, shuffles,
    barriers and conversions become inline PTX and NVVM operations, or, for
    an AMD target (kgpu.target gfx...), ROCDL operations and LLVM loads,
    stores and atomics. Scalar arith/math operations stay for
    kiln-finalize-llvm.
    Records the shared memory a program needs as `kgpu.shared_memory`.
  }];
  let options = [
    Option<"computeCapability", "compute-capability", "int", "90", "target compute capability">,
    Option<"minBlocksPerSm", "min-blocks-per-sm", "int", "0",
           "programs each multiprocessor must hold at once (nvvm.minctasm: ptxas caps registers to fit); 0: no bound">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::ROCDL::ROCDLDialect", "::mlir::scf::SCFDialect"];
}

def FinalizeLLVM : Pass<"kiln-finalize-llvm", "mlir::ModuleOp"> {
  let summary = "Lower the remaining scalar arith, math and control flow to LLVM";
  let description = [{
    f32 exp/exp2/log/log2/rsqrt become the GPU's approximate instructions
    (ex2/lg2/rsqrt.approx on NVIDIA, v_exp/v_log/v_rsq on AMD: a few ulps); tanh, erf, sin and cos polynomial
    approximations; pow expands to exp and log. Float to integer conversions
    saturate (NaN gives 0). Transcendental math on f64 is reported as
    unsupported.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::ROCDL::ROCDLDialect"];
}

def TestAxisInfo : Pass<"kgpu-test-axis-info", "mlir::ModuleOp"> {
  let summary = "Report the axis info of every integer and pointer value (for tests)";
}

#endif // KILN_PASSES
