// In a warp-specialized program (kgpu.producer_warps on the module) the
// kernel is launched with the producer warpgroup past num_warps (and one
// program a multiprocessor, the register cap setmaxnreg needs), and a program
// barrier counts only the consumer warps' threads: the producer runs its
// own loop and never meets it.
// RUN: kiln-opt %s --kgpu-to-llvm | FileCheck %s

// CHECK-LABEL: llvm.func @consumers
// CHECK-SAME: nvvm.maxntid = array<i32: 384, 1, 1>
// CHECK-SAME: nvvm.minctasm = 1
// CHECK-DAG: %[[ID:.*]] = llvm.mlir.constant(0 : i32)
// CHECK-DAG: %[[THREADS:.*]] = llvm.mlir.constant(256 : i32)
// CHECK: nvvm.barrier id = %[[ID]] number_of_threads = %[[THREADS]]
// CHECK-NOT: nvvm.barrier0
module attributes {kgpu.num_warps = 8 : i32, kgpu.producer_warps = 4 : i32, kgpu.target = "sm_90a", kgpu.threads_per_warp = 32 : i32} {
  tile.func @consumers() {
    kgpu.barrier
    tile.return
  }
}
