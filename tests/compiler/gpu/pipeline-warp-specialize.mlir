// Warp specialization (warp-specialize): a top-level loop fed by the copy
// engine into a wgmma dot gets a producer warp. Full and empty barriers
// per slot are set up at the top (empty: one arrival per consumer warp);
// the producer region computes the copies' coordinates again from the
// kernel's arguments (the program id here), waits for each slot's empty
// barrier (parity 1 first) and fills it; the consumers' loop only waits for
// the full barrier, multiplies, and hands the previous slot back after
// warpgroup_wait 1 -- no program barrier, no prologue (scalar loads the
// coordinates need are issued again, where nothing wrote memory before
// them). A loop nested in another is pipelined as without the option. Lowered: the producer is the
// warpgroup past the consumers, whose first thread runs the region, then it
// exits (one consumer warpgroup keeps every register it had: no
// setmaxnreg, which tests/unit/ops_matmul_test.cpp checks with two); consumer barriers count
// only the consumers' threads (tests/compiler/llvm/producer-barriers.mlir);
// the kernel is launched with one more warpgroup. The epilogue's conversion
// of the accumulator to the store's layout synchronizes the consumers only.
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=4 target=sm_90a" --kgpu-pipeline-loops="num-stages=3 warp-specialize=true" --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=4 target=sm_90a" --kgpu-pipeline-loops="num-stages=3 warp-specialize=true" --kgpu-to-llvm --split-input-file | FileCheck %s --check-prefix=LLVM

// CHECK: module attributes {kgpu.num_warps = 4 : i32, kgpu.producer_warps = 4 : i32
// CHECK-LABEL: tile.func @k_loop
// CHECK: %[[RA:.*]] = kgpu.local_alloc : tensor<4x128x64xbf16
// CHECK: %[[RB:.*]] = kgpu.local_alloc : tensor<4x64x128xbf16
// CHECK: %[[FULL:.*]] = kgpu.local_alloc : tensor<4xi64
// CHECK-NEXT: kgpu.mbarrier_init %[[FULL]] :
// CHECK-NEXT: %[[EMPTY:.*]] = kgpu.local_alloc : tensor<4xi64
// CHECK-NEXT: kgpu.mbarrier_init %[[EMPTY]] {count = 4 : i32}
// CHECK-NEXT: kgpu.producer {
// CHECK: %[[PID:.*]] = tile.program_id x : i32
// CHECK: %[[ROW:.*]] = arith.muli %[[PID]]
// CHECK: scf.for %[[K:.*]] = {{.*}} iter_args(%[[SLOT:.*]] = %{{.*}}, %[[PHASE:.*]] = %{{.*}})
// CHECK-NEXT: kgpu.mbarrier_wait %[[EMPTY]][%[[SLOT]]], %[[PHASE]]
// CHECK: kgpu.mbarrier_expect %[[FULL]][%[[SLOT]]], 32768 if %{{.*}} {producer}
// CHECK-NEXT: kgpu.tma_load %arg0[%[[ROW]], %[[K]]] -> %[[RA]][%[[SLOT]]], %[[FULL]] if %{{.*}} {producer}
// CHECK-NEXT: kgpu.tma_load %arg6[%{{.*}}, %[[K]]] -> %[[RB]][%[[SLOT]]], %[[FULL]] if %{{.*}} {producer}
// CHECK: scf.yield
// CHECK: }
// CHECK-NOT: kgpu.tma_load
// CHECK-NOT: kgpu.barrier
// CHECK: scf.for %[[I:.*]] = %[[LB:.*]] to {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[READ:.*]] = %{{.*}}, %[[FPHASE:.*]] = %{{.*}})
// CHECK-NEXT: kgpu.mbarrier_wait %[[FULL]][%[[READ]]], %[[FPHASE]]
// CHECK-NEXT: %[[A:.*]] = kgpu.local_load %[[RA]][%[[READ]]]
// CHECK-NEXT: %[[B:.*]] = kgpu.local_load %[[RB]][%[[READ]]]
// CHECK-NOT: kgpu.barrier
// CHECK: %[[D:.*]] = tile.dot %[[A]], %[[B]]
// CHECK-NEXT: %[[PARTIAL:.*]] = kgpu.warpgroup_wait %[[D]], 1
// CHECK: %[[NOTFIRST:.*]] = arith.cmpi ne, %[[I]], %[[LB]]
// CHECK-NEXT: kgpu.mbarrier_arrive %[[EMPTY]][%{{.*}}] if %[[NOTFIRST]]
// CHECK: scf.yield %[[PARTIAL]],
// CHECK: kgpu.warpgroup_wait %{{.*}}, 0
// CHECK-NOT: kgpu.mbarrier_inval

// LLVM-LABEL: llvm.func @k_loop
// LLVM-SAME: nvvm.maxntid = array<i32: 256, 1, 1>
// Set-up: 4 full barriers of one arrival, 4 empty ones of four, then every thread's barrier.
// LLVM-COUNT-4: @p mbarrier.init.shared::cta.b64 [$1], 1; }"
// LLVM-COUNT-4: @p mbarrier.init.shared::cta.b64 [$1], 4; }"
// LLVM: "fence.mbarrier_init.release.cluster;"
// LLVM-NEXT: nvvm.barrier0
// LLVM: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// LLVM-NEXT: %[[CONSUMERS:.*]] = llvm.mlir.constant(128 : i32)
// LLVM-NEXT: %[[PRODUCER:.*]] = llvm.icmp "uge" %[[TID]], %[[CONSUMERS]]
// LLVM-NEXT: scf.if %[[PRODUCER]] {
// LLVM-NOT: setmaxnreg
// LLVM-NEXT: %[[ISSUER:.*]] = llvm.icmp "eq" %[[TID]], %[[CONSUMERS]]
// LLVM-NEXT: scf.if %[[ISSUER]] {
// LLVM: mbarrier.try_wait.parity
// LLVM: mbarrier.arrive.expect_tx.shared::cta.b64
// LLVM: cp.async.bulk.tensor.2d
// LLVM: "exit;"
// LLVM: mbarrier.try_wait.parity
// LLVM-NOT: nvvm.barrier
// LLVM: wgmma.mma_async
// LLVM: "wgmma.wait_group.sync.aligned 1;"
// LLVM: @p mbarrier.arrive.shared::cta.b64 _, [$1]; }"
// LLVM: "wgmma.wait_group.sync.aligned 0;"
// LLVM-NOT: nvvm.barrier0
// LLVM: %[[COUNT:.*]] = llvm.mlir.constant(128 : i32) : i32
// LLVM-NEXT: %[[ID:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM-NEXT: nvvm.barrier id = %[[ID]] number_of_threads = %[[COUNT]]
// LLVM-NOT: nvvm.barrier0
// LLVM: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// LLVM-NOT: nvvm.barrier0
// LLVM: llvm.return
tile.func @k_loop(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                  %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i64, %kb: i64, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                  %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %kk: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %pid = tile.program_id x : i32
  %row = arith.muli %pid, %c128 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %i = %c0 to %kk step %c64 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %a[%row, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %y = tile.descriptor_load %b[%c0, %i] sizes[%n, %kb] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %yt = tile.trans %y {order = array<i32: 1, 0>} : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %x, %yt, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %r = tile.range 0, 128 : tensor<128xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %rowsb = tile.broadcast %rows : tensor<128x1xi32> -> tensor<128x128xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %rowsb : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xi32>
  tile.store %cp, %acc : tensor<128x128x!tile.ptr<f32>>
  tile.return
}

// -----

// A loop inside another (one K loop per outer iteration) is pipelined as
// without the option: a prologue, a program barrier each iteration, no
// producer.
// CHECK-NOT: kgpu.producer_warps
// CHECK-LABEL: tile.func @nested
// CHECK-NOT: kgpu.producer
// CHECK: scf.for
// CHECK: kgpu.tma_load
// CHECK: scf.for
// CHECK: kgpu.mbarrier_wait
// CHECK-NEXT: kgpu.barrier
// LLVM-LABEL: llvm.func @nested
// LLVM-SAME: nvvm.maxntid = array<i32: 128, 1, 1>
// LLVM-NOT: "exit;"
tile.func @nested(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                  %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i64, %kb: i64, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                  %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %kk: i32, %tiles: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %r = tile.range 0, 128 : tensor<128xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %rowsb = tile.broadcast %rows : tensor<128x1xi32> -> tensor<128x128xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %rowsb : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xi32>
  scf.for %t = %c0 to %tiles step %c1 : i32 {
    %row = arith.muli %t, %c128 : i32
    %acc = scf.for %i = %c0 to %kk step %c64 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
      %x = tile.descriptor_load %a[%row, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
      %y = tile.descriptor_load %b[%c0, %i] sizes[%n, %kb] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<128x64xbf16>
      %yt = tile.trans %y {order = array<i32: 1, 0>} : tensor<128x64xbf16> -> tensor<64x128xbf16>
      %d = tile.dot %x, %yt, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
      scf.yield %d : tensor<128x128xf32>
    }
    tile.store %cp, %acc : tensor<128x128x!tile.ptr<f32>>
  }
  tile.return
}

// -----

// Coordinates that scalar loads before the loop feed (a packed batch's
// sequence start and length, read from memory nothing has written yet):
// the producer issues the loads again. (The loop's bound comes from one.)
// CHECK-LABEL: tile.func @row_from_memory
// CHECK: kgpu.producer {
// CHECK: %[[PID:.*]] = tile.program_id x : i32
// CHECK: %[[AT:.*]] = tile.addptr %{{.*}}, %[[PID]]
// CHECK: %[[START:.*]] = tile.load %[[AT]] : !tile.ptr<i32>
// CHECK: %[[LENGTH:.*]] = tile.load %{{.*}} : !tile.ptr<i32>
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %[[LENGTH]]
// CHECK: kgpu.tma_load %arg0[%[[START]], %[[K]]]
// CHECK: scf.for
// CHECK-NOT: kgpu.tma_load
// CHECK: tile.dot
// LLVM-LABEL: llvm.func @row_from_memory
// LLVM: ld.global
// LLVM: cp.async.bulk.tensor.2d
// LLVM: "exit;"
tile.func @row_from_memory(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                  %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i64, %kb: i64, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                  %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %starts: !tile.ptr<i32>, %lengths: !tile.ptr<i32>) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %pid = tile.program_id x : i32
  %at = tile.addptr %starts, %pid : !tile.ptr<i32>, i32
  %row = tile.load %at : !tile.ptr<i32>
  %lat = tile.addptr %lengths, %pid : !tile.ptr<i32>, i32
  %kk = tile.load %lat : !tile.ptr<i32>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %i = %c0 to %kk step %c64 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %a[%row, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %y = tile.descriptor_load %b[%c0, %i] sizes[%n, %kb] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %yt = tile.trans %y {order = array<i32: 1, 0>} : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %x, %yt, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %r = tile.range 0, 128 : tensor<128xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %rowsb = tile.broadcast %rows : tensor<128x1xi32> -> tensor<128x128xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %rowsb : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xi32>
  tile.store %cp, %acc : tensor<128x128x!tile.ptr<f32>>
  tile.return
}

// -----

// A store before the scalar load: the producer's load could read another
// value than the consumers'; no producer.
// CHECK-LABEL: tile.func @row_after_a_store
// CHECK-NOT: kgpu.producer
// CHECK: kgpu.tma_load
// CHECK: kgpu.barrier
// LLVM-LABEL: llvm.func @row_after_a_store
// LLVM-NOT: "exit;"
tile.func @row_after_a_store(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                  %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i64, %kb: i64, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                  %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %starts: !tile.ptr<i32>, %kk: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %pid = tile.program_id x : i32
  %at = tile.addptr %starts, %pid : !tile.ptr<i32>, i32
  tile.store %at, %c64 : !tile.ptr<i32>
  %row = tile.load %at : !tile.ptr<i32>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %i = %c0 to %kk step %c64 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %a[%row, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %y = tile.descriptor_load %b[%c0, %i] sizes[%n, %kb] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %yt = tile.trans %y {order = array<i32: 1, 0>} : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %x, %yt, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %r = tile.range 0, 128 : tensor<128xi32>
  %rows = tile.expand_dims %r {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %rowsb = tile.broadcast %rows : tensor<128x1xi32> -> tensor<128x128xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %rowsb : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xi32>
  tile.store %cp, %acc : tensor<128x128x!tile.ptr<f32>>
  tile.return
}
