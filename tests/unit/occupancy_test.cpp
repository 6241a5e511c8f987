// How many programs a Hopper multiprocessor holds
// (compiler/dialect/gpu/Occupancy.h), and the PTX that tells ptxas so
// (compiler/backend/nvptx/NVPTX.h).
#include "compiler/backend/nvptx/NVPTX.h"
#include "compiler/dialect/gpu/Occupancy.h"

#include <gtest/gtest.h>

using kiln::gpu::hopperProgramsPerMultiprocessor;
using kiln::nvptx::withProgramsPerMultiprocessor;

TEST(Occupancy, RegistersThreadsAndSharedMemoryEachBound) {
  // 256 threads: 64 registers leave room for 4 programs, 65-80 for 3
  // (registers go to warps 256 at a time), 81-128 for 2.
  EXPECT_EQ(hopperProgramsPerMultiprocessor(64, 256, 0), 4);
  EXPECT_EQ(hopperProgramsPerMultiprocessor(69, 256, 32), 3);
  EXPECT_EQ(hopperProgramsPerMultiprocessor(80, 256, 32), 3);
  EXPECT_EQ(hopperProgramsPerMultiprocessor(81, 256, 32), 2);
  EXPECT_EQ(hopperProgramsPerMultiprocessor(173, 256, 0), 1);
  // Threads: 2048 a multiprocessor; programs: 32.
  EXPECT_EQ(hopperProgramsPerMultiprocessor(16, 1024, 0), 2);
  EXPECT_EQ(hopperProgramsPerMultiprocessor(16, 32, 0), 32);
  // Shared memory: 228 KB, 1 KB of it reserved for each program.
  EXPECT_EQ(hopperProgramsPerMultiprocessor(32, 128, 100 * 1024), 2);
  EXPECT_EQ(hopperProgramsPerMultiprocessor(32, 128, 114 * 1024), 1);
  EXPECT_EQ(hopperProgramsPerMultiprocessor(32, 0, 0), 0);
}

TEST(Occupancy, DeclaredAfterEachEntrysThreadBound) {
  const std::string ptx = ".visible .entry a(\n.param .u64 p\n)\n.maxntid 256, 1, 1\n{\n}\n"
                          ".visible .entry b(\n)\n.maxntid 128, 1, 1\n{\n}\n";
  EXPECT_EQ(withProgramsPerMultiprocessor(ptx, 3),
            ".visible .entry a(\n.param .u64 p\n)\n.maxntid 256, 1, 1\n.minnctapersm 3\n{\n}\n"
            ".visible .entry b(\n)\n.maxntid 128, 1, 1\n.minnctapersm 3\n{\n}\n");
}
