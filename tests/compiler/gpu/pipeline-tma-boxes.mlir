// Copy-engine tiles in every swizzle: a K-major A of 64-byte rows (BLOCK_K
// 32 bf16: 64-byte swizzle) or 32-byte rows (BLOCK_K 16: 32-byte swizzle),
// and an N-major B of 512- or 256-byte rows, which arrives as 4 or 2 boxes
// of 64 columns (128-byte swizzle) side by side. Each slot's barrier
// expects all of its boxes' bytes; the ring slots keep Kiln's swizzled
// encoding, which is the hardware's for those row lengths.
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=8 target=sm_90a" --kgpu-pipeline-loops=num-stages=3 --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --kgpu-assign-layouts="num-warps=8 target=sm_90a" --kgpu-pipeline-loops=num-stages=3 --kgpu-to-llvm --split-input-file | FileCheck %s --check-prefix=LLVM

// CHECK: kgpu.tensor_maps = [{box = array<i32: 128, 32>, parameter = 0 : i32, swizzle = 64 : i32}, {box = array<i32: 32, 64>, parameter = 6 : i32, swizzle = 128 : i32}]
// CHECK-LABEL: tile.func @boxes
// CHECK: kgpu.local_alloc : tensor<4x128x32xbf16, #kgpu.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
// CHECK: kgpu.local_alloc : tensor<4x32x256xbf16, #kgpu.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>>
// CHECK: kgpu.mbarrier_expect %{{.*}}, 24576 if
// CHECK: scf.for
// CHECK: kgpu.tma_load %arg6
// CHECK: tile.dot {{.*}} {kgpu.wgmma}
// CHECK-NEXT: kgpu.warpgroup_wait %{{.*}}, 1
// LLVM-LABEL: llvm.func @boxes
// Three issue points (two in the prologue, one in the loop), each one box of
// A and four of B.
// LLVM-COUNT-15: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// LLVM-NOT: cp.async.bulk.tensor
// LLVM: llvm.return
tile.func @boxes(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                 %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %kb: i64, %n: i64 {tile.divisibility = 16 : i32}, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                 %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %kk: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %acc = scf.for %i = %c0 to %kk step %c32 iter_args(%sum = %zero) -> (tensor<128x256xf32>) : i32 {
    %x = tile.descriptor_load %a[%c0, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x32xbf16>
    %y = tile.descriptor_load %b[%i, %c0] sizes[%kb, %n] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<32x256xbf16>
    %d = tile.dot %x, %y, %sum : tensor<128x32xbf16> * tensor<32x256xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x256x!tile.ptr<f32>>
  tile.store %cs, %acc : tensor<128x256x!tile.ptr<f32>>
  tile.return
}

// -----

// CHECK: kgpu.tensor_maps = [{box = array<i32: 128, 16>, parameter = 0 : i32, swizzle = 32 : i32}, {box = array<i32: 16, 64>, parameter = 6 : i32, swizzle = 128 : i32}]
// CHECK-LABEL: tile.func @narrow
// CHECK: kgpu.local_alloc : tensor<4x128x16xbf16, #kgpu.shared<{vec = 8, perPhase = 4, maxPhase = 2, order = [1, 0]}>>
// CHECK: kgpu.local_alloc : tensor<4x16x128xbf16, #kgpu.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>>
// CHECK: kgpu.mbarrier_expect %{{.*}}, 8192 if
// LLVM-LABEL: llvm.func @narrow
// LLVM-COUNT-9: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// LLVM-NOT: cp.async.bulk.tensor
// LLVM: llvm.return
tile.func @narrow(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                 %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %kb: i64, %n: i64 {tile.divisibility = 16 : i32}, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                 %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %kk: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c16 = arith.constant 16 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %i = %c0 to %kk step %c16 iter_args(%sum = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %a[%c0, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x16xbf16>
    %y = tile.descriptor_load %b[%i, %c0] sizes[%kb, %n] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<16x128xbf16>
    %d = tile.dot %x, %y, %sum : tensor<128x16xbf16> * tensor<16x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %cs, %acc : tensor<128x128x!tile.ptr<f32>>
  tile.return
}
