//===- MmaFragments.h - carry mma.sync fragments across a K loop -*- C++ -*-===//
//
// Used by PipelineLoops on the loops it pipelined with cp.async rings.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kiln {

/// Rewrites a pipelined loop whose one mma.sync dot reads two ring slots
/// so that the dot runs K step by K step from fragments in registers
/// (#kgpu.mma_operand), the next iteration's first step's fragments read
/// before this iteration's last step and carried across the loop:
///
///     wait; barrier; f0 = fragments(slot 0, step 0)            (before)
///     for k: f1 = fragments(slot k, step 1)
///            acc = dot(f0, acc)
///            copies                              // `copies`, moved here
///            ...
///            wait; barrier                       // slot k+1 landed
///            g0 = fragments(slot k+1, step 0)
///            acc = dot(f_last, acc)
///            yield g0
///
/// so a warp leaves the barrier with a K step's mma.sync ready to issue.
/// `copies` are the iteration's ahead copies (and their address
/// arithmetic); `pending` is the loop's wait count. Other operations in the
/// loop may touch global memory only (a persistent program's epilogue
/// storing a finished tile), never shared memory. Returns the new loop,
/// or null when the loop did not have that form (it is left alone then).
mlir::scf::ForOp carryMmaFragments(mlir::scf::ForOp loop, llvm::ArrayRef<mlir::Operation *> copies, int pending, int numWarps,
                       int computeCapability);

} // namespace kiln
