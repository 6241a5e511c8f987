// The compiler's public entry points: run a module through the pipeline to
// a named stage. Public header: no MLIR.
#pragma once

#include <kiln/module.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// Stages of the pipeline, in order. `traced`: as the front end built it;
/// `tile`: after tile-level cleanups (inline, canonicalize, combine, CSE).
enum class Stage { traced, tile };

std::string_view name(Stage stage);
std::optional<Stage> parse_stage(std::string_view text);
/// The names of every stage, in order ("traced", "tile", ...).
std::vector<std::string_view> stage_names();

struct CompileOptions {
  std::string arch = "sm_90a"; ///< target of the GPU stages
  bool locations = false;      ///< print source locations in IR text
};

/// Runs a copy of `module` through the pipeline up to `stage` and returns
/// that stage's text. Throws kiln::Error if a pass fails.
std::string emit(const Module &module, Stage stage, const CompileOptions &options = {});

/// Runs `module` in place through the pipeline up to `stage`.
void lower(Module &module, Stage stage, const CompileOptions &options = {});

} // namespace kiln
