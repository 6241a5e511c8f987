// A tensor-core accumulator stored after a pipelined K loop, as bf16, is
// converted through shared memory to the store's coalesced layout of 8 a
// thread (the layout assigner stages it: the user wrote a plain store).
// The loop waited for every copy before it ends, so the conversion's
// scratch overlaps the pipelining rings: shared memory holds the rings'
// 24 KB, and not the conversion's 9 KB more (nor anything for the indices
// that A's, B's and C's addresses share: each has its own copy, computed
// in its own layout). The conversion writes each thread's pairs
// and reads 16-byte vectors (rows padded by 16 bytes against bank
// conflicts: 64 + 8 elements), and computes the thread's coordinates
// afresh (a %tid.x read LLVM cannot merge with the ones before the loop,
// whose results would stay live through it).
// RUN: kiln-opt %s --kgpu-assign-layouts="num-warps=4 target=sm_80" | FileCheck %s
// RUN: kiln-opt %s --kgpu-assign-layouts="num-warps=4 target=sm_80" --kgpu-pipeline-loops=num-stages=3 --kgpu-to-llvm=compute-capability=80 | FileCheck %s --check-prefix=LLVM

// CHECK-DAG: #[[ROWS:.*]] = #kgpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[ACC:.*]] = #kgpu.linear<{register = {{\[\[}}0, 1], [8, 0]
// CHECK-LABEL: tile.func @bf16_out
// CHECK: scf.for
// CHECK: tile.dot
// CHECK: %[[V:.*]] = arith.truncf %{{.*}} : tensor<64x64xf32, #[[ACC]]> to tensor<64x64xbf16, #[[ACC]]>
// CHECK: %[[C:.*]] = kgpu.convert_layout %[[V]] : tensor<64x64xbf16, #[[ACC]]> -> tensor<64x64xbf16, #[[ROWS]]>
// CHECK: tile.store %{{.*}}, %[[C]] : tensor<64x64x!tile.ptr<bf16>, #[[ROWS]]>

// LLVM: module attributes {kgpu.num_warps = 4 : i32, kgpu.shared_memory = 24576 : i32
// LLVM-LABEL: llvm.func @bf16_out
// LLVM-NOT: "mov.u32 $0, %tid.x;"
// LLVM: scf.for
// LLVM: mma.sync
// LLVM: scf.yield
// LLVM: "cp.async.wait_group 0;"
// LLVM: "mov.u32 $0, %tid.x;"
// LLVM: nvvm.barrier0
// LLVM: llvm.mlir.constant(72 : i32)
// LLVM: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
// LLVM: nvvm.barrier0
// LLVM: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<8xbf16>
// LLVM: st.global.v4.b32
tile.func @bf16_out(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32},
                    %c: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  // A [64][k] rows, B [k][64] rows, C [64][64] rows.
  %rows = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ks = tile.splat %k : i32 -> tensor<64x1xi32>
  %arow = arith.muli %rows, %ks : tensor<64x1xi32>
  %acols = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %arowb = tile.broadcast %arow : tensor<64x1xi32> -> tensor<64x32xi32>
  %acolb = tile.broadcast %acols : tensor<1x32xi32> -> tensor<64x32xi32>
  %aoff = arith.addi %arowb, %acolb : tensor<64x32xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %a0 = tile.addptr %as, %aoff : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %brow = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %c64b = arith.constant dense<64> : tensor<32x1xi32>
  %brows = arith.muli %brow, %c64b : tensor<32x1xi32>
  %cols = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %browb = tile.broadcast %brows : tensor<32x1xi32> -> tensor<32x64xi32>
  %bcolb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<32x64xi32>
  %boff = arith.addi %browb, %bcolb : tensor<32x64xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %b0 = tile.addptr %bs, %boff : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
  %acc = scf.for %i = %c0 to %k step %c32 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %ai = tile.splat %i : i32 -> tensor<64x32xi32>
    %ap = tile.addptr %a0, %ai : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
    %av = tile.load %ap : tensor<64x32x!tile.ptr<f16>>
    %i64 = arith.muli %i, %c32 : i32
    %bi = tile.splat %i64 : i32 -> tensor<32x64xi32>
    %bp = tile.addptr %b0, %bi : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
    %bv = tile.load %bp : tensor<32x64x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %acc : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  %c64c = arith.constant dense<64> : tensor<64x1xi32>
  %crows = arith.muli %rows, %c64c : tensor<64x1xi32>
  %crowb = tile.broadcast %crows : tensor<64x1xi32> -> tensor<64x64xi32>
  %ccolb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %coff = arith.addi %crowb, %ccolb : tensor<64x64xi32>
  %cs = tile.splat %c : !tile.ptr<bf16> -> tensor<64x64x!tile.ptr<bf16>>
  %cp = tile.addptr %cs, %coff : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
  %v = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xbf16>
  tile.store %cp, %v : tensor<64x64x!tile.ptr<bf16>>
  tile.return
}
