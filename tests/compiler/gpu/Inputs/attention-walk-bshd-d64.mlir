// The ops library's persistent attention kernel as traced for D 64, 128x64 tiles, [batch, seq, heads, D]: a
// head's offset within a token's row (a box's column) comes from the walk's counter through a quotient by
// max(query blocks, 1).
module {
  tile.func @walked_attention(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg4: i32 {tile.divisibility = 16 : i32, tile.positive}, %arg5: i32 {tile.divisibility = 16 : i32, tile.positive}, %arg6: i32 {tile.positive}, %arg7: f32, %arg8: i32 {tile.positive}, %arg9: i32 {tile.positive}, %arg10: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg11: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg12: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg13: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg14: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg15: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg16: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg17: i64 {tile.divisibility = 16 : i32, tile.positive}) {
    %cst = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x64xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_2 = arith.constant dense<0xFF800000> : tensor<128xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %c64_i64 = arith.constant 64 : i64
    %c1_i32 = arith.constant 1 : i32
    %c128_i32 = arith.constant 128 : i32
    %c127_i32 = arith.constant 127 : i32
    %0 = arith.addi %arg4, %c127_i32 : i32
    %1 = arith.divsi %0, %c128_i32 : i32
    %2 = arith.maxsi %1, %c1_i32 : i32
    %3 = tile.program_id x : i32
    %4 = tile.num_programs x : i32
    %5 = arith.muli %1, %arg8 : i32
    %6 = arith.divsi %3, %2 : i32
    %7 = arith.remsi %3, %2 : i32
    %8 = arith.remsi %6, %arg8 : i32
    %9 = arith.divsi %6, %arg8 : i32
    %10 = arith.cmpi slt, %3, %5 : i32
    %11 = arith.extsi %9 : i32 to i64
    %12 = arith.extsi %8 : i32 to i64
    %13 = arith.muli %12, %c64_i64 : i64
    %14 = arith.muli %11, %arg10 : i64
    %15 = arith.muli %14, %arg11 : i64
    %16 = arith.addi %15, %13 : i64
    %17 = tile.addptr %arg0, %16 : !tile.ptr<bf16>, i64
    %18 = tile.range 0, 128 : tensor<128xi32>
    %19 = arith.muli %7, %c128_i32 : i32
    %20 = tile.splat %19 : i32 -> tensor<128xi32>
    %21 = arith.addi %20, %18 : tensor<128xi32>
    %22 = tile.splat %arg4 : i32 -> tensor<128xi32>
    %23 = arith.cmpi slt, %21, %22 : tensor<128xi32>
    %24 = tile.splat %10 : i1 -> tensor<128xi1>
    %25 = arith.andi %23, %24 : tensor<128xi1>
    %26 = tile.range 0, 64 : tensor<64xi32>
    %27 = tile.expand_dims %25 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
    %28 = tile.expand_dims %26 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %29 = arith.extsi %21 : tensor<128xi32> to tensor<128xi64>
    %30 = tile.expand_dims %29 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
    %31 = tile.splat %arg11 : i64 -> tensor<128x1xi64>
    %32 = arith.muli %30, %31 : tensor<128x1xi64>
    %33 = tile.splat %17 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %34 = tile.addptr %33, %32 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
    %35 = tile.broadcast %34 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
    %36 = tile.broadcast %28 : tensor<1x64xi32> -> tensor<128x64xi32>
    %37 = tile.addptr %35, %36 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %38 = tile.broadcast %27 : tensor<128x1xi1> -> tensor<128x64xi1>
    %39 = tile.load %37, %38, %cst_3 : tensor<128x64x!tile.ptr<bf16>>
    %40 = arith.divsi %arg5, %c64_i32 : i32
    %41 = arith.muli %40, %c64_i32 : i32
    %42 = tile.expand_dims %26 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %43 = tile.splat %arg13 : i64 -> tensor<1x64xi64>
    %44 = tile.broadcast %42 : tensor<64x1xi32> -> tensor<64x64xi32>
    %45 = tile.splat %arg7 : f32 -> tensor<128x64xf32>
    %46 = tile.splat %arg7 : f32 -> tensor<128xf32>
    %47 = tile.splat %arg15 : i64 -> tensor<64x1xi64>
    %48 = tile.broadcast %28 : tensor<1x64xi32> -> tensor<64x64xi32>
    %49 = tile.splat %arg17 : i64 -> tensor<128x1xi64>
    %50 = scf.for %arg18 = %3 to %5 step %4 iter_args(%arg19 = %39) -> (tensor<128x64xbf16>)  : i32 {
      %51 = arith.divsi %arg18, %2 : i32
      %52 = arith.remsi %arg18, %2 : i32
      %53 = arith.remsi %51, %arg8 : i32
      %54 = arith.divsi %51, %arg8 : i32
      %55 = arith.cmpi slt, %arg18, %5 : i32
      %56 = arith.extsi %54 : i32 to i64
      %57 = arith.extsi %53 : i32 to i64
      %58 = arith.muli %57, %c64_i64 : i64
      %59 = arith.muli %56, %arg16 : i64
      %60 = arith.muli %59, %arg17 : i64
      %61 = arith.addi %60, %58 : i64
      %62 = tile.addptr %arg3, %61 : !tile.ptr<bf16>, i64
      %63 = arith.muli %56, %arg12 : i64
      %64 = arith.muli %63, %arg13 : i64
      %65 = arith.addi %64, %58 : i64
      %66 = tile.addptr %arg1, %65 : !tile.ptr<bf16>, i64
      %67 = arith.muli %56, %arg14 : i64
      %68 = arith.muli %67, %arg15 : i64
      %69 = arith.addi %68, %58 : i64
      %70 = tile.addptr %arg2, %69 : !tile.ptr<bf16>, i64
      %71 = arith.muli %52, %c128_i32 : i32
      %72 = tile.splat %71 : i32 -> tensor<128xi32>
      %73 = arith.addi %72, %18 : tensor<128xi32>
      %74 = arith.cmpi slt, %73, %22 : tensor<128xi32>
      %75 = tile.splat %55 : i1 -> tensor<128xi1>
      %76 = arith.andi %74, %75 : tensor<128xi1>
      %77 = arith.select %55, %arg5, %c0_i32 : i32
      %78 = arith.minsi %77, %c0_i32 : i32
      %79 = arith.minsi %41, %77 : i32
      %80 = arith.maxsi %79, %78 : i32
      %81 = tile.splat %66 : !tile.ptr<bf16> -> tensor<1x64x!tile.ptr<bf16>>
      %82 = tile.splat %70 : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>>
      %83:3 = scf.for %arg20 = %78 to %80 step %c64_i32 iter_args(%arg21 = %cst_2, %arg22 = %cst_1, %arg23 = %cst_0) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>)  : i32 {
        %131 = tile.splat %arg20 : i32 -> tensor<64xi32>
        %132 = arith.addi %131, %26 : tensor<64xi32>
        %133 = arith.extsi %132 : tensor<64xi32> to tensor<64xi64>
        %134 = tile.expand_dims %133 {axis = 0 : i32} : tensor<64xi64> -> tensor<1x64xi64>
        %135 = arith.muli %134, %43 : tensor<1x64xi64>
        %136 = tile.addptr %81, %135 : tensor<1x64x!tile.ptr<bf16>>, tensor<1x64xi64>
        %137 = tile.broadcast %136 : tensor<1x64x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %138 = tile.addptr %137, %44 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %139 = tile.load %138 : tensor<64x64x!tile.ptr<bf16>>
        %140 = tile.dot %arg19, %139, %cst_0 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %141 = arith.mulf %140, %45 : tensor<128x64xf32>
        %142 = tile.reduce(%140) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg24: f32, %arg25: f32):
          %165 = arith.maximumf %arg24, %arg25 : f32
          tile.reduce.return %165 : f32
        }
        %143 = arith.mulf %142, %46 : tensor<128xf32>
        %144 = arith.maximumf %arg21, %143 : tensor<128xf32>
        %145 = tile.expand_dims %144 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %146 = tile.broadcast %145 : tensor<128x1xf32> -> tensor<128x64xf32>
        %147 = arith.subf %141, %146 : tensor<128x64xf32>
        %148 = math.exp2 %147 : tensor<128x64xf32>
        %149 = arith.subf %arg21, %144 : tensor<128xf32>
        %150 = math.exp2 %149 : tensor<128xf32>
        %151 = tile.expand_dims %133 {axis = 1 : i32} : tensor<64xi64> -> tensor<64x1xi64>
        %152 = arith.muli %151, %47 : tensor<64x1xi64>
        %153 = tile.addptr %82, %152 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi64>
        %154 = tile.broadcast %153 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %155 = tile.addptr %154, %48 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %156 = tile.load %155 : tensor<64x64x!tile.ptr<bf16>>
        %157 = tile.expand_dims %150 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %158 = tile.broadcast %157 : tensor<128x1xf32> -> tensor<128x64xf32>
        %159 = arith.mulf %arg23, %158 : tensor<128x64xf32>
        %160 = arith.truncf %148 : tensor<128x64xf32> to tensor<128x64xbf16>
        %161 = tile.dot %160, %156, %159 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %162 = tile.reduce(%148) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg24: f32, %arg25: f32):
          %165 = arith.addf %arg24, %arg25 : f32
          tile.reduce.return %165 : f32
        }
        %163 = arith.mulf %arg22, %150 : tensor<128xf32>
        %164 = arith.addf %163, %162 : tensor<128xf32>
        scf.yield %144, %164, %161 : tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>
      }
      %84 = arith.addi %arg18, %4 : i32
      %85 = arith.divsi %84, %2 : i32
      %86 = arith.remsi %84, %2 : i32
      %87 = arith.remsi %85, %arg8 : i32
      %88 = arith.divsi %85, %arg8 : i32
      %89 = arith.cmpi slt, %84, %5 : i32
      %90 = arith.extsi %88 : i32 to i64
      %91 = arith.extsi %87 : i32 to i64
      %92 = arith.muli %91, %c64_i64 : i64
      %93 = arith.muli %90, %arg10 : i64
      %94 = arith.muli %93, %arg11 : i64
      %95 = arith.addi %94, %92 : i64
      %96 = tile.addptr %arg0, %95 : !tile.ptr<bf16>, i64
      %97 = arith.muli %86, %c128_i32 : i32
      %98 = tile.splat %97 : i32 -> tensor<128xi32>
      %99 = arith.addi %98, %18 : tensor<128xi32>
      %100 = arith.cmpi slt, %99, %22 : tensor<128xi32>
      %101 = tile.splat %89 : i1 -> tensor<128xi1>
      %102 = arith.andi %100, %101 : tensor<128xi1>
      %103 = tile.expand_dims %102 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %104 = arith.extsi %99 : tensor<128xi32> to tensor<128xi64>
      %105 = tile.expand_dims %104 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
      %106 = arith.muli %105, %31 : tensor<128x1xi64>
      %107 = tile.splat %96 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %108 = tile.addptr %107, %106 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
      %109 = tile.broadcast %108 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
      %110 = tile.addptr %109, %36 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
      %111 = tile.broadcast %103 : tensor<128x1xi1> -> tensor<128x64xi1>
      %112 = tile.load %110, %111, %cst_3 : tensor<128x64x!tile.ptr<bf16>>
      %113 = arith.cmpf ogt, %83#1, %cst_1 : tensor<128xf32>
      %114 = arith.select %113, %83#1, %cst : tensor<128xi1>, tensor<128xf32>
      %115 = tile.expand_dims %114 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %116 = tile.broadcast %115 : tensor<128x1xf32> -> tensor<128x64xf32>
      %117 = arith.divf %83#2, %116 : tensor<128x64xf32>
      %118 = tile.expand_dims %113 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %119 = tile.broadcast %118 : tensor<128x1xi1> -> tensor<128x64xi1>
      %120 = arith.select %119, %117, %cst_0 : tensor<128x64xi1>, tensor<128x64xf32>
      %121 = tile.expand_dims %76 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %122 = arith.truncf %120 : tensor<128x64xf32> to tensor<128x64xbf16>
      %123 = arith.extsi %73 : tensor<128xi32> to tensor<128xi64>
      %124 = tile.expand_dims %123 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
      %125 = arith.muli %124, %49 : tensor<128x1xi64>
      %126 = tile.splat %62 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %127 = tile.addptr %126, %125 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
      %128 = tile.broadcast %127 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
      %129 = tile.addptr %128, %36 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
      %130 = tile.broadcast %121 : tensor<128x1xi1> -> tensor<128x64xi1>
      tile.store %129, %122, %130 : tensor<128x64x!tile.ptr<bf16>>
      scf.yield %112 : tensor<128x64xbf16>
    }
    tile.return
  }
}
