// GPU targets by name ("sm_90a", "sm_80", "gfx90a"): the one place Kiln
// parses, compares and checks them. Public header: no MLIR.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kiln {

enum class GpuVendor { nvidia, amd };

/// A GPU target named as the vendors' tools name them. NVIDIA: "sm_XY"
/// (compute capability X.Y; X may have two digits, as in sm_100), with an
/// optional suffix 'a' (the features of exactly that GPU, such as sm_90a's
/// wgmma) or 'f' (those of its family). AMD: "gfxNNN" (major version, then
/// one hexadecimal digit each for minor and stepping: gfx90a, gfx942,
/// gfx1100).
struct Target {
  GpuVendor vendor = GpuVendor::nvidia;
  int major = 0;
  int minor = 0;
  int stepping = 0;         ///< AMD only
  char suffix = 0;          ///< NVIDIA only: 'a', 'f' or 0
  std::string name;         ///< as written

  /// NVIDIA: 10 * major + minor (90 for sm_90a, 100 for sm_100).
  int compute_capability() const { return 10 * major + minor; }
};

/// The oldest NVIDIA GPU Kiln compiles for: sm_75 (Turing). Its lowering
/// needs warp shuffles with masks and scoped acquire/release atomics
/// (sm_70), and it picks what older GPUs lack itself (no cp.async or
/// tensor-core mma below sm_80, no wgmma or clusters below sm_90, fp8
/// conversions in software below sm_89); sm_75 is also the oldest target of
/// the CUDA 13 toolkit's ptxas.
constexpr int kMinimumComputeCapability = 75;

/// The target `name` spells, or nullopt when it spells none.
std::optional<Target> parse_target(std::string_view name);

/// Whether `name` spells an AMD target (gfx...), known to Kiln or not.
bool targets_amd(std::string_view name);

/// The AMD GPUs Kiln compiles for: gfx90a and gfx942 (CDNA 2 and 3,
/// 64-lane wavefronts, matrix cores) and gfx1100 (RDNA 3, 32 lanes).
inline constexpr const char *kAmdTargets[] = {"gfx90a", "gfx942", "gfx1100"};

/// The target `name` spells, when Kiln can compile for it to machine code;
/// otherwise throws kiln::Error saying why (not a target name, an NVIDIA
/// GPU older than kMinimumComputeCapability, an AMD GPU not in
/// kAmdTargets).
Target check_target(std::string_view name);

/// Threads a warp (an AMD wavefront) of `target` runs in lockstep: 32 on
/// NVIDIA GPUs and on AMD's RDNA (gfx10 and newer, in their default wave32
/// mode), 64 on AMD's GCN and CDNA (gfx9: gfx90a, gfx942).
int threads_per_warp(const Target &target);

/// The compute capability of an NVIDIA target name: 90 for "sm_90a", 80 for
/// "sm_80"; 0 for anything else (passes run without a target plan for the
/// oldest GPU).
int compute_capability_of(std::string_view name);

/// Whether a cubin built for `target` loads on a GPU of compute capability
/// `device_cc`: the same major version, no newer minor; an 'a' target only
/// on exactly its GPU. (PTX of a plain target runs on any newer GPU,
/// compiled by the driver.)
bool cubin_runs_on(const Target &target, int device_cc);

/// The most shared memory one program may take on an NVIDIA GPU of compute
/// capability `cc` (the opt-in maximum per block, in bytes): 227 KB from
/// sm_90 (but 99 KB on sm_120 and sm_121), 163 KB on sm_80 and sm_87, 99 KB on
/// sm_86 and sm_89, 64 KB on sm_75.
int max_shared_memory_per_program(int cc);

} // namespace kiln
