// A persistent attention kernel (one loop over tiles at the kernel's top, a tile's loop of keys inside) as
// traced for D 64, 128x64 tiles: one loop of chained dots in a walk over tiles.
module {
  tile.func @walked_attention(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg4: i32 {tile.divisibility = 16 : i32, tile.positive}, %arg5: i32 {tile.positive}, %arg6: f32) {
    %cst = arith.constant dense<64> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<64> : tensor<1x64xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x64xf32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_3 = arith.constant dense<0xFF800000> : tensor<128xf32>
    %cst_4 = arith.constant dense<64> : tensor<128x1xi32>
    %c0_i32 = arith.constant 0 : i32
    %c64_i32 = arith.constant 64 : i32
    %c64_i64 = arith.constant 64 : i64
    %cst_5 = arith.constant 1.44269502 : f32
    %c128_i32 = arith.constant 128 : i32
    %0 = arith.divsi %arg4, %c128_i32 : i32
    %1 = arith.muli %0, %arg5 : i32
    %2 = tile.range 0, 128 : tensor<128xi32>
    %3 = tile.range 0, 64 : tensor<64xi32>
    %4 = arith.mulf %arg6, %cst_5 : f32
    %5 = tile.num_programs x : i32
    %6 = tile.program_id x : i32
    %7 = arith.extsi %arg4 : i32 to i64
    %8 = tile.expand_dims %3 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %9 = tile.broadcast %8 : tensor<1x64xi32> -> tensor<128x64xi32>
    %10 = tile.expand_dims %3 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %11 = tile.broadcast %10 : tensor<64x1xi32> -> tensor<64x64xi32>
    %12 = tile.splat %4 : f32 -> tensor<128x64xf32>
    %13 = tile.broadcast %8 : tensor<1x64xi32> -> tensor<64x64xi32>
    scf.for %arg7 = %6 to %1 step %5  : i32 {
      %14 = arith.divsi %arg7, %0 : i32
      %15 = arith.extsi %14 : i32 to i64
      %16 = arith.muli %15, %7 : i64
      %17 = arith.muli %16, %c64_i64 : i64
      %18 = arith.remsi %arg7, %0 : i32
      %19 = arith.muli %18, %c128_i32 : i32
      %20 = tile.splat %19 : i32 -> tensor<128xi32>
      %21 = arith.addi %20, %2 : tensor<128xi32>
      %22 = tile.expand_dims %21 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %23 = arith.muli %22, %cst_4 : tensor<128x1xi32>
      %24 = tile.addptr %arg0, %17 : !tile.ptr<bf16>, i64
      %25 = tile.splat %24 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %26 = tile.addptr %25, %23 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
      %27 = tile.broadcast %26 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
      %28 = tile.addptr %27, %9 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
      %29 = tile.load %28 : tensor<128x64x!tile.ptr<bf16>>
      %30 = tile.addptr %arg1, %17 : !tile.ptr<bf16>, i64
      %31 = tile.splat %30 : !tile.ptr<bf16> -> tensor<1x64x!tile.ptr<bf16>>
      %32 = tile.addptr %arg2, %17 : !tile.ptr<bf16>, i64
      %33 = tile.splat %32 : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>>
      %34:3 = scf.for %arg8 = %c0_i32 to %arg4 step %c64_i32 iter_args(%arg9 = %cst_3, %arg10 = %cst_2, %arg11 = %cst_1) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>)  : i32 {
        %44 = tile.splat %arg8 : i32 -> tensor<64xi32>
        %45 = arith.addi %44, %3 : tensor<64xi32>
        %46 = tile.expand_dims %45 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %47 = arith.muli %46, %cst_0 : tensor<1x64xi32>
        %48 = tile.addptr %31, %47 : tensor<1x64x!tile.ptr<bf16>>, tensor<1x64xi32>
        %49 = tile.broadcast %48 : tensor<1x64x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %50 = tile.addptr %49, %11 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %51 = tile.load %50 : tensor<64x64x!tile.ptr<bf16>>
        %52 = tile.dot %29, %51, %cst_1 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %53 = arith.mulf %52, %12 : tensor<128x64xf32>
        %54 = tile.reduce(%53) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg12: f32, %arg13: f32):
          %76 = arith.maximumf %arg12, %arg13 : f32
          tile.reduce.return %76 : f32
        }
        %55 = arith.maximumf %arg9, %54 : tensor<128xf32>
        %56 = tile.expand_dims %55 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %57 = tile.broadcast %56 : tensor<128x1xf32> -> tensor<128x64xf32>
        %58 = arith.subf %53, %57 : tensor<128x64xf32>
        %59 = math.exp2 %58 : tensor<128x64xf32>
        %60 = arith.subf %arg9, %55 : tensor<128xf32>
        %61 = math.exp2 %60 : tensor<128xf32>
        %62 = tile.expand_dims %45 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %63 = arith.muli %62, %cst : tensor<64x1xi32>
        %64 = tile.addptr %33, %63 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
        %65 = tile.broadcast %64 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %66 = tile.addptr %65, %13 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %67 = tile.load %66 : tensor<64x64x!tile.ptr<bf16>>
        %68 = tile.expand_dims %61 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %69 = tile.broadcast %68 : tensor<128x1xf32> -> tensor<128x64xf32>
        %70 = arith.mulf %arg11, %69 : tensor<128x64xf32>
        %71 = arith.truncf %59 : tensor<128x64xf32> to tensor<128x64xbf16>
        %72 = tile.dot %71, %67, %70 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %73 = tile.reduce(%59) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg12: f32, %arg13: f32):
          %76 = arith.addf %arg12, %arg13 : f32
          tile.reduce.return %76 : f32
        }
        %74 = arith.mulf %arg10, %61 : tensor<128xf32>
        %75 = arith.addf %74, %73 : tensor<128xf32>
        scf.yield %55, %75, %72 : tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>
      }
      %35 = tile.expand_dims %34#1 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %36 = tile.broadcast %35 : tensor<128x1xf32> -> tensor<128x64xf32>
      %37 = arith.divf %34#2, %36 : tensor<128x64xf32>
      %38 = arith.truncf %37 : tensor<128x64xf32> to tensor<128x64xbf16>
      %39 = tile.addptr %arg3, %17 : !tile.ptr<bf16>, i64
      %40 = tile.splat %39 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %41 = tile.addptr %40, %23 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
      %42 = tile.broadcast %41 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
      %43 = tile.addptr %42, %9 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
      tile.store %43, %38 : tensor<128x64x!tile.ptr<bf16>>
    }
    tile.return
  }
}
