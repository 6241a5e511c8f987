// The launch builds a descriptor's tensor map from the parameters after
// its map (base, sizes, strides), so the copy engine takes a load only
// when those are what the load names (or the constant 1 a launch
// specialized one to); any other load keeps its own operands' meaning as
// masked pointer loads.
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=3 target=sm_90a" --split-input-file | FileCheck %s

// A's rows counted by another parameter (%n, not %m): masked loads.
// B as described by its parameters: the copy engine.
// CHECK: module attributes {kgpu.tensor_maps = [{box = array<i32: 128, 64>, parameter = 6 : i32, swizzle = 128 : i32}]}
// CHECK-LABEL: tile.func @sizes_from_elsewhere
// CHECK: scf.for
// CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x64x!tile.ptr<bf16>>
// CHECK: tile.descriptor_load %arg7[%{{.*}}, %{{.*}}] sizes[%arg8, %arg9] strides[%arg10, %{{.*}}] map %arg6
tile.func @sizes_from_elsewhere(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                                %bmap: !tile.tensormap, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i64, %kb: i64, %sb: i64 {tile.divisibility = 16 : i32}, %innerB: i64,
                                %kk: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %i = %c0 to %kk step %c64 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %a[%c0, %i] sizes[%n, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %y = tile.descriptor_load %b[%c0, %i] sizes[%n, %kb] strides[%sb, %one] map %bmap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %yt = tile.trans %y {order = array<i32: 1, 0>} : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tile.dot %x, %yt, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.return
}

// -----

// A base that is not the parameter after the map (B's pointer through A's
// map): masked loads, and no tensor map.
// CHECK-NOT: kgpu.tensor_maps
// CHECK-LABEL: tile.func @base_from_elsewhere
// CHECK-NOT: tile.descriptor_load
// CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x64x!tile.ptr<bf16>>
tile.func @base_from_elsewhere(%amap: !tile.tensormap, %a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %m: i64, %k: i64 {tile.divisibility = 16 : i32}, %sa: i64 {tile.divisibility = 16 : i32}, %innerA: i64,
                               %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %kk: i32) {
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %w = arith.constant dense<1.0> : tensor<64x128xbf16>
  %acc = scf.for %i = %c0 to %kk step %c64 iter_args(%acc = %zero) -> (tensor<128x128xf32>) : i32 {
    %x = tile.descriptor_load %b[%c0, %i] sizes[%m, %k] strides[%sa, %one] map %amap : !tile.ptr<bf16> -> tensor<128x64xbf16>
    %d = tile.dot %x, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.return
}
