// fp8 dots and the copy engine (sm_90a): an fp8 dot is wgmma's only with
// both operands K-major (fp8 wgmma transposes nothing), so its descriptor
// loads stay for the copy engine only then: A [M][K] and B stored [N][K]
// (read transposed) keep their boxes (128 rows of 128 bytes, 128-byte
// swizzle); with B stored [K][N] (N-major) the dot stays on FMAs and both
// loads become masked pointer loads.
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 num-warps=4 target=sm_90a" --split-input-file | FileCheck %s

// CHECK: module attributes {kgpu.tensor_maps = [{box = array<i32: 128, 128>, parameter = 0 : i32, swizzle = 128 : i32}, {box = array<i32: 128, 128>, parameter = 6 : i32, swizzle = 128 : i32}]}
// CHECK-LABEL: tile.func @k_major
// CHECK: %[[A:.*]] = tile.descriptor_load %arg1
// CHECK: %[[B:.*]] = tile.descriptor_load %arg7
// CHECK: %[[BT:.*]] = tile.trans %[[B]]
// CHECK: tile.dot %[[A]], %[[BT]]
// CHECK-NOT: tile.load
tile.func @k_major(%amap: !tile.tensormap, %a: !tile.ptr<f8E4M3FN> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                   %bmap: !tile.tensormap, %b: !tile.ptr<f8E5M2> {tile.divisibility = 16 : i32}, %n: i64, %kb: i64, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                   %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %kk: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %i = %c0 to %kk step %c128 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %a[%c0, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<f8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %y = tile.descriptor_load %b[%c0, %i] sizes[%n, %kb] strides[%sb, %one] map %bmap : !tile.ptr<f8E5M2> -> tensor<128x128xf8E5M2>
    %yt = tile.trans %y {order = array<i32: 1, 0>} : tensor<128x128xf8E5M2> -> tensor<128x128xf8E5M2>
    %d = tile.dot %x, %yt, %acc : tensor<128x128xf8E4M3FN> * tensor<128x128xf8E5M2> -> tensor<128x128xf32>
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

// CHECK-NOT: kgpu.tensor_maps
// CHECK-LABEL: tile.func @n_major_b
// CHECK-NOT: tile.descriptor_load
// CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x128x!tile.ptr<f8E4M3FN>>
// CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x128x!tile.ptr<f8E4M3FN>>
// CHECK: tile.dot
tile.func @n_major_b(%amap: !tile.tensormap, %a: !tile.ptr<f8E4M3FN> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                     %bmap: !tile.tensormap, %b: !tile.ptr<f8E4M3FN> {tile.divisibility = 16 : i32}, %kb: i64, %n: i64 {tile.divisibility = 16 : i32}, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                     %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %kk: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %i = %c0 to %kk step %c128 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %a[%c0, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<f8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %y = tile.descriptor_load %b[%i, %c0] sizes[%kb, %n] strides[%sb, %one] map %bmap : !tile.ptr<f8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %d = tile.dot %x, %y, %acc : tensor<128x128xf8E4M3FN> * tensor<128x128xf8E4M3FN> -> tensor<128x128xf32>
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
