// The compiler's public entry points: run a module through the pipeline to
// a named stage. Public header: no MLIR.
#pragma once

#include <kiln/compiled_kernel.h>
#include <kiln/module.h>
#include <kiln/target.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// Stages of the pipeline, in order. `traced`: as the front end built it;
/// `tile`: after tile-level cleanups (inline, canonicalize, combine, CSE);
/// `gpu`: every block has a layout over the GPU's threads; `llvm`: LLVM
/// and NVVM (or ROCDL) dialects, per thread; `llvm-ir`: LLVM IR after O3.
/// Then an NVIDIA target's `ptx` and `cubin-info` (what ptxas reports:
/// registers, spills, shared memory), or an AMD target's `amdgcn` (the
/// assembly) and `code-object-info` (what its metadata reports: registers,
/// LDS, scratch, spills, occupancy).
enum class Stage { traced, tile, gpu, llvm, llvm_ir, ptx, cubin_info, amdgcn, code_object_info };

std::string_view name(Stage stage);
std::optional<Stage> parse_stage(std::string_view text);
/// The names of every stage, in order ("traced", "tile", ...).
std::vector<std::string_view> stage_names();

struct CompileOptions {
  std::string arch = "sm_90a"; ///< target of the GPU stages
  int num_warps = 4;           ///< warps per program
  int num_stages = 3;          ///< software-pipelining depth of loops
  int min_blocks_per_sm = 0;   ///< programs a multiprocessor must hold at once (caps registers); 0: no bound
  /// Give loops fed by the copy engine into wgmma a producer warpgroup
  /// (sm_90a; other loops are pipelined as without it).
  bool warp_specialize = false;
  /// The consumer warpgroups of a producer's loop of chained dots
  /// (attention) take turns on the tensor cores, one's dots under the
  /// others' softmax (sm_90a, 8 warps or more).
  bool ping_pong = false;
  /// A producer's loop of chained dots whose warpgroups do not take turns
  /// runs each warpgroup's work between the dots (attention's softmax)
  /// under its own last dot, the loop rotated by that dot (sm_90a).
  bool overlap_chain = true;
  /// Let the back end contract a float multiply and add into one fma
  /// (Triton's default); false keeps both roundings (the interpreter's).
  bool fp_fusion = true;
  /// Divide f32 as PTX div.full.f32, at most 2 ulp from the IEEE quotient
  /// (Triton's `/`); false keeps IEEE division (the interpreter's).
  bool approx_div = true;
  /// Move pointer-block loads that read a box of a tensor into a pipelined
  /// wgmma dot to the copy engine (sm_90a).
  bool copy_engine = true;
  bool locations = false;      ///< print source locations in IR text
  /// When set, compile() writes every stage there (KILN_DUMP_DIR).
  std::string dump_dir;
};

/// Whether this build of Kiln compiles for AMD GPUs (its AMDGPU back end is
/// left out when configured with KILN_AMDGPU=OFF).
bool has_amd_back_end();

/// The build ID of the library holding Kiln's compiler (hex): it changes
/// with every rebuild, so caches never reuse code from another build.
const std::string &build_id();

/// Compiles a traced module to PTX and, with ptxas, to a cubin (an NVIDIA
/// target), or to AMDGCN and, with ld.lld, a code object (an AMD target).
/// Throws kiln::Error naming the failing stage.
CompiledKernel compile(const Module &module, const CompileOptions &options);

/// Runs a copy of `module` through the pipeline up to `stage` and returns
/// that stage's text. Throws kiln::Error if a pass fails.
std::string emit(const Module &module, Stage stage, const CompileOptions &options = {});

/// Runs `module` in place through the pipeline up to `stage`.
void lower(Module &module, Stage stage, const CompileOptions &options = {});

} // namespace kiln
