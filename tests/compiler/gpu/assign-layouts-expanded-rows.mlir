// RUN: kiln-opt %s --kgpu-assign-layouts | kiln-opt | FileCheck %s

// A reduced wgmma accumulator expanded back and broadcast over an
// mma.sync product (flash attention's row maxima): the accumulator keeps
// the wgmma layout, and the expanded rows a 64x1 layout (deriving either
// one from the other's layout unchanged left bases past the size-1
// dimension, or columns held by no thread: wrong numbers on the GPU). The
// second kiln-opt re-parses the result, verifying every layout.
// CHECK: #[[ACC:[a-z0-9]+]] = #kgpu.linear<{register = {{\[\[}}0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = {{\[\[}}0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = {{\[\[}}16, 0], [32, 0]]}>
// CHECK-LABEL: tile.func @expanded_reduced_accumulator
// CHECK: tile.dot {{.*}} {kgpu.wgmma} : {{.*}} -> tensor<64x64xf32, #[[ACC]]>
// CHECK: tile.expand_dims {{.*}} : tensor<64xf32, #{{.*}}> -> tensor<64x1xf32, #{{.*}}>
tile.func @expanded_reduced_accumulator(%q: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %v: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %r = tile.range 0, 64 : tensor<64xi32>
  %c64 = arith.constant dense<64> : tensor<64x1xi32>
  %row = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %rowoff = arith.muli %row, %c64 : tensor<64x1xi32>
  %col = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb = tile.broadcast %col : tensor<1x64xi32> -> tensor<64x64xi32>
  %off = arith.addi %rb, %cb : tensor<64x64xi32>
  %qs = tile.splat %q : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %pq = tile.addptr %qs, %off : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %x = tile.load %pq : tensor<64x64x!tile.ptr<f16>>
  %vs = tile.splat %v : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %pv = tile.addptr %vs, %off : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %y = tile.load %pv : tensor<64x64x!tile.ptr<f16>>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %s = tile.dot %x, %x, %zero : tensor<64x64xf16> * tensor<64x64xf16> -> tensor<64x64xf32>
  %m = tile.reduce(%s) axis = 1 : (tensor<64x64xf32>) -> tensor<64xf32> {
  ^bb0(%a: f32, %b: f32):
    %mx = arith.maximumf %a, %b : f32
    tile.reduce.return %mx : f32
  }
  %p = arith.truncf %s : tensor<64x64xf32> to tensor<64x64xf16>
  %zero2 = arith.constant dense<0.0> : tensor<64x64xf32>
  %t = tile.dot %p, %y, %zero2 : tensor<64x64xf16> * tensor<64x64xf16> -> tensor<64x64xf32>
  %e = tile.expand_dims %m {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
  %eb = tile.broadcast %e : tensor<64x1xf32> -> tensor<64x64xf32>
  %u = arith.divf %t, %eb : tensor<64x64xf32>
  %os = tile.splat %o : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %po = tile.addptr %os, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %po, %u : tensor<64x64x!tile.ptr<f32>>
  tile.return
}
