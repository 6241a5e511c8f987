// Copy-engine stores in PTX. A 128x256 f16 tile (128-byte column blocks of
// 64 elements) stored after a K loop whose rings take 192 KB: the rest of
// shared memory stages 128 columns at a time, so the tile goes out in two
// rounds of "wait until the previous copies have read the staging buffer,
// barrier, every thread writes its elements (32 pairs of the wgmma
// accumulator's 64 in each round), proxy fence, barrier, thread 0
// issues two boxes and commits them"; before returning every thread waits
// for the reads of shared memory to finish.
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=8 target=sm_90a" --kgpu-pipeline-loops=num-stages=3 --kgpu-to-llvm | FileCheck %s

// CHECK: kgpu.shared_memory = 230400 : i32
// CHECK-LABEL: llvm.func @epilogue_by_the_copy_engine
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK: wgmma.mma_async
// CHECK: @p cp.async.bulk.wait_group.read 0;
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-32: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xf16>, !llvm.ptr<3>
// CHECK-NOT: llvm.store
// CHECK: "fence.proxy.async.shared::cta;"
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-2: @p cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {$2, $3}], [$4];
// CHECK-NEXT: @p cp.async.bulk.commit_group;
// CHECK: @p cp.async.bulk.wait_group.read 0;
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-32: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xf16>, !llvm.ptr<3>
// CHECK-NOT: llvm.store
// CHECK: "fence.proxy.async.shared::cta;"
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-2: @p cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {$2, $3}], [$4];
// CHECK-NEXT: @p cp.async.bulk.commit_group;
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: "cp.async.bulk.wait_group.read 0;"
// CHECK-NEXT: llvm.return
tile.func @epilogue_by_the_copy_engine(
    %amap: !tile.tensormap, %a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
    %bmap: !tile.tensormap, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %n: i64, %kb: i64, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
    %cmap: !tile.tensormap, %c: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %mc: i64, %nc: i64, %sc: i64 {tile.divisibility = 16 : i32}, %innerC: i64,
    %kk: i32, %row: i32, %column: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %acc = scf.for %i = %c0 to %kk step %c64 iter_args(%acc = %zero) -> (tensor<128x256xf32>) : i32 {
    %x = tile.descriptor_load %a[%row, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<f16> -> tensor<128x64xf16>
    %y = tile.descriptor_load %b[%column, %i] sizes[%n, %kb] strides[%sb, %one] map %bmap : !tile.ptr<f16> -> tensor<256x64xf16>
    %yt = tile.trans %y {order = array<i32: 1, 0>} : tensor<256x64xf16> -> tensor<64x256xf16>
    %d = tile.dot %x, %yt, %acc : tensor<128x64xf16> * tensor<64x256xf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %h = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xf16>
  tile.descriptor_store %c[%row, %column] sizes[%mc, %nc] strides[%sc, %one] map %cmap, %h : !tile.ptr<f16>, tensor<128x256xf16>
  tile.return
}
