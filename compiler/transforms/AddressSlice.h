//===- AddressSlice.h - the loop-body arithmetic an address depends on ----===//
//
// Shared by the passes that move a loop's loads ahead of it (PipelineLoops)
// and the one that decides which descriptor loads the copy engine can take
// (LowerDescriptors): both need an address computation that can be cloned
// to run iterations ahead.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {

/// The loop-body operations that some roots depend on, in program order,
/// and the loop-carried values among their inputs.
struct AddressSlice {
  llvm::SetVector<mlir::Operation *> ops;
  llvm::SetVector<unsigned> carried; ///< iter_arg numbers
};

/// Collects the slice of `roots` (null roots are skipped); fails when
/// something they depend on inside the loop is not pure arithmetic (pure,
/// without regions, or an scf.if whose bodies are), including the next
/// values of the loop-carried inputs.
/// The slice runs for iterations the loop would not run, so an integer
/// division or remainder is taken only when its divisor is provably
/// positive: a positive constant, a max with something positive
/// (`max(d, 1)`), or a min of positive values.
bool collectSlice(mlir::scf::ForOp loop, llvm::ArrayRef<mlir::Value> roots, AddressSlice &slice);

} // namespace kiln
