// Layout encodings and kgpu.convert_layout print and parse back.
// RUN: kiln-opt %s | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

#blocked = #kgpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#slice = #kgpu.slice<{dim = 1, parent = #blocked}>
#linear = #kgpu.linear<{register = [[0, 1], [0, 2]], lane = [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], warp = [[4, 0], [8, 0]]}>

// CHECK-DAG: #[[BLOCKED:.*]] = #kgpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[SLICE:.*]] = #kgpu.slice<{dim = 1, parent = #[[BLOCKED]]}>
// CHECK-DAG: #[[LINEAR:.*]] = #kgpu.linear<{register = {{\[}}[0, 1], [0, 2]], lane = {{\[}}[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], warp = {{\[}}[4, 0], [8, 0]]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // CHECK-LABEL: tile.func @layouts
  tile.func @layouts(%p: !tile.ptr<f32>) {
    %c = arith.constant dense<1.0> : tensor<16x32xf32, #blocked>
    // CHECK: kgpu.convert_layout %{{.*}} : tensor<16x32xf32, #[[BLOCKED]]> -> tensor<16x32xf32, #[[LINEAR]]>
    %l = kgpu.convert_layout %c : tensor<16x32xf32, #blocked> -> tensor<16x32xf32, #linear>
    %s = tile.reduce(%c) axis = 1 : (tensor<16x32xf32, #blocked>) -> tensor<16xf32, #slice> {
    ^bb0(%a: f32, %b: f32):
      %x = arith.addf %a, %b : f32
      tile.reduce.return %x : f32
    }
    // CHECK: tensor<16xf32, #[[SLICE]]>
    tile.return
  }
}
