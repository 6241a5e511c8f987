// Each tile operation rejects malformed input with a message that names the
// shapes and types involved.
// RUN: kiln-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{kernels return nothing}}
tile.func @returns_value() -> i32 {
  tile.return
}

// -----

// expected-error @+1 {{argument #0 must be a scalar (integer, float or !tile.ptr) or a !tile.tensormap, got 'tensor<4xf32>'}}
tile.func @tensor_argument(%x: tensor<4xf32>) {
  tile.return
}

// -----

// expected-error @+1 {{pointee must be an integer, float or pointer, got 'tensor<4xf32>'}}
tile.func @bad_pointee(%x: !tile.ptr<tensor<4xf32>>) {
  tile.return
}

// -----

tile.func @return_outside_func() {
  %x = tile.range 0, 4 : tensor<4xi32>
  %s = tile.reduce(%x) axis = 0 : (tensor<4xi32>) -> i32 {
  ^bb0(%a: i32, %b: i32):
    // expected-error @+1 {{expects parent op 'tile.func'}}
    tile.return
  }
  tile.return
}

// -----

tile.func @program_id_type() {
  // expected-error @+1 {{result #0 must be 32-bit signless integer}}
  %0 = tile.program_id x : i64
  tile.return
}

// -----

tile.func @num_programs_axis() {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'axis' [x, y, z]}}
  %0 = tile.num_programs 3 : i32
  tile.return
}

// -----

tile.func @range_not_power_of_two() {
  // expected-error @+1 {{length end - start = 100 must be a power of two}}
  %r = tile.range 0, 100 : tensor<100xi32>
  tile.return
}

// -----

tile.func @range_wrong_length() {
  // expected-error @+1 {{result has 64 elements but the range [0, 128) has 128}}
  %r = tile.range 0, 128 : tensor<64xi32>
  tile.return
}

// -----

tile.func @range_empty() {
  // expected-error @+1 {{end (4) must be greater than start (4)}}
  %r = tile.range 4, 4 : tensor<1xi32>
  tile.return
}

// -----

tile.func @splat_type(%x: f32) {
  // expected-error @+1 {{requires the same element type for all operands and results}}
  %s = tile.splat %x : f32 -> tensor<4xf16>
  tile.return
}

// -----

tile.func @broadcast_rank() {
  %x = tile.range 0, 4 : tensor<4xi32>
  // expected-error @+1 {{source and result must have the same rank, got 4xi32 -> 4x4xi32 (use tile.expand_dims to add dimensions)}}
  %b = tile.broadcast %x : tensor<4xi32> -> tensor<4x4xi32>
  tile.return
}

// -----

tile.func @broadcast_size(%x: f32) {
  %s = tile.splat %x : f32 -> tensor<2x4xf32>
  // expected-error @+1 {{dimension 0 of size 2 cannot broadcast to 8 (2x4xf32 -> 8x4xf32)}}
  %b = tile.broadcast %s : tensor<2x4xf32> -> tensor<8x4xf32>
  tile.return
}

// -----

tile.func @expand_dims_axis() {
  %x = tile.range 0, 4 : tensor<4xi32>
  // expected-error @+1 {{axis 2 is out of range for a block of rank 1 (expected 0..1)}}
  %e = tile.expand_dims %x {axis = 2 : i32} : tensor<4xi32> -> tensor<4x1xi32>
  tile.return
}

// -----

tile.func @expand_dims_shape() {
  %x = tile.range 0, 4 : tensor<4xi32>
  // expected-error @+1 {{result shape 4x1 should be 1x4}}
  %e = tile.expand_dims %x {axis = 0 : i32} : tensor<4xi32> -> tensor<4x1xi32>
  tile.return
}

// -----

tile.func @reshape_count() {
  %x = tile.range 0, 8 : tensor<8xi32>
  // expected-error @+1 {{cannot reshape 8xi32 (8 elements) to 4x4xi32 (16 elements)}}
  %r = tile.reshape %x : tensor<8xi32> -> tensor<4x4xi32>
  tile.return
}

// -----

tile.func @trans_order(%x: f32) {
  %s = tile.splat %x : f32 -> tensor<2x4xf32>
  // expected-error @+1 {{order must be a permutation of 0..1}}
  %t = tile.trans %s {order = array<i32: 0, 0>} : tensor<2x4xf32> -> tensor<2x4xf32>
  tile.return
}

// -----

tile.func @trans_shape(%x: f32) {
  %s = tile.splat %x : f32 -> tensor<2x4xf32>
  // expected-error @+1 {{result shape 2x4 should be 4x2}}
  %t = tile.trans %s {order = array<i32: 1, 0>} : tensor<2x4xf32> -> tensor<2x4xf32>
  tile.return
}

// -----

tile.func @join_shape() {
  %x = tile.range 0, 8 : tensor<8xi32>
  // expected-error @+1 {{result shape 2x8 should be 8x2}}
  %j = tile.join %x, %x : tensor<8xi32> -> tensor<2x8xi32>
  tile.return
}

// -----

tile.func @split_last_dim() {
  %x = arith.constant dense<1> : tensor<8x4xi32>
  // expected-error @+1 {{the last dimension must be 2, got 8x4xi32}}
  %a, %b = tile.split %x : tensor<8x4xi32> -> tensor<8xi32>
  tile.return
}

// -----

tile.func @addptr_shape(%p: !tile.ptr<f32>) {
  %o = tile.range 0, 8 : tensor<8xi32>
  %s = tile.splat %p : !tile.ptr<f32> -> tensor<4x!tile.ptr<f32>>
  // expected-error @+1 {{pointer and offset must have the same shape, got 4x!tile.ptr<f32> and 8xi32}}
  %q = tile.addptr %s, %o : tensor<4x!tile.ptr<f32>>, tensor<8xi32>
  tile.return
}

// -----

tile.func @addptr_float_offset(%p: !tile.ptr<f32>, %o: f32) {
  // expected-error @+1 {{operand #1 must be integer or block of integers}}
  %q = tile.addptr %p, %o : !tile.ptr<f32>, f32
  tile.return
}

// -----

tile.func @int_to_ptr_width(%a: i32) {
  // expected-error @+1 {{addresses are i64, got i32}}
  %p = tile.int_to_ptr %a : i32 -> !tile.ptr<f32>
  tile.return
}

// -----

tile.func @ptr_to_int_shape(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{source and result must have the same shape, got !tile.ptr<f32> and 4xi64}}
  %a = tile.ptr_to_int %p : !tile.ptr<f32> -> tensor<4xi64>
  tile.return
}

// -----

tile.func @load_other_without_mask(%p: !tile.ptr<f32>, %o: f32) {
  // expected-error @+1 {{'other' is the value of masked-off elements and needs a mask}}
  %v = "tile.load"(%p, %o) <{operandSegmentSizes = array<i32: 1, 0, 1>}> : (!tile.ptr<f32>, f32) -> f32
  tile.return
}

// -----

tile.func @load_mask_shape(%p: !tile.ptr<f32>, %m: i1) {
  %s = tile.splat %p : !tile.ptr<f32> -> tensor<4x!tile.ptr<f32>>
  // expected-error @+1 {{mask has the shape of ptr}}
  %v = "tile.load"(%s, %m) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<4x!tile.ptr<f32>>, i1) -> tensor<4xf32>
  tile.return
}

// -----

tile.func @load_not_pointer(%p: f32) {
  // expected-error @+1 {{operand #0 must be pointer or block of pointers}}
  %v = "tile.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (f32) -> f32
  tile.return
}

// -----

tile.func @store_value_type(%p: !tile.ptr<f32>, %v: f16) {
  // expected-error @+1 {{value is the pointee of ptr}}
  "tile.store"(%p, %v) : (!tile.ptr<f32>, f16) -> ()
  tile.return
}

// -----

tile.func @atomic_rmw_kind(%p: !tile.ptr<f32>, %v: f32) {
  // expected-error @+1 {{atomic add does not support 'f32'}}
  %o = tile.atomic_rmw add, %p, %v : !tile.ptr<f32>
  tile.return
}

// -----

tile.func @atomic_rmw_fadd_int(%p: !tile.ptr<i32>, %v: i32) {
  // expected-error @+1 {{atomic fadd does not support 'i32'}}
  %o = tile.atomic_rmw fadd, %p, %v : !tile.ptr<i32>
  tile.return
}

// -----

tile.func @atomic_cas_width(%p: !tile.ptr<i8>, %c: i8, %v: i8) {
  // expected-error @+1 {{compare-and-swap takes 16-, 32- or 64-bit values, got 'i8'}}
  %o = tile.atomic_cas %p, %c, %v : !tile.ptr<i8>
  tile.return
}

// -----

tile.func @bitcast_width(%x: f32) {
  // expected-error @+1 {{bit widths differ: 'f32' has 32 bits, 'i64' has 64}}
  %y = tile.bitcast %x : f32 -> i64
  tile.return
}

// -----

tile.func @bitcast_pointer(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{cannot bitcast between pointers and numbers}}
  %y = tile.bitcast %p : !tile.ptr<f32> -> i64
  tile.return
}

// -----

tile.func @fp_to_fp_needs_rounding(%x: f32) {
  // expected-error @+1 {{conversion to 'f8E4M3FN' needs a rounding mode (rounding = rtne|rtz)}}
  %y = tile.fp_to_fp %x : f32 -> f8E4M3FN
  tile.return
}

// -----

tile.func @fp_to_fp_no_fp8(%x: f32) {
  // expected-error @+1 {{converts to or from f8E4M3FN/f8E5M2; use arith.extf/arith.truncf for 'f32' -> 'f16'}}
  %y = tile.fp_to_fp %x, rounding = rtne : f32 -> f16
  tile.return
}

// -----

tile.func @fp_to_fp_widen_rounding(%x: f8E5M2) {
  // expected-error @+1 {{conversion from 'f8E5M2' to 'f32' is exact and takes no rounding mode}}
  %y = tile.fp_to_fp %x, rounding = rtne : f8E5M2 -> f32
  tile.return
}

// -----

tile.func @reduce_axis() {
  %x = tile.range 0, 8 : tensor<8xi32>
  // expected-error @+1 {{axis 1 is out of range for a block of rank 1}}
  %s = tile.reduce(%x) axis = 1 : (tensor<8xi32>) -> i32 {
  ^bb0(%a: i32, %b: i32):
    %c = arith.addi %a, %b : i32
    tile.reduce.return %c : i32
  }
  tile.return
}

// -----

tile.func @reduce_result_shape() {
  %x = arith.constant dense<1> : tensor<4x8xi32>
  // expected-error @+1 {{reducing 4x8xi32 along axis 1 gives a block of shape 4 and type 'i32', but the result is 8xi32}}
  %s = tile.reduce(%x) axis = 1 : (tensor<4x8xi32>) -> tensor<8xi32> {
  ^bb0(%a: i32, %b: i32):
    %c = arith.addi %a, %b : i32
    tile.reduce.return %c : i32
  }
  tile.return
}

// -----

tile.func @reduce_region_arguments() {
  %x = tile.range 0, 8 : tensor<8xi32>
  // expected-error @+1 {{combine region must take 2 arguments (accumulated and next value of each of 1 operand(s)), got 1}}
  %s = tile.reduce(%x) axis = 0 : (tensor<8xi32>) -> i32 {
  ^bb0(%a: i32):
    tile.reduce.return %a : i32
  }
  tile.return
}

// -----

tile.func @reduce_region_yield() {
  %x = tile.range 0, 8 : tensor<8xi32>
  // expected-error @+1 {{combine region yields 'i64' for operand #0, expected 'i32'}}
  %s = tile.reduce(%x) axis = 0 : (tensor<8xi32>) -> i32 {
  ^bb0(%a: i32, %b: i32):
    %c = arith.extsi %a : i32 to i64
    tile.reduce.return %c : i64
  }
  tile.return
}

// -----

tile.func @scan_axis() {
  %x = tile.range 0, 8 : tensor<8xi32>
  // expected-error @+1 {{axis -1 is out of range for a block of rank 1}}
  %s = tile.scan(%x) axis = -1 : (tensor<8xi32>) -> tensor<8xi32> {
  ^bb0(%a: i32, %b: i32):
    %c = arith.addi %a, %b : i32
    tile.scan.return %c : i32
  }
  tile.return
}

// -----

tile.func @scan_region_types() {
  %x = tile.range 0, 8 : tensor<8xi32>
  // expected-error @+1 {{combine region argument #1 has type 'f32', expected 'i32'}}
  %s = tile.scan(%x) axis = 0 : (tensor<8xi32>) -> tensor<8xi32> {
  ^bb0(%a: i32, %b: f32):
    tile.scan.return %a : i32
  }
  tile.return
}

// -----

tile.func @dot_inner_dimension() {
  %a = arith.constant dense<1.0> : tensor<16x32xf16>
  %b = arith.constant dense<1.0> : tensor<16x16xf16>
  %c = arith.constant dense<0.0> : tensor<16x16xf32>
  // expected-error @+1 {{inner dimensions differ: a is 16x32xf16 (K = 32), b is 16x16xf16 (K = 16)}}
  %d = tile.dot %a, %b, %c : tensor<16x32xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
  tile.return
}

// -----

tile.func @dot_accumulator() {
  %a = arith.constant dense<1.0> : tensor<16x16xbf16>
  %c = arith.constant dense<0.0> : tensor<16x16xf16>
  // expected-error @+1 {{cannot accumulate 'bf16' products in 'f16'}}
  %d = tile.dot %a, %a, %c : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf16>
  tile.return
}

// -----

tile.func @dot_precision() {
  %a = arith.constant dense<1.0> : tensor<16x16xf16>
  %c = arith.constant dense<0.0> : tensor<16x16xf32>
  // expected-error @+1 {{precision = tf32 applies to f32 operands only, got 'f16'}}
  %d = tile.dot %a, %a, %c precision = tf32 : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
  tile.return
}

// -----

tile.func @dot_rank() {
  %a = arith.constant dense<1.0> : tensor<16xf16>
  %c = arith.constant dense<0.0> : tensor<16xf32>
  // expected-error @+1 {{operands must all be 2-D (or 3-D with a batch dimension), got 16xf16, 16xf16, 16xf32}}
  %d = tile.dot %a, %a, %c : tensor<16xf16> * tensor<16xf16> -> tensor<16xf32>
  tile.return
}

// -----

tile.func @hint_entries() {
  %x = tile.range 0, 8 : tensor<8xi32>
  // expected-error @+1 {{multiple_of needs 1 entries (one per dimension), got 2}}
  %h = tile.hint %x {multiple_of = array<i32: 16, 16>} : tensor<8xi32>
  tile.return
}

// -----

tile.func @hint_empty() {
  %x = tile.range 0, 8 : tensor<8xi32>
  // expected-error @+1 {{states nothing: give multiple_of or max_contiguous}}
  %h = tile.hint %x : tensor<8xi32>
  tile.return
}

// -----

tile.func @print_bad_prefix(%x: i32) {
  // expected-error @+1 {{expected attribute value}}
  tile.print %x : i32
  tile.return
}

// -----

tile.func @assert_condition(%x: i32) {
  // expected-error @+1 {{operand #0 must be i1 or block of i1}}
  tile.assert %x, "nonzero" : i32
  tile.return
}

// -----

tile.func @reduce_return_parent(%x: i32) {
  // expected-error @+1 {{expects parent op 'tile.reduce'}}
  tile.reduce.return %x : i32
}

// -----

tile.func @scan_return_parent(%x: i32) {
  // expected-error @+1 {{expects parent op 'tile.scan'}}
  tile.scan.return %x : i32
}

// -----

tile.func @descriptor_counts(%map: !tile.tensormap, %base: !tile.ptr<f32>, %m: i64, %s: i64, %i: i32) {
  // expected-error @+1 {{needs one size, stride and offset per dimension of its 2-d block, got 1, 1 and 1}}
  %x = tile.descriptor_load %base[%i] sizes [%m] strides [%s] map %map : !tile.ptr<f32> -> tensor<16x16xf32>
  tile.return
}

// -----

tile.func @descriptor_elements(%map: !tile.tensormap, %base: !tile.ptr<f32>, %m: i64, %s: i64, %i: i32) {
  // expected-error @+1 {{block elements 'f16' are not what the base points to ('f32')}}
  %x = tile.descriptor_load %base[%i] sizes [%m] strides [%s] map %map : !tile.ptr<f32> -> tensor<16xf16>
  tile.return
}
