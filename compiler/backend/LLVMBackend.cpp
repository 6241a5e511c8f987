//===- LLVMBackend.cpp - what the NVPTX and AMDGPU back ends share --------===//

#include "compiler/backend/LLVMBackend.h"

#include <kiln/error.h>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <optional>
#include <utility>

namespace kiln::backend {

namespace {

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

} // namespace

void LLVMState::abandon() {
  (void)module.release();
  (void)machine.release();
  (void)context.release();
}

void compileGuarded(LLVMState &state, const std::string &arch, llvm::function_ref<void()> work) {
  if (std::optional<std::string> reason = recoverFatalErrors(work)) {
    state.abandon();
    throw Error("compiling the kernel for " + arch + ", LLVM failed: " + *reason);
  }
}

std::unique_ptr<llvm::Module> translate(mlir::ModuleOp module, llvm::LLVMContext &context,
                                        llvm::TargetMachine &machine) {
  mlir::MLIRContext *mlirContext = module.getContext();
  mlir::registerBuiltinDialectTranslation(*mlirContext);
  mlir::registerLLVMDialectTranslation(*mlirContext);
  mlir::registerNVVMDialectTranslation(*mlirContext);
  mlir::registerROCDLDialectTranslation(*mlirContext);
  std::unique_ptr<llvm::Module> llvmModule = mlir::translateModuleToLLVMIR(module, context, "kiln");
  if (!llvmModule)
    throw Error("translating the kernel to LLVM IR failed");
  llvmModule->setTargetTriple(machine.getTargetTriple());
  llvmModule->setDataLayout(machine.createDataLayout());
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*llvmModule, &os))
    throw Error("the LLVM IR of the kernel is invalid:\n" + problems);
  return llvmModule;
}

void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
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
  passes.run(module, mam);
}

std::string emitFile(llvm::Module &module, llvm::TargetMachine &machine, llvm::CodeGenFileType type) {
  llvm::SmallString<0> output;
  llvm::raw_svector_ostream stream(output);
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, stream, nullptr, type))
    throw Error("LLVM's back end for " + machine.getTargetCPU().str() + " cannot emit this kind of file");
  codegen.run(module);
  return std::string(output.str());
}

std::string printed(const llvm::Module &module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return text;
}

std::string readFile(llvm::StringRef path) {
  std::ifstream in(path.str(), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ToolRun runTool(const std::string &program, const std::vector<std::string> &flags, const std::string &input,
                const char *inputSuffix) {
  ToolRun run;
  llvm::SmallString<128> inputPath, outputPath, logPath;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("kiln", inputSuffix, fd, inputPath)) {
    run.error = "cannot create a temporary file";
    return run;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << input;
  }
  llvm::sys::fs::createTemporaryFile("kiln", "out", outputPath);
  llvm::sys::fs::createTemporaryFile("kiln", "log", logPath);
  llvm::SmallVector<llvm::StringRef> args{program};
  for (const std::string &flag : flags)
    args.push_back(flag);
  llvm::append_range(args, llvm::ArrayRef<llvm::StringRef>{inputPath.str(), "-o", outputPath.str()});
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(), logPath.str()};
  run.status = llvm::sys::ExecuteAndWait(program, args, std::nullopt, redirects, 0, 0, &run.error);
  run.log = readFile(logPath);
  if (run.status == 0)
    run.output = readFile(outputPath);
  for (const auto &path : {inputPath, outputPath, logPath})
    llvm::sys::fs::remove(path);
  return run;
}

} // namespace kiln::backend
