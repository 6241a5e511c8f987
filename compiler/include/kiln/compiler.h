// The compiler's public entry points: run a module through the pipeline to
// a named stage. Public header: no MLIR.
#pragma once

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
/// and NVVM dialects, per thread; `llvm-ir`: LLVM IR after O3; `ptx`;
/// `cubin-info`: what ptxas reports (registers, spills, shared memory).
enum class Stage { traced, tile, gpu, llvm, llvm_ir, ptx, cubin_info };

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

/// Where a size or stride of a tensor map the compiler added comes from: a
/// kernel parameter (an integer), or the constant when `parameter` is -1.
struct TensorMapSource {
  int parameter = -1;
  int64_t constant = 0;
  friend bool operator==(const TensorMapSource &, const TensorMapSource &) = default;
};

/// A tensor the kernel reads with the copy engine (TMA): the launch builds
/// its tensor map with this box and swizzle. The map is a descriptor's
/// (built from the base, sizes and strides that follow it), or, when
/// `base` is set, one the compiler added for pointer loads it moved to the
/// copy engine: a parameter after the kernel's own, built from the pointer
/// parameter `base` and the sizes and strides named here.
struct TensorMapSpec {
  int parameter = 0;          ///< the index of the tensor-map parameter
  std::vector<uint32_t> box;  ///< elements per dimension of one copy, outermost first
  int swizzle_bytes = 0;      ///< shared-memory swizzle span: 0 (none), 32, 64 or 128
  int base = -1;              ///< (an added map) the pointer parameter
  std::vector<TensorMapSource> sizes, strides; ///< (an added map) elements, outermost first
  /// (an added map) the outer coordinate counts rows of the pointers'
  /// uniform offset (a head's) in 32 bits: the launch refuses a tensor of
  /// 2^31 such rows or more, which the copy engine could not address
  bool offset_rows = false;
  friend bool operator==(const TensorMapSpec &, const TensorMapSpec &) = default;
};

/// A kernel compiled for an NVIDIA GPU, with what launching it needs.
struct CompiledKernel {
  std::string name;           ///< the kernel function's symbol
  std::string arch;           ///< "sm_90a"
  int num_warps = 4;          ///< threads per program: num_warps * 32 (a producer warpgroup included)
  int shared_memory = 0;      ///< dynamic shared memory bytes per program
  int cluster_size = 1;       ///< programs launched together as a cluster, consecutive along grid x
  std::string ptx;
  std::vector<char> cubin;    ///< empty when no ptxas was found (the driver compiles the PTX)
  int registers = 0;          ///< per thread, from ptxas
  int spill_stores = 0, spill_loads = 0, stack_frame = 0; ///< bytes, from ptxas
  std::string ptxas_log;
  std::vector<TensorMapSpec> tensor_maps; ///< descriptors read by the copy engine
};

/// Compiles a traced module to PTX and, with ptxas, to a cubin. Throws
/// kiln::Error naming the failing stage.
CompiledKernel compile(const Module &module, const CompileOptions &options);

/// Runs a copy of `module` through the pipeline up to `stage` and returns
/// that stage's text. Throws kiln::Error if a pass fails.
std::string emit(const Module &module, Stage stage, const CompileOptions &options = {});

/// Runs `module` in place through the pipeline up to `stage`.
void lower(Module &module, Stage stage, const CompileOptions &options = {});

} // namespace kiln
