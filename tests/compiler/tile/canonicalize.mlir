// Folds of the tile operations (run by the canonicalizer).
// RUN: kiln-opt %s --canonicalize | FileCheck %s

// CHECK-LABEL: tile.func @fold_shape_ops_of_constants
tile.func @fold_shape_ops_of_constants(%p: !tile.ptr<f32>) {
  %c = arith.constant 2.5 : f32
  %s = tile.splat %c : f32 -> tensor<1x8xf32>
  %b = tile.broadcast %s : tensor<1x8xf32> -> tensor<4x8xf32>
  %t = tile.trans %b {order = array<i32: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %r = tile.reshape %t : tensor<8x4xf32> -> tensor<32xf32>
  %e = tile.expand_dims %r {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
  %ps = tile.splat %p : !tile.ptr<f32> -> tensor<1x32x!tile.ptr<f32>>
  // CHECK: %[[C:.*]] = arith.constant dense<2.500000e+00> : tensor<1x32xf32>
  // CHECK-NOT: tile.broadcast
  // CHECK-NOT: tile.trans
  // CHECK-NOT: tile.reshape
  // CHECK-NOT: tile.expand_dims
  // CHECK: tile.store %{{.*}}, %[[C]]
  tile.store %ps, %e : tensor<1x32x!tile.ptr<f32>>
  tile.return
}

// CHECK-LABEL: tile.func @fold_identities
// CHECK-SAME: (%[[P:.*]]: !tile.ptr<f32>, %[[X:.*]]: f32)
tile.func @fold_identities(%p: !tile.ptr<f32>, %x: f32) {
  %zero = arith.constant 0 : i32
  // CHECK-NOT: tile.addptr
  %q = tile.addptr %p, %zero : !tile.ptr<f32>, i32
  // CHECK-NOT: tile.bitcast
  %y = tile.bitcast %x : f32 -> f32
  %s = tile.splat %y : f32 -> tensor<4x4xf32>
  %t = tile.trans %s {order = array<i32: 0, 1>} : tensor<4x4xf32> -> tensor<4x4xf32>
  %b = tile.broadcast %t : tensor<4x4xf32> -> tensor<4x4xf32>
  %ps = tile.splat %q : !tile.ptr<f32> -> tensor<4x4x!tile.ptr<f32>>
  // CHECK: %[[S:.*]] = tile.splat %[[X]] : f32 -> tensor<4x4xf32>
  // CHECK: %[[PS:.*]] = tile.splat %[[P]]
  // CHECK: tile.store %[[PS]], %[[S]]
  tile.store %ps, %b : tensor<4x4x!tile.ptr<f32>>
  tile.return
}

// A mask that is true everywhere is dropped from loads and stores (with the
// load's `other`); any other mask stays.
// CHECK-LABEL: tile.func @drop_true_masks
tile.func @drop_true_masks(%p: !tile.ptr<f32>, %n: i32) {
  %ps = tile.splat %p : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %true = arith.constant dense<true> : tensor<64xi1>
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  // CHECK: %[[V:.*]] = tile.load %{{[^,]*}} evict = evict_last : tensor<64x!tile.ptr<f32>>
  %v = tile.load %ps, %true, %zero evict = evict_last : tensor<64x!tile.ptr<f32>>
  // CHECK: tile.store %{{[^,]*}}, %[[V]] : tensor<64x!tile.ptr<f32>>
  tile.store %ps, %v, %true : tensor<64x!tile.ptr<f32>>
  %r = tile.range 0, 64 : tensor<64xi32>
  %ns = tile.splat %n : i32 -> tensor<64xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
  // CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x!tile.ptr<f32>>
  %w = tile.load %ps, %m, %zero : tensor<64x!tile.ptr<f32>>
  // CHECK: tile.store %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x!tile.ptr<f32>>
  tile.store %ps, %w, %m : tensor<64x!tile.ptr<f32>>
  tile.return
}
