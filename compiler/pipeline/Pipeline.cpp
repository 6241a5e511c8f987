//===- Pipeline.cpp - the whole pipeline, stage by stage ------------------===//
//
// Every pass Kiln runs, in order, one line each: the place to read what the
// compiler does to a kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleImpl.h"
#include "compiler/backend/amdgpu/AMDGPU.h"
#include "compiler/backend/nvptx/NVPTX.h"
#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/tile/Tile.h"
#include "compiler/transforms/Passes.h"

#include <kiln/compiler.h>
#include <kiln/error.h>

#include "mlir/IR/Diagnostics.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"

#include <array>
#include <fstream>

namespace kiln {

namespace {

constexpr std::array<std::string_view, 9> stageNames = {"traced", "tile",       "gpu",    "llvm",
                                                       "llvm-ir", "ptx", "cubin-info", "amdgcn", "code-object-info"};

void addTilePasses(mlir::PassManager &pm) {
  pm.addPass(mlir::createInlinerPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createLoopInvariantCodeMotionPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

void addGpuPasses(mlir::PassManager &pm, const CompileOptions &options) {
  LowerDescriptorsOptions descriptors;
  descriptors.numStages = options.num_stages;
  descriptors.target = options.arch;
  descriptors.copyEngine = options.copy_engine;
  descriptors.warpSpecialize = options.warp_specialize;
  descriptors.numWarps = options.num_warps;
  pm.addPass(createLowerDescriptors(descriptors));
  pm.addPass(mlir::createCSEPass());
  AssignLayoutsOptions layouts;
  layouts.numWarps = options.num_warps;
  layouts.target = options.arch;
  pm.addPass(createAssignLayouts(layouts));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(createRematerializeConversions());
  pm.addPass(mlir::createCanonicalizerPass());
  PipelineLoopsOptions pipelining;
  pipelining.numStages = options.num_stages;
  pipelining.warpSpecialize = options.warp_specialize;
  pipelining.pingPong = options.ping_pong;
  pipelining.overlapChain = options.overlap_chain;
  pm.addPass(createPipelineLoops(pipelining));
  PrefetchOperandsOptions prefetching;
  prefetching.numStages = options.num_stages;
  pm.addPass(createPrefetchOperands(prefetching));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void addLLVMPasses(mlir::PassManager &pm, const CompileOptions &options) {
  ConvertKGpuToLLVMOptions lowering;
  lowering.computeCapability = compute_capability_of(options.arch);
  lowering.minBlocksPerSm = options.min_blocks_per_sm;
  pm.addPass(createConvertKGpuToLLVM(lowering));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(createFinalizeLLVM());
  pm.addPass(mlir::createSCFToControlFlowPass());
  pm.addPass(createFinalizeLLVM());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

} // namespace

std::string_view name(Stage stage) { return stageNames[static_cast<size_t>(stage)]; }

bool has_amd_back_end() { return amdgpu::built(); }

std::optional<Stage> parse_stage(std::string_view text) {
  for (size_t i = 0; i < stageNames.size(); ++i)
    if (stageNames[i] == text)
      return static_cast<Stage>(i);
  return std::nullopt;
}

std::vector<std::string_view> stage_names() { return {stageNames.begin(), stageNames.end()}; }

namespace {

/// Runs the passes that take `module` from the stage before `first` through
/// `last` (both at most Stage::llvm, where the pipeline leaves MLIR).
void runStages(Module &module, Stage first, Stage last, const CompileOptions &options) {
  if (last >= Stage::gpu) {
    const Target target = check_target(options.arch);
    // (NVIDIA's limit, 32 warps of 32 threads, is the config's own.)
    constexpr int kAmdWorkgroupLimit = 1024;
    const int lanes = threads_per_warp(target), workItems = options.num_warps * lanes;
    if (target.vendor == GpuVendor::amd && workItems > kAmdWorkgroupLimit)
      throw Error("num_warps " + std::to_string(options.num_warps) + " makes a workgroup of " +
                  std::to_string(workItems) + " work-items on " + target.name + " (" + std::to_string(lanes) +
                  "-lane wavefronts); an AMD GPU runs at most " + std::to_string(kAmdWorkgroupLimit));
  }
  mlir::MLIRContext &context = *module.impl().context;
  mlir::PassManager pm(&context);
  auto wanted = [&](Stage stage) { return first <= stage && stage <= last; };
  if (wanted(Stage::tile))
    addTilePasses(pm);
  if (wanted(Stage::gpu))
    addGpuPasses(pm, options);
  if (wanted(Stage::llvm))
    addLLVMPasses(pm, options);

  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error)
      message += diagnostic.str() + "\n";
    return mlir::success();
  });
  if (mlir::failed(pm.run(*module.impl().module)))
    throw Error("compiling '" + module.kernel_name() + "' to stage " + std::string(name(last)) +
                " failed:\n" + message);
}

backend::FloatRounding rounding(const CompileOptions &options) {
  return {.fpFusion = options.fp_fusion, .approxDiv = options.approx_div};
}

bool forAmd(const CompileOptions &options) { return targets_amd(options.arch); }

/// Refuses a stage of the other vendor's back end: PTX for an AMD target,
/// AMDGCN for an NVIDIA one.
void checkVendorStage(Stage stage, const CompileOptions &options) {
  const bool amdStage = stage == Stage::amdgcn || stage == Stage::code_object_info;
  const bool nvidiaStage = stage == Stage::ptx || stage == Stage::cubin_info;
  if (forAmd(options) && nvidiaStage)
    throw Error("the " + std::string(name(stage)) + " stage is NVIDIA's; for the AMD target " + options.arch +
                " ask for amdgcn or code-object-info");
  if (!forAmd(options) && amdStage)
    throw Error("the " + std::string(name(stage)) + " stage is AMD's; for the NVIDIA target " + options.arch +
                " ask for ptx or cubin-info");
}

} // namespace

namespace {
/// ", N programs a multiprocessor" on Hopper, and whether the PTX declares
/// it to ptxas.
std::string occupancy(const CompiledKernel &kernel) {
  if (compute_capability_of(kernel.arch) != 90)
    return "";
  int programs = gpu::hopperProgramsPerMultiprocessor(kernel.registers, kernel.num_warps * 32, kernel.shared_memory);
  return ", " + std::to_string(programs) + (programs == 1 ? " program" : " programs") + " a multiprocessor" +
         (kernel.ptx.find(".minnctapersm") != std::string::npos ? " (declared to ptxas)" : "");
}
} // namespace

void lower(Module &module, Stage requested, const CompileOptions &options) {
  runStages(module, Stage::tile, std::min(requested, Stage::llvm), options);
}

std::string emit(const Module &module, Stage stage, const CompileOptions &options) {
  checkVendorStage(stage, options);
  Module working(module.impl().clone());
  lower(working, stage, options);
  switch (stage) {
  case Stage::llvm_ir:
    return forAmd(options) ? amdgpu::toLLVMIR(*working.impl().module, options.arch, rounding(options))
                           : nvptx::toLLVMIR(*working.impl().module, options.arch, rounding(options));
  case Stage::amdgcn:
    return amdgpu::compile(*working.impl().module, options.arch, rounding(options)).assembly;
  case Stage::code_object_info: {
    CompiledKernel kernel = compile(module, options);
    return "kernel " + kernel.name + " for " + kernel.arch + ": " + kernel.resources + "\n";
  }
  case Stage::ptx:
    return nvptx::toPTX(*working.impl().module, options.arch, rounding(options));
  case Stage::cubin_info: {
    CompiledKernel kernel = compile(module, options);
    return "kernel " + kernel.name + " for " + kernel.arch + ": " + std::to_string(kernel.registers) +
           " registers, " + std::to_string(kernel.shared_memory) + " bytes shared memory, " +
           std::to_string(kernel.stack_frame) + " bytes stack frame, " + std::to_string(kernel.spill_stores) +
           " bytes spill stores, " + std::to_string(kernel.spill_loads) + " bytes spill loads, " +
           std::to_string(kernel.num_warps * 32) + " threads" + occupancy(kernel) + "\n";
  }
  default:
    return working.str(options.locations);
  }
}

namespace {
void dump(const std::string &dir, const std::string &file, const std::string &text) {
  if (dir.empty())
    return;
  llvm::sys::fs::create_directories(dir);
  std::ofstream(dir + "/" + file, std::ios::binary) << text;
}

/// The AMD back end's part of compile(): AMDGCN, its resources, and, with
/// ld.lld, the code object.
void compileForAmd(CompiledKernel &kernel, mlir::ModuleOp llvmModule, const CompileOptions &options,
                   const std::string &dir) {
  amdgpu::Compiled compiled = amdgpu::compile(llvmModule, options.arch, rounding(options), !dir.empty());
  dump(dir, "4-llvm-ir.ll", compiled.llvmIR);
  dump(dir, "5-kernel.amdgcn", compiled.assembly);
  const amdgpu::Resources resources = amdgpu::resourcesOf(compiled.assembly);
  kernel.amdgcn = std::move(compiled.assembly);
  kernel.registers = resources.vgprs;
  kernel.stack_frame = resources.scratchBytes;
  kernel.spill_stores = kernel.spill_loads = 4 * resources.vgprSpills;
  kernel.resources = amdgpu::describe(resources);
  dump(dir, "6-resources.txt", kernel.resources + "\n");
  if (!amdgpu::findLinker().empty()) {
    kernel.code_object = amdgpu::link(compiled.object);
    dump(dir, "7-kernel.hsaco", std::string(kernel.code_object.begin(), kernel.code_object.end()));
  }
}
} // namespace

CompiledKernel compile(const Module &module, const CompileOptions &options) {
  CompiledKernel kernel;
  kernel.name = module.kernel_name();
  kernel.arch = options.arch;
  kernel.num_warps = options.num_warps;
  std::string dir = options.dump_dir.empty() ? "" : options.dump_dir + "/" + kernel.name;
  dump(dir, "0-traced.mlir", module.str(true));
  Module working(module.impl().clone());
  for (Stage stage : {Stage::tile, Stage::gpu, Stage::llvm}) {
    runStages(working, stage, stage, options);
    dump(dir, std::to_string(static_cast<int>(stage)) + "-" + std::string(name(stage)) + ".mlir",
         working.str(true));
  }
  auto llvmModule = *working.impl().module;
  if (auto shared = llvmModule->getAttrOfType<mlir::IntegerAttr>("kgpu.shared_memory"))
    kernel.shared_memory = static_cast<int>(shared.getInt());
  kernel.num_warps += gpu::getProducerWarps(llvmModule);
  kernel.cluster_size = tile::clusterSizeOf(llvmModule);
  if (auto maps = llvmModule->getAttrOfType<mlir::ArrayAttr>(gpu::kTensorMapsAttr))
    for (auto entry : maps.getAsRange<mlir::DictionaryAttr>()) {
      TensorMapSpec spec;
      spec.parameter = static_cast<int>(mlir::cast<mlir::IntegerAttr>(entry.get("parameter")).getInt());
      for (int32_t size : mlir::cast<mlir::DenseI32ArrayAttr>(entry.get("box")).asArrayRef())
        spec.box.push_back(static_cast<uint32_t>(size));
      spec.swizzle_bytes = static_cast<int>(mlir::cast<mlir::IntegerAttr>(entry.get("swizzle")).getInt());
      if (auto base = entry.getAs<mlir::IntegerAttr>("base")) { // a map the compiler added
        spec.base = static_cast<int>(base.getInt());
        spec.offset_rows = static_cast<bool>(entry.get("offset_rows"));
        spec.offset_columns = static_cast<bool>(entry.get("offset_columns"));
        for (auto [field, sources] : {std::pair{"sizes", &spec.sizes}, std::pair{"strides", &spec.strides}}) {
          auto parameters = entry.getAs<mlir::DenseI32ArrayAttr>(std::string(field) + "_parameters");
          auto constants = entry.getAs<mlir::DenseI64ArrayAttr>(std::string(field) + "_constants");
          for (auto [parameter, constant] : llvm::zip_equal(parameters.asArrayRef(), constants.asArrayRef()))
            sources->push_back({parameter, constant});
        }
      }
      kernel.tensor_maps.push_back(spec);
    }
  kernel.threads_per_warp = gpu::getThreadsPerWarp(llvmModule);
  if (forAmd(options)) {
    compileForAmd(kernel, llvmModule, options, dir);
    return kernel;
  }
  std::string llvmIR;
  kernel.ptx = nvptx::toPTX(llvmModule, options.arch, rounding(options), dir.empty() ? nullptr : &llvmIR);
  dump(dir, "4-llvm-ir.ll", llvmIR);
  dump(dir, "5-kernel.ptx", kernel.ptx);
  if (!nvptx::findPtxas().empty()) {
    nvptx::Assembled assembled = nvptx::assemble(kernel.ptx, options.arch);
    // ptxas budgets registers for as many programs a multiprocessor as it
    // hopes to fit, and to stay under that budget issues a block's loads
    // one after another's uses instead of together. Where it missed that
    // occupancy anyway, told the occupancy the kernel gets it may use every
    // register that leaves (a row kernel's loads then stay in flight
    // together). A min_blocks_per_sm the kernel asked for stands; Hopper's
    // limits are the ones known here.
    if (compute_capability_of(options.arch) == 90 && options.min_blocks_per_sm == 0) {
      int programs = gpu::hopperProgramsPerMultiprocessor(assembled.registers, kernel.num_warps * 32,
                                                            kernel.shared_memory);
      if (programs >= 2) {
        std::string bounded = nvptx::withProgramsPerMultiprocessor(kernel.ptx, programs);
        try {
          nvptx::Assembled again = nvptx::assemble(bounded, options.arch);
          if (again.spill_stores == 0 && again.registers != assembled.registers) {
            kernel.ptx = std::move(bounded);
            assembled = std::move(again);
          }
        } catch (const Error &) {
          // (The first assembly stands: the declaration is a hint.)
        }
      }
    }
    kernel.cubin = std::move(assembled.cubin);
    kernel.registers = assembled.registers;
    kernel.spill_stores = assembled.spill_stores;
    kernel.spill_loads = assembled.spill_loads;
    kernel.stack_frame = assembled.stack_frame;
    kernel.ptxas_log = assembled.log;
    dump(dir, "6-ptxas.log", assembled.log);
    if (!dir.empty())
      dump(dir, "7-kernel.sass", nvptx::disassemble(kernel.cubin));
  }
  return kernel;
}

} // namespace kiln
