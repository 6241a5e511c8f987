// A persistent causal attention kernel (one loop over tiles at the kernel's top; in it a tile's loop over the
// keys left of the diagonal, then a loop over the diagonal block, masked) as traced for D 64, 128x64 tiles.
module {
  tile.func @walked_attention(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg4: i32 {tile.divisibility = 16 : i32, tile.positive}, %arg5: i32 {tile.positive}, %arg6: f32) {
    %cst = arith.constant dense<0xFF800000> : tensor<128x64xf32>
    %cst_0 = arith.constant dense<64> : tensor<64x1xi32>
    %cst_1 = arith.constant dense<64> : tensor<1x64xi32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x64xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_4 = arith.constant dense<0xFF800000> : tensor<128xf32>
    %cst_5 = arith.constant dense<64> : tensor<128x1xi32>
    %c0_i32 = arith.constant 0 : i32
    %c64_i32 = arith.constant 64 : i32
    %c64_i64 = arith.constant 64 : i64
    %cst_6 = arith.constant 1.44269502 : f32
    %c128_i32 = arith.constant 128 : i32
    %0 = arith.divsi %arg4, %c128_i32 : i32
    %1 = arith.muli %0, %arg5 : i32
    %2 = tile.range 0, 128 : tensor<128xi32>
    %3 = tile.range 0, 64 : tensor<64xi32>
    %4 = arith.mulf %arg6, %cst_6 : f32
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
      %23 = arith.muli %22, %cst_5 : tensor<128x1xi32>
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
      %34:3 = scf.for %arg8 = %c0_i32 to %19 step %c64_i32 iter_args(%arg9 = %cst_4, %arg10 = %cst_3, %arg11 = %cst_2) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>)  : i32 {
        %47 = tile.splat %arg8 : i32 -> tensor<64xi32>
        %48 = arith.addi %47, %3 : tensor<64xi32>
        %49 = tile.expand_dims %48 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %50 = arith.muli %49, %cst_1 : tensor<1x64xi32>
        %51 = tile.addptr %31, %50 : tensor<1x64x!tile.ptr<bf16>>, tensor<1x64xi32>
        %52 = tile.broadcast %51 : tensor<1x64x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %53 = tile.addptr %52, %11 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %54 = tile.load %53 : tensor<64x64x!tile.ptr<bf16>>
        %55 = tile.dot %29, %54, %cst_2 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %56 = arith.mulf %55, %12 : tensor<128x64xf32>
        %57 = tile.reduce(%56) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg12: f32, %arg13: f32):
          %79 = arith.maximumf %arg12, %arg13 : f32
          tile.reduce.return %79 : f32
        }
        %58 = arith.maximumf %arg9, %57 : tensor<128xf32>
        %59 = tile.expand_dims %58 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %60 = tile.broadcast %59 : tensor<128x1xf32> -> tensor<128x64xf32>
        %61 = arith.subf %56, %60 : tensor<128x64xf32>
        %62 = math.exp2 %61 : tensor<128x64xf32>
        %63 = arith.subf %arg9, %58 : tensor<128xf32>
        %64 = math.exp2 %63 : tensor<128xf32>
        %65 = tile.expand_dims %48 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %66 = arith.muli %65, %cst_0 : tensor<64x1xi32>
        %67 = tile.addptr %33, %66 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
        %68 = tile.broadcast %67 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %69 = tile.addptr %68, %13 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %70 = tile.load %69 : tensor<64x64x!tile.ptr<bf16>>
        %71 = tile.expand_dims %64 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %72 = tile.broadcast %71 : tensor<128x1xf32> -> tensor<128x64xf32>
        %73 = arith.mulf %arg11, %72 : tensor<128x64xf32>
        %74 = arith.truncf %62 : tensor<128x64xf32> to tensor<128x64xbf16>
        %75 = tile.dot %74, %70, %73 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %76 = tile.reduce(%62) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg12: f32, %arg13: f32):
          %79 = arith.addf %arg12, %arg13 : f32
          tile.reduce.return %79 : f32
        }
        %77 = arith.mulf %arg10, %64 : tensor<128xf32>
        %78 = arith.addf %77, %76 : tensor<128xf32>
        scf.yield %58, %78, %75 : tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>
      }
      %35 = arith.addi %19, %c128_i32 : i32
      %36 = tile.broadcast %22 : tensor<128x1xi32> -> tensor<128x64xi32>
      %37:3 = scf.for %arg8 = %19 to %35 step %c64_i32 iter_args(%arg9 = %34#0, %arg10 = %34#1, %arg11 = %34#2) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>)  : i32 {
        %47 = tile.splat %arg8 : i32 -> tensor<64xi32>
        %48 = arith.addi %47, %3 : tensor<64xi32>
        %49 = tile.expand_dims %48 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %50 = arith.muli %49, %cst_1 : tensor<1x64xi32>
        %51 = tile.addptr %31, %50 : tensor<1x64x!tile.ptr<bf16>>, tensor<1x64xi32>
        %52 = tile.broadcast %51 : tensor<1x64x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %53 = tile.addptr %52, %11 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %54 = tile.load %53 : tensor<64x64x!tile.ptr<bf16>>
        %55 = tile.dot %29, %54, %cst_2 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %56 = arith.mulf %55, %12 : tensor<128x64xf32>
        %57 = tile.broadcast %49 : tensor<1x64xi32> -> tensor<128x64xi32>
        %58 = arith.cmpi sge, %36, %57 : tensor<128x64xi32>
        %59 = arith.select %58, %56, %cst : tensor<128x64xi1>, tensor<128x64xf32>
        %60 = tile.reduce(%59) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg12: f32, %arg13: f32):
          %82 = arith.maximumf %arg12, %arg13 : f32
          tile.reduce.return %82 : f32
        }
        %61 = arith.maximumf %arg9, %60 : tensor<128xf32>
        %62 = tile.expand_dims %61 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %63 = tile.broadcast %62 : tensor<128x1xf32> -> tensor<128x64xf32>
        %64 = arith.subf %59, %63 : tensor<128x64xf32>
        %65 = math.exp2 %64 : tensor<128x64xf32>
        %66 = arith.subf %arg9, %61 : tensor<128xf32>
        %67 = math.exp2 %66 : tensor<128xf32>
        %68 = tile.expand_dims %48 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %69 = arith.muli %68, %cst_0 : tensor<64x1xi32>
        %70 = tile.addptr %33, %69 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
        %71 = tile.broadcast %70 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %72 = tile.addptr %71, %13 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %73 = tile.load %72 : tensor<64x64x!tile.ptr<bf16>>
        %74 = tile.expand_dims %67 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %75 = tile.broadcast %74 : tensor<128x1xf32> -> tensor<128x64xf32>
        %76 = arith.mulf %arg11, %75 : tensor<128x64xf32>
        %77 = arith.truncf %65 : tensor<128x64xf32> to tensor<128x64xbf16>
        %78 = tile.dot %77, %73, %76 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %79 = tile.reduce(%65) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg12: f32, %arg13: f32):
          %82 = arith.addf %arg12, %arg13 : f32
          tile.reduce.return %82 : f32
        }
        %80 = arith.mulf %arg10, %67 : tensor<128xf32>
        %81 = arith.addf %80, %79 : tensor<128xf32>
        scf.yield %61, %81, %78 : tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>
      }
      %38 = tile.expand_dims %37#1 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %39 = tile.broadcast %38 : tensor<128x1xf32> -> tensor<128x64xf32>
      %40 = arith.divf %37#2, %39 : tensor<128x64xf32>
      %41 = arith.truncf %40 : tensor<128x64xf32> to tensor<128x64xbf16>
      %42 = tile.addptr %arg3, %17 : !tile.ptr<bf16>, i64
      %43 = tile.splat %42 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %44 = tile.addptr %43, %23 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
      %45 = tile.broadcast %44 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
      %46 = tile.addptr %45, %9 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
      tile.store %46, %41 : tensor<128x64x!tile.ptr<bf16>>
    }
    tile.return
  }
}
