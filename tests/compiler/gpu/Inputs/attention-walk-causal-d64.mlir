// The ops library's persistent attention kernel under a causal mask, as traced for D 64, 128x64 tiles: a tile's
// two loops of keys (whole blocks, then the diagonal's) in a walk over units of a query block and its mirror.
module {
  tile.func @walked_attention(%arg0: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg3: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %arg4: i32 {tile.divisibility = 16 : i32, tile.positive}, %arg5: i32 {tile.divisibility = 16 : i32, tile.positive}, %arg6: i32 {tile.positive}, %arg7: f32, %arg8: i32 {tile.divisibility = 16 : i32}, %arg9: i32 {tile.divisibility = 16 : i32}, %arg10: i32 {tile.positive}, %arg11: i32 {tile.positive}, %arg12: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg13: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg14: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg15: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg16: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg17: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg18: i64 {tile.divisibility = 16 : i32, tile.positive}, %arg19: i64 {tile.divisibility = 16 : i32, tile.positive}) {
    %cst = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst_0 = arith.constant dense<0xFF800000> : tensor<128x64xf32>
    %cst_1 = arith.constant dense<64> : tensor<64x1xi64>
    %cst_2 = arith.constant dense<64> : tensor<1x64xi64>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128x64xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_5 = arith.constant dense<0xFF800000> : tensor<128xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_7 = arith.constant dense<64> : tensor<128x1xi64>
    %c64_i32 = arith.constant 64 : i32
    %c127_i32 = arith.constant 127 : i32
    %c64_i64 = arith.constant 64 : i64
    %true = arith.constant true
    %c0_i32 = arith.constant 0 : i32
    %c2_i32 = arith.constant 2 : i32
    %c1_i32 = arith.constant 1 : i32
    %c128_i32 = arith.constant 128 : i32
    %0 = arith.addi %arg4, %c127_i32 : i32
    %1 = arith.divsi %0, %c128_i32 : i32
    %2 = tile.program_id x : i32
    %3 = tile.num_programs x : i32
    %4 = arith.addi %1, %c1_i32 : i32
    %5 = arith.divsi %4, %c2_i32 : i32
    %6 = arith.muli %5, %arg10 : i32
    %7 = arith.maxsi %5, %c1_i32 : i32
    %8 = arith.subi %6, %2 : i32
    %9 = arith.addi %8, %3 : i32
    %10 = arith.subi %9, %c1_i32 : i32
    %11 = arith.divsi %10, %3 : i32
    %12 = arith.maxsi %11, %c0_i32 : i32
    %13 = arith.muli %12, %c2_i32 : i32
    %14 = arith.remsi %2, %7 : i32
    %15 = arith.divsi %2, %7 : i32
    %16 = arith.subi %1, %c1_i32 : i32
    %17 = arith.subi %16, %14 : i32
    %18 = arith.remsi %15, %arg10 : i32
    %19 = arith.divsi %15, %arg10 : i32
    %20 = arith.cmpi sgt, %13, %c0_i32 : i32
    %21 = arith.extsi %19 : i32 to i64
    %22 = arith.extsi %18 : i32 to i64
    %23 = arith.muli %22, %arg13 : i64
    %24 = arith.muli %21, %arg12 : i64
    %25 = arith.addi %24, %23 : i64
    %26 = arith.muli %25, %c64_i64 : i64
    %27 = tile.addptr %arg0, %26 : !tile.ptr<bf16>, i64
    %28 = tile.range 0, 128 : tensor<128xi32>
    %29 = arith.muli %17, %c128_i32 : i32
    %30 = tile.splat %29 : i32 -> tensor<128xi32>
    %31 = arith.addi %30, %28 : tensor<128xi32>
    %32 = tile.splat %arg4 : i32 -> tensor<128xi32>
    %33 = arith.cmpi slt, %31, %32 : tensor<128xi32>
    %34 = tile.splat %20 : i1 -> tensor<128xi1>
    %35 = arith.andi %33, %34 : tensor<128xi1>
    %36 = tile.range 0, 64 : tensor<64xi32>
    %37 = tile.expand_dims %35 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
    %38 = tile.expand_dims %36 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %39 = arith.extsi %31 : tensor<128xi32> to tensor<128xi64>
    %40 = tile.expand_dims %39 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
    %41 = arith.muli %40, %cst_7 : tensor<128x1xi64>
    %42 = tile.splat %27 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %43 = tile.addptr %42, %41 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
    %44 = tile.broadcast %43 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
    %45 = tile.broadcast %38 : tensor<1x64xi32> -> tensor<128x64xi32>
    %46 = tile.addptr %44, %45 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %47 = tile.broadcast %37 : tensor<128x1xi1> -> tensor<128x64xi1>
    %48 = tile.load %46, %47, %cst_6 : tensor<128x64x!tile.ptr<bf16>>
    %49 = arith.divsi %arg5, %c64_i32 : i32
    %50 = arith.muli %49, %c64_i32 : i32
    %51 = arith.addi %arg8, %arg9 : i32
    %52 = tile.expand_dims %36 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %53 = tile.broadcast %52 : tensor<64x1xi32> -> tensor<64x64xi32>
    %54 = tile.splat %arg7 : f32 -> tensor<128x64xf32>
    %55 = tile.splat %arg7 : f32 -> tensor<128xf32>
    %56 = tile.broadcast %38 : tensor<1x64xi32> -> tensor<64x64xi32>
    %57 = tile.splat %51 : i32 -> tensor<128xi32>
    %58 = scf.for %arg20 = %c0_i32 to %13 step %c1_i32 iter_args(%arg21 = %48) -> (tensor<128x64xbf16>)  : i32 {
      %59 = arith.divsi %arg20, %c2_i32 : i32
      %60 = arith.muli %59, %3 : i32
      %61 = arith.addi %2, %60 : i32
      %62 = arith.remsi %arg20, %c2_i32 : i32
      %63 = arith.cmpi eq, %62, %c1_i32 : i32
      %64 = arith.remsi %61, %7 : i32
      %65 = arith.divsi %61, %7 : i32
      %66 = arith.subi %16, %64 : i32
      %67 = arith.select %63, %64, %66 : i32
      %68 = arith.remsi %65, %arg10 : i32
      %69 = arith.divsi %65, %arg10 : i32
      %70 = arith.cmpi eq, %64, %66 : i32
      %71 = arith.andi %63, %70 : i1
      %72 = arith.xori %71, %true : i1
      %73 = arith.cmpi slt, %arg20, %13 : i32
      %74 = arith.andi %73, %72 : i1
      %75 = arith.extsi %69 : i32 to i64
      %76 = arith.extsi %68 : i32 to i64
      %77 = arith.muli %76, %arg19 : i64
      %78 = arith.muli %75, %arg18 : i64
      %79 = arith.addi %78, %77 : i64
      %80 = arith.muli %79, %c64_i64 : i64
      %81 = tile.addptr %arg3, %80 : !tile.ptr<bf16>, i64
      %82 = arith.muli %76, %arg15 : i64
      %83 = arith.muli %75, %arg14 : i64
      %84 = arith.addi %83, %82 : i64
      %85 = arith.muli %84, %c64_i64 : i64
      %86 = tile.addptr %arg1, %85 : !tile.ptr<bf16>, i64
      %87 = arith.muli %76, %arg17 : i64
      %88 = arith.muli %75, %arg16 : i64
      %89 = arith.addi %88, %87 : i64
      %90 = arith.muli %89, %c64_i64 : i64
      %91 = tile.addptr %arg2, %90 : !tile.ptr<bf16>, i64
      %92 = arith.muli %67, %c128_i32 : i32
      %93 = tile.splat %92 : i32 -> tensor<128xi32>
      %94 = arith.addi %93, %28 : tensor<128xi32>
      %95 = arith.cmpi slt, %94, %32 : tensor<128xi32>
      %96 = arith.addi %92, %c127_i32 : i32
      %97 = tile.splat %74 : i1 -> tensor<128xi1>
      %98 = arith.andi %95, %97 : tensor<128xi1>
      %99 = arith.addi %92, %51 : i32
      %100 = arith.addi %99, %c1_i32 : i32
      %101 = arith.maxsi %100, %c0_i32 : i32
      %102 = arith.divsi %101, %c64_i32 : i32
      %103 = arith.muli %102, %c64_i32 : i32
      %104 = arith.minsi %103, %50 : i32
      %105 = arith.addi %96, %51 : i32
      %106 = arith.addi %105, %c1_i32 : i32
      %107 = arith.minsi %arg5, %106 : i32
      %108 = arith.maxsi %107, %c0_i32 : i32
      %109 = arith.select %74, %108, %c0_i32 : i32
      %110 = arith.minsi %109, %c0_i32 : i32
      %111 = arith.minsi %104, %109 : i32
      %112 = arith.maxsi %111, %110 : i32
      %113 = tile.splat %86 : !tile.ptr<bf16> -> tensor<1x64x!tile.ptr<bf16>>
      %114 = tile.splat %91 : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>>
      %115:3 = scf.for %arg22 = %110 to %112 step %c64_i32 iter_args(%arg23 = %cst_5, %arg24 = %cst_4, %arg25 = %cst_3) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>)  : i32 {
        %178 = tile.splat %arg22 : i32 -> tensor<64xi32>
        %179 = arith.addi %178, %36 : tensor<64xi32>
        %180 = arith.extsi %179 : tensor<64xi32> to tensor<64xi64>
        %181 = tile.expand_dims %180 {axis = 0 : i32} : tensor<64xi64> -> tensor<1x64xi64>
        %182 = arith.muli %181, %cst_2 : tensor<1x64xi64>
        %183 = tile.addptr %113, %182 : tensor<1x64x!tile.ptr<bf16>>, tensor<1x64xi64>
        %184 = tile.broadcast %183 : tensor<1x64x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %185 = tile.addptr %184, %53 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %186 = tile.load %185 : tensor<64x64x!tile.ptr<bf16>>
        %187 = tile.dot %arg21, %186, %cst_3 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %188 = arith.mulf %187, %54 : tensor<128x64xf32>
        %189 = tile.reduce(%187) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg26: f32, %arg27: f32):
          %212 = arith.maximumf %arg26, %arg27 : f32
          tile.reduce.return %212 : f32
        }
        %190 = arith.mulf %189, %55 : tensor<128xf32>
        %191 = arith.maximumf %arg23, %190 : tensor<128xf32>
        %192 = tile.expand_dims %191 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %193 = tile.broadcast %192 : tensor<128x1xf32> -> tensor<128x64xf32>
        %194 = arith.subf %188, %193 : tensor<128x64xf32>
        %195 = math.exp2 %194 : tensor<128x64xf32>
        %196 = arith.subf %arg23, %191 : tensor<128xf32>
        %197 = math.exp2 %196 : tensor<128xf32>
        %198 = tile.expand_dims %180 {axis = 1 : i32} : tensor<64xi64> -> tensor<64x1xi64>
        %199 = arith.muli %198, %cst_1 : tensor<64x1xi64>
        %200 = tile.addptr %114, %199 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi64>
        %201 = tile.broadcast %200 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %202 = tile.addptr %201, %56 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %203 = tile.load %202 : tensor<64x64x!tile.ptr<bf16>>
        %204 = tile.expand_dims %197 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %205 = tile.broadcast %204 : tensor<128x1xf32> -> tensor<128x64xf32>
        %206 = arith.mulf %arg25, %205 : tensor<128x64xf32>
        %207 = arith.truncf %195 : tensor<128x64xf32> to tensor<128x64xbf16>
        %208 = tile.dot %207, %203, %206 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %209 = tile.reduce(%195) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg26: f32, %arg27: f32):
          %212 = arith.addf %arg26, %arg27 : f32
          tile.reduce.return %212 : f32
        }
        %210 = arith.mulf %arg24, %197 : tensor<128xf32>
        %211 = arith.addf %210, %209 : tensor<128xf32>
        scf.yield %191, %211, %208 : tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>
      }
      %116 = arith.addi %94, %57 : tensor<128xi32>
      %117 = tile.expand_dims %116 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %118 = tile.broadcast %117 : tensor<128x1xi32> -> tensor<128x64xi32>
      %119:3 = scf.for %arg22 = %112 to %109 step %c64_i32 iter_args(%arg23 = %115#0, %arg24 = %115#1, %arg25 = %115#2) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>)  : i32 {
        %178 = tile.splat %arg22 : i32 -> tensor<64xi32>
        %179 = arith.addi %178, %36 : tensor<64xi32>
        %180 = arith.extsi %179 : tensor<64xi32> to tensor<64xi64>
        %181 = tile.expand_dims %180 {axis = 0 : i32} : tensor<64xi64> -> tensor<1x64xi64>
        %182 = arith.muli %181, %cst_2 : tensor<1x64xi64>
        %183 = tile.addptr %113, %182 : tensor<1x64x!tile.ptr<bf16>>, tensor<1x64xi64>
        %184 = tile.broadcast %183 : tensor<1x64x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %185 = tile.addptr %184, %53 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %186 = tile.load %185 : tensor<64x64x!tile.ptr<bf16>>
        %187 = tile.dot %arg21, %186, %cst_3 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %188 = arith.mulf %187, %54 : tensor<128x64xf32>
        %189 = tile.expand_dims %179 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %190 = tile.broadcast %189 : tensor<1x64xi32> -> tensor<128x64xi32>
        %191 = arith.cmpi sle, %190, %118 : tensor<128x64xi32>
        %192 = arith.select %191, %188, %cst_0 : tensor<128x64xi1>, tensor<128x64xf32>
        %193 = tile.reduce(%192) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg26: f32, %arg27: f32):
          %217 = arith.maximumf %arg26, %arg27 : f32
          tile.reduce.return %217 : f32
        }
        %194 = arith.maximumf %arg23, %193 : tensor<128xf32>
        %195 = arith.cmpf oeq, %194, %cst_5 : tensor<128xf32>
        %196 = arith.select %195, %cst_4, %194 : tensor<128xi1>, tensor<128xf32>
        %197 = tile.expand_dims %196 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %198 = tile.broadcast %197 : tensor<128x1xf32> -> tensor<128x64xf32>
        %199 = arith.subf %192, %198 : tensor<128x64xf32>
        %200 = math.exp2 %199 : tensor<128x64xf32>
        %201 = arith.subf %arg23, %196 : tensor<128xf32>
        %202 = math.exp2 %201 : tensor<128xf32>
        %203 = tile.expand_dims %180 {axis = 1 : i32} : tensor<64xi64> -> tensor<64x1xi64>
        %204 = arith.muli %203, %cst_1 : tensor<64x1xi64>
        %205 = tile.addptr %114, %204 : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi64>
        %206 = tile.broadcast %205 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
        %207 = tile.addptr %206, %56 : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
        %208 = tile.load %207 : tensor<64x64x!tile.ptr<bf16>>
        %209 = tile.expand_dims %202 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
        %210 = tile.broadcast %209 : tensor<128x1xf32> -> tensor<128x64xf32>
        %211 = arith.mulf %arg25, %210 : tensor<128x64xf32>
        %212 = arith.truncf %200 : tensor<128x64xf32> to tensor<128x64xbf16>
        %213 = tile.dot %212, %208, %211 : tensor<128x64xbf16> * tensor<64x64xbf16> -> tensor<128x64xf32>
        %214 = tile.reduce(%200) axis = 1 : (tensor<128x64xf32>) -> tensor<128xf32> {
        ^bb0(%arg26: f32, %arg27: f32):
          %217 = arith.addf %arg26, %arg27 : f32
          tile.reduce.return %217 : f32
        }
        %215 = arith.mulf %arg24, %202 : tensor<128xf32>
        %216 = arith.addf %215, %214 : tensor<128xf32>
        scf.yield %194, %216, %213 : tensor<128xf32>, tensor<128xf32>, tensor<128x64xf32>
      }
      %120 = arith.addi %arg20, %c1_i32 : i32
      %121 = arith.divsi %120, %c2_i32 : i32
      %122 = arith.muli %121, %3 : i32
      %123 = arith.addi %2, %122 : i32
      %124 = arith.remsi %120, %c2_i32 : i32
      %125 = arith.cmpi eq, %124, %c1_i32 : i32
      %126 = arith.remsi %123, %7 : i32
      %127 = arith.divsi %123, %7 : i32
      %128 = arith.subi %16, %126 : i32
      %129 = arith.select %125, %126, %128 : i32
      %130 = arith.remsi %127, %arg10 : i32
      %131 = arith.divsi %127, %arg10 : i32
      %132 = arith.cmpi eq, %126, %128 : i32
      %133 = arith.andi %125, %132 : i1
      %134 = arith.xori %133, %true : i1
      %135 = arith.cmpi slt, %120, %13 : i32
      %136 = arith.andi %135, %134 : i1
      %137 = arith.extsi %131 : i32 to i64
      %138 = arith.extsi %130 : i32 to i64
      %139 = arith.muli %138, %arg13 : i64
      %140 = arith.muli %137, %arg12 : i64
      %141 = arith.addi %140, %139 : i64
      %142 = arith.muli %141, %c64_i64 : i64
      %143 = tile.addptr %arg0, %142 : !tile.ptr<bf16>, i64
      %144 = arith.muli %129, %c128_i32 : i32
      %145 = tile.splat %144 : i32 -> tensor<128xi32>
      %146 = arith.addi %145, %28 : tensor<128xi32>
      %147 = arith.cmpi slt, %146, %32 : tensor<128xi32>
      %148 = tile.splat %136 : i1 -> tensor<128xi1>
      %149 = arith.andi %147, %148 : tensor<128xi1>
      %150 = tile.expand_dims %149 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %151 = arith.extsi %146 : tensor<128xi32> to tensor<128xi64>
      %152 = tile.expand_dims %151 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
      %153 = arith.muli %152, %cst_7 : tensor<128x1xi64>
      %154 = tile.splat %143 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %155 = tile.addptr %154, %153 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
      %156 = tile.broadcast %155 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
      %157 = tile.addptr %156, %45 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
      %158 = tile.broadcast %150 : tensor<128x1xi1> -> tensor<128x64xi1>
      %159 = tile.load %157, %158, %cst_6 : tensor<128x64x!tile.ptr<bf16>>
      %160 = arith.cmpf ogt, %119#1, %cst_4 : tensor<128xf32>
      %161 = arith.select %160, %119#1, %cst : tensor<128xi1>, tensor<128xf32>
      %162 = tile.expand_dims %161 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %163 = tile.broadcast %162 : tensor<128x1xf32> -> tensor<128x64xf32>
      %164 = arith.divf %119#2, %163 : tensor<128x64xf32>
      %165 = tile.expand_dims %160 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %166 = tile.broadcast %165 : tensor<128x1xi1> -> tensor<128x64xi1>
      %167 = arith.select %166, %164, %cst_3 : tensor<128x64xi1>, tensor<128x64xf32>
      %168 = tile.expand_dims %98 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %169 = arith.truncf %167 : tensor<128x64xf32> to tensor<128x64xbf16>
      %170 = arith.extsi %94 : tensor<128xi32> to tensor<128xi64>
      %171 = tile.expand_dims %170 {axis = 1 : i32} : tensor<128xi64> -> tensor<128x1xi64>
      %172 = arith.muli %171, %cst_7 : tensor<128x1xi64>
      %173 = tile.splat %81 : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
      %174 = tile.addptr %173, %172 : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
      %175 = tile.broadcast %174 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
      %176 = tile.addptr %175, %45 : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
      %177 = tile.broadcast %168 : tensor<128x1xi1> -> tensor<128x64xi1>
      tile.store %176, %169, %177 : tensor<128x64x!tile.ptr<bf16>>
      scf.yield %159 : tensor<128x64xbf16>
    }
    tile.return
  }
}
