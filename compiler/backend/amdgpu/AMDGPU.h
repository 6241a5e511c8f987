//===- AMDGPU.h - LLVM dialect -> LLVM IR -> AMDGCN -> code object -*- C++ -*-===//
//
// The AMD back end: LLVM's AMDGPU target compiles the lowered module for a
// gfx target to assembly and to an object, which ld.lld links into a code
// object (the shared ELF the HIP runtime loads). What the kernel uses
// (registers, LDS, scratch, wavefront) is read from the code object's
// metadata, which the assembly spells out.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "compiler/backend/FloatRounding.h"

#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
}

namespace kiln::amdgpu {

using backend::FloatRounding;

/// Whether this build has LLVM's AMDGPU back end (KILN_AMDGPU).
bool built();

/// LLVM IR of an LLVM-dialect module, as text, after O3 for `arch`.
std::string toLLVMIR(mlir::ModuleOp module, const std::string &arch, FloatRounding rounding = {});

/// A kernel compiled for `arch`: its assembly, the relocatable object
/// (ELF, not yet linked), and the optimized LLVM IR when asked for.
struct Compiled {
  std::string assembly;
  std::string object;
  std::string llvmIR;
};

/// Compiles an LLVM-dialect module (with ROCDL operations) for `arch`
/// ("gfx942", ...): translated to LLVM IR, optimized at O3 and compiled by
/// LLVM's AMDGPU back end. Throws kiln::Error when this build of Kiln has
/// no AMDGPU back end or LLVM fails.
Compiled compile(mlir::ModuleOp module, const std::string &arch, FloatRounding rounding, bool keepLLVMIR = false);

/// What a kernel takes of the GPU, from the code object metadata
/// (`.amdgpu_metadata` in the assembly) of its one kernel.
struct Resources {
  int vgprs = 0;          ///< vector registers a lane (AGPRs included, where the register file holds both)
  int agprs = 0;          ///< accumulation registers among them (gfx90a, gfx942)
  int sgprs = 0;          ///< scalar registers a wavefront
  int vgprSpills = 0, sgprSpills = 0;  ///< registers spilled
  int ldsBytes = 0;                    ///< group segment (LDS) a workgroup
  int scratchBytes = 0;                ///< private segment a work-item
  int wavefrontSize = 0;
  int workgroupSize = 0;               ///< the most work-items a workgroup
  int occupancy = 0;                   ///< wavefronts a SIMD holds, as the compiler estimates
};

/// Reads Resources from `assembly`; throws kiln::Error when it holds no
/// kernel metadata.
Resources resourcesOf(const std::string &assembly);

/// One line, as ptxas -v reports a cubin's: "24 VGPRs (0 of them AGPRs), ...".
std::string describe(const Resources &resources);

/// The path of ld.lld: $KILN_LD_LLD, else ld.lld-22 or ld.lld on PATH,
/// else LLVM's own; empty when there is none.
std::string findLinker();

/// The code object `ld.lld -shared` links from `object`. Throws kiln::Error
/// with the linker's messages when it fails or there is no linker.
std::vector<char> link(const std::string &object);

} // namespace kiln::amdgpu
