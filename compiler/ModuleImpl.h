//===- ModuleImpl.h - what a kiln::Module holds ---------------*- C++ -*-===//

#pragma once

#include <kiln/module.h>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

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

/// How deep IR text may nest brackets ((), [], {}, <>). MLIR's parser
/// recurses on each level, and input nested some thousands deep overflows
/// the stack, a crash no caller can catch; kernels' IR nests under ten.
constexpr size_t kMaxIRNesting = 256;

/// Throws kiln::Error naming the line of `buffer_name` where `text` first
/// nests brackets deeper than kMaxIRNesting (outside strings and comments).
/// MLIR bytecode is left to its reader.
void checkNesting(llvm::StringRef text, llvm::StringRef buffer_name);

} // namespace kiln
