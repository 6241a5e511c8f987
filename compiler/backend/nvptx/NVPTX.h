//===- NVPTX.h - LLVM dialect -> LLVM IR -> PTX -> cubin -------*- C++ -*-===//

#pragma once

#include "compiler/backend/FloatRounding.h"

#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
}

namespace kiln::nvptx {

using backend::FloatRounding;

/// LLVM IR of an LLVM-dialect module, as text, after O3 for `arch`.
std::string toLLVMIR(mlir::ModuleOp module, const std::string &arch, FloatRounding rounding = {});
/// PTX of an LLVM-dialect module for `arch` ("sm_90a", "sm_80", ...): the
/// module is translated to LLVM IR, optimized at O3 and compiled by LLVM's
/// NVPTX back end, rounding floats as `rounding` allows. `llvmIR` receives
/// the optimized IR when not null.
std::string toPTX(mlir::ModuleOp module, const std::string &arch, FloatRounding rounding,
                  std::string *llvmIR = nullptr);

/// What ptxas made of a kernel.
struct Assembled {
  std::vector<char> cubin;
  int registers = 0;
  int spill_stores = 0; ///< bytes
  int spill_loads = 0;  ///< bytes
  int stack_frame = 0;  ///< bytes
  std::string log;      ///< ptxas -v output
};

/// The path of ptxas: $KILN_PTXAS, else ptxas next to CUDA, else on PATH;
/// empty when there is none.
std::string findPtxas();
/// SASS of a cubin from cuobjdump ($KILN_CUOBJDUMP, else next to CUDA, else
/// on PATH); empty when there is no cuobjdump or it fails (dumps only).
std::string disassemble(const std::vector<char> &cubin);
/// Assembles PTX with ptxas (-O3 -v). Throws kiln::Error with ptxas's
/// messages when it fails or is missing.
Assembled assemble(const std::string &ptx, const std::string &arch);

/// `ptx` with every kernel entry declaring that `programs` programs share a
/// multiprocessor (.minnctapersm after its .maxntid): ptxas then budgets
/// registers for that occupancy.
std::string withProgramsPerMultiprocessor(const std::string &ptx, int programs);

} // namespace kiln::nvptx
