//===- NVPTX.cpp - the NVIDIA back end ------------------------------------===//

#include "compiler/backend/nvptx/NVPTX.h"

#include <kiln/error.h>
#include <kiln/target.h>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <utility>

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

/// Where the fatal error of the guarded compile running on this thread
/// goes; null outside one.
thread_local std::string *fatalErrorOfThisThread = nullptr;

void onLLVMFatalError(void *, const char *reason, bool) {
  llvm::CrashRecoveryContext *recovery = llvm::CrashRecoveryContext::GetCurrent();
  if (recovery && fatalErrorOfThisThread) {
    *fatalErrorOfThisThread = reason;
    recovery->HandleExit(1); // back to RunSafely in recoverFatalErrors
  }
  // Another LLVM user's error in this process: LLVM's own message (not
  // through a raw_ostream, which may itself report fatal errors), then its
  // exit.
  std::string message = std::string("LLVM ERROR: ") + reason + "\n";
  [[maybe_unused]] ssize_t written = ::write(2, message.data(), message.size());
}

/// Runs `work` so that an LLVM fatal error in it (report_fatal_error, which
/// would print and then abort() or exit() the host process) or a crash
/// (abort, a bad access) returns here: the reason LLVM gave, or nullopt
/// when `work` finished. LLVM's state after such an error is not safe to
/// destroy: the caller abandons what `work` made.
/// LLVM's crash recovery works through process-wide signal handlers. A
/// library must leave its host's handlers alone, so they are installed only
/// while some thread compiles (counted), and the host's are back after.
class RecoveryWindow {
public:
  RecoveryWindow() {
    std::lock_guard<std::mutex> lock(mutex());
    if (users()++ == 0)
      llvm::CrashRecoveryContext::Enable();
  }
  ~RecoveryWindow() {
    std::lock_guard<std::mutex> lock(mutex());
    if (--users() == 0)
      llvm::CrashRecoveryContext::Disable();
  }
  RecoveryWindow(const RecoveryWindow &) = delete;
  RecoveryWindow &operator=(const RecoveryWindow &) = delete;

private:
  static std::mutex &mutex() {
    static std::mutex m;
    return m;
  }
  static int &users() {
    static int n = 0;
    return n;
  }
};

std::optional<std::string> recoverFatalErrors(llvm::function_ref<void()> work) {
  static std::once_flag once;
  std::call_once(once, [] { llvm::install_fatal_error_handler(onLLVMFatalError); });
  RecoveryWindow window; // the handlers that return a crash inside RunSafely to it
  std::string reason;
  struct Restore {
    std::string *outer;
    ~Restore() { fatalErrorOfThisThread = outer; }
  } restore{std::exchange(fatalErrorOfThisThread, &reason)};
  std::exception_ptr thrown; // (kept from unwinding through LLVM's frames)
  llvm::CrashRecoveryContext recovery;
  const bool finished = recovery.RunSafely([&] {
    try {
      work();
    } catch (...) {
      thrown = std::current_exception();
    }
  });
  if (thrown)
    std::rethrow_exception(thrown);
  if (finished)
    return std::nullopt;
  if (reason.empty())
    reason = "it crashed (" + std::string(strsignal(recovery.RetCode - 128)) + ")";
  return reason;
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
std::unique_ptr<llvm::Module> translate(mlir::ModuleOp module, llvm::LLVMContext &context,
                                        llvm::TargetMachine &machine, bool approxDiv) {
  mlir::MLIRContext *mlirContext = module.getContext();
  mlir::registerBuiltinDialectTranslation(*mlirContext);
  mlir::registerLLVMDialectTranslation(*mlirContext);
  mlir::registerNVVMDialectTranslation(*mlirContext);
  std::unique_ptr<llvm::Module> llvmModule = mlir::translateModuleToLLVMIR(module, context, "kiln");
  if (!llvmModule)
    throw Error("translating the kernel to LLVM IR failed");
  llvmModule->setTargetTriple(llvm::Triple(kTriple));
  llvmModule->setDataLayout(machine.createDataLayout());
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*llvmModule, &os))
    throw Error("the LLVM IR of the kernel is invalid:\n" + problems);
  if (approxDiv)
    approximateDivisions(*llvmModule);

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(*llvmModule, mam);
  return llvmModule;
}

/// What LLVM compiles a kernel with, owned here so that a failed compile
/// can abandon it (see recoverFatalErrors). (The module, which lives in the
/// context, is destroyed first.)
struct LLVMState {
  std::unique_ptr<llvm::LLVMContext> context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::TargetMachine> machine;
  std::unique_ptr<llvm::Module> module;

  void abandon() {
    (void)module.release();
    (void)machine.release();
    (void)context.release();
  }
};

/// Makes the target machine for `arch` in `state`, then runs `work`, both
/// under recoverFatalErrors (a PTX version the target does not take ends
/// LLVM as the machine is made); when LLVM fails, abandons the state and
/// throws its reason.
void compileGuarded(LLVMState &state, const std::string &arch, bool fpFusion, llvm::function_ref<void()> work) {
  initializeNVPTX(); // (once, and outside: a jump out of std::call_once would break it)
  if (std::optional<std::string> reason = recoverFatalErrors([&] {
        state.machine = targetMachine(arch, fpFusion);
        work();
      })) {
    state.abandon();
    throw Error("compiling the kernel for " + arch + ", LLVM failed: " + *reason);
  }
}

} // namespace

std::string toLLVMIR(mlir::ModuleOp module, const std::string &arch, FloatRounding rounding) {
  LLVMState state;
  std::string text;
  compileGuarded(state, arch, rounding.fpFusion, [&] {
    state.module = translate(module, *state.context, *state.machine, rounding.approxDiv);
    llvm::raw_string_ostream os(text);
    state.module->print(os, nullptr);
  });
  return text;
}

std::string toPTX(mlir::ModuleOp module, const std::string &arch, FloatRounding rounding, std::string *llvmIR) {
  LLVMState state;
  llvm::SmallString<0> ptx;
  compileGuarded(state, arch, rounding.fpFusion, [&] {
    state.module = translate(module, *state.context, *state.machine, rounding.approxDiv);
    if (llvmIR) {
      llvmIR->clear();
      llvm::raw_string_ostream os(*llvmIR);
      state.module->print(os, nullptr);
    }
    llvm::raw_svector_ostream stream(ptx);
    llvm::legacy::PassManager codegen;
    if (state.machine->addPassesToEmitFile(codegen, stream, nullptr, llvm::CodeGenFileType::AssemblyFile))
      throw Error("the NVPTX back end cannot emit PTX for " + arch);
    codegen.run(*state.module);
  });
  return std::string(ptx.str());
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

std::string readText(llvm::StringRef path) {
  std::ifstream in(path.str(), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
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
  std::string sass = status == 0 ? readText(listing) : "";
  llvm::sys::fs::remove(input);
  llvm::sys::fs::remove(listing);
  return sass;
}

Assembled assemble(const std::string &ptx, const std::string &arch) {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    throw Error("ptxas not found (set KILN_PTXAS or install the CUDA toolkit)");
  llvm::SmallString<128> input, output, log;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("kiln", "ptx", fd, input))
    throw Error("cannot create a temporary file for ptxas");
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << ptx;
  }
  llvm::sys::fs::createTemporaryFile("kiln", "cubin", output);
  llvm::sys::fs::createTemporaryFile("kiln", "log", log);
  std::string archFlag = "-arch=" + arch;
  std::string outFlag = output.str().str();
  llvm::SmallVector<llvm::StringRef> args{ptxas, archFlag, "-O3", "-v", "--warn-on-spills",
                                          input.str(), "-o", outFlag};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &error);
  Assembled result;
  result.log = readText(log);
  if (status != 0) {
    llvm::sys::fs::remove(input);
    llvm::sys::fs::remove(output);
    llvm::sys::fs::remove(log);
    throw Error("ptxas " + archFlag + " failed" + (error.empty() ? "" : " (" + error + ")") + ":\n" + result.log);
  }
  {
    std::ifstream in(output.c_str(), std::ios::binary);
    result.cubin.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  llvm::sys::fs::remove(input);
  llvm::sys::fs::remove(output);
  llvm::sys::fs::remove(log);
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
