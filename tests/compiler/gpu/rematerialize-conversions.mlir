// Conversions inside loops of cheap values are recomputed in the wanted
// layout: a K mask built once as a row and used by A's tile and, through a
// transpose, by B's (as in the matmul tutorial) needs no shared-memory round
// trip per iteration; the range from before the loop is converted once,
// ahead of it. (The input is what layout assignment made of such a loop
// when the blocks A's, B's and C's addresses share were one value each;
// it now gives each use its own copy, so this conversion arises only where
// a block reaches two layouts through operations other than index
// arithmetic, as the mask's transpose here.)
// RUN: kiln-opt %s --kgpu-rematerialize-conversions --canonicalize --cse | FileCheck %s
// The matmul example (the same mask) keeps no conversion in its K loop.
// (Conversions outside loops, of chains ending at scalars, are recomputed
// too: tests/compiler/kilnc/schedules.test, NOCONVERT and BASES.)
// RUN: kilnc --kernel matmul --spec ddddddd1d1d1 --emit gpu | FileCheck %s --check-prefix=EXAMPLE

// CHECK-LABEL: tile.func @masked_k
// CHECK: %[[RANGE:.*]] = kgpu.convert_layout %{{.*}} : tensor<32xi32, #{{.*}}> -> tensor<32xi32, #[[SLICE:.*]]>
// CHECK: scf.for
// CHECK-NOT: kgpu.convert_layout
// CHECK: tile.splat %{{.*}} : i32 -> tensor<32xi32, #[[SLICE]]>
// CHECK-NEXT: arith.addi %{{.*}}, %[[RANGE]] : tensor<32xi32, #[[SLICE]]>
// CHECK-NEXT: tile.expand_dims
// CHECK-NEXT: arith.cmpi slt
// CHECK-NOT: kgpu.convert_layout
// CHECK: scf.yield
// EXAMPLE: scf.for
// EXAMPLE-NOT: kgpu.convert_layout
// EXAMPLE: scf.yield
#blocked = #kgpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kgpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#linear = #kgpu.linear<{register = [[8, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]}>
#linear1 = #kgpu.linear<{register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]}>
#linear2 = #kgpu.linear<{register = [[0, 1], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [0, 0], [0, 0], [0, 0]], warp = [[0, 0], [0, 0]]}>
#linear3 = #kgpu.linear<{register = [[0, 16]], lane = [[0, 0], [0, 0], [0, 0], [0, 1], [0, 2]], warp = [[0, 4], [0, 8]]}>
#slice = #kgpu.slice<{dim = 1, parent = #linear}>
#slice1 = #kgpu.slice<{dim = 1, parent = #blocked}>
#slice2 = #kgpu.slice<{dim = 0, parent = #blocked1}>
#slice3 = #kgpu.slice<{dim = 0, parent = #linear2}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.target = "sm_90a", kgpu.threads_per_warp = 32 : i32} {
  tile.func @masked_k(%arg0: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg3: i32) {
    %cst = arith.constant dense<64> : tensor<64x1xi32, #linear>
    %cst_0 = arith.constant dense<64> : tensor<32x1xi32, #blocked>
    %c0_i32 = arith.constant 0 : i32
    %c32_i32 = arith.constant 32 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #linear1>
    %c64_i32 = arith.constant 64 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf16, #blocked1>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32x64xf16, #blocked>
    %0 = tile.range 0, 64 : tensor<64xi32, #slice>
    %1 = tile.range 0, 32 : tensor<32xi32, #slice1>
    %2 = tile.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #slice> -> tensor<64x1xi32, #linear>
    %3 = tile.splat %arg3 : i32 -> tensor<64x1xi32, #linear>
    %4 = arith.muli %2, %3 : tensor<64x1xi32, #linear>
    %5 = kgpu.convert_layout %1 : tensor<32xi32, #slice1> -> tensor<32xi32, #slice2>
    %6 = tile.expand_dims %5 {axis = 0 : i32} : tensor<32xi32, #slice2> -> tensor<1x32xi32, #blocked1>
    %7 = kgpu.convert_layout %4 : tensor<64x1xi32, #linear> -> tensor<64x1xi32, #blocked1>
    %8 = tile.broadcast %7 : tensor<64x1xi32, #blocked1> -> tensor<64x32xi32, #blocked1>
    %9 = tile.broadcast %6 : tensor<1x32xi32, #blocked1> -> tensor<64x32xi32, #blocked1>
    %10 = arith.addi %8, %9 : tensor<64x32xi32, #blocked1>
    %11 = tile.splat %arg0 : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>, #blocked1>
    %12 = tile.addptr %11, %10 : tensor<64x32x!tile.ptr<f16>, #blocked1>, tensor<64x32xi32, #blocked1>
    %13 = tile.expand_dims %1 {axis = 1 : i32} : tensor<32xi32, #slice1> -> tensor<32x1xi32, #blocked>
    %14 = arith.muli %13, %cst_0 : tensor<32x1xi32, #blocked>
    %15 = kgpu.convert_layout %0 : tensor<64xi32, #slice> -> tensor<64xi32, #slice3>
    %16 = tile.expand_dims %15 {axis = 0 : i32} : tensor<64xi32, #slice3> -> tensor<1x64xi32, #linear2>
    %17 = tile.broadcast %14 : tensor<32x1xi32, #blocked> -> tensor<32x64xi32, #blocked>
    %18 = kgpu.convert_layout %16 : tensor<1x64xi32, #linear2> -> tensor<1x64xi32, #blocked>
    %19 = tile.broadcast %18 : tensor<1x64xi32, #blocked> -> tensor<32x64xi32, #blocked>
    %20 = arith.addi %17, %19 : tensor<32x64xi32, #blocked>
    %21 = tile.splat %arg1 : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>, #blocked>
    %22 = tile.addptr %21, %20 : tensor<32x64x!tile.ptr<f16>, #blocked>, tensor<32x64xi32, #blocked>
    %23 = tile.splat %arg3 : i32 -> tensor<1x32xi32, #linear3>
    %24 = scf.for %arg4 = %c0_i32 to %arg3 step %c32_i32 iter_args(%arg5 = %cst_1) -> (tensor<64x64xf32, #linear1>)  : i32 {
      %31 = tile.splat %arg4 : i32 -> tensor<32xi32, #slice1>
      %32 = arith.addi %31, %1 : tensor<32xi32, #slice1>
      %33 = tile.expand_dims %32 {axis = 0 : i32} : tensor<32xi32, #slice1> -> tensor<1x32xi32, #linear3>
      %34 = arith.cmpi slt, %33, %23 : tensor<1x32xi32, #linear3>
      %35 = kgpu.convert_layout %34 : tensor<1x32xi1, #linear3> -> tensor<1x32xi1, #blocked1>
      %36 = tile.broadcast %35 : tensor<1x32xi1, #blocked1> -> tensor<64x32xi1, #blocked1>
      %37 = tile.trans %34 {order = array<i32: 1, 0>} : tensor<1x32xi1, #linear3> -> tensor<32x1xi1, #blocked>
      %38 = tile.broadcast %37 : tensor<32x1xi1, #blocked> -> tensor<32x64xi1, #blocked>
      %39 = tile.splat %arg4 : i32 -> tensor<64x32xi32, #blocked1>
      %40 = tile.addptr %12, %39 : tensor<64x32x!tile.ptr<f16>, #blocked1>, tensor<64x32xi32, #blocked1>
      %41 = tile.load %40, %36, %cst_2 : tensor<64x32x!tile.ptr<f16>, #blocked1>
      %42 = arith.muli %arg4, %c64_i32 : i32
      %43 = tile.splat %42 : i32 -> tensor<32x64xi32, #blocked>
      %44 = tile.addptr %22, %43 : tensor<32x64x!tile.ptr<f16>, #blocked>, tensor<32x64xi32, #blocked>
      %45 = tile.load %44, %38, %cst_3 : tensor<32x64x!tile.ptr<f16>, #blocked>
      %46 = tile.dot %41, %45, %arg5 {kgpu.wgmma} : tensor<64x32xf16, #blocked1> * tensor<32x64xf16, #blocked> -> tensor<64x64xf32, #linear1>
      scf.yield %46 : tensor<64x64xf32, #linear1>
    }
    %25 = arith.muli %2, %cst : tensor<64x1xi32, #linear>
    %26 = tile.broadcast %25 : tensor<64x1xi32, #linear> -> tensor<64x64xi32, #linear1>
    %27 = tile.broadcast %16 : tensor<1x64xi32, #linear2> -> tensor<64x64xi32, #linear1>
    %28 = arith.addi %26, %27 : tensor<64x64xi32, #linear1>
    %29 = tile.splat %arg2 : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>, #linear1>
    %30 = tile.addptr %29, %28 : tensor<64x64x!tile.ptr<f32>, #linear1>, tensor<64x64xi32, #linear1>
    tile.store %30, %24 : tensor<64x64x!tile.ptr<f32>, #linear1>
    tile.return
  }
}

