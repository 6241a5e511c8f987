// Clusters (tile.cluster_size = 2): a warp-specialized loop whose copy
// coordinates are the same in every program of the cluster shares those
// copies. B's block here depends only on tile.cluster_id and the loop, so
// its copies are multicast (each program copies half of its rows into both
// programs' slots, the tensor map's box halved); A's rows depend on
// tile.cluster_rank, so each program copies its own. Every slot's "empty"
// barrier counts both programs' consumer warps (2 x 4), which arrive on
// both programs' barriers; the barriers' set-up ends with a barrier of the
// cluster; the consumers hand the last slot back after the loop too, and
// the producer waits for its slots' last hand-backs before it exits. Lowered: the kernel asks for clusters of 2 (.reqnctapercluster),
// the shared copy adds the program's part (rank x 64 rows, 8192 bytes) and
// .multicast::cluster with both programs in its mask, the hand-back goes to
// each program's barrier through mapa; shared memory used after the loop
// does not overlap the barriers. Another function's B block, from
// program_id x, is not shared: no cluster barrier, one program's arrivals.
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=4 target=sm_90a" --kgpu-pipeline-loops="num-stages=3 warp-specialize=true" --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=4 target=sm_90a" --kgpu-pipeline-loops="num-stages=3 warp-specialize=true" --kgpu-to-llvm --split-input-file | FileCheck %s --check-prefix=LLVM
// (ptxas assembles such a kernel: OpsMatmul.ClusteredHopperKernelMulticastsB.)

// CHECK: kgpu.tensor_maps = [{box = array<i32: 128, 64>, parameter = 0 : i32, swizzle = 128 : i32}, {box = array<i32: 64, 64>, parameter = 6 : i32, swizzle = 128 : i32}]
// CHECK-LABEL: tile.func @shared_b
// CHECK: %[[RA:.*]] = kgpu.local_alloc : tensor<4x128x64xbf16
// CHECK: %[[RB:.*]] = kgpu.local_alloc : tensor<4x64x128xbf16
// CHECK: %[[FULL:.*]] = kgpu.local_alloc : tensor<4xi64
// CHECK-NEXT: kgpu.mbarrier_init %[[FULL]] {cluster}
// CHECK-NEXT: %[[EMPTY:.*]] = kgpu.local_alloc : tensor<4xi64
// CHECK-NEXT: kgpu.mbarrier_init %[[EMPTY]] {cluster, count = 8 : i32}
// CHECK-NEXT: kgpu.producer {
// CHECK: %[[FILL:.*]]:2 = scf.for
// CHECK: kgpu.mbarrier_expect %[[FULL]][%{{.*}}], 32768 if %{{.*}} {producer}
// CHECK-NEXT: kgpu.tma_load %arg0[{{.*}}] -> %[[RA]][{{.*}}], %[[FULL]] if %{{.*}} {producer}
// CHECK-NEXT: kgpu.tma_load %arg6[{{.*}}] -> %[[RB]][{{.*}}], %[[FULL]] if %{{.*}} {multicast = 2 : i32, producer}
// CHECK: scf.yield
// CHECK: }
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT: scf.for %{{.*}} = %[[C0]] to %[[C4]] step %[[C1]] iter_args(%[[SLOT:.*]] = %[[FILL]]#0, %[[PHASE:.*]] = %[[FILL]]#1)
// CHECK-NEXT: kgpu.mbarrier_wait %[[EMPTY]][%[[SLOT]]], %[[PHASE]]
// CHECK: %[[LOOP:.*]]:3 = scf.for
// CHECK: kgpu.mbarrier_wait %[[FULL]]
// CHECK: tile.dot
// CHECK: kgpu.mbarrier_arrive %[[EMPTY]][%{{.*}}] if %{{.*}} {cluster = 2 : i32}
// The last slot, after the loop: trips = ceil(kk / 64), slot (trips - 1) mod 4 if trips > 0.
// CHECK: kgpu.warpgroup_wait %[[LOOP]]#0, 0
// CHECK-NEXT: %[[SPAN:.*]] = arith.subi %arg13, %c0_i32
// CHECK: %[[TRIPS:.*]] = arith.divsi %{{.*}}, %c64_i32
// CHECK: %[[RAN:.*]] = arith.cmpi sgt, %[[TRIPS]]
// CHECK: %[[LASTTRIP:.*]] = arith.select %[[RAN]]
// CHECK: %[[LAST:.*]] = arith.remsi %[[LASTTRIP]], %c4_i32
// CHECK-NEXT: kgpu.mbarrier_arrive %[[EMPTY]][%[[LAST]]] if %[[RAN]] {cluster = 2 : i32}

// The reduction after the loop gets scratch of its own (2 KB) ahead of the
// barriers, which the other program may still arrive on after this one left
// its loop (without a cluster it could reuse theirs): 2 KB of scratch, the
// barriers (64 bytes, padded to the rings' 1024-byte alignment), 4 x 32 KB
// of rings.
// LLVM: kgpu.shared_memory = 134144
// LLVM-LABEL: llvm.func @shared_b
// LLVM-SAME: nvvm.cluster_dim = array<i32: 2, 1, 1>
// LLVM-COUNT-4: @p mbarrier.init.shared::cta.b64 [$1], 1; }"
// LLVM: "fence.mbarrier_init.release.cluster;"
// LLVM-NEXT: "barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;"
// LLVM-COUNT-4: @p mbarrier.init.shared::cta.b64 [$1], 8; }"
// LLVM: "fence.mbarrier_init.release.cluster;"
// LLVM-NEXT: "barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;"
// LLVM: nvvm.read.ptx.sreg.clusterid.x
// LLVM: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [$1], [$2, {$3, $4}], [$5];
// LLVM: %[[RANK:.*]] = nvvm.read.ptx.sreg.cluster.ctarank : i32
// LLVM: llvm.mul %[[RANK]], %{{.*}} : i32
// LLVM: %[[PART:.*]] = llvm.mlir.constant(8192 : i32)
// LLVM-NEXT: llvm.mul %[[RANK]], %[[PART]] : i32
// LLVM: %[[MASK:.*]] = llvm.mlir.constant(3 : i16) : i16
// LLVM: complete_tx::bytes.multicast::cluster [$1], [$2, {$3, $4}], [$5], $6;{{.*}}"r,r,l,r,r,r,h"
// LLVM: "exit;"
// LLVM: mapa.shared::cluster.u32 remote, $1, 0; @p mbarrier.arrive.shared::cluster.b64 _, [remote]; mapa.shared::cluster.u32 remote, $1, 1; @p mbarrier.arrive.shared::cluster.b64 _, [remote];

module attributes {tile.cluster_size = 2 : i32} {
tile.func @shared_b(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                    %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i64, %kb: i64, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                    %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %kk: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %cluster = tile.cluster_id : i32
  %rank = tile.cluster_rank : i32
  %pair = arith.muli %cluster, %c2 : i32
  %mine = arith.addi %pair, %rank : i32
  %row = arith.muli %mine, %c128 : i32
  %column = arith.muli %cluster, %c128 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %i = %c0 to %kk step %c64 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %a[%row, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %y = tile.descriptor_load %b[%column, %i] sizes[%n, %kb] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<128x64xbf16>
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
  %sums = tile.reduce(%acc) axis = 0 : (tensor<128x128xf32>) -> tensor<128xf32> {
  ^bb0(%x0: f32, %x1: f32):
    %x2 = arith.addf %x0, %x1 : f32
    tile.reduce.return %x2 : f32
  }
  %cs1 = tile.splat %c : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>>
  %cp1 = tile.addptr %cs1, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  tile.store %cp1, %sums : tensor<128x!tile.ptr<f32>>
  tile.return
}
}

// -----

// CHECK: kgpu.tensor_maps = [{box = array<i32: 128, 64>, parameter = 0 : i32, swizzle = 128 : i32}, {box = array<i32: 128, 64>, parameter = 6 : i32, swizzle = 128 : i32}]
// CHECK-LABEL: tile.func @per_program_b
// CHECK: kgpu.mbarrier_init %{{.*}} :
// CHECK: kgpu.mbarrier_init %{{.*}} {count = 4 : i32}
// CHECK-NOT: multicast
// CHECK-NOT: cluster =
// LLVM-LABEL: llvm.func @per_program_b
// LLVM-SAME: nvvm.cluster_dim = array<i32: 2, 1, 1>
// LLVM-NOT: barrier.cluster
// LLVM-NOT: mapa
module attributes {tile.cluster_size = 2 : i32} {
tile.func @per_program_b(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
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
    %y = tile.descriptor_load %b[%row, %i] sizes[%n, %kb] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<128x64xbf16>
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
}
