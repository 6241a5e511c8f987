// Axis info: contiguity, divisibility and constancy of integers and pointers.
// RUN: kiln-opt %s --kgpu-test-axis-info --split-input-file --verify-diagnostics

tile.func @vector_offsets(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32 {tile.divisibility = 16 : i32}) {
  // expected-remark @+1 {{contiguity = [1], divisibility = [1], constancy = [1]}}
  %pid = tile.program_id x : i32
  // expected-remark @+1 {{contiguity = [1], divisibility = [1024], constancy = [1]}}
  %c1024 = arith.constant 1024 : i32
  // expected-remark @+1 {{contiguity = [1], divisibility = [1024], constancy = [1]}}
  %start = arith.muli %pid, %c1024 : i32
  // expected-remark @+1 {{contiguity = [1024], divisibility = [1073741824], constancy = [1]}}
  %r = tile.range 0, 1024 : tensor<1024xi32>
  // expected-remark @+1 {{contiguity = [1], divisibility = [1024], constancy = [1024]}}
  %s = tile.splat %start : i32 -> tensor<1024xi32>
  // expected-remark @+1 {{contiguity = [1024], divisibility = [1024], constancy = [1]}}
  %offs = arith.addi %s, %r : tensor<1024xi32>
  // expected-remark @+1 {{contiguity = [1], divisibility = [16], constancy = [1024]}}
  %ns = tile.splat %n : i32 -> tensor<1024xi32>
  // Aligned runs of 16 lie wholly below or above n.
  // expected-remark @+1 {{contiguity = [1], divisibility = [1], constancy = [16]}}
  %mask = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
  // expected-remark @+1 {{contiguity = [1], divisibility = [16], constancy = [1024]}}
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  // Pointers: 4-byte elements, so 16-byte alignment survives a 1024-aligned offset.
  // expected-remark @+1 {{contiguity = [1024], divisibility = [16], constancy = [1]}}
  %p = tile.addptr %xs, %offs : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %p, %mask : tensor<1024x!tile.ptr<f32>>
  tile.return
}

// -----

tile.func @two_dimensional(%x: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %stride: i32 {tile.divisibility = 16 : i32}) {
  // expected-remark @+1 {{contiguity = [16], divisibility = [1073741824], constancy = [1]}}
  %rows = tile.range 0, 16 : tensor<16xi32>
  // expected-remark @+1 {{contiguity = [64], divisibility = [1073741824], constancy = [1]}}
  %cols = tile.range 0, 64 : tensor<64xi32>
  // expected-remark @+1 {{contiguity = [16, 1], divisibility = [1073741824, 1], constancy = [1, 1]}}
  %r = tile.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  // expected-remark @+1 {{contiguity = [1, 1], divisibility = [16, 16], constancy = [16, 1]}}
  %st = tile.splat %stride : i32 -> tensor<16x1xi32>
  // expected-remark @+1 {{contiguity = [1, 1], divisibility = [16, 16], constancy = [1, 1]}}
  %ro = arith.muli %r, %st : tensor<16x1xi32>
  // expected-remark @+1 {{contiguity = [1, 1], divisibility = [16, 16], constancy = [1, 64]}}
  %rb = tile.broadcast %ro : tensor<16x1xi32> -> tensor<16x64xi32>
  // expected-remark @+1 {{contiguity = [1, 64], divisibility = [1, 1073741824], constancy = [1, 1]}}
  %c = tile.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  // expected-remark @+1 {{contiguity = [1, 64], divisibility = [1, 1073741824], constancy = [16, 1]}}
  %cb = tile.broadcast %c : tensor<1x64xi32> -> tensor<16x64xi32>
  // expected-remark @+1 {{contiguity = [1, 64], divisibility = [1, 16], constancy = [1, 1]}}
  %o = arith.addi %rb, %cb : tensor<16x64xi32>
  tile.return
}

// -----

tile.func @hints(%n: i32) {
  // expected-remark @+1 {{contiguity = [128], divisibility = [1073741824], constancy = [1]}}
  %r = tile.range 0, 128 : tensor<128xi32>
  // expected-remark @+1 {{contiguity = [1], divisibility = [1], constancy = [128]}}
  %s = tile.splat %n : i32 -> tensor<128xi32>
  // Contiguous, but nothing is known of where the runs start.
  // expected-remark @+1 {{contiguity = [128], divisibility = [1], constancy = [1]}}
  %o = arith.addi %s, %r : tensor<128xi32>
  // expected-remark @+1 {{contiguity = [128], divisibility = [16], constancy = [1]}}
  %h = tile.hint %o {multiple_of = array<i32: 16>, max_contiguous = array<i32: 128>} : tensor<128xi32>
  tile.return
}

// -----

// Wrapping offsets around a size divisible by 16 (x % n) keeps runs of 16.
tile.func @wrapped_offsets(%n: i32 {tile.divisibility = 16 : i32}) {
  // expected-remark @+1 {{contiguity = [1], divisibility = [1], constancy = [1]}}
  %pid = tile.program_id x : i32
  // expected-remark @+1 {{contiguity = [1], divisibility = [128], constancy = [1]}}
  %c128 = arith.constant 128 : i32
  // expected-remark @+1 {{contiguity = [1], divisibility = [128], constancy = [1]}}
  %start = arith.muli %pid, %c128 : i32
  // expected-remark @+1 {{contiguity = [128], divisibility = [1073741824], constancy = [1]}}
  %r = tile.range 0, 128 : tensor<128xi32>
  // expected-remark @+1 {{contiguity = [1], divisibility = [128], constancy = [128]}}
  %s = tile.splat %start : i32 -> tensor<128xi32>
  // expected-remark @+1 {{contiguity = [128], divisibility = [128], constancy = [1]}}
  %offs = arith.addi %s, %r : tensor<128xi32>
  // expected-remark @+1 {{contiguity = [1], divisibility = [16], constancy = [128]}}
  %ns = tile.splat %n : i32 -> tensor<128xi32>
  // expected-remark @+1 {{contiguity = [16], divisibility = [16], constancy = [1]}}
  %wrapped = arith.remsi %offs, %ns : tensor<128xi32>
  tile.return
}
