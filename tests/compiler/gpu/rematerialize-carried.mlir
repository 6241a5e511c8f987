// What the rematerialization leaves alone and what it takes: a conversion
// of a value the loop carries stays (it is not recomputable inside the
// loop); a conversion of arithmetic on the induction variable and a range
// from before the loop is recomputed in the wanted layout, the range being
// converted once before the loop. So is a pointer formed from such
// arithmetic (a persistent matmul's row pointers, formed every step).
// RUN: kiln-opt %s --kgpu-rematerialize-conversions --cse | FileCheck %s

// CHECK-LABEL: tile.func @carried_stays
// CHECK: %[[R:.*]] = tile.range 0, 512 : tensor<512xi32, #[[A:.*]]>
// CHECK: %[[RB:.*]] = kgpu.convert_layout %[[R]] : tensor<512xi32, #[[A]]> -> tensor<512xi32, #[[B:.*]]>
// CHECK: scf.for %[[I:.*]] = {{.*}} iter_args(%[[V:.*]] = %[[R]])
// CHECK-NEXT: %[[CV:.*]] = kgpu.convert_layout %[[V]] : tensor<512xi32, #[[A]]> -> tensor<512xi32, #[[B]]>
// CHECK-NOT: kgpu.convert_layout
// CHECK: %[[IB:.*]] = tile.splat %[[I]] : i32 -> tensor<512xi32, #[[B]]>
// CHECK-NEXT: %[[W:.*]] = arith.addi %[[RB]], %[[IB]] : tensor<512xi32, #[[B]]>
// CHECK-NOT: kgpu.convert_layout
// CHECK: arith.addi %[[CV]], %[[W]] : tensor<512xi32, #[[B]]>
// CHECK-NOT: kgpu.convert_layout
// CHECK: scf.yield
// CHECK-LABEL: tile.func @pointers_recomputed
// CHECK: scf.for
// CHECK-NOT: kgpu.convert_layout
// CHECK: tile.addptr %{{.*}}, %{{.*}} : tensor<512x!tile.ptr<i32>, #[[B]]>
// CHECK-NEXT: tile.store
#a = #kgpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b = #kgpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32, kgpu.target = "sm_90a"} {
tile.func @carried_stays(%p: !tile.ptr<i32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = tile.range 0, 512 : tensor<512xi32, #a>
  %s = tile.splat %p : !tile.ptr<i32> -> tensor<512x!tile.ptr<i32>, #b>
  %out = scf.for %i = %c0 to %n step %c1 iter_args(%v = %r) -> (tensor<512xi32, #a>) : i32 {
    %cv = kgpu.convert_layout %v : tensor<512xi32, #a> -> tensor<512xi32, #b>
    %ri = tile.splat %i : i32 -> tensor<512xi32, #a>
    %w = arith.addi %r, %ri : tensor<512xi32, #a>
    %cw = kgpu.convert_layout %w : tensor<512xi32, #a> -> tensor<512xi32, #b>
    %sum = arith.addi %cv, %cw : tensor<512xi32, #b>
    %ptrs = tile.addptr %s, %sum : tensor<512x!tile.ptr<i32>, #b>, tensor<512xi32, #b>
    tile.store %ptrs, %sum : tensor<512x!tile.ptr<i32>, #b>
    %next = arith.addi %v, %ri : tensor<512xi32, #a>
    scf.yield %next : tensor<512xi32, #a>
  }
  tile.return
}
tile.func @pointers_recomputed(%p: !tile.ptr<i32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = tile.range 0, 512 : tensor<512xi32, #a>
  %s = tile.splat %p : !tile.ptr<i32> -> tensor<512x!tile.ptr<i32>, #a>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %ri = tile.splat %i : i32 -> tensor<512xi32, #a>
    %w = arith.addi %r, %ri : tensor<512xi32, #a>
    %ptrs = tile.addptr %s, %w : tensor<512x!tile.ptr<i32>, #a>, tensor<512xi32, #a>
    %cp = kgpu.convert_layout %ptrs : tensor<512x!tile.ptr<i32>, #a> -> tensor<512x!tile.ptr<i32>, #b>
    %cw = kgpu.convert_layout %w : tensor<512xi32, #a> -> tensor<512xi32, #b>
    tile.store %cp, %cw : tensor<512x!tile.ptr<i32>, #b>
  }
  tile.return
}
}
