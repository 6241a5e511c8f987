// Conversions inside loops of cheap values are recomputed in the wanted
// layout: a K mask built once as a row and used by A's tile and, through a
// transpose, by B's (as in the matmul tutorial) needs no shared-memory round
// trip per iteration; the range from before the loop is converted once,
// ahead of it.
// RUN: kiln-opt %s --kgpu-assign-layouts --canonicalize --kgpu-rematerialize-conversions --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s --kgpu-assign-layouts --canonicalize | FileCheck %s --check-prefix=BEFORE
// The matmul example (the same mask) keeps no conversion in its K loop.
// (Conversions outside loops, of chains ending at scalars, are recomputed
// too: tests/compiler/kilnc/schedules.test, NOCONVERT and BASES.)
// RUN: kilnc --kernel matmul --spec ddddddd1d1d1 --emit gpu | FileCheck %s --check-prefix=EXAMPLE

// BEFORE-LABEL: tile.func @masked_k
// BEFORE: scf.for
// BEFORE: kgpu.convert_layout
// BEFORE: scf.yield
// CHECK-LABEL: tile.func @masked_k
// CHECK: %[[RANGE:.*]] = kgpu.convert_layout %{{.*}} : tensor<32xi32, #{{.*}}> -> tensor<32xi32, #[[SLICE:.*]]>
// CHECK: scf.for
// CHECK-NOT: kgpu.convert_layout
// CHECK: tile.splat %{{.*}} : i32 -> tensor<32xi32, #[[SLICE]]>
// CHECK-NEXT: arith.addi %{{.*}}, %[[RANGE]] : tensor<32xi32, #[[SLICE]]>
// CHECK-NEXT: tile.expand_dims
// CHECK-NEXT: arith.cmpi slt
// CHECK-NOT: kgpu.convert_layout
// CHECK: scf.yield
// EXAMPLE: scf.for
// EXAMPLE-NOT: kgpu.convert_layout
// EXAMPLE: scf.yield
tile.func @masked_k(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %c64 = arith.constant 64 : i32
  %fill = arith.constant dense<0.0> : tensor<64x32xf16>
  %fillb = arith.constant dense<0.0> : tensor<32x64xf16>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %rows = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ks = tile.splat %k : i32 -> tensor<64x1xi32>
  %rowoff = arith.muli %rows, %ks : tensor<64x1xi32>
  %cols = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x32xi32>
  %cb = tile.broadcast %cols : tensor<1x32xi32> -> tensor<64x32xi32>
  %aoff = arith.addi %rb, %cb : tensor<64x32xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %a0 = tile.addptr %as, %aoff : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %brow = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %c64s = arith.constant dense<64> : tensor<32x1xi32>
  %brows = arith.muli %brow, %c64s : tensor<32x1xi32>
  %bcols = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %bb = tile.broadcast %brows : tensor<32x1xi32> -> tensor<32x64xi32>
  %bc = tile.broadcast %bcols : tensor<1x64xi32> -> tensor<32x64xi32>
  %boff = arith.addi %bb, %bc : tensor<32x64xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %b0 = tile.addptr %bs, %boff : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
  %kk = tile.splat %k : i32 -> tensor<1x32xi32>
  %acc = scf.for %i = %c0 to %k step %c32 iter_args(%sum = %zero) -> (tensor<64x64xf32>) : i32 {
    %is = tile.splat %i : i32 -> tensor<32xi32>
    %kidx = arith.addi %is, %r32 : tensor<32xi32>
    %krow = tile.expand_dims %kidx {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %inrow = arith.cmpi slt, %krow, %kk : tensor<1x32xi32>
    %amask = tile.broadcast %inrow : tensor<1x32xi1> -> tensor<64x32xi1>
    %incol = tile.trans %inrow {order = array<i32: 1, 0>} : tensor<1x32xi1> -> tensor<32x1xi1>
    %bmask = tile.broadcast %incol : tensor<32x1xi1> -> tensor<32x64xi1>
    %ioff = tile.splat %i : i32 -> tensor<64x32xi32>
    %ap = tile.addptr %a0, %ioff : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
    %av = tile.load %ap, %amask, %fill : tensor<64x32x!tile.ptr<f16>>
    %ib = arith.muli %i, %c64 : i32
    %ibs = tile.splat %ib : i32 -> tensor<32x64xi32>
    %bp = tile.addptr %b0, %ibs : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
    %bv = tile.load %bp, %bmask, %fillb : tensor<32x64x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  %crow = arith.constant dense<64> : tensor<64x1xi32>
  %crows = arith.muli %rows, %crow : tensor<64x1xi32>
  %crb = tile.broadcast %crows : tensor<64x1xi32> -> tensor<64x64xi32>
  %ccb = tile.broadcast %bcols : tensor<1x64xi32> -> tensor<64x64xi32>
  %coff = arith.addi %crb, %ccb : tensor<64x64xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %cp, %acc : tensor<64x64x!tile.ptr<f32>>
  tile.return
}
