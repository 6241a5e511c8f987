// Which descriptor accesses the copy engine takes (sm_90a; loads in
// pipelined loops: blocks that feed a tensor-core dot, directly or
// transposed; stores of any 2-d block; both of tensors the specialization
// proved aligned), and the masked loads and stores everything else becomes.
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --split-input-file | FileCheck %s --check-prefixes=CHECK,STORE
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_80" --split-input-file | FileCheck %s --check-prefixes=AMPERE,EXPANDED
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=1 target=sm_90a" --split-input-file | FileCheck %s --check-prefixes=AMPERE,STORE

// A [M][K] and B stored [N][K] (read transposed): both stay, with their
// boxes (128 rows of 64 bf16, 128-byte swizzle) in the module.
// CHECK: module attributes {kgpu.tensor_maps = [{box = array<i32: 128, 64>, parameter = 0 : i32, swizzle = 128 : i32}, {box = array<i32: 128, 64>, parameter = 6 : i32, swizzle = 128 : i32}]}
// CHECK-LABEL: tile.func @k_loop
// CHECK: scf.for
// CHECK: %[[A:.*]] = tile.descriptor_load %arg1[%{{.*}}, %{{.*}}] sizes[%arg2, %arg3] strides[%arg4, %{{.*}}] map %arg0
// CHECK: %[[B:.*]] = tile.descriptor_load %arg7[%{{.*}}, %{{.*}}] sizes[%arg8, %arg9] strides[%arg10, %{{.*}}] map %arg6
// CHECK: %[[BT:.*]] = tile.trans %[[B]]
// CHECK: tile.dot %[[A]], %[[BT]]
// CHECK-NOT: tile.load
// AMPERE-NOT: kgpu.tensor_maps
// AMPERE-LABEL: tile.func @k_loop
// AMPERE-NOT: tile.descriptor_load
// AMPERE: %[[ROWS:.*]] = tile.range 0, 128 : tensor<128xi32>
// AMPERE: arith.cmpi sge
// AMPERE: arith.cmpi slt
// AMPERE: tile.addptr
// AMPERE: tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x64x!tile.ptr<bf16>>
tile.func @k_loop(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                  %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i64, %kb: i64, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                  %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %kk: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %i = %c0 to %kk step %c64 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %a[%c0, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
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

// Outside a loop, or to and from an unaligned base: masked accesses.
// CHECK-LABEL: tile.func @not_for_the_copy_engine
// CHECK-NOT: kgpu.tensor_maps
// CHECK-NOT: tile.descriptor
// CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x32x!tile.ptr<f16>>
// CHECK: tile.store %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x32x!tile.ptr<f16>>
tile.func @not_for_the_copy_engine(%map: !tile.tensormap, %x: !tile.ptr<f16>, %m: i64, %n: i64, %s: i64, %i: i32, %j: i32) {
  %one = arith.constant 1 : i64
  %v = tile.descriptor_load %x[%i, %j] sizes[%m, %n] strides[%s, %one] map %map : !tile.ptr<f16> -> tensor<16x32xf16>
  tile.descriptor_store %x[%j, %i] sizes[%m, %n] strides[%s, %one] map %map, %v : !tile.ptr<f16>, tensor<16x32xf16>
  tile.return
}

// -----

// A store of a tensor the copy engine can describe stays on Hopper, with
// or without pipelining, with its box: 64 rows of 64 f16 (128-byte rows,
// 128-byte swizzle) for a 64x128 block. Before Hopper it is expanded.
// STORE: module attributes {kgpu.tensor_maps = [{box = array<i32: 64, 64>, parameter = 0 : i32, swizzle = 128 : i32}]}
// STORE-LABEL: tile.func @stored_by_the_copy_engine
// STORE: %[[V:.*]] = tile.splat %arg8
// STORE: tile.descriptor_store %arg1[%arg6, %arg7] sizes[%arg2, %arg3] strides[%arg4, %{{.*}}] map %arg0, %[[V]]
// STORE-NOT: tile.store
// EXPANDED-LABEL: tile.func @stored_by_the_copy_engine
// EXPANDED-NOT: tile.descriptor_store
// EXPANDED: tile.store %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x128x!tile.ptr<f16>>
tile.func @stored_by_the_copy_engine(%map: !tile.tensormap, %o: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %m: i64, %n: i64, %s: i64 {tile.divisibility = 16 : i32}, %inner: i64,
                                     %i: i32, %j: i32, %x: f16) {
  %one = arith.constant 1 : i64
  %v = tile.splat %x : f16 -> tensor<64x128xf16>
  tile.descriptor_store %o[%i, %j] sizes[%m, %n] strides[%s, %one] map %map, %v : !tile.ptr<f16>, tensor<64x128xf16>
  tile.return
}
