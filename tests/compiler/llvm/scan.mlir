// Scans: the chunk in registers, lanes by shfl.up (shfl.down when
// reversed), warps through shared memory, repetitions by a carry.
// RUN: kiln-opt %s --kgpu-to-llvm --split-input-file | FileCheck %s

#b = #kgpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>
module attributes {kgpu.num_warps = 1 : i32, kgpu.threads_per_warp = 32 : i32} {
  // One warp, 4 consecutive elements per thread: 3 in-thread steps, 5
  // Hillis-Steele rounds, the exclusive prefix, the warp total; no shared
  // memory.
  // CHECK-LABEL: llvm.func @lanes
  // CHECK-NOT: nvvm.barrier0
  // CHECK-COUNT-3: arith.addi
  // CHECK: nvvm.shfl.sync  up {{.*}} : i32 -> i32
  // CHECK-COUNT-4: nvvm.shfl.sync  up
  // CHECK: nvvm.shfl.sync  up
  // CHECK: nvvm.shfl.sync  idx
  // CHECK-NOT: nvvm.barrier0
  // CHECK: llvm.return
  tile.func @lanes(%p: !tile.ptr<i32>) {
    %x = arith.constant dense<1> : tensor<128xi32, #b>
    %s = tile.scan(%x) axis = 0 : (tensor<128xi32, #b>) -> tensor<128xi32, #b> {
    ^bb0(%a: i32, %c: i32):
      %d = arith.addi %a, %c : i32
      tile.scan.return %d : i32
    }
    tile.return
  }
}

// -----

#b = #kgpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // Four warps along the axis, reversed: shfl.down, then the warps'
  // totals through shared memory between barriers.
  // CHECK-LABEL: llvm.func @warps
  // CHECK: nvvm.shfl.sync  down
  // CHECK: nvvm.barrier0
  // CHECK: llvm.store %{{.*}} : f32, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
  tile.func @warps(%p: !tile.ptr<f32>) {
    %x = arith.constant dense<1.0> : tensor<256xf32, #b>
    %s = tile.scan(%x) axis = 0 reverse : (tensor<256xf32, #b>) -> tensor<256xf32, #b> {
    ^bb0(%a: f32, %c: f32):
      %d = arith.addf %a, %c : f32
      tile.scan.return %d : f32
    }
    tile.return
  }
}

// -----

#b = #kgpu.blocked<{sizePerThread = [2, 2], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // A layout the scan cannot run in (the axis's registers not consecutive
  // ones) moves to one it can through shared memory, scans there (lanes
  // along the axis, warps across lines: no exchange), and moves back.
  // (The working layout holds 4 elements along the axis: vectors of 4.)
  // CHECK-LABEL: llvm.func @converted
  // CHECK: nvvm.barrier0
  // CHECK: llvm.store %{{.*}} : i32, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> vector<4xi32>
  // CHECK: nvvm.shfl.sync  up
  // CHECK: nvvm.shfl.sync  idx
  // CHECK: nvvm.barrier0
  // CHECK: llvm.store %{{.*}} : vector<4xi32>, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> i32
  // CHECK: llvm.return
  tile.func @converted(%p: !tile.ptr<i32>) {
    %x = arith.constant dense<1> : tensor<32x128xi32, #b>
    %s = tile.scan(%x) axis = 1 : (tensor<32x128xi32, #b>) -> tensor<32x128xi32, #b> {
    ^bb0(%a: i32, %c: i32):
      %d = arith.maxsi %a, %c : i32
      tile.scan.return %d : i32
    }
    tile.return
  }
}
