// A loop over several tiles' K steps on mma.sync with pointer loads (a
// persistent matmul compiled for sm_80): the operand pointers are carried
// and formed afresh for the next tile in a branch at a tile's last step;
// the accumulator restarts from zero at each tile's first step
// (select(first, 0, acc)) and another branch stores each finished tile.
// The pipeliner runs the pointer branch ahead with the rest of the address
// arithmetic (the loads become cp.async copies; no load stays in the loop).
// Lowered, the restart is a branch around the first K step's mma.sync, one
// side reading a zero register instead of C: no select of the
// accumulator's registers.
// RUN: kiln-opt %s --kgpu-assign-layouts="num-warps=4 target=sm_80" --kgpu-pipeline-loops=num-stages=3 | FileCheck %s
// RUN: kiln-opt %s --kgpu-assign-layouts="num-warps=4 target=sm_80" --kgpu-pipeline-loops=num-stages=3 --kgpu-to-llvm=compute-capability=80 --canonicalize | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: tile.func @tiles
// CHECK: scf.for
// CHECK-NOT: tile.load
// The copies' pointers two iterations ahead: the branch, cloned.
// CHECK: scf.if
// CHECK: tile.addptr
// CHECK: } else {
// CHECK: kgpu.async_copy
// CHECK: kgpu.async_copy
// CHECK-NEXT: kgpu.async_commit
// CHECK-NOT: tile.load
// CHECK: scf.yield

// LLVM-LABEL: llvm.func @tiles
// LLVM: scf.for
// LLVM-NOT: llvm.select %{{.*}} : i1, f32
// LLVM: scf.if
// LLVM: "{ .reg .f32 z; mov.b32 z, 0; mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {z, z, z, z}; }"
// LLVM: } else {
// LLVM: "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};"
// LLVM-NOT: llvm.select %{{.*}} : i1, f32
// LLVM: scf.yield
tile.func @tiles(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                 %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32},
                 %total: i32, %steps: i32, %jump: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c16 = arith.constant 16 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %r16 = tile.range 0, 16 : tensor<16xi32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %rows = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ks = tile.splat %k : i32 -> tensor<32x1xi32>
  %arow = arith.muli %rows, %ks : tensor<32x1xi32>
  %acols = tile.expand_dims %r16 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %arowb = tile.broadcast %arow : tensor<32x1xi32> -> tensor<32x16xi32>
  %acolb = tile.broadcast %acols : tensor<1x16xi32> -> tensor<32x16xi32>
  %aoff = arith.addi %arowb, %acolb : tensor<32x16xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<32x16x!tile.ptr<f16>>
  %a0 = tile.addptr %as, %aoff : tensor<32x16x!tile.ptr<f16>>, tensor<32x16xi32>
  %brow = tile.expand_dims %r16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %c32s = arith.constant dense<32> : tensor<16x1xi32>
  %brows = arith.muli %brow, %c32s : tensor<16x1xi32>
  %bcols = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %browb = tile.broadcast %brows : tensor<16x1xi32> -> tensor<16x32xi32>
  %bcolb = tile.broadcast %bcols : tensor<1x32xi32> -> tensor<16x32xi32>
  %boff = arith.addi %browb, %bcolb : tensor<16x32xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<16x32x!tile.ptr<f16>>
  %b0 = tile.addptr %bs, %boff : tensor<16x32x!tile.ptr<f16>>, tensor<16x32xi32>
  %crow = arith.constant dense<32> : tensor<32x1xi32>
  %crows = arith.muli %rows, %crow : tensor<32x1xi32>
  %crowb = tile.broadcast %crows : tensor<32x1xi32> -> tensor<32x32xi32>
  %ccolb = tile.broadcast %bcols : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %crowb, %ccolb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  %last_step = arith.subi %steps, %c1 : i32
  %r:4 = scf.for %i = %c0 to %total step %c1 iter_args(%acc = %zero, %ki = %c0, %pa = %a0, %pb = %b0)
      -> (tensor<32x32xf32>, i32, tensor<32x16x!tile.ptr<f16>>, tensor<16x32x!tile.ptr<f16>>) : i32 {
    %last = arith.cmpi eq, %ki, %last_step : i32
    // The next tile's pointers: here the same tile moved by %jump elements.
    %next:2 = scf.if %last -> (tensor<32x16x!tile.ptr<f16>>, tensor<16x32x!tile.ptr<f16>>) {
      %ja = tile.splat %jump : i32 -> tensor<32x16xi32>
      %na = tile.addptr %a0, %ja : tensor<32x16x!tile.ptr<f16>>, tensor<32x16xi32>
      %jb = tile.splat %jump : i32 -> tensor<16x32xi32>
      %nb = tile.addptr %b0, %jb : tensor<16x32x!tile.ptr<f16>>, tensor<16x32xi32>
      scf.yield %na, %nb : tensor<32x16x!tile.ptr<f16>>, tensor<16x32x!tile.ptr<f16>>
    } else {
      scf.yield %pa, %pb : tensor<32x16x!tile.ptr<f16>>, tensor<16x32x!tile.ptr<f16>>
    }
    %kofs = arith.muli %ki, %c16 : i32
    %ak = tile.splat %kofs : i32 -> tensor<32x16xi32>
    %apk = tile.addptr %pa, %ak : tensor<32x16x!tile.ptr<f16>>, tensor<32x16xi32>
    %av = tile.load %apk : tensor<32x16x!tile.ptr<f16>>
    %boffk = arith.muli %kofs, %c16 : i32
    %bk = tile.splat %boffk : i32 -> tensor<16x32xi32>
    %bpk = tile.addptr %pb, %bk : tensor<16x32x!tile.ptr<f16>>, tensor<16x32xi32>
    %bv = tile.load %bpk : tensor<16x32x!tile.ptr<f16>>
    %first = arith.cmpi eq, %ki, %c0 : i32
    %firsts = tile.splat %first : i1 -> tensor<32x32xi1>
    %start = arith.select %firsts, %zero, %acc : tensor<32x32xi1>, tensor<32x32xf32>
    %d = tile.dot %av, %bv, %start : tensor<32x16xf16> * tensor<16x32xf16> -> tensor<32x32xf32>
    scf.if %last {
      tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
    }
    %ki1 = arith.addi %ki, %c1 : i32
    %kn = arith.select %last, %c0, %ki1 : i32
    scf.yield %d, %kn, %next#0, %next#1 : tensor<32x32xf32>, i32, tensor<32x16x!tile.ptr<f16>>, tensor<16x32x!tile.ptr<f16>>
  }
  tile.return
}
