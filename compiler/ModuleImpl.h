//===- ModuleImpl.h - what a kiln::Module holds ---------------*- C++ -*-===//

#pragma once

#include <kiln/module.h>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace kiln {

/// A module together with the context that owns its types and attributes:
/// the context of the thread that traced or parsed it (shared by its copies),
/// so traces on different threads never share one.
struct Module::Impl {
  std::shared_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  /// A deep copy of the module in the same context.
  std::shared_ptr<Impl> clone() const;
};

/// The calling thread's context, with Kiln's dialects registered (the ones
/// tracing builds loaded) and MLIR's own thread pool off: Kiln compiles many
/// small modules, on as many threads as its callers use.
std::shared_ptr<mlir::MLIRContext> threadKilnContext();

} // namespace kiln
