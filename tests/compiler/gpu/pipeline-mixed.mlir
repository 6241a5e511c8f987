// One loop with both kinds of copies: A through a descriptor (the copy
// engine, completing on the slot's mbarrier) and B through pointers
// (cp.async, one group an iteration). Each iteration waits for both: the
// barrier's phase, then cp.async.wait_group with the proxy fence (the
// wgmma dot reads through the async proxy) and the program barrier, before
// it reads the slots and refills the one read two iterations ago.
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=4 target=sm_90a" --kgpu-pipeline-loops=num-stages=3 | FileCheck %s
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=4 target=sm_90a" --kgpu-pipeline-loops=num-stages=3 --kgpu-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: tile.func @mixed
// CHECK: %[[RA:.*]] = kgpu.local_alloc : tensor<4x128x64xbf16
// CHECK: %[[RB:.*]] = kgpu.local_alloc : tensor<4x64x128xbf16
// CHECK: %[[BAR:.*]] = kgpu.local_alloc : tensor<4xi64
// CHECK: kgpu.mbarrier_init %[[BAR]]
// Prologue: each slot's A bytes announced (16 KB: B's copies are not the
// copy engine's), A's box started, B's copies committed as one group.
// CHECK: kgpu.mbarrier_expect %[[BAR]][%{{.*}}], 16384 if
// CHECK-NEXT: kgpu.tma_load %arg0[{{.*}}] -> %[[RA]][%{{.*}}], %[[BAR]] if
// CHECK-NEXT: kgpu.async_copy %{{.*}}, %[[RB]][%{{.*}}] if
// CHECK-NEXT: kgpu.async_commit
// CHECK: kgpu.mbarrier_expect %[[BAR]][%{{.*}}], 16384 if
// CHECK: kgpu.async_commit
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[READ:.*]] = %{{.*}}, %[[WRITE:.*]] = %{{.*}}, %[[PHASE:.*]] = %{{.*}})
// CHECK-NEXT: kgpu.mbarrier_wait %[[BAR]][%[[READ]]], %[[PHASE]]
// CHECK-NEXT: kgpu.async_wait 1{{$}}
// CHECK-NEXT: %[[A:.*]] = kgpu.local_load %[[RA]][%[[READ]]]
// CHECK-NEXT: %[[B:.*]] = kgpu.local_load %[[RB]][%[[READ]]]
// CHECK: kgpu.mbarrier_expect %[[BAR]][%[[WRITE]]], 16384 if
// CHECK-NEXT: kgpu.tma_load %arg0[{{.*}}] -> %[[RA]][%[[WRITE]]], %[[BAR]] if
// CHECK: kgpu.async_copy %{{.*}}, %[[RB]][%[[WRITE]]] if
// CHECK-NEXT: kgpu.async_commit
// CHECK: %[[D:.*]] = tile.dot %[[A]], %[[B]], %{{.*}} {kgpu.wgmma}
// CHECK-NEXT: kgpu.warpgroup_wait %[[D]], 1
// CHECK: scf.yield
// CHECK: kgpu.warpgroup_wait %{{.*}}, 0
// CHECK-NEXT: kgpu.async_wait 0
// CHECK-NEXT: kgpu.mbarrier_inval %[[BAR]]

// LLVM-LABEL: llvm.func @mixed
// LLVM: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// LLVM: "cp.async.cg.shared.global [$0], [$1], 16, $2;"
// LLVM: "cp.async.commit_group;"
// LLVM: mbarrier.try_wait.parity.shared::cta.b64
// LLVM: "cp.async.wait_group 1;"
// LLVM-NOT: fence.proxy.async
// LLVM: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// LLVM: "wgmma.wait_group.sync.aligned 1;"
// LLVM: "cp.async.wait_group 0;"
tile.func @mixed(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                 %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %kk: i32 {tile.divisibility = 16 : i32}) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %r128 = tile.range 0, 128 : tensor<128xi32>
  %brow = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %n = arith.constant dense<128> : tensor<64x1xi32>
  %brows = arith.muli %brow, %n : tensor<64x1xi32>
  %bcols = tile.expand_dims %r128 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  %browb = tile.broadcast %brows : tensor<64x1xi32> -> tensor<64x128xi32>
  %bcolb = tile.broadcast %bcols : tensor<1x128xi32> -> tensor<64x128xi32>
  %boff = arith.addi %browb, %bcolb : tensor<64x128xi32>
  %bs = tile.splat %b : !tile.ptr<bf16> -> tensor<64x128x!tile.ptr<bf16>>
  %bp = tile.addptr %bs, %boff : tensor<64x128x!tile.ptr<bf16>>, tensor<64x128xi32>
  %c128 = arith.constant 128 : i32
  %acc = scf.for %i = %c0 to %kk step %c64 iter_args(%sum = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %a[%c0, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %koff = arith.muli %i, %c128 : i32
    %ks = tile.splat %koff : i32 -> tensor<64x128xi32>
    %bpk = tile.addptr %bp, %ks : tensor<64x128x!tile.ptr<bf16>>, tensor<64x128xi32>
    %y = tile.load %bpk : tensor<64x128x!tile.ptr<bf16>>
    %d = tile.dot %x, %y, %sum : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %cs, %acc : tensor<128x128x!tile.ptr<f32>>
  tile.return
}
