// Flash attention (bench/tutorial/attention.cpp) as traced for D 64, 128x64 tiles, with a causal mask applied
// in a branch to the products of the blocks from the program's first query on: one loop of chained dots whose
// softmax reads the first dot's result only through the branch.
module {
  tile.func @tutorial_attention(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg4: i32 {tile.positive}, %arg5: f32) {
    %0 = tile.program_id x : i32
    %1 = tile.program_id y : i32
    %2 = arith.extsi %1 : i32 to i64
    %3 = arith.extsi %arg4 : i32 to i64
    %4 = arith.muli %2, %3 : i64
    %c64_i64 = arith.constant 64 : i64
    %5 = arith.muli %4, %c64_i64 : i64
    %6 = tile.range 0, 128 : tensor<128xi32>
    %c128_i32 = arith.constant 128 : i32
    %7 = arith.muli %0, %c128_i32 : i32
    %8 = tile.splat %7 : i32 -> tensor<128xi32>
    %9 = arith.addi %8, %6 : tensor<128xi32>
    %10 = tile.range 0, 64 : tensor<64xi32>
    %11 = tile.range 0, 64 : tensor<64xi32>
    %cst = arith.constant 1.44269502 : f32
    %12 = arith.mulf %arg5, %cst : f32
    %13 = tile.expand_dims %11 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %14 = tile.expand_dims %9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %c64_i32 = arith.constant 64 : i32
    %15 = tile.splat %c64_i32 : i32 -> tensor<128x1xi32>
    %16 = arith.muli %14, %15 : tensor<128x1xi32>
    %17 = tile.addptr %arg0, %5 : !tile.ptr<bf16>, i64
    %18 = tile.splat %17 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %19 = tile.addptr %18, %16 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
    %20 = tile.broadcast %19 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
    %21 = tile.broadcast %13 : tensor<1x64xi32> -> tensor<128x64xi32>
    %22 = tile.addptr %20, %21 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %23 = tile.load %22 : tensor<128x64x!tile.ptr<bf16>>
    %cst_0 = arith.constant 0xFF800000 : f32
    %24 = tile.splat %cst_0 : f32 -> tensor<128xf32>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %25 = tile.splat %cst_1 : f32 -> tensor<128xf32>
    %cst_2 = arith.constant 0.000000e+00 : f32
    %26 = tile.splat %cst_2 : f32 -> tensor<128x64xf32>
    %c0_i32 = arith.constant 0 : i32
    %c64_i32_3 = arith.constant 64 : i32
    %27:3 = scf.for %arg6 = %c0_i32 to %arg4 step %c64_i32_3 iter_args(%arg7 = %24, %arg8 = %25, %arg9 = %26) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>)  : i32 {
      %42 = tile.splat %arg6 : i32 -> tensor<64xi32>
      %43 = arith.addi %42, %10 : tensor<64xi32>
      %44 = tile.expand_dims %11 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %45 = tile.expand_dims %43 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %c64_i32_5 = arith.constant 64 : i32
      %46 = tile.splat %c64_i32_5 : i32 -> tensor<1x64xi32>
      %47 = arith.muli %45, %46 : tensor<1x64xi32>
      %48 = tile.addptr %arg1, %5 : !tile.ptr<bf16>, i64
      %49 = tile.splat %48 : !tile.ptr<bf16> -> tensor<1x64x!tile.ptr<bf16>>
      %50 = tile.addptr %49, %47 : tensor<1x64x!tile.ptr<bf16>>, tensor<1x64xi32>
      %51 = tile.broadcast %50 : tensor<1x64x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
      %52 = tile.broadcast %44 : tensor<64x1xi32> -> tensor<64x64xi32>
      %53 = tile.addptr %51, %52 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
      %54 = tile.load %53 : tensor<64x64x!tile.ptr<bf16>>
      %cst_6 = arith.constant 0.000000e+00 : f32
      %55 = tile.splat %cst_6 : f32 -> tensor<128x64xf32>
      %products = tile.dot %23, %54, %55 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
      %cut = arith.cmpi sge, %arg6, %7 : i32
      %56 = scf.if %cut -> (tensor<128x64xf32>) {
        %qe = tile.expand_dims %9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %qb = tile.broadcast %qe : tensor<128x1xi32> -> tensor<128x64xi32>
        %ke = tile.expand_dims %43 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %kb = tile.broadcast %ke : tensor<1x64xi32> -> tensor<128x64xi32>
        %visible = arith.cmpi sle, %kb, %qb : tensor<128x64xi32>
        %hidden = tile.splat %cst_0 : f32 -> tensor<128x64xf32>
        %chosen = arith.select %visible, %products, %hidden : tensor<128x64xi1>, tensor<128x64xf32>
        scf.yield %chosen : tensor<128x64xf32>
      } else {
        scf.yield %products : tensor<128x64xf32>
      }
      %57 = tile.reduce(%56) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
      ^bb0(%arg10: f32, %arg11: f32):
        %88 = arith.maximumf %arg10, %arg11 : f32
        tile.reduce.return %88 : f32
      }
      %58 = tile.splat %12 : f32 -> tensor<128xf32>
      %59 = arith.mulf %57, %58 : tensor<128xf32>
      %60 = arith.maximumf %arg7, %59 : tensor<128xf32>
      %61 = tile.splat %12 : f32 -> tensor<128x64xf32>
      %62 = arith.mulf %56, %61 : tensor<128x64xf32>
      %63 = tile.expand_dims %60 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %64 = tile.broadcast %63 : tensor<128x1xf32> -> tensor<128x64xf32>
      %65 = arith.subf %62, %64 : tensor<128x64xf32>
      %66 = math.exp2 %65 : tensor<128x64xf32>
      %67 = arith.subf %arg7, %60 : tensor<128xf32>
      %68 = math.exp2 %67 : tensor<128xf32>
      %69 = tile.expand_dims %11 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %70 = tile.expand_dims %43 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %c64_i32_7 = arith.constant 64 : i32
      %71 = tile.splat %c64_i32_7 : i32 -> tensor<64x1xi32>
      %72 = arith.muli %70, %71 : tensor<64x1xi32>
      %73 = tile.addptr %arg2, %5 : !tile.ptr<bf16>, i64
      %74 = tile.splat %73 : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>>
      %75 = tile.addptr %74, %72 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
      %76 = tile.broadcast %75 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
      %77 = tile.broadcast %69 : tensor<1x64xi32> -> tensor<64x64xi32>
      %78 = tile.addptr %76, %77 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
      %79 = tile.load %78 : tensor<64x64x!tile.ptr<bf16>>
      %80 = tile.expand_dims %68 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %81 = tile.broadcast %80 : tensor<128x1xf32> -> tensor<128x64xf32>
      %82 = arith.mulf %arg9, %81 : tensor<128x64xf32>
      %83 = arith.truncf %66 : tensor<128x64xf32> to tensor<128x64xbf16>
      %84 = tile.dot %83, %79, %82 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
      %85 = tile.reduce(%66) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
      ^bb0(%arg10: f32, %arg11: f32):
        %88 = arith.addf %arg10, %arg11 : f32
        tile.reduce.return %88 : f32
      }
      %86 = arith.mulf %arg8, %68 : tensor<128xf32>
      %87 = arith.addf %86, %85 : tensor<128xf32>
      scf.yield %60, %87, %84 : tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>
    }
    %28 = tile.expand_dims %27#1 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %29 = tile.broadcast %28 : tensor<128x1xf32> -> tensor<128x64xf32>
    %30 = arith.divf %27#2, %29 : tensor<128x64xf32>
    %31 = arith.truncf %30 : tensor<128x64xf32> to tensor<128x64xbf16>
    %32 = tile.expand_dims %11 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %33 = tile.expand_dims %9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %c64_i32_4 = arith.constant 64 : i32
    %34 = tile.splat %c64_i32_4 : i32 -> tensor<128x1xi32>
    %35 = arith.muli %33, %34 : tensor<128x1xi32>
    %36 = tile.addptr %arg3, %5 : !tile.ptr<bf16>, i64
    %37 = tile.splat %36 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %38 = tile.addptr %37, %35 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
    %39 = tile.broadcast %38 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
    %40 = tile.broadcast %32 : tensor<1x64xi32> -> tensor<128x64xi32>
    %41 = tile.addptr %39, %40 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    tile.store %41, %31 : tensor<128x64x!tile.ptr<bf16>>
    tile.return
  }
}
