// A thread's cp.async copies into a swizzled ring slot lie whole swizzle
// periods of rows apart (here 16 rows of A, 32 of B: 4 warps, 16-byte
// copies), so they share one computed shared address and differ by
// constants (1024 elements, 2048 bytes): a pipelined loop keeps one
// register for them instead of one per copy, and no per-copy arithmetic.
// RUN: kiln-opt %s --kgpu-assign-layouts --kgpu-pipeline-loops=num-stages=3 --kgpu-to-llvm | FileCheck %s
// REQUIRES: ptxas
// RUN: kilnc %s --arch sm_80 --emit ptx | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: llvm.func @ring_copies
// CHECK: cp.async.cg.shared.global [$0], [$1], 16, $2;
// CHECK-NEXT: %[[STEP:.*]] = llvm.mlir.constant(1024 : i32) : i32
// CHECK-NEXT: %[[NEXT:.*]] = llvm.getelementptr %{{.*}}[%[[STEP]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f16
// CHECK-NEXT: llvm.xor
// CHECK-NEXT: %[[P:.*]] = llvm.ptrtoint %[[NEXT]]
// CHECK-NEXT: cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,b" %[[P]]

// In the loop, the second copy's address is the first's base plus a
// constant, with no other arithmetic (before: one more add of a register
// holding that copy's own offset).
// PTX: $L__BB0_2:
// PTX: cp.async.cg.shared.global
// PTX-NEXT: // end inline asm
// PTX-NEXT: add.s32 [[A1:%r[0-9]+]], %r{{[0-9]+}}, {{[0-9]+}};
// PTX-NEXT: // begin inline asm
// PTX-NEXT: cp.async.cg.shared.global {{\[}}[[A1]]{{\]}}, [%rd{{[0-9]+}}], 16

tile.func @ring_copies(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %rows = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ks = tile.splat %k : i32 -> tensor<32x1xi32>
  %arow = arith.muli %rows, %ks : tensor<32x1xi32>
  %acols = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %arowb = tile.broadcast %arow : tensor<32x1xi32> -> tensor<32x64xi32>
  %acolb = tile.broadcast %acols : tensor<1x64xi32> -> tensor<32x64xi32>
  %aoff = arith.addi %arowb, %acolb : tensor<32x64xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %a0 = tile.addptr %as, %aoff : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
  %brow = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %c32s = arith.constant dense<32> : tensor<64x1xi32>
  %brows = arith.muli %brow, %c32s : tensor<64x1xi32>
  %bcols = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %browb = tile.broadcast %brows : tensor<64x1xi32> -> tensor<64x32xi32>
  %bcolb = tile.broadcast %bcols : tensor<1x32xi32> -> tensor<64x32xi32>
  %boff = arith.addi %browb, %bcolb : tensor<64x32xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %step = arith.constant dense<64> : tensor<32x64xi32>
  %acc, %last = scf.for %i = %c0 to %k step %c64 iter_args(%sum = %zero, %ap = %a0) -> (tensor<32x32xf32>, tensor<32x64x!tile.ptr<f16>>) : i32 {
    %av = tile.load %ap : tensor<32x64x!tile.ptr<f16>>
    %boffk = arith.muli %i, %c32 : i32
    %bk = tile.splat %boffk : i32 -> tensor<64x32xi32>
    %bpk = tile.addptr %bp, %bk : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
    %bv = tile.load %bpk : tensor<64x32x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<32x64xf16> * tensor<64x32xf16> -> tensor<32x32xf32>
    %next = tile.addptr %ap, %step : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
    scf.yield %d, %next : tensor<32x32xf32>, tensor<32x64x!tile.ptr<f16>>
  }
  %crow = arith.constant dense<32> : tensor<32x1xi32>
  %crows = arith.muli %rows, %crow : tensor<32x1xi32>
  %crowb = tile.broadcast %crows : tensor<32x1xi32> -> tensor<32x32xi32>
  %ccolb = tile.broadcast %bcols : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %crowb, %ccolb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %acc : tensor<32x32x!tile.ptr<f32>>
  tile.return
}
