//===- kiln-opt.cpp - run Kiln passes on IR files (like mlir-opt) ---------===//
//
// The tool behind the compiler's FileCheck tests: parses a file of any Kiln
// stage, runs the passes named on the command line, prints the result.
// Supports mlir-opt's flags (--split-input-file, --verify-diagnostics, ...).
//
//===----------------------------------------------------------------------===//

#include "compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  kiln::registerKilnDialects(registry);
  kiln::registerKilnPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Kiln optimizer driver\n", registry));
}
