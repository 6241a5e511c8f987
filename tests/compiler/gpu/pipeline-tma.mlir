// Descriptor loads kept for the copy engine become copy-engine copies into
// rings: one barrier per slot, set up before the prologue; one thread
// announces each slot's bytes and starts its boxes num-stages - 1
// iterations ahead; every iteration waits for its slot's barrier phase
// (the parity flips each time the read slot wraps), then a program barrier
// before the slot read two iterations ago is refilled (the wgmma dot stays
// in flight, so the rings have num-stages + 1 slots).
// RUN: kiln-opt %S/lower-descriptors.mlir --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=4 target=sm_90a" --kgpu-pipeline-loops=num-stages=3 --split-input-file | FileCheck %s

// CHECK-LABEL: tile.func @k_loop
// CHECK: %[[RA:.*]] = kgpu.local_alloc : tensor<4x128x64xbf16, #kgpu.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>>
// B, stored [N][K] and read transposed, keeps its rows K-major: order [0, 1].
// CHECK: %[[RB:.*]] = kgpu.local_alloc : tensor<4x64x128xbf16, #kgpu.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [0, 1]}>>
// CHECK: %[[BAR:.*]] = kgpu.local_alloc : tensor<4xi64, #kgpu.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>>
// CHECK: kgpu.mbarrier_init %[[BAR]]
// Prologue: slots 0 and 1, 32 KB each (A's 16 KB and B's 16 KB).
// CHECK: kgpu.mbarrier_expect %[[BAR]][%{{.*}}], 32768 if
// CHECK: kgpu.tma_load %arg0[%{{.*}}, %{{.*}}] -> %[[RA]][%{{.*}}], %[[BAR]] if
// CHECK: kgpu.tma_load %arg6[%{{.*}}, %{{.*}}] -> %[[RB]][%{{.*}}], %[[BAR]] if
// CHECK: kgpu.mbarrier_expect %[[BAR]][%{{.*}}], 32768 if
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[READ:.*]] = %{{.*}}, %[[WRITE:.*]] = %{{.*}}, %[[PHASE:.*]] = %{{.*}})
// CHECK-NEXT: kgpu.mbarrier_wait %[[BAR]][%[[READ]]], %[[PHASE]]
// CHECK-NEXT: kgpu.barrier
// CHECK-NEXT: %[[A:.*]] = kgpu.local_load %[[RA]][%[[READ]]]
// CHECK-NEXT: %[[B:.*]] = kgpu.local_load %[[RB]][%[[READ]]]
// CHECK: kgpu.mbarrier_expect %[[BAR]][%[[WRITE]]], 32768 if
// CHECK: kgpu.tma_load %arg0[{{.*}}] -> %[[RA]][%[[WRITE]]], %[[BAR]] if
// CHECK: kgpu.tma_load %arg6[{{.*}}] -> %[[RB]][%[[WRITE]]], %[[BAR]] if
// CHECK-NOT: kgpu.async
// CHECK: arith.xori %[[PHASE]]
// CHECK: %[[D:.*]] = tile.dot %[[A]], %[[B]]
// CHECK: kgpu.warpgroup_wait %[[D]], 1
// CHECK: scf.yield
// CHECK: kgpu.warpgroup_wait %{{.*}}, 0
// CHECK: kgpu.mbarrier_inval %[[BAR]]
// CHECK-NOT: kgpu.async_wait
