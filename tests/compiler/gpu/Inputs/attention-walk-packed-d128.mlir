// The ops library's persistent attention kernel for a packed batch (FlashAttention's varlen) as traced for D 128,
// 128x128 tiles, tokens of heads x D: a walk over the tiles the sequences have, each step reading its tile from a
// table (sequence * 2^32 + query block) and its sequence's starts from cu_seqlens, all through read-only
// parameters; two loops of chained dots (the whole blocks, then the block the sequence's end cuts, read whole).
module {
  tile.func @walked_packed_attention(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.readonly}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.readonly}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32, tile.readonly}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg4: !tile.ptr<i32> {tile.divisibility = 16 : i32, tile.readonly}, %arg5: !tile.ptr<i32> {tile.divisibility = 16 : i32, tile.readonly}, %arg6: i32 {tile.divisibility = 16 : i32}, %arg7: i32 {tile.divisibility = 8 : i32, tile.positive}, %arg8: i32 {tile.divisibility = 8 : i32, tile.positive}, %arg9: i32 {tile.positive}, %arg10: f32, %arg11: i32 {tile.positive}, %arg12: i32 {tile.positive}, %arg13: !tile.ptr<i64> {tile.divisibility = 16 : i32, tile.readonly}, %arg14: i32 {tile.positive}, %arg15: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg16: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg17: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg18: i64 {tile.divisibility = 16 : i32, tile.positive}) {
    %cst = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst_0 = arith.constant dense<0xFF800000> : tensor<128x128xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_3 = arith.constant dense<0xFF800000> : tensor<128xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %c32_i64 = arith.constant 32 : i64
    %c0_i32 = arith.constant 0 : i32
    %c128_i64 = arith.constant 128 : i64
    %c4294967295_i64 = arith.constant 4294967295 : i64
    %c1_i32 = arith.constant 1 : i32
    %c128_i32 = arith.constant 128 : i32
    %0 = tile.program_id x : i32
    %1 = tile.num_programs x : i32
    %2 = arith.maxsi %arg14, %c1_i32 : i32
    %3 = arith.muli %arg14, %arg11 : i32
    %4 = arith.remsi %0, %2 : i32
    %5 = tile.addptr %arg13, %4 : !tile.ptr<i64>, i32
    %6 = tile.load %5 : !tile.ptr<i64>
    %7 = arith.shrui %6, %c32_i64 : i64
    %8 = arith.trunci %7 : i64 to i32
    %9 = arith.andi %6, %c4294967295_i64 : i64
    %10 = arith.trunci %9 : i64 to i32
    %11 = arith.divsi %0, %2 : i32
    %12 = arith.cmpi slt, %0, %3 : i32
    %13 = tile.addptr %arg4, %8 : !tile.ptr<i32>, i32
    %14 = tile.load %13 : !tile.ptr<i32>
    %15 = arith.addi %8, %c1_i32 : i32
    %16 = tile.addptr %arg4, %15 : !tile.ptr<i32>, i32
    %17 = tile.load %16 : !tile.ptr<i32>
    %18 = arith.subi %17, %14 : i32
    %19 = arith.extsi %14 : i32 to i64
    %20 = arith.extsi %11 : i32 to i64
    %21 = arith.muli %20, %c128_i64 : i64
    %22 = arith.muli %19, %arg15 : i64
    %23 = arith.addi %22, %21 : i64
    %24 = tile.addptr %arg0, %23 : !tile.ptr<bf16>, i64
    %25 = tile.range 0, 128 : tensor<128xi32>
    %26 = arith.muli %10, %c128_i32 : i32
    %27 = tile.splat %26 : i32 -> tensor<128xi32>
    %28 = arith.addi %27, %25 : tensor<128xi32>
    %29 = tile.splat %18 : i32 -> tensor<128xi32>
    %30 = arith.cmpi slt, %28, %29 : tensor<128xi32>
    %31 = tile.splat %12 : i1 -> tensor<128xi1>
    %32 = arith.andi %30, %31 : tensor<128xi1>
    %33 = tile.expand_dims %32 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
    %34 = tile.expand_dims %25 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
    %35 = arith.extsi %28 : tensor<128xi32> to tensor<128xi64>
    %36 = tile.expand_dims %35 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
    %37 = tile.splat %arg15 : i64 -> tensor<128x1xi64>
    %38 = arith.muli %36, %37 : tensor<128x1xi64>
    %39 = tile.splat %24 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %40 = tile.addptr %39, %38 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
    %41 = tile.broadcast %40 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
    %42 = tile.broadcast %34 : tensor<1x128xi32> -> tensor<128x128xi32>
    %43 = tile.addptr %41, %42 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
    %44 = tile.broadcast %33 : tensor<128x1xi1> -> tensor<128x128xi1>
    %45 = tile.load %43, %44, %cst_4 : tensor<128x128x!tile.ptr<bf16>>
    %46 = tile.expand_dims %25 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %47 = tile.splat %arg16 : i64 -> tensor<1x128xi64>
    %48 = tile.broadcast %46 : tensor<128x1xi32> -> tensor<128x128xi32>
    %49 = tile.splat %arg10 : f32 -> tensor<128x128xf32>
    %50 = tile.splat %arg10 : f32 -> tensor<128xf32>
    %51 = tile.splat %arg17 : i64 -> tensor<128x1xi64>
    %52 = tile.splat %arg18 : i64 -> tensor<128x1xi64>
    %53 = scf.for %arg19 = %0 to %3 step %1 iter_args(%arg20 = %45) -> (tensor<128x128xbf16>)  : i32 {
      %54 = arith.remsi %arg19, %2 : i32
      %55 = tile.addptr %arg13, %54 : !tile.ptr<i64>, i32
      %56 = tile.load %55 : !tile.ptr<i64>
      %57 = arith.shrui %56, %c32_i64 : i64
      %58 = arith.trunci %57 : i64 to i32
      %59 = arith.andi %56, %c4294967295_i64 : i64
      %60 = arith.trunci %59 : i64 to i32
      %61 = arith.divsi %arg19, %2 : i32
      %62 = arith.cmpi slt, %arg19, %3 : i32
      %63 = arith.extsi %61 : i32 to i64
      %64 = tile.addptr %arg4, %58 : !tile.ptr<i32>, i32
      %65 = tile.load %64 : !tile.ptr<i32>
      %66 = tile.addptr %arg5, %58 : !tile.ptr<i32>, i32
      %67 = tile.load %66 : !tile.ptr<i32>
      %68 = arith.addi %58, %c1_i32 : i32
      %69 = tile.addptr %arg4, %68 : !tile.ptr<i32>, i32
      %70 = tile.load %69 : !tile.ptr<i32>
      %71 = arith.subi %70, %65 : i32
      %72 = tile.addptr %arg5, %68 : !tile.ptr<i32>, i32
      %73 = tile.load %72 : !tile.ptr<i32>
      %74 = arith.subi %73, %67 : i32
      %75 = arith.extsi %65 : i32 to i64
      %76 = arith.extsi %67 : i32 to i64
      %77 = arith.subi %arg6, %67 : i32
      %78 = arith.muli %63, %c128_i64 : i64
      %79 = arith.muli %75, %arg18 : i64
      %80 = arith.addi %79, %78 : i64
      %81 = tile.addptr %arg3, %80 : !tile.ptr<bf16>, i64
      %82 = arith.muli %76, %arg16 : i64
      %83 = arith.addi %82, %78 : i64
      %84 = tile.addptr %arg1, %83 : !tile.ptr<bf16>, i64
      %85 = arith.muli %76, %arg17 : i64
      %86 = arith.addi %85, %78 : i64
      %87 = tile.addptr %arg2, %86 : !tile.ptr<bf16>, i64
      %88 = arith.muli %60, %c128_i32 : i32
      %89 = tile.splat %88 : i32 -> tensor<128xi32>
      %90 = arith.addi %89, %25 : tensor<128xi32>
      %91 = tile.splat %71 : i32 -> tensor<128xi32>
      %92 = arith.cmpi slt, %90, %91 : tensor<128xi32>
      %93 = tile.splat %62 : i1 -> tensor<128xi1>
      %94 = arith.andi %92, %93 : tensor<128xi1>
      %95 = arith.divsi %74, %c128_i32 : i32
      %96 = arith.muli %95, %c128_i32 : i32
      %97 = arith.cmpi slt, %88, %71 : i32
      %98 = arith.select %97, %74, %c0_i32 : i32
      %99 = arith.select %62, %98, %c0_i32 : i32
      %100 = arith.minsi %99, %c0_i32 : i32
      %101 = arith.minsi %96, %99 : i32
      %102 = arith.maxsi %101, %100 : i32
      %103 = tile.splat %84 : !tile.ptr<bf16> -> tensor<1x128x!tile.ptr<bf16>>
      %104 = tile.splat %87 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %105:3 = scf.for %arg21 = %100 to %102 step %c128_i32 iter_args(%arg22 = %cst_3, %arg23 = %cst_2, %arg24 = %cst_1) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>)  : i32 {
        %166 = tile.splat %arg21 : i32 -> tensor<128xi32>
        %167 = arith.addi %166, %25 : tensor<128xi32>
        %168 = arith.extsi %167 : tensor<128xi32> to tensor<128xi64>
        %169 = tile.expand_dims %168 {axis = 0 : i32} : tensor<128xi64> -> tensor<1x128xi64>
        %170 = arith.muli %169, %47 : tensor<1x128xi64>
        %171 = tile.addptr %103, %170 : tensor<1x128x!tile.ptr<bf16>>, tensor<1x128xi64>
        %172 = tile.broadcast %171 : tensor<1x128x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
        %173 = tile.addptr %172, %48 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
        %174 = tile.load %173 : tensor<128x128x!tile.ptr<bf16>>
        %175 = tile.dot %arg20, %174, %cst_1 : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
        %176 = arith.mulf %175, %49 : tensor<128x128xf32>
        %177 = tile.reduce(%175) axis = 1 : (tensor<128x128xf32>) -> tensor<128xf32> {
        ^bb0(%arg25: f32, %arg26: f32):
          %200 = arith.maximumf %arg25, %arg26 : f32
          tile.reduce.return %200 : f32
        }
        %178 = arith.mulf %177, %50 : tensor<128xf32>
        %179 = arith.maximumf %arg22, %178 : tensor<128xf32>
        %180 = tile.expand_dims %179 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %181 = tile.broadcast %180 : tensor<128x1xf32> -> tensor<128x128xf32>
        %182 = arith.subf %176, %181 : tensor<128x128xf32>
        %183 = math.exp2 %182 : tensor<128x128xf32>
        %184 = arith.subf %arg22, %179 : tensor<128xf32>
        %185 = math.exp2 %184 : tensor<128xf32>
        %186 = tile.expand_dims %168 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
        %187 = arith.muli %186, %51 : tensor<128x1xi64>
        %188 = tile.addptr %104, %187 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
        %189 = tile.broadcast %188 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
        %190 = tile.addptr %189, %42 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
        %191 = tile.load %190 : tensor<128x128x!tile.ptr<bf16>>
        %192 = tile.expand_dims %185 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %193 = tile.broadcast %192 : tensor<128x1xf32> -> tensor<128x128xf32>
        %194 = arith.mulf %arg24, %193 : tensor<128x128xf32>
        %195 = arith.truncf %183 : tensor<128x128xf32> to tensor<128x128xbf16>
        %196 = tile.dot %195, %191, %194 : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
        %197 = tile.reduce(%183) axis = 1 : (tensor<128x128xf32>) -> tensor<128xf32> {
        ^bb0(%arg25: f32, %arg26: f32):
          %200 = arith.addf %arg25, %arg26 : f32
          tile.reduce.return %200 : f32
        }
        %198 = arith.mulf %arg23, %185 : tensor<128xf32>
        %199 = arith.addf %198, %197 : tensor<128xf32>
        scf.yield %179, %199, %196 : tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>
      }
      %106 = arith.subi %74, %c128_i32 : i32
      %107 = tile.splat %74 : i32 -> tensor<128xi32>
      %108:3 = scf.for %arg21 = %102 to %99 step %c128_i32 iter_args(%arg22 = %105#0, %arg23 = %105#1, %arg24 = %105#2) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>)  : i32 {
        %166 = arith.minsi %arg21, %106 : i32
        %167 = arith.maxsi %166, %77 : i32
        %168 = tile.splat %167 : i32 -> tensor<128xi32>
        %169 = arith.addi %168, %25 : tensor<128xi32>
        %170 = arith.cmpi slt, %169, %107 : tensor<128xi32>
        %171 = tile.splat %arg21 : i32 -> tensor<128xi32>
        %172 = arith.cmpi sge, %169, %171 : tensor<128xi32>
        %173 = arith.andi %172, %170 : tensor<128xi1>
        %174 = arith.extsi %169 : tensor<128xi32> to tensor<128xi64>
        %175 = tile.expand_dims %174 {axis = 0 : i32} : tensor<128xi64> -> tensor<1x128xi64>
        %176 = arith.muli %175, %47 : tensor<1x128xi64>
        %177 = tile.addptr %103, %176 : tensor<1x128x!tile.ptr<bf16>>, tensor<1x128xi64>
        %178 = tile.broadcast %177 : tensor<1x128x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
        %179 = tile.addptr %178, %48 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
        %180 = tile.load %179 : tensor<128x128x!tile.ptr<bf16>>
        %181 = tile.dot %arg20, %180, %cst_1 : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
        %182 = arith.mulf %181, %49 : tensor<128x128xf32>
        %183 = tile.expand_dims %173 {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
        %184 = tile.broadcast %183 : tensor<1x128xi1> -> tensor<128x128xi1>
        %185 = arith.select %184, %182, %cst_0 : tensor<128x128xi1>, tensor<128x128xf32>
        %186 = tile.reduce(%185) axis = 1 : (tensor<128x128xf32>) -> tensor<128xf32> {
        ^bb0(%arg25: f32, %arg26: f32):
          %210 = arith.maximumf %arg25, %arg26 : f32
          tile.reduce.return %210 : f32
        }
        %187 = arith.maximumf %arg22, %186 : tensor<128xf32>
        %188 = arith.cmpf oeq, %187, %cst_3 : tensor<128xf32>
        %189 = arith.select %188, %cst_2, %187 : tensor<128xi1>, tensor<128xf32>
        %190 = tile.expand_dims %189 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %191 = tile.broadcast %190 : tensor<128x1xf32> -> tensor<128x128xf32>
        %192 = arith.subf %185, %191 : tensor<128x128xf32>
        %193 = math.exp2 %192 : tensor<128x128xf32>
        %194 = arith.subf %arg22, %189 : tensor<128xf32>
        %195 = math.exp2 %194 : tensor<128xf32>
        %196 = tile.expand_dims %174 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
        %197 = arith.muli %196, %51 : tensor<128x1xi64>
        %198 = tile.addptr %104, %197 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
        %199 = tile.broadcast %198 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
        %200 = tile.addptr %199, %42 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
        %201 = tile.load %200 : tensor<128x128x!tile.ptr<bf16>>
        %202 = tile.expand_dims %195 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %203 = tile.broadcast %202 : tensor<128x1xf32> -> tensor<128x128xf32>
        %204 = arith.mulf %arg24, %203 : tensor<128x128xf32>
        %205 = arith.truncf %193 : tensor<128x128xf32> to tensor<128x128xbf16>
        %206 = tile.dot %205, %201, %204 : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
        %207 = tile.reduce(%193) axis = 1 : (tensor<128x128xf32>) -> tensor<128xf32> {
        ^bb0(%arg25: f32, %arg26: f32):
          %210 = arith.addf %arg25, %arg26 : f32
          tile.reduce.return %210 : f32
        }
        %208 = arith.mulf %arg23, %195 : tensor<128xf32>
        %209 = arith.addf %208, %207 : tensor<128xf32>
        scf.yield %187, %209, %206 : tensor<128xf32>, tensor<128xf32>, tensor<128x128xf32>
      }
      %109 = arith.addi %arg19, %1 : i32
      %110 = arith.remsi %109, %2 : i32
      %111 = tile.addptr %arg13, %110 : !tile.ptr<i64>, i32
      %112 = tile.load %111 : !tile.ptr<i64>
      %113 = arith.shrui %112, %c32_i64 : i64
      %114 = arith.trunci %113 : i64 to i32
      %115 = arith.andi %112, %c4294967295_i64 : i64
      %116 = arith.trunci %115 : i64 to i32
      %117 = arith.divsi %109, %2 : i32
      %118 = arith.cmpi slt, %109, %3 : i32
      %119 = tile.addptr %arg4, %114 : !tile.ptr<i32>, i32
      %120 = tile.load %119 : !tile.ptr<i32>
      %121 = arith.addi %114, %c1_i32 : i32
      %122 = tile.addptr %arg4, %121 : !tile.ptr<i32>, i32
      %123 = tile.load %122 : !tile.ptr<i32>
      %124 = arith.subi %123, %120 : i32
      %125 = arith.extsi %120 : i32 to i64
      %126 = arith.extsi %117 : i32 to i64
      %127 = arith.muli %126, %c128_i64 : i64
      %128 = arith.muli %125, %arg15 : i64
      %129 = arith.addi %128, %127 : i64
      %130 = tile.addptr %arg0, %129 : !tile.ptr<bf16>, i64
      %131 = arith.muli %116, %c128_i32 : i32
      %132 = tile.splat %131 : i32 -> tensor<128xi32>
      %133 = arith.addi %132, %25 : tensor<128xi32>
      %134 = tile.splat %124 : i32 -> tensor<128xi32>
      %135 = arith.cmpi slt, %133, %134 : tensor<128xi32>
      %136 = tile.splat %118 : i1 -> tensor<128xi1>
      %137 = arith.andi %135, %136 : tensor<128xi1>
      %138 = tile.expand_dims %137 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %139 = arith.extsi %133 : tensor<128xi32> to tensor<128xi64>
      %140 = tile.expand_dims %139 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
      %141 = arith.muli %140, %37 : tensor<128x1xi64>
      %142 = tile.splat %130 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %143 = tile.addptr %142, %141 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
      %144 = tile.broadcast %143 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
      %145 = tile.addptr %144, %42 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
      %146 = tile.broadcast %138 : tensor<128x1xi1> -> tensor<128x128xi1>
      %147 = tile.load %145, %146, %cst_4 : tensor<128x128x!tile.ptr<bf16>>
      %148 = arith.cmpf ogt, %108#1, %cst_2 : tensor<128xf32>
      %149 = arith.select %148, %108#1, %cst : tensor<128xi1>, tensor<128xf32>
      %150 = tile.expand_dims %149 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %151 = tile.broadcast %150 : tensor<128x1xf32> -> tensor<128x128xf32>
      %152 = arith.divf %108#2, %151 : tensor<128x128xf32>
      %153 = tile.expand_dims %148 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %154 = tile.broadcast %153 : tensor<128x1xi1> -> tensor<128x128xi1>
      %155 = arith.select %154, %152, %cst_1 : tensor<128x128xi1>, tensor<128x128xf32>
      %156 = tile.expand_dims %94 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %157 = arith.truncf %155 : tensor<128x128xf32> to tensor<128x128xbf16>
      %158 = arith.extsi %90 : tensor<128xi32> to tensor<128xi64>
      %159 = tile.expand_dims %158 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
      %160 = arith.muli %159, %52 : tensor<128x1xi64>
      %161 = tile.splat %81 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %162 = tile.addptr %161, %160 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
      %163 = tile.broadcast %162 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
      %164 = tile.addptr %163, %42 : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
      %165 = tile.broadcast %156 : tensor<128x1xi1> -> tensor<128x128xi1>
      tile.store %164, %157, %165 : tensor<128x128x!tile.ptr<bf16>>
      scf.yield %147 : tensor<128x128xbf16>
    }
    tile.return
  }
}

