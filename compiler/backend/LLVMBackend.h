//===- LLVMBackend.h - what the NVPTX and AMDGPU back ends share -*- C++ -*-===//
//
// Both back ends translate the LLVM-dialect module to LLVM IR, optimize it
// at O3 and hand it to an LLVM target. LLVM reports some failures (a
// processor or feature it cannot compile for, a crash in a pass) by ending
// the process; a library must not, so every step runs guarded here and
// such a failure becomes a kiln::Error.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "compiler/backend/FloatRounding.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
}

namespace kiln::backend {

/// What LLVM compiles a kernel with, owned here so that a failed compile
/// can abandon it (LLVM's state after a fatal error is not safe to
/// destroy). The module, which lives in the context, is destroyed first.
struct LLVMState {
  std::unique_ptr<llvm::LLVMContext> context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::TargetMachine> machine;
  std::unique_ptr<llvm::Module> module;

  void abandon();
};

/// Runs `work` (which makes `state.machine` and compiles) so that an LLVM
/// fatal error or crash in it returns here; then abandons the state and
/// throws kiln::Error("compiling the kernel for <arch>, LLVM failed: ...").
void compileGuarded(LLVMState &state, const std::string &arch, llvm::function_ref<void()> work);

/// The LLVM IR of an LLVM-dialect module (NVVM and ROCDL operations
/// included) for `machine`'s triple and data layout, verified; throws
/// kiln::Error when it does not translate or verify.
std::unique_ptr<llvm::Module> translate(mlir::ModuleOp module, llvm::LLVMContext &context,
                                        llvm::TargetMachine &machine);

/// LLVM's O3 pipeline for `machine`.
void optimize(llvm::Module &module, llvm::TargetMachine &machine);

/// The target's assembly (PTX, AMDGCN) or object file of `module`.
std::string emitFile(llvm::Module &module, llvm::TargetMachine &machine, llvm::CodeGenFileType type);

/// The text of `module`.
std::string printed(const llvm::Module &module);

/// The bytes of the file at `path` (empty when it cannot be read).
std::string readFile(llvm::StringRef path);

/// What a tool run by runTool left: its exit status (-1: it did not run),
/// its output file, what it printed, and why it did not run.
struct ToolRun {
  int status = -1;
  std::string output, log, error;
};

/// Runs `program flags... <input> -o <output>` with `input` in a temporary
/// file (named with `inputSuffix`), and reads the output file back; the
/// temporary files are removed.
ToolRun runTool(const std::string &program, const std::vector<std::string> &flags, const std::string &input,
                const char *inputSuffix);

} // namespace kiln::backend
