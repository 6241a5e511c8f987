//===- NVPTX.cpp - the NVIDIA back end ------------------------------------===//

#include "compiler/backend/nvptx/NVPTX.h"

#include "compiler/backend/LLVMBackend.h"

#include <kiln/error.h>
#include <kiln/target.h>

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <mutex>
#include <optional>
#include <regex>

namespace kiln::nvptx {

namespace {

constexpr const char *kTriple = "nvptx64-nvidia-cuda";

/// The PTX ISA version to write: 8.4, what sm_90a and the fp8 conversions
/// need (ptxas from CUDA 12.4 on accepts it), or the newer one a newer GPU
/// needs (asked for less, LLVM ends the process).
std::string ptxFeatures(const std::string &arch) {
  const std::optional<Target> target = parse_target(arch);
  const int cc = target ? target->compute_capability() : 0;
  int version = 84;
  if (cc == 88 || cc == 110)
    version = 90;
  else if (cc == 103 || cc == 121 || (target && target->suffix == 'f'))
    version = 88;
  else if (cc == 120)
    version = 87;
  else if (cc == 100 || cc == 101)
    version = 86;
  return "+ptx" + std::to_string(version);
}

void initializeNVPTX() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    // 32-bit pointers into shared (and local, constant) memory: the shared
    // window is far below 4 GiB, and 64-bit address arithmetic there costs
    // registers and instructions in every pipelined loop (the mma.sync K
    // loop drops 12 registers and a conversion per copy). The data layout
    // the target machine creates follows this option.
    auto &registered = llvm::cl::getRegisteredOptions();
    if (auto *shortPointers = registered.lookup("nvptx-short-ptr"))
      static_cast<llvm::cl::opt<bool> *>(shortPointers)->setValue(true);
  });
}

std::unique_ptr<llvm::TargetMachine> targetMachine(const std::string &arch, bool fpFusion) {
  initializeNVPTX();
  std::string error;
  llvm::Triple triple(kTriple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    throw Error("the NVPTX back end is not available: " + error);
  // Given a processor it does not know, LLVM warns on stderr, compiles for
  // its oldest one and fails later in instruction selection.
  std::unique_ptr<llvm::MCSubtargetInfo> processors(target->createMCSubtargetInfo(triple, "", ""));
  if (!processors || !processors->isCPUStringValid(arch))
    throw Error("LLVM's NVPTX back end (LLVM " LLVM_VERSION_STRING ") does not know the GPU " + arch);
  llvm::TargetOptions options;
  options.AllowFPOpFusion = fpFusion ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Standard;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, arch, ptxFeatures(arch), options, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

/// Each f32 division as PTX's div.full.f32 (Triton's `/`: at most 2 ulp
/// off, a reciprocal and a multiply with range scaling) instead of the
/// IEEE quotient, which costs a slow-path check and a branch per element.
/// Before O3, so that it may still hoist and merge them.
void approximateDivisions(llvm::Module &module) {
  llvm::Function *full = nullptr;
  for (llvm::Function &function : module)
    for (llvm::BasicBlock &block : function)
      for (llvm::Instruction &instruction : llvm::make_early_inc_range(block)) {
        auto *division = llvm::dyn_cast<llvm::BinaryOperator>(&instruction);
        if (!division || division->getOpcode() != llvm::Instruction::FDiv || !division->getType()->isFloatTy())
          continue;
        if (!full)
          full = llvm::Intrinsic::getOrInsertDeclaration(&module, llvm::Intrinsic::nvvm_div_full);
        llvm::IRBuilder<> builder(division);
        division->replaceAllUsesWith(builder.CreateCall(full, {division->getOperand(0), division->getOperand(1)}));
        division->eraseFromParent();
      }
}

/// Translates and optimizes; the returned module lives in `context`.
std::unique_ptr<llvm::Module> translateAndOptimize(mlir::ModuleOp module, llvm::LLVMContext &context,
                                                   llvm::TargetMachine &machine, bool approxDiv) {
  std::unique_ptr<llvm::Module> llvmModule = backend::translate(module, context, machine);
  if (approxDiv)
    approximateDivisions(*llvmModule);
  backend::optimize(*llvmModule, machine);
  return llvmModule;
}

/// Makes the target machine for `arch` in `state`, then runs `work`, both
/// guarded (a PTX version the target does not take ends LLVM as the
/// machine is made).
void compileGuarded(backend::LLVMState &state, const std::string &arch, bool fpFusion,
                    llvm::function_ref<void()> work) {
  initializeNVPTX(); // (once, and outside: a jump out of std::call_once would break it)
  backend::compileGuarded(state, arch, [&] {
    state.machine = targetMachine(arch, fpFusion);
    work();
  });
}

} // namespace

std::string toLLVMIR(mlir::ModuleOp module, const std::string &arch, FloatRounding rounding) {
  backend::LLVMState state;
  std::string text;
  compileGuarded(state, arch, rounding.fpFusion, [&] {
    state.module = translateAndOptimize(module, *state.context, *state.machine, rounding.approxDiv);
    text = backend::printed(*state.module);
  });
  return text;
}

std::string toPTX(mlir::ModuleOp module, const std::string &arch, FloatRounding rounding, std::string *llvmIR) {
  backend::LLVMState state;
  std::string ptx;
  compileGuarded(state, arch, rounding.fpFusion, [&] {
    state.module = translateAndOptimize(module, *state.context, *state.machine, rounding.approxDiv);
    if (llvmIR)
      *llvmIR = backend::printed(*state.module);
    ptx = backend::emitFile(*state.module, *state.machine, llvm::CodeGenFileType::AssemblyFile);
  });
  return ptx;
}

namespace {

/// A CUDA tool: $<variable>, else next to CUDA, else on PATH; empty when
/// there is none.
std::string findCudaTool(const char *tool, const char *variable) {
  if (const char *explicitPath = std::getenv(variable); explicitPath && *explicitPath)
    return explicitPath;
  std::string installed = std::string("/usr/local/cuda/bin/") + tool;
  if (llvm::sys::fs::can_execute(installed))
    return installed;
  if (auto found = llvm::sys::findProgramByName(tool))
    return *found;
  return {};
}

} // namespace

std::string findPtxas() { return findCudaTool("ptxas", "KILN_PTXAS"); }

std::string disassemble(const std::vector<char> &cubin) {
  std::string cuobjdump = findCudaTool("cuobjdump", "KILN_CUOBJDUMP");
  if (cuobjdump.empty() || cubin.empty())
    return {};
  llvm::SmallString<128> input, listing;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("kiln", "cubin", fd, input))
    return {};
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(cubin.data(), cubin.size());
  }
  llvm::sys::fs::createTemporaryFile("kiln", "sass", listing);
  llvm::SmallVector<llvm::StringRef> args{cuobjdump, "-sass", input.str()};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, listing.str(), listing.str()};
  int status = llvm::sys::ExecuteAndWait(cuobjdump, args, std::nullopt, redirects);
  std::string sass = status == 0 ? backend::readFile(listing) : "";
  llvm::sys::fs::remove(input);
  llvm::sys::fs::remove(listing);
  return sass;
}

Assembled assemble(const std::string &ptx, const std::string &arch) {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    throw Error("ptxas not found (set KILN_PTXAS or install the CUDA toolkit)");
  const std::string archFlag = "-arch=" + arch;
  backend::ToolRun run = backend::runTool(ptxas, {archFlag, "-O3", "-v", "--warn-on-spills"}, ptx, "ptx");
  Assembled result;
  result.log = run.log;
  if (run.status != 0)
    throw Error("ptxas " + archFlag + " failed" + (run.error.empty() ? "" : " (" + run.error + ")") + ":\n" +
                result.log);
  result.cubin.assign(run.output.begin(), run.output.end());
  std::smatch m;
  if (std::regex_search(result.log, m, std::regex(R"(Used (\d+) registers)")))
    result.registers = std::stoi(m[1]);
  if (std::regex_search(result.log, m, std::regex(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)"))) {
    result.stack_frame = std::stoi(m[1]);
    result.spill_stores = std::stoi(m[2]);
    result.spill_loads = std::stoi(m[3]);
  }
  return result;
}

std::string withProgramsPerMultiprocessor(const std::string &ptx, int programs) {
  static const std::regex entryBound(R"((\n\.maxntid [^\n]*))");
  return std::regex_replace(ptx, entryBound, "$1\n.minnctapersm " + std::to_string(programs));
}

} // namespace kiln::nvptx
