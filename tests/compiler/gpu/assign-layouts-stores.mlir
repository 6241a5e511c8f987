// Which stores of a tensor-core result are staged (AssignLayouts,
// docs/schedules.md section 1): after the loops the store converts the
// accumulator, through shared memory, to its own coalesced layout (16-byte
// vectors); inside a loop (a persistent program's), when the staging would
// take more than half a program's shared memory (128x256 f32 on sm_80: 128
// KB of 163), and in a cluster's programs it stores the accumulator's
// layout as it is.
// RUN: kiln-opt %s --kgpu-assign-layouts="num-warps=4 target=sm_80" --split-input-file | FileCheck %s

// CHECK-DAG: #[[ROWS:.*]] = #kgpu.blocked<{sizePerThread = [1, 4]
// CHECK-LABEL: tile.func @after_the_loop
// CHECK: scf.yield
// CHECK: %[[V:.*]] = kgpu.convert_layout %{{.*}} : tensor<64x64xf32, #linear{{[0-9]*}}> -> tensor<64x64xf32, #[[ROWS]]>
// CHECK-NEXT: tile.store %{{.*}}, %[[V]] : tensor<64x64x!tile.ptr<f32>, #[[ROWS]]>
tile.func @after_the_loop(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32},
    %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %rm = tile.range 0, 64 : tensor<64xi32>
  %rn = tile.range 0, 64 : tensor<64xi32>
  %rk = tile.range 0, 32 : tensor<32xi32>
  %arow = tile.expand_dims %rm {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %astride = arith.constant dense<32> : tensor<64x1xi32>
  %aro = arith.muli %arow, %astride : tensor<64x1xi32>
  %acol = tile.expand_dims %rk {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %arob = tile.broadcast %aro : tensor<64x1xi32> -> tensor<64x32xi32>
  %acolb = tile.broadcast %acol : tensor<1x32xi32> -> tensor<64x32xi32>
  %aoff = arith.addi %arob, %acolb : tensor<64x32xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %ap = tile.addptr %as, %aoff : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %brow = tile.expand_dims %rk {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %bstride = arith.constant dense<64> : tensor<32x1xi32>
  %bro = arith.muli %brow, %bstride : tensor<32x1xi32>
  %bcol = tile.expand_dims %rn {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %brob = tile.broadcast %bro : tensor<32x1xi32> -> tensor<32x64xi32>
  %bcolb = tile.broadcast %bcol : tensor<1x64xi32> -> tensor<32x64xi32>
  %boff = arith.addi %brob, %bcolb : tensor<32x64xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
  %cstride = arith.constant dense<64> : tensor<64x1xi32>
  %cro = arith.muli %arow, %cstride : tensor<64x1xi32>
  %crob = tile.broadcast %cro : tensor<64x1xi32> -> tensor<64x64xi32>
  %ccolb = tile.broadcast %bcol : tensor<1x64xi32> -> tensor<64x64xi32>
  %coff = arith.addi %crob, %ccolb : tensor<64x64xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  %acc = scf.for %i = %c0 to %k step %c32 iter_args(%sum = %zero) -> (tensor<64x64xf32>) : i32 {
    %av = tile.load %ap : tensor<64x32x!tile.ptr<f16>>
    %bv = tile.load %bp : tensor<32x64x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  tile.store %cp, %acc : tensor<64x64x!tile.ptr<f32>>
  tile.return
}

// -----

// CHECK-LABEL: tile.func @inside_the_loop
// CHECK-NOT: kgpu.convert_layout
// CHECK: tile.store %{{.*}}, %{{.*}} : tensor<64x64x!tile.ptr<f32>, #linear{{[0-9]*}}>
// CHECK-NOT: kgpu.convert_layout
// CHECK: tile.return
tile.func @inside_the_loop(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32},
    %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %rm = tile.range 0, 64 : tensor<64xi32>
  %rn = tile.range 0, 64 : tensor<64xi32>
  %rk = tile.range 0, 32 : tensor<32xi32>
  %arow = tile.expand_dims %rm {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %astride = arith.constant dense<32> : tensor<64x1xi32>
  %aro = arith.muli %arow, %astride : tensor<64x1xi32>
  %acol = tile.expand_dims %rk {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %arob = tile.broadcast %aro : tensor<64x1xi32> -> tensor<64x32xi32>
  %acolb = tile.broadcast %acol : tensor<1x32xi32> -> tensor<64x32xi32>
  %aoff = arith.addi %arob, %acolb : tensor<64x32xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %ap = tile.addptr %as, %aoff : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %brow = tile.expand_dims %rk {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %bstride = arith.constant dense<64> : tensor<32x1xi32>
  %bro = arith.muli %brow, %bstride : tensor<32x1xi32>
  %bcol = tile.expand_dims %rn {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %brob = tile.broadcast %bro : tensor<32x1xi32> -> tensor<32x64xi32>
  %bcolb = tile.broadcast %bcol : tensor<1x64xi32> -> tensor<32x64xi32>
  %boff = arith.addi %brob, %bcolb : tensor<32x64xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
  %cstride = arith.constant dense<64> : tensor<64x1xi32>
  %cro = arith.muli %arow, %cstride : tensor<64x1xi32>
  %crob = tile.broadcast %cro : tensor<64x1xi32> -> tensor<64x64xi32>
  %ccolb = tile.broadcast %bcol : tensor<1x64xi32> -> tensor<64x64xi32>
  %coff = arith.addi %crob, %ccolb : tensor<64x64xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  %acc = scf.for %i = %c0 to %k step %c32 iter_args(%sum = %zero) -> (tensor<64x64xf32>) : i32 {
    %av = tile.load %ap : tensor<64x32x!tile.ptr<f16>>
    %bv = tile.load %bp : tensor<32x64x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
    tile.store %cp, %d : tensor<64x64x!tile.ptr<f32>>
    scf.yield %d : tensor<64x64xf32>
  }
  tile.return
}

// -----

// CHECK-LABEL: tile.func @too_large
// CHECK-NOT: kgpu.convert_layout
// CHECK: tile.store %{{.*}}, %{{.*}} : tensor<128x256x!tile.ptr<f32>, #linear{{[0-9]*}}>
tile.func @too_large(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32},
    %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %rm = tile.range 0, 128 : tensor<128xi32>
  %rn = tile.range 0, 256 : tensor<256xi32>
  %rk = tile.range 0, 32 : tensor<32xi32>
  %arow = tile.expand_dims %rm {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %astride = arith.constant dense<32> : tensor<128x1xi32>
  %aro = arith.muli %arow, %astride : tensor<128x1xi32>
  %acol = tile.expand_dims %rk {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %arob = tile.broadcast %aro : tensor<128x1xi32> -> tensor<128x32xi32>
  %acolb = tile.broadcast %acol : tensor<1x32xi32> -> tensor<128x32xi32>
  %aoff = arith.addi %arob, %acolb : tensor<128x32xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<128x32x!tile.ptr<f16>>
  %ap = tile.addptr %as, %aoff : tensor<128x32x!tile.ptr<f16>>, tensor<128x32xi32>
  %brow = tile.expand_dims %rk {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %bstride = arith.constant dense<256> : tensor<32x1xi32>
  %bro = arith.muli %brow, %bstride : tensor<32x1xi32>
  %bcol = tile.expand_dims %rn {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
  %brob = tile.broadcast %bro : tensor<32x1xi32> -> tensor<32x256xi32>
  %bcolb = tile.broadcast %bcol : tensor<1x256xi32> -> tensor<32x256xi32>
  %boff = arith.addi %brob, %bcolb : tensor<32x256xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<32x256x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<32x256x!tile.ptr<f16>>, tensor<32x256xi32>
  %cstride = arith.constant dense<256> : tensor<128x1xi32>
  %cro = arith.muli %arow, %cstride : tensor<128x1xi32>
  %crob = tile.broadcast %cro : tensor<128x1xi32> -> tensor<128x256xi32>
  %ccolb = tile.broadcast %bcol : tensor<1x256xi32> -> tensor<128x256xi32>
  %coff = arith.addi %crob, %ccolb : tensor<128x256xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x256x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<128x256x!tile.ptr<f32>>, tensor<128x256xi32>
  %acc = scf.for %i = %c0 to %k step %c32 iter_args(%sum = %zero) -> (tensor<128x256xf32>) : i32 {
    %av = tile.load %ap : tensor<128x32x!tile.ptr<f16>>
    %bv = tile.load %bp : tensor<32x256x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<128x32xf16> * tensor<32x256xf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  tile.store %cp, %acc : tensor<128x256x!tile.ptr<f32>>
  tile.return
}

// -----

// CHECK-LABEL: tile.func @in_a_cluster
// CHECK-NOT: kgpu.convert_layout
// CHECK: tile.store %{{.*}}, %{{.*}} : tensor<64x64x!tile.ptr<f32>, #linear{{[0-9]*}}>
module attributes {tile.cluster_size = 2 : i32} {
tile.func @in_a_cluster(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32},
    %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %rm = tile.range 0, 64 : tensor<64xi32>
  %rn = tile.range 0, 64 : tensor<64xi32>
  %rk = tile.range 0, 32 : tensor<32xi32>
  %arow = tile.expand_dims %rm {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %astride = arith.constant dense<32> : tensor<64x1xi32>
  %aro = arith.muli %arow, %astride : tensor<64x1xi32>
  %acol = tile.expand_dims %rk {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %arob = tile.broadcast %aro : tensor<64x1xi32> -> tensor<64x32xi32>
  %acolb = tile.broadcast %acol : tensor<1x32xi32> -> tensor<64x32xi32>
  %aoff = arith.addi %arob, %acolb : tensor<64x32xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %ap = tile.addptr %as, %aoff : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %brow = tile.expand_dims %rk {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %bstride = arith.constant dense<64> : tensor<32x1xi32>
  %bro = arith.muli %brow, %bstride : tensor<32x1xi32>
  %bcol = tile.expand_dims %rn {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %brob = tile.broadcast %bro : tensor<32x1xi32> -> tensor<32x64xi32>
  %bcolb = tile.broadcast %bcol : tensor<1x64xi32> -> tensor<32x64xi32>
  %boff = arith.addi %brob, %bcolb : tensor<32x64xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
  %cstride = arith.constant dense<64> : tensor<64x1xi32>
  %cro = arith.muli %arow, %cstride : tensor<64x1xi32>
  %crob = tile.broadcast %cro : tensor<64x1xi32> -> tensor<64x64xi32>
  %ccolb = tile.broadcast %bcol : tensor<1x64xi32> -> tensor<64x64xi32>
  %coff = arith.addi %crob, %ccolb : tensor<64x64xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  %acc = scf.for %i = %c0 to %k step %c32 iter_args(%sum = %zero) -> (tensor<64x64xf32>) : i32 {
    %av = tile.load %ap : tensor<64x32x!tile.ptr<f16>>
    %bv = tile.load %bp : tensor<32x64x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  tile.store %cp, %acc : tensor<64x64x!tile.ptr<f32>>
  tile.return
}
}
