//===- AMDGPU.cpp - the AMD back end --------------------------------------===//

#include "compiler/backend/amdgpu/AMDGPU.h"

#include "compiler/backend/LLVMBackend.h"

#include <kiln/error.h>

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <cstdlib>
#include <mutex>
#include <optional>
#include <regex>

namespace kiln::amdgpu {

namespace {

constexpr const char *kTriple = "amdgcn-amd-amdhsa";

void initializeAMDGPU() {
#ifdef KILN_HAVE_AMDGPU
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
  });
#endif
}

std::unique_ptr<llvm::TargetMachine> targetMachine(const std::string &arch, bool fpFusion) {
  std::string error;
  llvm::Triple triple(kTriple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    throw Error("this build of Kiln has no AMD back end (it was configured with KILN_AMDGPU=OFF), so it cannot "
                "compile for " + arch);
  std::unique_ptr<llvm::MCSubtargetInfo> processors(target->createMCSubtargetInfo(triple, "", ""));
  if (!processors || !processors->isCPUStringValid(arch))
    throw Error("LLVM's AMDGPU back end (LLVM " LLVM_VERSION_STRING ") does not know the GPU " + arch);
  llvm::TargetOptions options;
  options.AllowFPOpFusion = fpFusion ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Standard;
  options.MCOptions.AsmVerbose = true; // (the kernel's resources and occupancy, as comments, as llc writes them)
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, arch, "", options, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

/// Each f32 division allowed 2.5 ulp (!fpmath), which the AMDGPU back end
/// computes with a reciprocal and a multiply (range-scaled) instead of the
/// IEEE quotient's refinement: NVIDIA's div.full, Triton's `/`.
void approximateDivisions(llvm::Module &module) {
  llvm::MDNode *accuracy = llvm::MDBuilder(module.getContext()).createFPMath(2.5f);
  for (llvm::Function &function : module)
    for (llvm::BasicBlock &block : function)
      for (llvm::Instruction &instruction : block)
        if (instruction.getOpcode() == llvm::Instruction::FDiv && instruction.getType()->isFloatTy())
          instruction.setMetadata(llvm::LLVMContext::MD_fpmath, accuracy);
}

/// Translates and optimizes in `state`, guarded; then runs `then`.
void compileGuarded(backend::LLVMState &state, mlir::ModuleOp module, const std::string &arch,
                    FloatRounding rounding, llvm::function_ref<void()> then) {
  initializeAMDGPU(); // (once, and outside the guard: a jump out of std::call_once would break it)
  backend::compileGuarded(state, arch, [&] {
    state.machine = targetMachine(arch, rounding.fpFusion);
    state.module = backend::translate(module, *state.context, *state.machine);
    if (rounding.approxDiv)
      approximateDivisions(*state.module);
    backend::optimize(*state.module, *state.machine);
    then();
  });
}

} // namespace

bool built() {
#ifdef KILN_HAVE_AMDGPU
  return true;
#else
  return false;
#endif
}

std::string toLLVMIR(mlir::ModuleOp module, const std::string &arch, FloatRounding rounding) {
  backend::LLVMState state;
  std::string text;
  compileGuarded(state, module, arch, rounding, [&] { text = backend::printed(*state.module); });
  return text;
}

Compiled compile(mlir::ModuleOp module, const std::string &arch, FloatRounding rounding, bool keepLLVMIR) {
  backend::LLVMState state;
  Compiled compiled;
  compileGuarded(state, module, arch, rounding, [&] {
    if (keepLLVMIR)
      compiled.llvmIR = backend::printed(*state.module);
    // (Code generation rewrites the IR it runs on: the assembly is made
    // from a copy, the object from the module.)
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*state.module);
    compiled.assembly = backend::emitFile(*copy, *state.machine, llvm::CodeGenFileType::AssemblyFile);
    compiled.object = backend::emitFile(*state.module, *state.machine, llvm::CodeGenFileType::ObjectFile);
  });
  return compiled;
}

Resources resourcesOf(const std::string &assembly) {
  const size_t begin = assembly.find(".amdgpu_metadata"), end = assembly.find(".end_amdgpu_metadata");
  if (begin == std::string::npos || end == std::string::npos)
    throw Error("the AMDGPU assembly holds no code object metadata");
  const std::string metadata = assembly.substr(begin, end - begin);
  auto field = [&](const std::string &name) {
    std::smatch m;
    return std::regex_search(metadata, m, std::regex("\\." + name + ":\\s+(\\d+)")) ? std::stoi(m[1]) : 0;
  };
  Resources r;
  r.vgprs = field("vgpr_count");
  r.agprs = field("agpr_count");
  r.sgprs = field("sgpr_count");
  r.vgprSpills = field("vgpr_spill_count");
  r.sgprSpills = field("sgpr_spill_count");
  r.ldsBytes = field("group_segment_fixed_size");
  r.scratchBytes = field("private_segment_fixed_size");
  r.wavefrontSize = field("wavefront_size");
  r.workgroupSize = field("max_flat_workgroup_size");
  std::smatch m;
  if (std::regex_search(assembly, m, std::regex("; Occupancy: (\\d+)")))
    r.occupancy = std::stoi(m[1]);
  return r;
}

std::string describe(const Resources &r) {
  return std::to_string(r.vgprs) + " VGPRs (" + std::to_string(r.agprs) + " of them AGPRs), " +
         std::to_string(r.sgprs) + " SGPRs, " + std::to_string(r.ldsBytes) + " bytes LDS, " + std::to_string(r.scratchBytes) +
         " bytes scratch, " + std::to_string(r.vgprSpills) + " VGPRs spilled, " + std::to_string(r.sgprSpills) +
         " SGPRs spilled, " + std::to_string(r.workgroupSize) + " work-items (wave" +
         std::to_string(r.wavefrontSize) + "), occupancy " + std::to_string(r.occupancy) + " waves a SIMD";
}

std::string findLinker() {
  if (const char *explicitPath = std::getenv("KILN_LD_LLD"); explicitPath && *explicitPath)
    return explicitPath;
  for (const char *name : {"ld.lld-22", "ld.lld"})
    if (auto found = llvm::sys::findProgramByName(name))
      return *found;
  const std::string installed = "/usr/lib/llvm-22/bin/ld.lld";
  return llvm::sys::fs::can_execute(installed) ? installed : "";
}

std::vector<char> link(const std::string &object) {
  const std::string linker = findLinker();
  if (linker.empty())
    throw Error("ld.lld not found (set KILN_LD_LLD or install lld), which links AMD code objects");
  backend::ToolRun run = backend::runTool(linker, {"-shared"}, object, "o");
  if (run.status != 0 || run.output.empty())
    throw Error("ld.lld failed to link the code object" + (run.error.empty() ? "" : " (" + run.error + ")") +
                ":\n" + run.log);
  return std::vector<char>(run.output.begin(), run.output.end());
}

} // namespace kiln::amdgpu
