// Shared-memory addresses are 32-bit (the NVPTX back end's short pointers):
// the pipelined copies, ldmatrix and staging stores take %r registers, with
// no 64-bit arithmetic truncated on the way. The kernel assembles for sm_80.
// REQUIRES: ptxas
// RUN: kilnc %s --arch sm_80 --emit ptx | FileCheck %s
// RUN: kilnc %s --arch sm_80 --emit cubin-info | FileCheck %s --check-prefix=CUBIN

// CHECK-NOT: cvt.u32.u64
// CHECK: cp.async.ca.shared.global [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 8
// CHECK-NOT: cvt.u32.u64
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{.*}}, [%r{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: cvt.u32.u64
// CUBIN: kernel carried_pointers for sm_80: {{[0-9]+}} registers, {{.*}} 0 bytes spill stores

tile.func @carried_pointers(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
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
  %bp = tile.addptr %bs, %boff : tensor<16x32x!tile.ptr<f16>>, tensor<16x32xi32>
  %step = arith.constant dense<16> : tensor<32x16xi32>
  %acc, %last = scf.for %i = %c0 to %k step %c16 iter_args(%sum = %zero, %ap = %a0) -> (tensor<32x32xf32>, tensor<32x16x!tile.ptr<f16>>) : i32 {
    %av = tile.load %ap : tensor<32x16x!tile.ptr<f16>>
    %boffk = arith.muli %i, %c16 : i32
    %bk = tile.splat %boffk : i32 -> tensor<16x32xi32>
    %bpk = tile.addptr %bp, %bk : tensor<16x32x!tile.ptr<f16>>, tensor<16x32xi32>
    %bv = tile.load %bpk : tensor<16x32x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<32x16xf16> * tensor<16x32xf16> -> tensor<32x32xf32>
    %next = tile.addptr %ap, %step : tensor<32x16x!tile.ptr<f16>>, tensor<32x16xi32>
    scf.yield %d, %next : tensor<32x32xf32>, tensor<32x16x!tile.ptr<f16>>
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

