//===- Registration.h - every dialect and pass Kiln uses ------*- C++ -*-===//

#pragma once

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace kiln {

/// Adds the dialects Kiln's IR may contain at any stage to `registry`.
void registerKilnDialects(mlir::DialectRegistry &registry);

/// Loads Kiln's dialects into `context` (for code that builds IR directly).
void loadKilnDialects(mlir::MLIRContext &context);

/// Registers Kiln's passes and pipelines under their command-line names.
void registerKilnPasses();

} // namespace kiln
