// Causal flash attention (bench/tutorial/attention.cpp) as traced for D 128, 128x128 tiles: two loops of chained dots.
module {
  tile.func @tutorial_attention(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg4: i32 {tile.positive}, %arg5: f32) {
    %0 = tile.program_id x : i32
    %1 = tile.program_id y : i32
    %2 = arith.extsi %1 : i32 to i64
    %3 = arith.extsi %arg4 : i32 to i64
    %4 = arith.muli %2, %3 : i64
    %c128_i64 = arith.constant 128 : i64
    %5 = arith.muli %4, %c128_i64 : i64
    %6 = tile.range 0, 128 : tensor<128xi32>
    %c128_i32 = arith.constant 128 : i32
    %7 = arith.muli %0, %c128_i32 : i32
    %8 = tile.splat %7 : i32 -> tensor<128xi32>
    %9 = arith.addi %8, %6 : tensor<128xi32>
    %10 = tile.range 0, 128 : tensor<128xi32>
    %11 = tile.range 0, 128 : tensor<128xi32>
    %cst = arith.constant 1.44269502 : f32
    %12 = arith.mulf %arg5, %cst : f32
    %13 = tile.expand_dims %11 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
    %14 = tile.expand_dims %9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %c128_i32_0 = arith.constant 128 : i32
    %15 = tile.splat %c128_i32_0 : i32 -> tensor<128x1xi32>
    %16 = arith.muli %14, %15 : tensor<128x1xi32>
    %17 = tile.addptr %arg0, %5 : !tile.ptr<bf16>, i64
    %18 = tile.splat %17 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %19 = tile.addptr %18, %16 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
    %20 = tile.broadcast %19 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
    %21 = tile.broadcast %13 : tensor<1x128xi32> -> tensor<128x128xi32>
    %22 = tile.addptr %20, %21 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
    %23 = tile.load %22 : tensor<128x128x!tile.ptr<bf16>>
    %cst_1 = arith.constant 0xFF800000 : f32
    %24 = tile.splat %cst_1 : f32 -> tensor<128xf32>
    %cst_2 = arith.constant 0.000000e+00 : f32
    %25 = tile.splat %cst_2 : f32 -> tensor<128xf32>
    %cst_3 = arith.constant 0.000000e+00 : f32
    %26 = tile.splat %cst_3 : f32 -> tensor<128x128xf32>
    %c128_i32_4 = arith.constant 128 : i32
    %27 = arith.muli %0, %c128_i32_4 : i32
    %c0_i32 = arith.constant 0 : i32
    %c128_i32_5 = arith.constant 128 : i32
    %28:3 = scf.for %arg6 = %c0_i32 to %27 step %c128_i32_5 iter_args(%arg7 = %24, %arg8 = %25, %arg9 = %26) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>)  : i32 {
      %47 = tile.splat %arg6 : i32 -> tensor<128xi32>
      %48 = arith.addi %47, %10 : tensor<128xi32>
      %49 = tile.expand_dims %11 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %50 = tile.expand_dims %48 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %c128_i32_10 = arith.constant 128 : i32
      %51 = tile.splat %c128_i32_10 : i32 -> tensor<1x128xi32>
      %52 = arith.muli %50, %51 : tensor<1x128xi32>
      %53 = tile.addptr %arg1, %5 : !tile.ptr<bf16>, i64
      %54 = tile.splat %53 : !tile.ptr<bf16> -> tensor<1x128x!tile.ptr<bf16>>
      %55 = tile.addptr %54, %52 : tensor<1x128x!tile.ptr<bf16>>, tensor<1x128xi32>
      %56 = tile.broadcast %55 : tensor<1x128x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
      %57 = tile.broadcast %49 : tensor<128x1xi32> -> tensor<128x128xi32>
      %58 = tile.addptr %56, %57 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
      %59 = tile.load %58 : tensor<128x128x!tile.ptr<bf16>>
      %cst_11 = arith.constant 0.000000e+00 : f32
      %60 = tile.splat %cst_11 : f32 -> tensor<128x128xf32>
      %61 = tile.dot %23, %59, %60 : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
      %62 = tile.reduce(%61) axis = 1 : (tensor<128x128xf32>) -> tensor<128xf32> {
      ^bb0(%arg10: f32, %arg11: f32):
        %93 = arith.maximumf %arg10, %arg11 : f32
        tile.reduce.return %93 : f32
      }
      %63 = tile.splat %12 : f32 -> tensor<128xf32>
      %64 = arith.mulf %62, %63 : tensor<128xf32>
      %65 = arith.maximumf %arg7, %64 : tensor<128xf32>
      %66 = tile.splat %12 : f32 -> tensor<128x128xf32>
      %67 = arith.mulf %61, %66 : tensor<128x128xf32>
      %68 = tile.expand_dims %65 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %69 = tile.broadcast %68 : tensor<128x1xf32> -> tensor<128x128xf32>
      %70 = arith.subf %67, %69 : tensor<128x128xf32>
      %71 = math.exp2 %70 : tensor<128x128xf32>
      %72 = arith.subf %arg7, %65 : tensor<128xf32>
      %73 = math.exp2 %72 : tensor<128xf32>
      %74 = tile.expand_dims %11 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %75 = tile.expand_dims %48 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %c128_i32_12 = arith.constant 128 : i32
      %76 = tile.splat %c128_i32_12 : i32 -> tensor<128x1xi32>
      %77 = arith.muli %75, %76 : tensor<128x1xi32>
      %78 = tile.addptr %arg2, %5 : !tile.ptr<bf16>, i64
      %79 = tile.splat %78 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %80 = tile.addptr %79, %77 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
      %81 = tile.broadcast %80 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
      %82 = tile.broadcast %74 : tensor<1x128xi32> -> tensor<128x128xi32>
      %83 = tile.addptr %81, %82 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
      %84 = tile.load %83 : tensor<128x128x!tile.ptr<bf16>>
      %85 = tile.expand_dims %73 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %86 = tile.broadcast %85 : tensor<128x1xf32> -> tensor<128x128xf32>
      %87 = arith.mulf %arg9, %86 : tensor<128x128xf32>
      %88 = arith.truncf %71 : tensor<128x128xf32> to tensor<128x128xbf16>
      %89 = tile.dot %88, %84, %87 : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
      %90 = tile.reduce(%71) axis = 1 : (tensor<128x128xf32>) -> tensor<128xf32> {
      ^bb0(%arg10: f32, %arg11: f32):
        %93 = arith.addf %arg10, %arg11 : f32
        tile.reduce.return %93 : f32
      }
      %91 = arith.mulf %arg8, %73 : tensor<128xf32>
      %92 = arith.addf %91, %90 : tensor<128xf32>
      scf.yield %65, %92, %89 : tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>
    }
    %c1_i32 = arith.constant 1 : i32
    %29 = arith.addi %0, %c1_i32 : i32
    %c128_i32_6 = arith.constant 128 : i32
    %30 = arith.muli %29, %c128_i32_6 : i32
    %c128_i32_7 = arith.constant 128 : i32
    %31 = arith.muli %0, %c128_i32_7 : i32
    %c128_i32_8 = arith.constant 128 : i32
    %32:3 = scf.for %arg6 = %31 to %30 step %c128_i32_8 iter_args(%arg7 = %28#0, %arg8 = %28#1, %arg9 = %28#2) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>)  : i32 {
      %47 = tile.splat %arg6 : i32 -> tensor<128xi32>
      %48 = arith.addi %47, %10 : tensor<128xi32>
      %49 = tile.expand_dims %11 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %50 = tile.expand_dims %48 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %c128_i32_10 = arith.constant 128 : i32
      %51 = tile.splat %c128_i32_10 : i32 -> tensor<1x128xi32>
      %52 = arith.muli %50, %51 : tensor<1x128xi32>
      %53 = tile.addptr %arg1, %5 : !tile.ptr<bf16>, i64
      %54 = tile.splat %53 : !tile.ptr<bf16> -> tensor<1x128x!tile.ptr<bf16>>
      %55 = tile.addptr %54, %52 : tensor<1x128x!tile.ptr<bf16>>, tensor<1x128xi32>
      %56 = tile.broadcast %55 : tensor<1x128x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
      %57 = tile.broadcast %49 : tensor<128x1xi32> -> tensor<128x128xi32>
      %58 = tile.addptr %56, %57 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
      %59 = tile.load %58 : tensor<128x128x!tile.ptr<bf16>>
      %cst_11 = arith.constant 0.000000e+00 : f32
      %60 = tile.splat %cst_11 : f32 -> tensor<128x128xf32>
      %61 = tile.dot %23, %59, %60 : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
      %62 = tile.expand_dims %48 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %63 = tile.expand_dims %9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %64 = tile.broadcast %63 : tensor<128x1xi32> -> tensor<128x128xi32>
      %65 = tile.broadcast %62 : tensor<1x128xi32> -> tensor<128x128xi32>
      %66 = arith.cmpi sge, %64, %65 : tensor<128x128xi32>
      %67 = tile.splat %12 : f32 -> tensor<128x128xf32>
      %68 = arith.mulf %61, %67 : tensor<128x128xf32>
      %cst_12 = arith.constant -1.000000e+06 : f32
      %69 = tile.splat %cst_12 : f32 -> tensor<128x128xf32>
      %70 = arith.select %66, %68, %69 : tensor<128x128xi1>, tensor<128x128xf32>
      %71 = tile.reduce(%70) axis = 1 : (tensor<128x128xf32>) -> tensor<128xf32> {
      ^bb0(%arg10: f32, %arg11: f32):
        %98 = arith.maximumf %arg10, %arg11 : f32
        tile.reduce.return %98 : f32
      }
      %72 = arith.maximumf %arg7, %71 : tensor<128xf32>
      %73 = tile.expand_dims %72 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %74 = tile.broadcast %73 : tensor<128x1xf32> -> tensor<128x128xf32>
      %75 = arith.subf %70, %74 : tensor<128x128xf32>
      %76 = math.exp2 %75 : tensor<128x128xf32>
      %77 = arith.subf %arg7, %72 : tensor<128xf32>
      %78 = math.exp2 %77 : tensor<128xf32>
      %79 = tile.expand_dims %11 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %80 = tile.expand_dims %48 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %c128_i32_13 = arith.constant 128 : i32
      %81 = tile.splat %c128_i32_13 : i32 -> tensor<128x1xi32>
      %82 = arith.muli %80, %81 : tensor<128x1xi32>
      %83 = tile.addptr %arg2, %5 : !tile.ptr<bf16>, i64
      %84 = tile.splat %83 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %85 = tile.addptr %84, %82 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
      %86 = tile.broadcast %85 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
      %87 = tile.broadcast %79 : tensor<1x128xi32> -> tensor<128x128xi32>
      %88 = tile.addptr %86, %87 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
      %89 = tile.load %88 : tensor<128x128x!tile.ptr<bf16>>
      %90 = tile.expand_dims %78 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %91 = tile.broadcast %90 : tensor<128x1xf32> -> tensor<128x128xf32>
      %92 = arith.mulf %arg9, %91 : tensor<128x128xf32>
      %93 = arith.truncf %76 : tensor<128x128xf32> to tensor<128x128xbf16>
      %94 = tile.dot %93, %89, %92 : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
      %95 = tile.reduce(%76) axis = 1 : (tensor<128x128xf32>) -> tensor<128xf32> {
      ^bb0(%arg10: f32, %arg11: f32):
        %98 = arith.addf %arg10, %arg11 : f32
        tile.reduce.return %98 : f32
      }
      %96 = arith.mulf %arg8, %78 : tensor<128xf32>
      %97 = arith.addf %96, %95 : tensor<128xf32>
      scf.yield %72, %97, %94 : tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>
    }
    %33 = tile.expand_dims %32#1 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %34 = tile.broadcast %33 : tensor<128x1xf32> -> tensor<128x128xf32>
    %35 = arith.divf %32#2, %34 : tensor<128x128xf32>
    %36 = arith.truncf %35 : tensor<128x128xf32> to tensor<128x128xbf16>
    %37 = tile.expand_dims %11 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
    %38 = tile.expand_dims %9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %c128_i32_9 = arith.constant 128 : i32
    %39 = tile.splat %c128_i32_9 : i32 -> tensor<128x1xi32>
    %40 = arith.muli %38, %39 : tensor<128x1xi32>
    %41 = tile.addptr %arg3, %5 : !tile.ptr<bf16>, i64
    %42 = tile.splat %41 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %43 = tile.addptr %42, %40 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
    %44 = tile.broadcast %43 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
    %45 = tile.broadcast %37 : tensor<1x128xi32> -> tensor<128x128xi32>
    %46 = tile.addptr %44, %45 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
    tile.store %46, %36 : tensor<128x128x!tile.ptr<bf16>>
    tile.return
  }
}
