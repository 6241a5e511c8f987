#include "compiler/dialect/gpu/Occupancy.h"

#include <algorithm>

namespace kiln::gpu {

int hopperProgramsPerMultiprocessor(int registers, int threads, int64_t sharedBytes) {
  if (threads <= 0)
    return 0;
  const int warps = (threads + 31) / 32;
  const int perWarp =
      (std::max(registers, 1) * 32 + kRegisterAllocationUnit - 1) / kRegisterAllocationUnit * kRegisterAllocationUnit;
  int64_t programs = std::min({kProgramsPerMultiprocessor, kThreadsPerMultiprocessor / (warps * 32),
                               kRegistersPerMultiprocessor / (perWarp * warps)});
  if (sharedBytes > 0)
    programs = std::min(programs, kSharedPerMultiprocessorBytes / (sharedBytes + kSharedReservedPerProgramBytes));
  return static_cast<int>(programs);
}

} // namespace kiln::gpu
