// Views, prints and loops at the LLVM level.
// RUN: kiln-opt %s --kgpu-to-llvm --split-input-file | FileCheck %s

#row = #kgpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
#col = #kgpu.blocked<{sizePerThread = [4, 1], threadsPerWarp = [16, 2], warpsPerCTA = [1, 4], order = [0, 1]}>
#other = #kgpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [1, 4], order = [0, 1]}>
#s1 = #kgpu.slice<{dim = 1, parent = #row}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // expand_dims, broadcast, and a transpose into the transposed layout only
  // rename registers: no shared memory, no barrier.
  // CHECK-LABEL: llvm.func @free_views
  // CHECK-NOT: nvvm.barrier0
  // CHECK-NOT: !llvm.ptr<3>
  // CHECK: llvm.return
  tile.func @free_views(%p: !tile.ptr<f32>) {
    %r = tile.range 0, 8 : tensor<8xi32, #s1>
    %e = tile.expand_dims %r {axis = 1 : i32} : tensor<8xi32, #s1> -> tensor<8x1xi32, #row>
    %b = tile.broadcast %e : tensor<8x1xi32, #row> -> tensor<8x64xi32, #row>
    %t = tile.trans %b {order = array<i32: 1, 0>} : tensor<8x64xi32, #row> -> tensor<64x8xi32, #col>
    %j = tile.join %t, %t : tensor<64x8xi32, #col> -> tensor<64x8x2xi32, #kgpu.linear<{register = [[0, 0, 1], [1, 0, 0], [2, 0, 0]], lane = [[4, 0, 0], [8, 0, 0], [16, 0, 0], [32, 0, 0], [0, 1, 0]], warp = [[0, 2, 0], [0, 4, 0]]}>>
    %a, %c = tile.split %j : tensor<64x8x2xi32, #kgpu.linear<{register = [[0, 0, 1], [1, 0, 0], [2, 0, 0]], lane = [[4, 0, 0], [8, 0, 0], [16, 0, 0], [32, 0, 0], [0, 1, 0]], warp = [[0, 2, 0], [0, 4, 0]]}>> -> tensor<64x8xi32, #col>
    tile.return
  }
}

// -----

#row = #kgpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
#other = #kgpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // A transpose into a layout other threads hold goes through shared memory
  // first: store (each thread's 4 contiguous elements as one vector),
  // barrier, load (one element at a time: the result holds no runs).
  // CHECK-LABEL: llvm.func @moved_transpose
  // CHECK: nvvm.barrier0
  // CHECK: llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> i32
  tile.func @moved_transpose(%p: !tile.ptr<f32>) {
    %r = tile.range 0, 64 : tensor<64xi32, #kgpu.slice<{dim = 0, parent = #row}>>
    %e = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32, #kgpu.slice<{dim = 0, parent = #row}>> -> tensor<1x64xi32, #row>
    %b = tile.broadcast %e : tensor<1x64xi32, #row> -> tensor<8x64xi32, #row>
    %t = tile.trans %b {order = array<i32: 1, 0>} : tensor<8x64xi32, #row> -> tensor<64x8xi32, #other>
    tile.return
  }
}

// -----

#l = #kgpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // A loop carrying a block carries its registers: one struct.
  // CHECK-LABEL: llvm.func @loop
  // CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (!llvm.struct<(f32)>)
  // CHECK: scf.yield %{{.*}} : !llvm.struct<(f32)>
  tile.func @loop(%n: i32) {
    %zero = arith.constant dense<0.0> : tensor<128xf32, #l>
    %one = arith.constant dense<1.0> : tensor<128xf32, #l>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<128xf32, #l>) : i32 {
      %next = arith.addf %acc, %one : tensor<128xf32, #l>
      scf.yield %next : tensor<128xf32, #l>
    }
    tile.return
  }
}

// -----

#l = #kgpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // Device print: one vprintf per element with its coordinate, by the
  // element's owner.
  // CHECK-LABEL: llvm.func @print
  // CHECK: llvm.call @vprintf
  tile.func @print(%p: !tile.ptr<f32>) {
    %r = tile.range 0, 128 : tensor<128xi32, #l>
    tile.print "r = ", %r : tensor<128xi32, #l>
    tile.return
  }
}
