// Every tile operation prints and parses back to itself, in the custom and
// the generic form.
// RUN: kiln-opt %s | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// CHECK-LABEL: tile.func @grid(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: i32)
tile.func @grid(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32) {
  // CHECK: tile.program_id x : i32
  %0 = tile.program_id x : i32
  // CHECK: tile.program_id z : i32
  %1 = tile.program_id z : i32
  // CHECK: tile.num_programs y : i32
  %2 = tile.num_programs y : i32
  // CHECK: tile.return
  tile.return
}

// CHECK-LABEL: tile.func @pointer_types
// CHECK-SAME: !tile.ptr<f16, 3>, %{{.*}}: !tile.ptr<!tile.ptr<i8>>
tile.func @pointer_types(%a: !tile.ptr<f16, 3>, %b: !tile.ptr<!tile.ptr<i8>>) {
  tile.return
}

// CHECK-LABEL: tile.func @make_blocks
tile.func @make_blocks(%s: f32) {
  // CHECK: tile.range 0, 128 : tensor<128xi32>
  %r = tile.range 0, 128 : tensor<128xi32>
  // CHECK: tile.splat %{{.*}} : f32 -> tensor<1x64xf32>
  %a = tile.splat %s : f32 -> tensor<1x64xf32>
  // CHECK: tile.broadcast %{{.*}} : tensor<1x64xf32> -> tensor<32x64xf32>
  %b = tile.broadcast %a : tensor<1x64xf32> -> tensor<32x64xf32>
  // CHECK: tile.expand_dims %{{.*}} {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %e = tile.expand_dims %r {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  // CHECK: tile.reshape %{{.*}} : tensor<32x64xf32> -> tensor<2048xf32>
  %f = tile.reshape %b : tensor<32x64xf32> -> tensor<2048xf32>
  // CHECK: tile.trans %{{.*}} {order = array<i32: 1, 0>} : tensor<32x64xf32> -> tensor<64x32xf32>
  %t = tile.trans %b {order = array<i32: 1, 0>} : tensor<32x64xf32> -> tensor<64x32xf32>
  // CHECK: tile.join %{{.*}}, %{{.*}} : tensor<32x64xf32> -> tensor<32x64x2xf32>
  %j = tile.join %b, %b : tensor<32x64xf32> -> tensor<32x64x2xf32>
  // CHECK: tile.split %{{.*}} : tensor<32x64x2xf32> -> tensor<32x64xf32>
  %l, %h = tile.split %j : tensor<32x64x2xf32> -> tensor<32x64xf32>
  tile.return
}

// CHECK-LABEL: tile.func @memory
tile.func @memory(%p: !tile.ptr<f32>, %q: !tile.ptr<i32>, %a: i64) {
  %r = tile.range 0, 64 : tensor<64xi32>
  %ps = tile.splat %p : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  // CHECK: tile.addptr %{{.*}}, %{{.*}} : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %ptrs = tile.addptr %ps, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  // CHECK: tile.addptr %{{.*}}, %{{.*}} : !tile.ptr<f32>, i64
  %one = tile.addptr %p, %a : !tile.ptr<f32>, i64
  // CHECK: tile.ptr_to_int %{{.*}} : !tile.ptr<f32> -> i64
  %addr = tile.ptr_to_int %one : !tile.ptr<f32> -> i64
  // CHECK: tile.int_to_ptr %{{.*}} : i64 -> !tile.ptr<f32>
  %back = tile.int_to_ptr %addr : i64 -> !tile.ptr<f32>
  %mask = arith.cmpi slt, %r, %r : tensor<64xi32>
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  // CHECK: tile.load %{{.*}} : tensor<64x!tile.ptr<f32>>
  %v0 = tile.load %ptrs : tensor<64x!tile.ptr<f32>>
  // CHECK: tile.load %{{.*}}, %{{.*}} : tensor<64x!tile.ptr<f32>>
  %v1 = tile.load %ptrs, %mask : tensor<64x!tile.ptr<f32>>
  // CHECK: tile.load %{{.*}}, %{{.*}}, %{{.*}} cache = cg evict = evict_last volatile : tensor<64x!tile.ptr<f32>>
  %v2 = tile.load %ptrs, %mask, %zero cache = cg evict = evict_last volatile : tensor<64x!tile.ptr<f32>>
  // CHECK: tile.load %{{.*}} : !tile.ptr<f32>
  %s = tile.load %back : !tile.ptr<f32>
  // CHECK: tile.store %{{.*}}, %{{.*}} : tensor<64x!tile.ptr<f32>>
  tile.store %ptrs, %v0 : tensor<64x!tile.ptr<f32>>
  // CHECK: tile.store %{{.*}}, %{{.*}}, %{{.*}} cache = cs : tensor<64x!tile.ptr<f32>>
  tile.store %ptrs, %v1, %mask cache = cs : tensor<64x!tile.ptr<f32>>
  // CHECK: tile.atomic_rmw fadd, %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x!tile.ptr<f32>>
  %o0 = tile.atomic_rmw fadd, %ptrs, %v2, %mask : tensor<64x!tile.ptr<f32>>
  // CHECK: tile.atomic_rmw max, %{{.*}}, %{{.*}} sem = relaxed scope = cta : tensor<64x!tile.ptr<f32>>
  %o1 = tile.atomic_rmw max, %ptrs, %v2 sem = relaxed scope = cta : tensor<64x!tile.ptr<f32>>
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  // CHECK: tile.atomic_rmw and, %{{.*}}, %{{.*}} : !tile.ptr<i32>
  %o2 = tile.atomic_rmw and, %q, %c1 : !tile.ptr<i32>
  // CHECK: tile.atomic_cas %{{.*}}, %{{.*}}, %{{.*}} sem = acquire : !tile.ptr<i32>
  %o3 = tile.atomic_cas %q, %c1, %c2 sem = acquire : !tile.ptr<i32>
  tile.return
}

// CHECK-LABEL: tile.func @casts
tile.func @casts(%p: !tile.ptr<f32>) {
  %x = arith.constant dense<1.5> : tensor<8xf32>
  %e = arith.constant dense<2.0> : tensor<8xf8E5M2>
  // CHECK: tile.bitcast %{{.*}} : tensor<8xf32> -> tensor<8xi32>
  %i = tile.bitcast %x : tensor<8xf32> -> tensor<8xi32>
  // CHECK: tile.bitcast %{{.*}} : !tile.ptr<f32> -> !tile.ptr<i8>
  %q = tile.bitcast %p : !tile.ptr<f32> -> !tile.ptr<i8>
  // CHECK: tile.fp_to_fp %{{.*}}, rounding = rtne : tensor<8xf32> -> tensor<8xf8E4M3FN>
  %f8 = tile.fp_to_fp %x, rounding = rtne : tensor<8xf32> -> tensor<8xf8E4M3FN>
  // CHECK: tile.fp_to_fp %{{.*}}, rounding = rtz : tensor<8xf32> -> tensor<8xf8E5M2>
  %g8 = tile.fp_to_fp %x, rounding = rtz : tensor<8xf32> -> tensor<8xf8E5M2>
  // CHECK: tile.fp_to_fp %{{.*}} : tensor<8xf8E5M2> -> tensor<8xf16>
  %h = tile.fp_to_fp %e : tensor<8xf8E5M2> -> tensor<8xf16>
  tile.return
}

// CHECK-LABEL: tile.func @reduce_scan
tile.func @reduce_scan() {
  %x = arith.constant dense<1.5> : tensor<16x32xf32>
  %i = arith.constant dense<3> : tensor<16x32xi32>
  // CHECK: tile.reduce(%{{.*}}) axis = 1 : (tensor<16x32xf32>) -> tensor<16xf32> {
  // CHECK: tile.reduce.return %{{.*}} : f32
  %s = tile.reduce(%x) axis = 1 : (tensor<16x32xf32>) -> tensor<16xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.reduce.return %c : f32
  }
  // Two operands reduced together (an argmax).
  // CHECK: tile.reduce(%{{.*}}, %{{.*}}) axis = 0 : (tensor<16x32xf32>, tensor<16x32xi32>) -> (tensor<32xf32>, tensor<32xi32>)
  %m:2 = tile.reduce(%x, %i) axis = 0 : (tensor<16x32xf32>, tensor<16x32xi32>) -> (tensor<32xf32>, tensor<32xi32>) {
  ^bb0(%va: f32, %ia: i32, %vb: f32, %ib: i32):
    %gt = arith.cmpf ogt, %vb, %va : f32
    %v = arith.select %gt, %vb, %va : f32
    %idx = arith.select %gt, %ib, %ia : i32
    tile.reduce.return %v, %idx : f32, i32
  }
  %flat = tile.reshape %x : tensor<16x32xf32> -> tensor<512xf32>
  // CHECK: tile.reduce(%{{.*}}) axis = 0 : (tensor<512xf32>) -> f32
  %total = tile.reduce(%flat) axis = 0 : (tensor<512xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.maxnumf %a, %b : f32
    tile.reduce.return %c : f32
  }
  // CHECK: tile.scan(%{{.*}}) axis = 1 reverse : (tensor<16x32xi32>) -> tensor<16x32xi32> {
  // CHECK: tile.scan.return %{{.*}} : i32
  %cs = tile.scan(%i) axis = 1 reverse : (tensor<16x32xi32>) -> tensor<16x32xi32> {
  ^bb0(%a: i32, %b: i32):
    %c = arith.addi %a, %b : i32
    tile.scan.return %c : i32
  }
  tile.return
}

// CHECK-LABEL: tile.func @dots
tile.func @dots() {
  %a = arith.constant dense<1.0> : tensor<64x32xf16>
  %b = arith.constant dense<2.0> : tensor<32x128xf16>
  %c = arith.constant dense<0.5> : tensor<64x128xf32>
  %fa = arith.constant dense<1.0> : tensor<16x16xf32>
  %fc = arith.constant dense<0.5> : tensor<16x16xf32>
  %ba = arith.constant dense<3> : tensor<2x16x16xi8>
  %bc = arith.constant dense<7> : tensor<2x16x16xi32>
  // CHECK: tile.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xf16> * tensor<32x128xf16> -> tensor<64x128xf32>
  %d = tile.dot %a, %b, %c : tensor<64x32xf16> * tensor<32x128xf16> -> tensor<64x128xf32>
  // CHECK: tile.dot %{{.*}}, %{{.*}}, %{{.*}} precision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  %e = tile.dot %fa, %fa, %fc precision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  // CHECK: tile.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x16xi8> * tensor<2x16x16xi8> -> tensor<2x16x16xi32>
  %f = tile.dot %ba, %ba, %bc : tensor<2x16x16xi8> * tensor<2x16x16xi8> -> tensor<2x16x16xi32>
  tile.return
}

// CHECK-LABEL: tile.func @debugging
tile.func @debugging(%n: i32) {
  %x = tile.range 0, 8 : tensor<8xi32>
  // CHECK: tile.hint %{{.*}} {max_contiguous = array<i32: 8>, multiple_of = array<i32: 16>} : tensor<8xi32>
  %h = tile.hint %x {multiple_of = array<i32: 16>, max_contiguous = array<i32: 8>} : tensor<8xi32>
  // CHECK: tile.hint %{{.*}} {multiple_of = array<i32: 16>} : i32
  %m = tile.hint %n {multiple_of = array<i32: 16>} : i32
  // CHECK: tile.print "x = " hex, %{{.*}}, %{{.*}} : tensor<8xi32>, i32
  tile.print "x = " hex, %h, %m : tensor<8xi32>, i32
  // CHECK: tile.print "here"
  tile.print "here"
  %ok = arith.cmpi sge, %x, %x : tensor<8xi32>
  // CHECK: tile.assert %{{.*}}, "x must be non-negative" : tensor<8xi1>
  tile.assert %ok, "x must be non-negative" : tensor<8xi1>
  tile.return
}

// CHECK-LABEL: tile.func @descriptors
// CHECK-SAME: %arg0: !tile.tensormap
// CHECK: %[[X:.*]] = tile.descriptor_load %arg1[%arg6, %arg7] sizes[%arg2, %arg3] strides[%arg4, %arg5] map %arg0 : !tile.ptr<bf16> -> tensor<64x32xbf16>
// CHECK: tile.descriptor_store %arg1[%arg6, %arg7] sizes[%arg2, %arg3] strides[%arg4, %arg5] map %arg0, %[[X]] : !tile.ptr<bf16>, tensor<64x32xbf16>
tile.func @descriptors(%map: !tile.tensormap, %base: !tile.ptr<bf16>, %m: i64, %n: i64, %sm: i64, %sn: i64, %i: i32, %j: i32) {
  %x = tile.descriptor_load %base[%i, %j] sizes[%m, %n] strides[%sm, %sn] map %map : !tile.ptr<bf16> -> tensor<64x32xbf16>
  tile.descriptor_store %base[%i, %j] sizes[%m, %n] strides[%sm, %sn] map %map, %x : !tile.ptr<bf16>, tensor<64x32xbf16>
  tile.return
}
