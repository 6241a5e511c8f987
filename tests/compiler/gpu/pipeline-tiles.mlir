// A loop over several tiles' K steps (a persistent matmul): the
// accumulator restarts from zero at each tile's first step
// (select(first, 0, acc)) and a branch stores each finished tile. The
// pipeliner still leaves the wgmma in flight (warpgroup_wait 1 after it)
// and the branch waits for it first (warpgroup_wait 0 at its start); the
// coordinates, computed ahead for the copies, may divide by max(d, 1) (a
// divisor that cannot be zero for the iterations past the end) but not by
// an unproven d. Lowered, the first K step's wgmma takes scale-d from the
// condition and the accumulator's registers are not selected.
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=4 target=sm_90a" --kgpu-pipeline-loops=num-stages=3 --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=4 target=sm_90a" --kgpu-pipeline-loops=num-stages=3 --kgpu-to-llvm --split-input-file | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: tile.func @tiles
// CHECK: kgpu.mbarrier_init
// CHECK: arith.remsi
// CHECK: kgpu.tma_load
// CHECK: scf.for
// CHECK: kgpu.mbarrier_wait
// CHECK: arith.remsi
// CHECK: kgpu.tma_load
// CHECK: %[[FIRST:.*]] = tile.splat %{{.*}} : i1 -> tensor<128x128xi1
// CHECK: %[[START:.*]] = arith.select %[[FIRST]], %{{.*}}, %{{.*}} : tensor<128x128xi1
// CHECK: %[[D:.*]] = tile.dot %{{.*}}, %{{.*}}, %[[START]] {kgpu.wgmma}
// CHECK-NEXT: %[[PARTIAL:.*]] = kgpu.warpgroup_wait %[[D]], 1
// CHECK: scf.if
// CHECK-NEXT: %[[DONE:.*]] = kgpu.warpgroup_wait %[[PARTIAL]], 0
// CHECK: tile.store %{{.*}}, %[[DONE]]
// CHECK: scf.yield %[[PARTIAL]],
// CHECK: kgpu.warpgroup_wait %{{.*}}, 0
// CHECK: kgpu.mbarrier_inval

// LLVM-LABEL: llvm.func @tiles
// LLVM: %[[SCALE:.*]] = llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, i32
// LLVM: wgmma.mma_async{{.*}}, %[[SCALE]] : (
// LLVM: wgmma.mma_async{{.*}}, %[[SCALE]] : (
// LLVM-NOT: %[[SCALE]] : (
// LLVM: "wgmma.commit_group.sync.aligned;"
// LLVM: "wgmma.wait_group.sync.aligned 1;"
// LLVM: scf.if
// LLVM: "wgmma.wait_group.sync.aligned 0;"

tile.func @tiles(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                 %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %kb: i64, %n: i64 {tile.divisibility = 16 : i32}, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                 %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %total: i32, %steps: i32, %per: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %last_step = arith.subi %steps, %c1 : i32
  %per1 = arith.maxsi %per, %c1 : i32
  %r:3 = scf.for %i = %c0 to %total step %c1 iter_args(%acc = %zero, %ki = %c0, %tile = %c0) -> (tensor<128x128xf32>, i32, i32) : i32 {
    %kofs = arith.muli %ki, %c64 : i32
    %block = arith.remsi %tile, %per1 : i32
    %row = arith.muli %block, %c128 : i32
    %x = tile.descriptor_load %a[%row, %kofs] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %y = tile.descriptor_load %b[%kofs, %c0] sizes[%kb, %n] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<64x128xbf16>
    %first = arith.cmpi eq, %ki, %c0 : i32
    %firsts = tile.splat %first : i1 -> tensor<128x128xi1>
    %start = arith.select %firsts, %zero, %acc : tensor<128x128xi1>, tensor<128x128xf32>
    %d = tile.dot %x, %y, %start : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    %last = arith.cmpi eq, %ki, %last_step : i32
    scf.if %last {
      %rr = tile.range 0, 128 : tensor<128xi32>
      %rows = tile.expand_dims %rr {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %rowsb = tile.broadcast %rows : tensor<128x1xi32> -> tensor<128x128xi32>
      %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
      %cp = tile.addptr %cs, %rowsb : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xi32>
      tile.store %cp, %d : tensor<128x128x!tile.ptr<f32>>
    }
    %ki1 = arith.addi %ki, %c1 : i32
    %kn = arith.select %last, %c0, %ki1 : i32
    %tile1 = arith.addi %tile, %c1 : i32
    %tn = arith.select %last, %tile1, %tile : i32
    scf.yield %d, %kn, %tn : tensor<128x128xf32>, i32, i32
  }
  tile.return
}

// -----

// Dividing by a runtime value the compiler cannot prove nonzero: A's
// coordinates cannot run ahead of the loop, so the copy engine does not
// take A's loads (they become masked loads in the loop); B's, which do not
// divide, it does.
// CHECK-LABEL: tile.func @unproven_divisor
// CHECK-NOT: kgpu.tma_load %arg0
// CHECK: kgpu.tma_load %arg6
// CHECK-NOT: kgpu.tma_load %arg0
// CHECK: scf.for
// CHECK: arith.divsi
// CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x64x!tile.ptr<bf16>
tile.func @unproven_divisor(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                            %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %kb: i64, %n: i64 {tile.divisibility = 16 : i32}, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                            %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %total: i32, %per: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %r = scf.for %i = %c0 to %total step %c1 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %block = arith.divsi %i, %per : i32
    %row = arith.muli %block, %c128 : i32
    %kofs = arith.muli %i, %c64 : i32
    %x = tile.descriptor_load %a[%row, %kofs] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %y = tile.descriptor_load %b[%kofs, %c0] sizes[%kb, %n] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<64x128xbf16>
    %d = tile.dot %x, %y, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %cs, %r : tensor<128x128x!tile.ptr<f32>>
  tile.return
}
