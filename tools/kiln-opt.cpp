//===- kiln-opt.cpp - run Kiln passes on IR files (like mlir-opt) ---------===//
//
// The tool behind the compiler's FileCheck tests: parses a file of any Kiln
// stage, runs the passes named on the command line, prints the result.
// Supports mlir-opt's flags (--split-input-file, --verify-diagnostics, ...).
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleImpl.h"
#include "compiler/Registration.h"

#include <kiln/error.h>

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::DialectRegistry registry;
  kiln::registerKilnDialects(registry);
  kiln::registerKilnPasses();
  auto [inputName, outputName] = mlir::registerAndParseCLIOptions(argc, argv, "Kiln optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses()) // (no input read)
    return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, inputName, outputName, registry));

  // The input is read here rather than by MlirOptMain, to refuse nesting
  // that would overflow the parser's stack before it starts.
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = mlir::openInputFile(inputName, &error);
  if (!input) {
    llvm::errs() << "kiln-opt: " << error << "\n";
    return 1;
  }
  try {
    kiln::checkNesting(input->getBuffer(), inputName == "-" ? "<stdin>" : inputName);
  } catch (const kiln::Error &refused) {
    llvm::errs() << "kiln-opt: " << refused.what() << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output = mlir::openOutputFile(outputName, &error);
  if (!output) {
    llvm::errs() << "kiln-opt: " << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  // A write that failed (a full disk) shows only once the stream is flushed.
  output->os().flush();
  if (output->os().has_error()) {
    llvm::errs() << "kiln-opt: cannot write " << outputName << ": " << output->os().error().message() << "\n";
    output->os().clear_error();
    return 1;
  }
  output->keep();
  return 0;
}
