// Software pipelining of tensor-core dot operands: loads become cp.async
// copies into rings of num-stages slots, issued num-stages - 1 iterations
// ahead, with the address computation (here a loop-carried pointer) cloned
// to run ahead.
// RUN: kiln-opt %s --kgpu-assign-layouts --kgpu-pipeline-loops=num-stages=3 --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kgpu-assign-layouts --kgpu-pipeline-loops=num-stages=1 --split-input-file | FileCheck %s --check-prefix=ONE
// RUN: kiln-opt %s --kgpu-assign-layouts --kgpu-pipeline-loops=num-stages=2 --split-input-file | FileCheck %s --check-prefix=TWO

// CHECK-LABEL: tile.func @carried_pointers
// Two rings of three 32x16 / 16x32 slots, swizzled along their rows.
// CHECK: %[[RA:.*]] = kgpu.local_alloc : tensor<3x32x16xf16, #kgpu.shared<{vec = 8, perPhase = 4, maxPhase = 2, order = [1, 0]}>>
// CHECK: %[[RB:.*]] = kgpu.local_alloc : tensor<3x16x32xf16, #kgpu.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
// Prologue: iterations 0 and 1 into slots 0 and 1, each its own group.
// CHECK: kgpu.async_copy %{{.*}}, %[[RA]][%[[S0:.*]]] if
// CHECK: kgpu.async_copy %{{.*}}, %[[RB]][%[[S0]]] if
// CHECK-NEXT: kgpu.async_commit
// CHECK: kgpu.async_copy %{{.*}}, %[[RA]][%{{.*}}] if
// CHECK: kgpu.async_commit
// Before the loop slot 0 has landed and its K step is read into mma.sync's
// registers (mma-fragments.mlir has the loop of several K steps).
// CHECK: kgpu.async_wait 1
// CHECK-NEXT: %[[A0:.*]] = kgpu.local_load %[[RA]][%{{.*}}] offsets [0, 0] : {{.*}} -> tensor<32x16xf16, #mma_operand>
// CHECK-NEXT: %[[B0:.*]] = kgpu.local_load %[[RB]][%{{.*}}] offsets [0, 0] : {{.*}} -> tensor<16x32xf16, #mma_operand1>
// The loop carries the pointer two iterations ahead, both slot numbers and
// those fragments.
// CHECK: scf.for %[[K:.*]] = {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[AHEAD:.*]] = %{{.*}}, %[[READ:.*]] = %{{.*}}, %[[WRITE:.*]] = %{{.*}}, %[[A:.*]] = %[[A0]], %[[B:.*]] = %[[B0]])
// CHECK-NOT: kgpu.async_wait
// CHECK-NOT: tile.load
// One K step: the copies first, then the wait for the next slot, whose
// fragments are read before the dot.
// CHECK: kgpu.async_copy %{{.*}}, %[[RA]][%[[WRITE]]] if
// CHECK: kgpu.async_copy %{{.*}}, %[[RB]][%[[WRITE]]] if
// CHECK-NEXT: kgpu.async_commit
// CHECK-NEXT: kgpu.async_wait 1
// CHECK-NEXT: %[[NA:.*]] = kgpu.local_load %[[RA]][%[[NEXT:.*]]] offsets [0, 0]
// CHECK-NEXT: %[[NB:.*]] = kgpu.local_load %[[RB]][%[[NEXT]]] offsets [0, 0]
// CHECK-NEXT: %[[D:.*]] = tile.dot %[[A]], %[[B]]
// CHECK: scf.yield %[[D]], %{{.*}}, %{{.*}}, %[[NEXT]], %{{.*}}, %[[NA]], %[[NB]]
// CHECK: kgpu.async_wait 0
// With two stages too the copies come before the wait (which counts them).
// TWO-LABEL: tile.func @carried_pointers
// TWO: scf.for
// TWO-NOT: kgpu.async_wait
// TWO: kgpu.async_commit
// TWO-NEXT: kgpu.async_wait 0
// TWO-NEXT: kgpu.local_load
// TWO-NEXT: kgpu.local_load
// TWO-NEXT: tile.dot
// TWO: scf.yield
// ONE-LABEL: tile.func @carried_pointers
// ONE-NOT: kgpu.async_copy
// ONE: tile.load
// ONE: tile.load
// ONE: tile.dot
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

// A load whose masked-off elements are not zero, and one whose address
// depends on a loaded value, stay loads.
// CHECK-LABEL: tile.func @not_pipelined
// CHECK-NOT: kgpu.async_copy
// CHECK: scf.for
// CHECK: tile.load
// CHECK: tile.load
// CHECK: tile.dot
tile.func @not_pipelined(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c16 = arith.constant 16 : i32
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %one = arith.constant dense<1.0> : tensor<16x16xf16>
  %r = tile.range 0, 16 : tensor<16xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %sixteen = arith.constant dense<16> : tensor<16x1xi32>
  %rowoff = arith.muli %rows, %sixteen : tensor<16x1xi32>
  %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %rb = tile.broadcast %rowoff : tensor<16x1xi32> -> tensor<16x16xi32>
  %cb = tile.broadcast %cols : tensor<1x16xi32> -> tensor<16x16xi32>
  %off = arith.addi %rb, %cb : tensor<16x16xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<16x16x!tile.ptr<f16>>
  %ap = tile.addptr %as, %off : tensor<16x16x!tile.ptr<f16>>, tensor<16x16xi32>
  %ks = tile.splat %k : i32 -> tensor<16x16xi32>
  %mask = arith.cmpi slt, %off, %ks : tensor<16x16xi32>
  %acc, %shift = scf.for %i = %c0 to %k step %c16 iter_args(%sum = %zero, %s = %c0) -> (tensor<16x16xf32>, i32) : i32 {
    %av = tile.load %ap, %mask, %one : tensor<16x16x!tile.ptr<f16>>
    %ss = tile.splat %s : i32 -> tensor<16x16xi32>
    %bp = tile.addptr %ap, %ss : tensor<16x16x!tile.ptr<f16>>, tensor<16x16xi32>
    %bv = tile.load %bp : tensor<16x16x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
    %first = tile.load %a : !tile.ptr<f16>
    %firsti = arith.fptosi %first : f16 to i32
    scf.yield %d, %firsti : tensor<16x16xf32>, i32
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<16x16x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %off : tensor<16x16x!tile.ptr<f32>>, tensor<16x16xi32>
  tile.store %cp, %acc : tensor<16x16x!tile.ptr<f32>>
  tile.return
}

// -----

// A wgmma dot (sm_90a, 64x64 tile, A and B K-contiguous) fed by cp.async
// rings only and accumulating into a carried value stays in flight one
// iteration: warpgroup_wait 1 follows it in the loop and warpgroup_wait 0
// follows the loop. The dot comes right after the copies it reads; the
// previous dot's slot is refilled only after its release (the wait, then a
// barrier for every warp's), so the rings keep num-stages slots.
// CHECK-LABEL: tile.func @wgmma_in_flight
// CHECK: %[[RA:.*]] = kgpu.local_alloc : tensor<3x64x64xf16
// CHECK: %[[RB:.*]] = kgpu.local_alloc : tensor<3x64x64xf16
// CHECK: scf.for {{.*}} iter_args(%[[SUM:[^ ]*]] = {{.*}}, %[[AHEAD:[^ ]*]] = {{.*}}, %[[READ:[^ ]*]] = {{.*}}, %[[WRITE:[^ ]*]] = {{.*}})
// CHECK-NEXT: kgpu.async_wait 1
// CHECK: %[[D:.*]] = tile.dot %{{.*}}, %{{.*}}, %[[SUM]]
// CHECK-NEXT: %[[W:.*]] = kgpu.warpgroup_wait %[[D]], 1
// CHECK-NEXT: kgpu.barrier
// CHECK: kgpu.async_copy %{{.*}}, %[[RA]][%[[WRITE]]]
// CHECK: kgpu.async_copy %{{.*}}, %[[RB]][%[[WRITE]]]
// CHECK-NEXT: kgpu.async_commit
// CHECK: scf.yield %[[W]],
// CHECK-NEXT: }
// CHECK-NEXT: %[[FINAL:.*]] = kgpu.warpgroup_wait %{{.*}}, 0
// CHECK-NEXT: kgpu.async_wait 0
// CHECK: %[[STORED:.*]] = kgpu.convert_layout %[[FINAL]]
// CHECK-NEXT: tile.store %{{.*}}, %[[STORED]]
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32, kgpu.target = "sm_90a"} {
tile.func @wgmma_in_flight(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %r = tile.range 0, 64 : tensor<64xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ks = tile.splat %k : i32 -> tensor<64x1xi32>
  %rowoff = arith.muli %rows, %ks : tensor<64x1xi32>
  %cols = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb = tile.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %off = arith.addi %rb, %cb : tensor<64x64xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %a0 = tile.addptr %as, %off : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %kc = tile.splat %k : i32 -> tensor<1x64xi32>
  %coloff = arith.muli %cols, %kc : tensor<1x64xi32>
  %bcb = tile.broadcast %coloff : tensor<1x64xi32> -> tensor<64x64xi32>
  %brb = tile.broadcast %rows : tensor<64x1xi32> -> tensor<64x64xi32>
  %boff = arith.addi %brb, %bcb : tensor<64x64xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<64x64x!tile.ptr<f16>>
  %b0 = tile.addptr %bs, %boff : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
  %step = arith.constant dense<64> : tensor<64x64xi32>
  %acc, %last = scf.for %i = %c0 to %k step %c64 iter_args(%sum = %zero, %p = %a0) -> (tensor<64x64xf32>, tensor<64x64x!tile.ptr<f16>>) : i32 {
    %av = tile.load %p : tensor<64x64x!tile.ptr<f16>>
    %ik = tile.splat %i : i32 -> tensor<64x64xi32>
    %bp = tile.addptr %b0, %ik : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    %bv = tile.load %bp : tensor<64x64x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<64x64xf16> * tensor<64x64xf16> -> tensor<64x64xf32>
    %next = tile.addptr %p, %step : tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>
    scf.yield %d, %next : tensor<64x64xf32>, tensor<64x64x!tile.ptr<f16>>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %off : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %cp, %acc : tensor<64x64x!tile.ptr<f32>>
  tile.return
}
}

// -----

// A load two dots read (one's A, the other's B, as attention's backward
// reads its queries' rows): one ring, whose slot both dots read.
// CHECK-LABEL: tile.func @one_load_two_dots
// CHECK: %[[RING:.*]] = kgpu.local_alloc : tensor<3x32x32xf16
// CHECK-NOT: kgpu.local_alloc
// CHECK: scf.for
// CHECK-NOT: tile.load
// CHECK: %[[X:.*]] = kgpu.local_load %[[RING]]
// CHECK: tile.dot %[[X]], %{{.*}}, %{{.*}}
// CHECK: tile.dot %{{.*}}, %[[X]], %{{.*}}
// CHECK: kgpu.async_copy %{{.*}}, %[[RING]]
tile.func @one_load_two_dots(%x: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %w = arith.constant dense<1.0> : tensor<32x32xf16>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %rows = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %c32s = arith.constant dense<32> : tensor<32x1xi32>
  %rowoff = arith.muli %rows, %c32s : tensor<32x1xi32>
  %cols = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %rowb = tile.broadcast %rowoff : tensor<32x1xi32> -> tensor<32x32xi32>
  %colb = tile.broadcast %cols : tensor<1x32xi32> -> tensor<32x32xi32>
  %off = arith.addi %rowb, %colb : tensor<32x32xi32>
  %xs = tile.splat %x : !tile.ptr<f16> -> tensor<32x32x!tile.ptr<f16>>
  %xp = tile.addptr %xs, %off : tensor<32x32x!tile.ptr<f16>>, tensor<32x32xi32>
  %r1, %r2 = scf.for %i = %c0 to %k step %c32 iter_args(%s1 = %zero, %s2 = %zero) -> (tensor<32x32xf32>, tensor<32x32xf32>) : i32 {
    %step = arith.muli %i, %c32 : i32
    %stepb = tile.splat %step : i32 -> tensor<32x32xi32>
    %xpk = tile.addptr %xp, %stepb : tensor<32x32x!tile.ptr<f16>>, tensor<32x32xi32>
    %xv = tile.load %xpk : tensor<32x32x!tile.ptr<f16>>
    %d1 = tile.dot %xv, %w, %s1 : tensor<32x32xf16> * tensor<32x32xf16> -> tensor<32x32xf32>
    %d2 = tile.dot %w, %xv, %s2 : tensor<32x32xf16> * tensor<32x32xf16> -> tensor<32x32xf32>
    scf.yield %d1, %d2 : tensor<32x32xf32>, tensor<32x32xf32>
  }
  %sum = arith.addf %r1, %r2 : tensor<32x32xf32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %off : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %sum : tensor<32x32x!tile.ptr<f32>>
  tile.return
}
