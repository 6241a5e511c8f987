// Layout assignment: coalesced anchors, propagation across shape changes,
// loop-carried classes, conversions only where relations disagree.
// RUN: kiln-opt %s --kgpu-assign-layouts --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kgpu-assign-layouts="target=gfx942" --split-input-file | FileCheck %s --check-prefix=WAVE64

// 16-byte aligned pointers and a divisible bound: 4 f32 per thread.
// CHECK: #[[B:.*]] = #kgpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK: module attributes {kgpu.num_warps = 4 : i32, kgpu.target = "sm_90a", kgpu.threads_per_warp = 32 : i32}
// CHECK-LABEL: tile.func @coalesced
// An AMD gfx9 target's wavefronts: 64 lanes, the same 16-byte vectors.
// WAVE64: #[[B:.*]] = #kgpu.blocked<{sizePerThread = [4], threadsPerWarp = [64], warpsPerCTA = [4], order = [0]}>
// WAVE64: module attributes {kgpu.num_warps = 4 : i32, kgpu.target = "gfx942", kgpu.threads_per_warp = 64 : i32}
// WAVE64: tile.load %{{.*}}, %{{.*}} : tensor<1024x!tile.ptr<f32>, #[[B]]>
// CHECK: tile.load %{{.*}}, %{{.*}} : tensor<1024x!tile.ptr<f32>, #[[B]]>
// CHECK-NOT: kgpu.convert_layout
tile.func @coalesced(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32 {tile.divisibility = 16 : i32}) {
  %r = tile.range 0, 1024 : tensor<1024xi32>
  %ns = tile.splat %n : i32 -> tensor<1024xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %px = tile.addptr %xs, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %px, %m : tensor<1024x!tile.ptr<f32>>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %py = tile.addptr %ys, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  tile.store %py, %v, %m : tensor<1024x!tile.ptr<f32>>
  tile.return
}

// -----

// Without alignment facts: one element per thread.
// CHECK: #kgpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
tile.func @unaligned(%x: !tile.ptr<f32>, %n: i32) {
  %r = tile.range 0, 1024 : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %px = tile.addptr %xs, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %px : tensor<1024x!tile.ptr<f32>>
  tile.store %px, %v : tensor<1024x!tile.ptr<f32>>
  tile.return
}

// -----

// A row vector broadcast over a 2-D tile takes the slice of the tile's
// layout: no conversion anywhere.
// CHECK-DAG: #[[T:.*]] = #kgpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[S:.*]] = #kgpu.slice<{dim = 0, parent = #[[T]]}>
// CHECK-LABEL: tile.func @row_broadcast
// CHECK: tile.load %{{.*}} : tensor<128x!tile.ptr<f16>, #[[S]]>
// CHECK: tile.expand_dims %{{.*}} {axis = 0 : i32} : tensor<128xf16, #[[S]]> -> tensor<1x128xf16, #[[T]]>
// CHECK: tile.broadcast %{{.*}} : tensor<1x128xf16, #[[T]]> -> tensor<16x128xf16, #[[T]]>
// CHECK-NOT: kgpu.convert_layout
tile.func @row_broadcast(%x: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %w: !tile.ptr<f16> {tile.divisibility = 16 : i32}) {
  %rows = tile.range 0, 16 : tensor<16xi32>
  %cols = tile.range 0, 128 : tensor<128xi32>
  %r = tile.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %c128 = arith.constant dense<128> : tensor<16x1xi32>
  %ro = arith.muli %r, %c128 : tensor<16x1xi32>
  %rb = tile.broadcast %ro : tensor<16x1xi32> -> tensor<16x128xi32>
  %c = tile.expand_dims %cols {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  %cb = tile.broadcast %c : tensor<1x128xi32> -> tensor<16x128xi32>
  %o = arith.addi %rb, %cb : tensor<16x128xi32>
  %xs = tile.splat %x : !tile.ptr<f16> -> tensor<16x128x!tile.ptr<f16>>
  %px = tile.addptr %xs, %o : tensor<16x128x!tile.ptr<f16>>, tensor<16x128xi32>
  %v = tile.load %px : tensor<16x128x!tile.ptr<f16>>
  %ws = tile.splat %w : !tile.ptr<f16> -> tensor<128x!tile.ptr<f16>>
  %pw = tile.addptr %ws, %cols : tensor<128x!tile.ptr<f16>>, tensor<128xi32>
  %wv = tile.load %pw : tensor<128x!tile.ptr<f16>>
  %we = tile.expand_dims %wv {axis = 0 : i32} : tensor<128xf16> -> tensor<1x128xf16>
  %wb = tile.broadcast %we : tensor<1x128xf16> -> tensor<16x128xf16>
  %sum = arith.addf %v, %wb : tensor<16x128xf16>
  tile.store %px, %sum : tensor<16x128x!tile.ptr<f16>>
  tile.return
}

// -----

// A reduction's result is the slice of its operand's layout; a value carried
// by a loop shares one layout with its initial and yielded values.
// CHECK: #[[L:.*]] = #kgpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-LABEL: tile.func @loop_and_reduce
// CHECK: scf.for {{.*}} -> (tensor<512xf32, #[[L]]>)
// CHECK: tile.reduce(%{{.*}}) axis = 0 : (tensor<512xf32, #[[L]]>) -> f32
tile.func @loop_and_reduce(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32, %out: !tile.ptr<f32>) {
  %zero = arith.constant dense<0.0> : tensor<512xf32>
  %c0 = arith.constant 0 : i32
  %c512 = arith.constant 512 : i32
  %r = tile.range 0, 512 : tensor<512xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>>
  %acc = scf.for %i = %c0 to %n step %c512 iter_args(%a = %zero) -> (tensor<512xf32>) : i32 {
    %is = tile.splat %i : i32 -> tensor<512xi32>
    %o = arith.addi %is, %r : tensor<512xi32>
    %p = tile.addptr %xs, %o : tensor<512x!tile.ptr<f32>>, tensor<512xi32>
    %v = tile.load %p : tensor<512x!tile.ptr<f32>>
    %s = arith.addf %a, %v : tensor<512xf32>
    scf.yield %s : tensor<512xf32>
  }
  %total = tile.reduce(%acc) axis = 0 : (tensor<512xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  tile.store %out, %total : !tile.ptr<f32>
  tile.return
}

// -----

// A transpose's result is its operand's layout mapped by the permutation.
// CHECK-LABEL: tile.func @transpose
// CHECK: tile.trans %{{.*}} {order = array<i32: 1, 0>} : tensor<32x64xf32, #blocked> -> tensor<64x32xf32, #linear>
tile.func @transpose(%x: !tile.ptr<f32>) {
  %c = arith.constant dense<1.0> : tensor<32x64xf32>
  %t = tile.trans %c {order = array<i32: 1, 0>} : tensor<32x64xf32> -> tensor<64x32xf32>
  %s = tile.reduce(%t) axis = 0 : (tensor<64x32xf32>) -> tensor<32xf32> {
  ^bb0(%a: f32, %b: f32):
    %d = arith.addf %a, %b : f32
    tile.reduce.return %d : f32
  }
  tile.return
}

// -----

// Two 64x64 blocks, one contiguous along its rows, one along its columns,
// whose offsets share a splat constant (as CSE leaves A's and B's address
// arithmetic of a square tile): each use gets its own copy, so each load
// keeps its own vectors (8 along its contiguous dimension) instead of
// sharing one layout.
// CHECK-DAG: #[[ROWS:.*]] = #kgpu.blocked<{sizePerThread = [1, 8], {{.*}}order = [1, 0]}>
// CHECK-DAG: #[[COLS:.*]] = #kgpu.blocked<{sizePerThread = [8, 1], {{.*}}order = [0, 1]}>
// CHECK-LABEL: tile.func @square_blocks_share_a_constant
// CHECK: tile.load %{{.*}} : tensor<64x64x!tile.ptr<f16>, #[[ROWS]]>
// CHECK: tile.load %{{.*}} : tensor<64x64x!tile.ptr<f16>, #[[COLS]]>
tile.func @square_blocks_share_a_constant(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                                          %a2: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b2: !tile.ptr<f16> {tile.divisibility = 16 : i32}) {
  %c64 = arith.constant dense<64> : tensor<64x64xi32>
  %r = tile.range 0, 64 : tensor<64xi32>
  %row = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %col = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rows = tile.broadcast %row : tensor<64x1xi32> -> tensor<64x64xi32>
  %cols = tile.broadcast %col : tensor<1x64xi32> -> tensor<64x64xi32>
  %ar = arith.muli %rows, %c64 : tensor<64x64xi32>
  %aoff = arith.addi %ar, %cols : tensor<64x64xi32>
  %r2 = tile.range 0, 64 : tensor<64xi32>
  %row2 = tile.expand_dims %r2 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %col2 = tile.expand_dims %r2 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rows2 = tile.broadcast %row2 : tensor<64x1xi32> -> tensor<64x64xi32>
  %cols2 = tile.broadcast %col2 : tensor<1x64xi32> -> tensor<64x64xi32>
  %bc = arith.muli %cols2, %c64 : tensor<64x64xi32>
  %boff = arith.addi %bc, %rows2 : tensor<64x64xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %ap = tile.addptr %as, %aoff : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %x = tile.load %ap : tensor<64x64x!tile.ptr<f16>>
  %y = tile.load %bp : tensor<64x64x!tile.ptr<f16>>
  %a2s = tile.splat %a2 : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %a2p = tile.addptr %a2s, %aoff : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  tile.store %a2p, %x : tensor<64x64x!tile.ptr<f16>>
  %b2s = tile.splat %b2 : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %b2p = tile.addptr %b2s, %boff : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  tile.store %b2p, %y : tensor<64x64x!tile.ptr<f16>>
  tile.return
}
