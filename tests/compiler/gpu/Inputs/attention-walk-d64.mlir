// The ops library's persistent attention kernel (a loop over tiles at the kernel's top, a tile's loop of keys
// inside) as traced for D 64, 128x64 tiles, [batch, heads, seq, D]: one loop of chained dots in a walk over tiles,
// which carries the next tile's queries (loaded under the tile's end).
module {
  tile.func @walked_attention(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg4: i32 {tile.divisibility = 16 : i32, tile.positive}, %arg5: i32 {tile.divisibility = 16 : i32, tile.positive}, %arg6: i32 {tile.positive}, %arg7: f32, %arg8: i32 {tile.positive}, %arg9: i32 {tile.positive}, %arg10: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg11: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg12: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg13: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg14: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg15: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg16: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg17: i64 {tile.divisibility = 16 : i32, tile.positive}) {
    %cst = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst_0 = arith.constant dense<64> : tensor<64x1xi64>
    %cst_1 = arith.constant dense<64> : tensor<1x64xi64>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x64xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_4 = arith.constant dense<0xFF800000> : tensor<128xf32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_6 = arith.constant dense<64> : tensor<128x1xi64>
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
    %13 = arith.muli %12, %arg11 : i64
    %14 = arith.muli %11, %arg10 : i64
    %15 = arith.addi %14, %13 : i64
    %16 = arith.muli %15, %c64_i64 : i64
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
    %31 = arith.muli %30, %cst_6 : tensor<128x1xi64>
    %32 = tile.splat %17 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %33 = tile.addptr %32, %31 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
    %34 = tile.broadcast %33 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
    %35 = tile.broadcast %28 : tensor<1x64xi32> -> tensor<128x64xi32>
    %36 = tile.addptr %34, %35 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %37 = tile.broadcast %27 : tensor<128x1xi1> -> tensor<128x64xi1>
    %38 = tile.load %36, %37, %cst_5 : tensor<128x64x!tile.ptr<bf16>>
    %39 = arith.divsi %arg5, %c64_i32 : i32
    %40 = arith.muli %39, %c64_i32 : i32
    %41 = tile.expand_dims %26 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %42 = tile.broadcast %41 : tensor<64x1xi32> -> tensor<64x64xi32>
    %43 = tile.splat %arg7 : f32 -> tensor<128x64xf32>
    %44 = tile.splat %arg7 : f32 -> tensor<128xf32>
    %45 = tile.broadcast %28 : tensor<1x64xi32> -> tensor<64x64xi32>
    %46 = scf.for %arg18 = %3 to %5 step %4 iter_args(%arg19 = %38) -> (tensor<128x64xbf16>)  : i32 {
      %47 = arith.divsi %arg18, %2 : i32
      %48 = arith.remsi %arg18, %2 : i32
      %49 = arith.remsi %47, %arg8 : i32
      %50 = arith.divsi %47, %arg8 : i32
      %51 = arith.cmpi slt, %arg18, %5 : i32
      %52 = arith.extsi %50 : i32 to i64
      %53 = arith.extsi %49 : i32 to i64
      %54 = arith.muli %53, %arg17 : i64
      %55 = arith.muli %52, %arg16 : i64
      %56 = arith.addi %55, %54 : i64
      %57 = arith.muli %56, %c64_i64 : i64
      %58 = tile.addptr %arg3, %57 : !tile.ptr<bf16>, i64
      %59 = arith.muli %53, %arg13 : i64
      %60 = arith.muli %52, %arg12 : i64
      %61 = arith.addi %60, %59 : i64
      %62 = arith.muli %61, %c64_i64 : i64
      %63 = tile.addptr %arg1, %62 : !tile.ptr<bf16>, i64
      %64 = arith.muli %53, %arg15 : i64
      %65 = arith.muli %52, %arg14 : i64
      %66 = arith.addi %65, %64 : i64
      %67 = arith.muli %66, %c64_i64 : i64
      %68 = tile.addptr %arg2, %67 : !tile.ptr<bf16>, i64
      %69 = arith.muli %48, %c128_i32 : i32
      %70 = tile.splat %69 : i32 -> tensor<128xi32>
      %71 = arith.addi %70, %18 : tensor<128xi32>
      %72 = arith.cmpi slt, %71, %22 : tensor<128xi32>
      %73 = tile.splat %51 : i1 -> tensor<128xi1>
      %74 = arith.andi %72, %73 : tensor<128xi1>
      %75 = arith.select %51, %arg5, %c0_i32 : i32
      %76 = arith.minsi %75, %c0_i32 : i32
      %77 = arith.minsi %40, %75 : i32
      %78 = arith.maxsi %77, %76 : i32
      %79 = tile.splat %63 : !tile.ptr<bf16> -> tensor<1x64x!tile.ptr<bf16>>
      %80 = tile.splat %68 : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>>
      %81:3 = scf.for %arg20 = %76 to %78 step %c64_i32 iter_args(%arg21 = %cst_4, %arg22 = %cst_3, %arg23 = %cst_2) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>)  : i32 {
        %129 = tile.splat %arg20 : i32 -> tensor<64xi32>
        %130 = arith.addi %129, %26 : tensor<64xi32>
        %131 = arith.extsi %130 : tensor<64xi32> to tensor<64xi64>
        %132 = tile.expand_dims %131 {axis = 0 : i32} : tensor<64xi64> -> tensor<1x64xi64>
        %133 = arith.muli %132, %cst_1 : tensor<1x64xi64>
        %134 = tile.addptr %79, %133 : tensor<1x64x!tile.ptr<bf16>>, tensor<1x64xi64>
        %135 = tile.broadcast %134 : tensor<1x64x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %136 = tile.addptr %135, %42 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %137 = tile.load %136 : tensor<64x64x!tile.ptr<bf16>>
        %138 = tile.dot %arg19, %137, %cst_2 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %139 = arith.mulf %138, %43 : tensor<128x64xf32>
        %140 = tile.reduce(%138) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg24: f32, %arg25: f32):
          %163 = arith.maximumf %arg24, %arg25 : f32
          tile.reduce.return %163 : f32
        }
        %141 = arith.mulf %140, %44 : tensor<128xf32>
        %142 = arith.maximumf %arg21, %141 : tensor<128xf32>
        %143 = tile.expand_dims %142 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %144 = tile.broadcast %143 : tensor<128x1xf32> -> tensor<128x64xf32>
        %145 = arith.subf %139, %144 : tensor<128x64xf32>
        %146 = math.exp2 %145 : tensor<128x64xf32>
        %147 = arith.subf %arg21, %142 : tensor<128xf32>
        %148 = math.exp2 %147 : tensor<128xf32>
        %149 = tile.expand_dims %131 {axis = 1 : i32} : tensor<64xi64> -> tensor<64x1xi64>
        %150 = arith.muli %149, %cst_0 : tensor<64x1xi64>
        %151 = tile.addptr %80, %150 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi64>
        %152 = tile.broadcast %151 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %153 = tile.addptr %152, %45 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %154 = tile.load %153 : tensor<64x64x!tile.ptr<bf16>>
        %155 = tile.expand_dims %148 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %156 = tile.broadcast %155 : tensor<128x1xf32> -> tensor<128x64xf32>
        %157 = arith.mulf %arg23, %156 : tensor<128x64xf32>
        %158 = arith.truncf %146 : tensor<128x64xf32> to tensor<128x64xbf16>
        %159 = tile.dot %158, %154, %157 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %160 = tile.reduce(%146) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg24: f32, %arg25: f32):
          %163 = arith.addf %arg24, %arg25 : f32
          tile.reduce.return %163 : f32
        }
        %161 = arith.mulf %arg22, %148 : tensor<128xf32>
        %162 = arith.addf %161, %160 : tensor<128xf32>
        scf.yield %142, %162, %159 : tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>
      }
      %82 = arith.addi %arg18, %4 : i32
      %83 = arith.divsi %82, %2 : i32
      %84 = arith.remsi %82, %2 : i32
      %85 = arith.remsi %83, %arg8 : i32
      %86 = arith.divsi %83, %arg8 : i32
      %87 = arith.cmpi slt, %82, %5 : i32
      %88 = arith.extsi %86 : i32 to i64
      %89 = arith.extsi %85 : i32 to i64
      %90 = arith.muli %89, %arg11 : i64
      %91 = arith.muli %88, %arg10 : i64
      %92 = arith.addi %91, %90 : i64
      %93 = arith.muli %92, %c64_i64 : i64
      %94 = tile.addptr %arg0, %93 : !tile.ptr<bf16>, i64
      %95 = arith.muli %84, %c128_i32 : i32
      %96 = tile.splat %95 : i32 -> tensor<128xi32>
      %97 = arith.addi %96, %18 : tensor<128xi32>
      %98 = arith.cmpi slt, %97, %22 : tensor<128xi32>
      %99 = tile.splat %87 : i1 -> tensor<128xi1>
      %100 = arith.andi %98, %99 : tensor<128xi1>
      %101 = tile.expand_dims %100 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %102 = arith.extsi %97 : tensor<128xi32> to tensor<128xi64>
      %103 = tile.expand_dims %102 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
      %104 = arith.muli %103, %cst_6 : tensor<128x1xi64>
      %105 = tile.splat %94 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %106 = tile.addptr %105, %104 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
      %107 = tile.broadcast %106 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
      %108 = tile.addptr %107, %35 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
      %109 = tile.broadcast %101 : tensor<128x1xi1> -> tensor<128x64xi1>
      %110 = tile.load %108, %109, %cst_5 : tensor<128x64x!tile.ptr<bf16>>
      %111 = arith.cmpf ogt, %81#1, %cst_3 : tensor<128xf32>
      %112 = arith.select %111, %81#1, %cst : tensor<128xi1>, tensor<128xf32>
      %113 = tile.expand_dims %112 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %114 = tile.broadcast %113 : tensor<128x1xf32> -> tensor<128x64xf32>
      %115 = arith.divf %81#2, %114 : tensor<128x64xf32>
      %116 = tile.expand_dims %111 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %117 = tile.broadcast %116 : tensor<128x1xi1> -> tensor<128x64xi1>
      %118 = arith.select %117, %115, %cst_2 : tensor<128x64xi1>, tensor<128x64xf32>
      %119 = tile.expand_dims %74 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %120 = arith.truncf %118 : tensor<128x64xf32> to tensor<128x64xbf16>
      %121 = arith.extsi %71 : tensor<128xi32> to tensor<128xi64>
      %122 = tile.expand_dims %121 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
      %123 = arith.muli %122, %cst_6 : tensor<128x1xi64>
      %124 = tile.splat %58 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %125 = tile.addptr %124, %123 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
      %126 = tile.broadcast %125 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
      %127 = tile.addptr %126, %35 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
      %128 = tile.broadcast %119 : tensor<128x1xi1> -> tensor<128x64xi1>
      tile.store %127, %120, %128 : tensor<128x64x!tile.ptr<bf16>>
      scf.yield %110 : tensor<128x64xbf16>
    }
    tile.return
  }
}
