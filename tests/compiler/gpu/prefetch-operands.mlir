// Prefetching of matrix-core dot operands where there is no asynchronous
// copy (AMD): each operand's loads run an iteration ahead, into the other of
// two shared slots stored at the iteration's end; the dot reads its slot
// directly, and one barrier an iteration orders the slots.
// RUN: kiln-opt %s --kgpu-assign-layouts="target=gfx942" --kgpu-prefetch-operands --canonicalize --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kgpu-assign-layouts="target=gfx942" --kgpu-prefetch-operands=num-stages=1 --split-input-file | FileCheck %s --check-prefix=ONE
// RUN: kiln-opt %s --kgpu-assign-layouts="target=sm_80" --kgpu-prefetch-operands --split-input-file | FileCheck %s --check-prefix=NV
// RUN: kiln-opt %s --kgpu-assign-layouts="target=gfx942" --kgpu-prefetch-operands --split-input-file | kiln-opt --kgpu-to-llvm --split-input-file | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: tile.func @carried_pointers
// Two rings of two slots, K-major and swizzled as the matrix cores read them.
// CHECK-DAG: %[[RA:.*]] = kgpu.local_alloc : tensor<2x32x16xf16, #kgpu.shared<{vec = 8, perPhase = 4, maxPhase = 2, order = [1, 0]}>>
// CHECK-DAG: %[[RB:.*]] = kgpu.local_alloc : tensor<2x16x32xf16, #kgpu.shared<{vec = 8, perPhase = 4, maxPhase = 2, order = [0, 1]}>>
// Prologue: the first iteration's operands, masked off when the loop does
// not run, stored into slot 0 behind one barrier.
// CHECK: %[[RUNS:.*]] = arith.cmpi sgt, %arg3, %c0_i32
// CHECK: %[[M0:.*]] = tile.splat %[[RUNS]] : i1 -> tensor<32x16xi1
// CHECK: %[[A0:.*]] = tile.load %{{.*}}, %[[M0]], %{{.*}} : tensor<32x16x!tile.ptr<f16>
// CHECK: %[[B0:.*]] = tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x32x!tile.ptr<f16>
// CHECK: kgpu.local_store %[[A0]], %[[RA]][%c0_i32] unsynchronized
// CHECK-NEXT: kgpu.local_store %[[B0]], %[[RB]][%c0_i32] unsynchronized
// CHECK-NEXT: kgpu.barrier
// The loop carries the pointer and the slot it reads, nothing loaded.
// CHECK: scf.for %[[K:.*]] = %c0_i32 to %arg3 step %c16_i32 iter_args(%{{.*}} = %{{.*}}, %[[AP:.*]] = %{{.*}}, %[[SLOT:.*]] = %c0_i32) -> (tensor<32x32xf32, #{{.*}}>, tensor<32x16x!tile.ptr<f16>, #{{.*}}>, i32)
// The pointer's next value first: the next iteration's loads read there.
// CHECK-NEXT: %[[NEXTP:.*]] = tile.addptr %[[AP]], %{{.*}}
// CHECK-NEXT: %[[NK:.*]] = arith.addi %[[K]], %c16_i32
// CHECK-NEXT: %[[AHEAD:.*]] = arith.cmpi slt, %[[NK]], %arg3
// CHECK: %[[MA:.*]] = tile.splat %[[AHEAD]] : i1 -> tensor<32x16xi1
// CHECK: %[[NA:.*]] = tile.load %[[NEXTP]], %[[MA]], %{{.*}} : tensor<32x16x!tile.ptr<f16>
// CHECK: %[[NB:.*]] = tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x32x!tile.ptr<f16>
// The dot reads this iteration's slot...
// CHECK-NEXT: %[[A:.*]] = kgpu.local_load %[[RA]][%[[SLOT]]]
// CHECK-NEXT: %[[B:.*]] = kgpu.local_load %[[RB]][%[[SLOT]]]
// CHECK-NEXT: %[[D:.*]] = tile.dot %[[A]], %[[B]]
// ...and the loads land in the other, behind the iteration's one barrier.
// CHECK-NEXT: %[[OTHER:.*]] = arith.subi %c1_i32, %[[SLOT]]
// CHECK-NEXT: kgpu.local_store %[[NA]], %[[RA]][%[[OTHER]]] unsynchronized
// CHECK-NEXT: kgpu.local_store %[[NB]], %[[RB]][%[[OTHER]]] unsynchronized
// CHECK-NEXT: kgpu.barrier
// CHECK-NEXT: scf.yield %[[D]], %[[NEXTP]], %[[OTHER]]
// CHECK-NOT: kgpu.barrier
// CHECK: tile.store
// One stage: nothing changes.
// ONE-LABEL: tile.func @carried_pointers
// ONE-NOT: kgpu.local_alloc
// ONE: scf.for
// ONE: tile.load
// ONE: tile.load
// ONE: tile.dot
// NVIDIA GPUs copy asynchronously instead (kgpu-pipeline-loops).
// NV-LABEL: tile.func @carried_pointers
// NV-NOT: kgpu.local_alloc
// NV: scf.for
// NV: tile.load
// NV: tile.load
// NV: tile.dot
// Lowered: one barrier before the loop and one in it; the unsynchronized
// stores and the dot reading its slot add none.
// LLVM-LABEL: llvm.func @carried_pointers
// LLVM: rocdl.s.barrier
// LLVM-NOT: rocdl.s.barrier
// LLVM: scf.for
// LLVM: rocdl.s.barrier
// LLVM-NOT: rocdl.s.barrier
// LLVM: scf.yield %{{.*}}, %{{.*}}, %{{.*}} : !llvm.struct
// LLVM-NOT: rocdl.s.barrier
// LLVM: llvm.return
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

// -----

// A's two 32 KB slots would not fit the LDS beside B's: A stays a load the
// dot stages, B alone is prefetched.
// CHECK-LABEL: tile.func @over_budget
// CHECK: %[[RB:.*]] = kgpu.local_alloc : tensor<2x64x32xf16
// CHECK-NOT: kgpu.local_alloc
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[SLOT:.*]] = %c0_i32)
// CHECK: %[[NB:.*]] = tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32x!tile.ptr<f16>
// CHECK: %[[A:.*]] = tile.load %{{.*}} : tensor<256x64x!tile.ptr<f16>
// CHECK: %[[B:.*]] = kgpu.local_load %[[RB]][%[[SLOT]]]
// CHECK: tile.dot %[[A]], %[[B]]
// CHECK: kgpu.local_store %[[NB]], %[[RB]][%{{.*}}] unsynchronized
// CHECK-NEXT: kgpu.barrier
tile.func @over_budget(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<256x32xf32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %r256 = tile.range 0, 256 : tensor<256xi32>
  %arows = tile.expand_dims %r256 {axis = 1 : i32} : tensor<256xi32> -> tensor<256x1xi32>
  %ks = tile.splat %k : i32 -> tensor<256x1xi32>
  %arow = arith.muli %arows, %ks : tensor<256x1xi32>
  %acols = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %arowb = tile.broadcast %arow : tensor<256x1xi32> -> tensor<256x64xi32>
  %acolb = tile.broadcast %acols : tensor<1x64xi32> -> tensor<256x64xi32>
  %aoff = arith.addi %arowb, %acolb : tensor<256x64xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<256x64x!tile.ptr<f16>>
  %ap = tile.addptr %as, %aoff : tensor<256x64x!tile.ptr<f16>>, tensor<256x64xi32>
  %brow = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %c32s = arith.constant dense<32> : tensor<64x1xi32>
  %brows = arith.muli %brow, %c32s : tensor<64x1xi32>
  %bcols = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %browb = tile.broadcast %brows : tensor<64x1xi32> -> tensor<64x32xi32>
  %bcolb = tile.broadcast %bcols : tensor<1x32xi32> -> tensor<64x32xi32>
  %boff = arith.addi %browb, %bcolb : tensor<64x32xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %acc = scf.for %i = %c0 to %k step %c64 iter_args(%sum = %zero) -> (tensor<256x32xf32>) : i32 {
    %ai = tile.splat %i : i32 -> tensor<256x64xi32>
    %apk = tile.addptr %ap, %ai : tensor<256x64x!tile.ptr<f16>>, tensor<256x64xi32>
    %av = tile.load %apk : tensor<256x64x!tile.ptr<f16>>
    %boffk = arith.muli %i, %c32 : i32
    %bk = tile.splat %boffk : i32 -> tensor<64x32xi32>
    %bpk = tile.addptr %bp, %bk : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
    %bv = tile.load %bpk : tensor<64x32x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<256x64xf16> * tensor<64x32xf16> -> tensor<256x32xf32>
    scf.yield %d : tensor<256x32xf32>
  }
  %crow = arith.constant dense<32> : tensor<256x1xi32>
  %crows = arith.muli %arows, %crow : tensor<256x1xi32>
  %crowb = tile.broadcast %crows : tensor<256x1xi32> -> tensor<256x32xi32>
  %ccolb = tile.broadcast %bcols : tensor<1x32xi32> -> tensor<256x32xi32>
  %coff = arith.addi %crowb, %ccolb : tensor<256x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<256x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<256x32x!tile.ptr<f32>>, tensor<256x32xi32>
  tile.store %cp, %acc : tensor<256x32x!tile.ptr<f32>>
  tile.return
}
