//===- Pipeline.cpp - the whole pipeline, stage by stage ------------------===//
//
// Every pass Kiln runs, in order, one line each: the place to read what the
// compiler does to a kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleImpl.h"

#include <kiln/compiler.h>
#include <kiln/error.h>

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <array>

namespace kiln {

namespace {

constexpr std::array<std::string_view, 2> stageNames = {"traced", "tile"};

void addTilePasses(mlir::PassManager &pm) {
  pm.addPass(mlir::createInlinerPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createLoopInvariantCodeMotionPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

} // namespace

std::string_view name(Stage stage) { return stageNames[static_cast<size_t>(stage)]; }

std::optional<Stage> parse_stage(std::string_view text) {
  for (size_t i = 0; i < stageNames.size(); ++i)
    if (stageNames[i] == text)
      return static_cast<Stage>(i);
  return std::nullopt;
}

std::vector<std::string_view> stage_names() { return {stageNames.begin(), stageNames.end()}; }

void lower(Module &module, Stage stage, const CompileOptions &) {
  mlir::MLIRContext &context = *module.impl().context;
  mlir::PassManager pm(&context);
  if (stage >= Stage::tile)
    addTilePasses(pm);

  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error)
      message += diagnostic.str() + "\n";
    return mlir::success();
  });
  if (mlir::failed(pm.run(*module.impl().module)))
    throw Error("compiling '" + module.kernel_name() + "' to stage " + std::string(name(stage)) +
                " failed:\n" + message);
}

std::string emit(const Module &module, Stage stage, const CompileOptions &options) {
  Module working(module.impl().clone());
  lower(working, stage, options);
  return working.str(options.locations);
}

} // namespace kiln
