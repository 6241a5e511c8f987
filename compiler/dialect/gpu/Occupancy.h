//===- Occupancy.h - how many programs a Hopper multiprocessor holds ------===//
//
// The limits that decide how many programs share one multiprocessor, for
// the passes that size shared memory by them and for the occupancy the
// compiler declares to ptxas. No MLIR here.
//
//===----------------------------------------------------------------------===//

#pragma once

#include <cstdint>

namespace kiln::gpu {

/// Shared memory a Hopper multiprocessor holds for all of its programs, and
/// what the hardware keeps of it for each program (one program's own limit:
/// max_shared_memory_per_program in kiln/target.h).
constexpr int64_t kSharedPerMultiprocessorBytes = 228 * 1024;
constexpr int64_t kSharedReservedPerProgramBytes = 1024;
/// The rest of what bounds a Hopper multiprocessor's programs: its
/// registers (handed to warps 256 at a time), threads and programs.
constexpr int kRegistersPerMultiprocessor = 64 * 1024;
constexpr int kRegisterAllocationUnit = 256;
constexpr int kThreadsPerMultiprocessor = 2048;
constexpr int kProgramsPerMultiprocessor = 32;

/// Programs of `threads` threads, `registers` registers a thread and
/// `sharedBytes` of shared memory that one Hopper (sm_90) multiprocessor
/// holds at once (0 for no threads).
int hopperProgramsPerMultiprocessor(int registers, int threads, int64_t sharedBytes);

} // namespace kiln::gpu
