// A kernel compiled for a GPU: what the compiler makes, the runtime loads
// and the kernel cache stores. Public header: no MLIR.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

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
  /// (an added map) the inner coordinate counts the pointers' uniform
  /// offset within a row (a head's columns in a token's row of heads x D)
  /// in 32 bits: the launch refuses a tensor of 2^31 elements or more
  bool offset_columns = false;
  friend bool operator==(const TensorMapSpec &, const TensorMapSpec &) = default;
};

/// A kernel compiled for a GPU, with what launching it needs: PTX and a
/// cubin for an NVIDIA GPU, AMDGCN and a code object for an AMD one.
struct CompiledKernel {
  std::string name;           ///< the kernel function's symbol
  std::string arch;           ///< "sm_90a", "gfx942"
  int num_warps = 4;          ///< threads per program: num_warps * threads_per_warp (a producer warpgroup included)
  int threads_per_warp = 32;  ///< 32; an AMD wavefront's 64 on gfx90a and gfx942
  int shared_memory = 0;      ///< dynamic shared memory bytes per program
  int cluster_size = 1;       ///< programs launched together as a cluster, consecutive along grid x
  std::string ptx;
  std::vector<char> cubin;    ///< empty when no ptxas was found (the driver compiles the PTX)
  int registers = 0;          ///< per thread, from ptxas
  int spill_stores = 0, spill_loads = 0, stack_frame = 0; ///< bytes, from ptxas
  std::string ptxas_log;
  std::vector<TensorMapSpec> tensor_maps; ///< descriptors read by the copy engine
  /// (AMD) The kernel's assembly, its code object (an ELF that ld.lld
  /// linked; empty when there was no ld.lld), and what it takes of the GPU
  /// as its metadata says (registers, LDS, scratch, spills, occupancy). On
  /// AMD, `registers` counts VGPRs, `stack_frame` the scratch bytes a
  /// work-item, and the spill fields 4 bytes a spilled VGPR.
  std::string amdgcn;
  std::vector<char> code_object;
  std::string resources;
};

/// The kernel without its code (PTX, cubin, ptxas log) as JSON text, with
/// `notes` (name, text) added for people reading the cache (the config and
/// specialization it was compiled for).
std::string compiled_kernel_metadata(const CompiledKernel &kernel,
                                     const std::vector<std::pair<std::string, std::string>> &notes = {});

/// The kernel `compiled_kernel_metadata` describes, without its code. Every
/// field is checked like any input (a cache entry of another version, or a
/// damaged one): throws kiln::Error naming the first field that is missing
/// or out of range.
CompiledKernel compiled_kernel_from_metadata(std::string_view metadata);

} // namespace kiln
