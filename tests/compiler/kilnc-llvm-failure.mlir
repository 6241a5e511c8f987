// A failure inside LLVM (here an instruction sm_80 lacks, which LLVM's
// instruction selection reports by ending the process) is an error with
// LLVM's reason and a non-zero exit.
// RUN: not kilnc %s --arch sm_80 --emit ptx 2>&1 | FileCheck %s
// CHECK: kilnc: compiling the kernel for sm_80, LLVM failed: Cannot select: intrinsic %llvm.nvvm.barrier.cluster.arrive
// RUN: kilnc %s --arch sm_90a --emit ptx | FileCheck %s --check-prefix=HOPPER
// HOPPER: barrier.cluster.arrive

tile.func @cluster_barrier() {
  nvvm.cluster.arrive
  tile.return
}
