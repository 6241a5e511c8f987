// Flash attention (bench/tutorial/attention.cpp) as traced for D 256, 128x64 tiles: one loop of chained dots.
module {
  tile.func @tutorial_attention(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg4: i32 {tile.positive}, %arg5: f32) {
    %cst = arith.constant dense<256> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x64xf32>
    %cst_1 = arith.constant dense<256> : tensor<1x64xi32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_4 = arith.constant dense<0xFF800000> : tensor<128xf32>
    %cst_5 = arith.constant dense<256> : tensor<128x1xi32>
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_6 = arith.constant 1.44269502 : f32
    %c128_i32 = arith.constant 128 : i32
    %c256_i64 = arith.constant 256 : i64
    %0 = tile.program_id x : i32
    %1 = tile.program_id y : i32
    %2 = arith.extsi %1 : i32 to i64
    %3 = arith.extsi %arg4 : i32 to i64
    %4 = arith.muli %2, %3 : i64
    %5 = arith.muli %4, %c256_i64 : i64
    %6 = tile.range 0, 128 : tensor<128xi32>
    %7 = arith.muli %0, %c128_i32 : i32
    %8 = tile.splat %7 : i32 -> tensor<128xi32>
    %9 = arith.addi %8, %6 : tensor<128xi32>
    %10 = tile.range 0, 64 : tensor<64xi32>
    %11 = tile.range 0, 256 : tensor<256xi32>
    %12 = arith.mulf %arg5, %cst_6 : f32
    %13 = tile.expand_dims %11 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %14 = tile.expand_dims %9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %15 = arith.muli %14, %cst_5 : tensor<128x1xi32>
    %16 = tile.addptr %arg0, %5 : !tile.ptr<bf16>, i64
    %17 = tile.splat %16 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %18 = tile.addptr %17, %15 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
    %19 = tile.broadcast %18 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x256x!tile.ptr<bf16>>
    %20 = tile.broadcast %13 : tensor<1x256xi32> -> tensor<128x256xi32>
    %21 = tile.addptr %19, %20 : tensor<128x256x!tile.ptr<bf16>>, tensor<128x256xi32>
    %22 = tile.load %21 : tensor<128x256x!tile.ptr<bf16>>
    %23 = tile.expand_dims %11 {axis = 1 : i32} : tensor<256xi32> -> tensor<256x1xi32>
    %24 = tile.addptr %arg1, %5 : !tile.ptr<bf16>, i64
    %25 = tile.splat %24 : !tile.ptr<bf16> -> tensor<1x64x!tile.ptr<bf16>>
    %26 = tile.broadcast %23 : tensor<256x1xi32> -> tensor<256x64xi32>
    %27 = tile.splat %12 : f32 -> tensor<128xf32>
    %28 = tile.splat %12 : f32 -> tensor<128x64xf32>
    %29 = tile.addptr %arg2, %5 : !tile.ptr<bf16>, i64
    %30 = tile.splat %29 : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>>
    %31 = tile.broadcast %13 : tensor<1x256xi32> -> tensor<64x256xi32>
    %32:3 = scf.for %arg6 = %c0_i32 to %arg4 step %c64_i32 iter_args(%arg7 = %cst_4, %arg8 = %cst_3, %arg9 = %cst_2) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x256xf32>)  : i32 {
      %42 = tile.splat %arg6 : i32 -> tensor<64xi32>
      %43 = arith.addi %42, %10 : tensor<64xi32>
      %44 = tile.expand_dims %43 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %45 = arith.muli %44, %cst_1 : tensor<1x64xi32>
      %46 = tile.addptr %25, %45 : tensor<1x64x!tile.ptr<bf16>>, tensor<1x64xi32>
      %47 = tile.broadcast %46 : tensor<1x64x!tile.ptr<bf16>> -> tensor<256x64x!tile.ptr<bf16>>
      %48 = tile.addptr %47, %26 : tensor<256x64x!tile.ptr<bf16>>, tensor<256x64xi32>
      %49 = tile.load %48 : tensor<256x64x!tile.ptr<bf16>>
      %50 = tile.dot %22, %49, %cst_0 : tensor<128x256xbf16> * tensor<256x64xbf16> -> tensor<128x64xf32>
      %51 = tile.reduce(%50) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
      ^bb0(%arg10: f32, %arg11: f32):
        %75 = arith.maximumf %arg10, %arg11 : f32
        tile.reduce.return %75 : f32
      }
      %52 = arith.mulf %51, %27 : tensor<128xf32>
      %53 = arith.maximumf %arg7, %52 : tensor<128xf32>
      %54 = arith.mulf %50, %28 : tensor<128x64xf32>
      %55 = tile.expand_dims %53 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %56 = tile.broadcast %55 : tensor<128x1xf32> -> tensor<128x64xf32>
      %57 = arith.subf %54, %56 : tensor<128x64xf32>
      %58 = math.exp2 %57 : tensor<128x64xf32>
      %59 = arith.subf %arg7, %53 : tensor<128xf32>
      %60 = math.exp2 %59 : tensor<128xf32>
      %61 = tile.expand_dims %43 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %62 = arith.muli %61, %cst : tensor<64x1xi32>
      %63 = tile.addptr %30, %62 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
      %64 = tile.broadcast %63 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x256x!tile.ptr<bf16>>
      %65 = tile.addptr %64, %31 : tensor<64x256x!tile.ptr<bf16>>, tensor<64x256xi32>
      %66 = tile.load %65 : tensor<64x256x!tile.ptr<bf16>>
      %67 = tile.expand_dims %60 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %68 = tile.broadcast %67 : tensor<128x1xf32> -> tensor<128x256xf32>
      %69 = arith.mulf %arg9, %68 : tensor<128x256xf32>
      %70 = arith.truncf %58 : tensor<128x64xf32> to tensor<128x64xbf16>
      %71 = tile.dot %70, %66, %69 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      %72 = tile.reduce(%58) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
      ^bb0(%arg10: f32, %arg11: f32):
        %75 = arith.addf %arg10, %arg11 : f32
        tile.reduce.return %75 : f32
      }
      %73 = arith.mulf %arg8, %60 : tensor<128xf32>
      %74 = arith.addf %73, %72 : tensor<128xf32>
      scf.yield %53, %74, %71 : tensor<128xf32>, tensor<128xf32>, tensor<128x256xf32>
    }
    %33 = tile.expand_dims %32#1 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %34 = tile.broadcast %33 : tensor<128x1xf32> -> tensor<128x256xf32>
    %35 = arith.divf %32#2, %34 : tensor<128x256xf32>
    %36 = arith.truncf %35 : tensor<128x256xf32> to tensor<128x256xbf16>
    %37 = tile.addptr %arg3, %5 : !tile.ptr<bf16>, i64
    %38 = tile.splat %37 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %39 = tile.addptr %38, %15 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
    %40 = tile.broadcast %39 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x256x!tile.ptr<bf16>>
    %41 = tile.addptr %40, %20 : tensor<128x256x!tile.ptr<bf16>>, tensor<128x256xi32>
    tile.store %41, %36 : tensor<128x256x!tile.ptr<bf16>>
    tile.return
  }
}
