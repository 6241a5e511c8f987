// A pointer-block load that feeds a tensor-core dot in a pipelined loop and
// reads exactly a box of one tensor becomes a descriptor load through a
// tensor map the compiler adds as the last parameter (kgpu.added_map),
// recorded with where the launch finds its base, sizes and strides. Every
// form the analysis cannot prove exact keeps its pointer load.
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=4 target=sm_90a" --canonicalize --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kgpu-lower-descriptors="num-stages=4 target=sm_90a copy-engine=false" --split-input-file | FileCheck %s --check-prefix=OFF

// Triton's tutorial: rows and columns wrapped by `% M` and `% N` (the store
// masks both), pointers advanced along K and masked against K. A is the
// box [M, K] of stride (stride_am, 1); B the box [K, N] of (stride_bk, 1);
// the carried pointer blocks are gone.
// CHECK: kgpu.tensor_maps = [{base = 0 : i32, box = array<i32: 128, 64>, parameter = 8 : i32, sizes_constants = array<i64: 0, 0>, sizes_parameters = array<i32: 3, 5>, strides_constants = array<i64: 0, 1>, strides_parameters = array<i32: 6, -1>, swizzle = 128 : i32}, {base = 1 : i32, box = array<i32: 64, 64>, parameter = 9 : i32, sizes_constants = array<i64: 0, 0>, sizes_parameters = array<i32: 5, 4>, strides_constants = array<i64: 0, 1>, strides_parameters = array<i32: 7, -1>, swizzle = 128 : i32}]
// CHECK-LABEL: tile.func @tutorial
// CHECK-SAME: %arg8: !tile.tensormap {kgpu.added_map}, %arg9: !tile.tensormap {kgpu.added_map}
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<128x128xf32>)
// CHECK-NOT: tile.load
// CHECK: %[[AT:.*]] = arith.muli %[[K]], %c64_i32
// CHECK: tile.descriptor_load %arg0[%{{.*}}, %[[AT]]] sizes[%{{.*}}, %{{.*}}] strides[%{{.*}}, %{{.*}}] map %arg8 : !tile.ptr<bf16> -> tensor<128x64xbf16>
// CHECK: tile.descriptor_load %arg1[%{{.*}}, %{{.*}}] sizes[%{{.*}}, %{{.*}}] strides[%{{.*}}, %{{.*}}] map %arg9 : !tile.ptr<bf16> -> tensor<64x128xbf16>
// CHECK: tile.dot
// CHECK-NEXT: scf.yield
// OFF-NOT: kgpu.tensor_maps
// OFF-LABEL: tile.func @tutorial
// OFF-NOT: tile.descriptor_load
tile.func @tutorial(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                    %c: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %M: i32 {tile.positive}, %N: i32 {tile.positive},
                    %K: i32 {tile.positive}, %sam: i32 {tile.divisibility = 16 : i32, tile.positive},
                    %sbk: i32 {tile.divisibility = 16 : i32, tile.positive}) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c63 = arith.constant 63 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %acc0 = arith.constant dense<0.0> : tensor<128x128xf32>
  %za = arith.constant dense<0.0> : tensor<128x64xbf16>
  %zb = arith.constant dense<0.0> : tensor<64x128xbf16>
  %step_a = arith.constant dense<64> : tensor<128x64xi32>
  %pm = tile.program_id x : i32
  %pn = tile.program_id y : i32
  %r128 = tile.range 0, 128 : tensor<128xi32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  // rows = (pm * 128 + range) % M, cols = (pn * 128 + range) % N
  %m0 = arith.muli %pm, %c128 : i32
  %m0s = tile.splat %m0 : i32 -> tensor<128xi32>
  %rows = arith.addi %m0s, %r128 : tensor<128xi32>
  %Ms = tile.splat %M : i32 -> tensor<128xi32>
  %rowsw = arith.remsi %rows, %Ms : tensor<128xi32>
  %n0 = arith.muli %pn, %c128 : i32
  %n0s = tile.splat %n0 : i32 -> tensor<128xi32>
  %cols = arith.addi %n0s, %r128 : tensor<128xi32>
  %Ns = tile.splat %N : i32 -> tensor<128xi32>
  %colsw = arith.remsi %cols, %Ns : tensor<128xi32>
  // a + rows[:, None] * sam + k[None, :]
  %ks_row = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rows2 = tile.expand_dims %rowsw {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %sams = tile.splat %sam : i32 -> tensor<128x1xi32>
  %roff = arith.muli %rows2, %sams : tensor<128x1xi32>
  %as = tile.splat %a : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
  %ar = tile.addptr %as, %roff : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
  %arb = tile.broadcast %ar : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
  %kb = tile.broadcast %ks_row : tensor<1x64xi32> -> tensor<128x64xi32>
  %aptrs = tile.addptr %arb, %kb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
  // b + k[:, None] * sbk + cols[None, :]
  %cols2 = tile.expand_dims %colsw {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  %ks_col = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %sbks = tile.splat %sbk : i32 -> tensor<64x1xi32>
  %koff = arith.muli %ks_col, %sbks : tensor<64x1xi32>
  %bs = tile.splat %b : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>>
  %bk = tile.addptr %bs, %koff : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
  %bkb = tile.broadcast %bk : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x128x!tile.ptr<bf16>>
  %cb = tile.broadcast %cols2 : tensor<1x128xi32> -> tensor<64x128xi32>
  %bptrs = tile.addptr %bkb, %cb : tensor<64x128x!tile.ptr<bf16>>, tensor<64x128xi32>
  %kp = arith.addi %K, %c63 : i32
  %nk = arith.divsi %kp, %c64 : i32
  %bstep = arith.muli %sbk, %c64 : i32
  %bsteps = tile.splat %bstep : i32 -> tensor<64x128xi32>
  %res:3 = scf.for %k = %c0 to %nk step %c1 iter_args(%acc = %acc0, %pa = %aptrs, %pb = %bptrs)
      -> (tensor<128x128xf32>, tensor<128x64x!tile.ptr<bf16>>, tensor<64x128x!tile.ptr<bf16>>) : i32 {
    %done = arith.muli %k, %c64 : i32
    %left = arith.subi %K, %done : i32
    %lr = tile.splat %left : i32 -> tensor<1x64xi32>
    %mr = arith.cmpi slt, %ks_row, %lr : tensor<1x64xi32>
    %mrb = tile.broadcast %mr : tensor<1x64xi1> -> tensor<128x64xi1>
    %x = tile.load %pa, %mrb, %za : tensor<128x64x!tile.ptr<bf16>>
    %lc = tile.splat %left : i32 -> tensor<64x1xi32>
    %mc = arith.cmpi slt, %ks_col, %lc : tensor<64x1xi32>
    %mcb = tile.broadcast %mc : tensor<64x1xi1> -> tensor<64x128xi1>
    %y = tile.load %pb, %mcb, %zb : tensor<64x128x!tile.ptr<bf16>>
    %d = tile.dot %x, %y, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    %na = tile.addptr %pa, %step_a : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %nb = tile.addptr %pb, %bsteps : tensor<64x128x!tile.ptr<bf16>>, tensor<64x128xi32>
    scf.yield %d, %na, %nb : tensor<128x128xf32>, tensor<128x64x!tile.ptr<bf16>>, tensor<64x128x!tile.ptr<bf16>>
  }
  // c + rows[:, None] * N + cols[None, :], masked rows < M and cols < N
  %rin = arith.cmpi slt, %rows, %Ms : tensor<128xi32>
  %rin2 = tile.expand_dims %rin {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
  %cin = arith.cmpi slt, %cols, %Ns : tensor<128xi32>
  %cin2 = tile.expand_dims %cin {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
  %rinb = tile.broadcast %rin2 : tensor<128x1xi1> -> tensor<128x128xi1>
  %cinb = tile.broadcast %cin2 : tensor<1x128xi1> -> tensor<128x128xi1>
  %inside = arith.andi %rinb, %cinb : tensor<128x128xi1>
  %out = arith.truncf %res#0 : tensor<128x128xf32> to tensor<128x128xbf16>
  %crow = tile.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %Ns2 = tile.splat %N : i32 -> tensor<128x1xi32>
  %coff = arith.muli %crow, %Ns2 : tensor<128x1xi32>
  %cs = tile.splat %c : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
  %cr = tile.addptr %cs, %coff : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
  %crb = tile.broadcast %cr : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x128x!tile.ptr<bf16>>
  %ccol = tile.expand_dims %cols {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  %ccolb = tile.broadcast %ccol : tensor<1x128xi32> -> tensor<128x128xi32>
  %cptrs = tile.addptr %crb, %ccolb : tensor<128x128x!tile.ptr<bf16>>, tensor<128x128xi32>
  tile.store %cptrs, %out, %inside : tensor<128x128x!tile.ptr<bf16>>
  tile.return
}

// -----

// Rows wrapped by `% M` but stored without a mask on them: the rows the
// wrap reads again would be stored, so A keeps its pointer load.
// CHECK-NOT: kgpu.tensor_maps
// CHECK-LABEL: tile.func @wrapped_rows_stored
// CHECK-NOT: tile.descriptor_load
// CHECK: tile.load
tile.func @wrapped_rows_stored(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                               %M: i32 {tile.positive}, %sam: i32 {tile.divisibility = 16 : i32, tile.positive}, %nk: i32) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %acc0 = arith.constant dense<0.0> : tensor<128x128xf32>
  %w = arith.constant dense<1.0> : tensor<64x128xbf16>
  %r128 = tile.range 0, 128 : tensor<128xi32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %Ms = tile.splat %M : i32 -> tensor<128xi32>
  %rowsw = arith.remsi %r128, %Ms : tensor<128xi32>
  %rows2 = tile.expand_dims %rowsw {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %sams = tile.splat %sam : i32 -> tensor<128x1xi32>
  %roff = arith.muli %rows2, %sams : tensor<128x1xi32>
  %as = tile.splat %a : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
  %ar = tile.addptr %as, %roff : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
  %arb = tile.broadcast %ar : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
  %res = scf.for %k = %c0 to %nk step %c64 iter_args(%acc = %acc0) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %x = tile.load %pa : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %x, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %cs, %res : tensor<128x128x!tile.ptr<f32>>
  tile.return
}

// -----

// B stored [N][K] and read as a K x N block (`b + k[:, None] + n[None, :] *
// stride_bn`, the pointers formed from the loop counter, no masks): the
// box [N, K] of its tensor, transposed, with sizes the pointers' own reach.
// CHECK: kgpu.tensor_maps = [{base = 0 : i32, box = array<i32: 256, 64>, parameter = 4 : i32, sizes_constants = array<i64: 2147483647, 2147483647>, sizes_parameters = array<i32: -1, -1>, strides_constants = array<i64: 0, 1>, strides_parameters = array<i32: 1, -1>, swizzle = 128 : i32}]
// CHECK-LABEL: tile.func @b_rows_of_n
// CHECK: scf.for %[[K:.*]] = %c0_i32
// CHECK: %[[Y:.*]] = tile.descriptor_load %arg0[%{{.*}}, %[[K]]] sizes[%{{.*}}, %{{.*}}] strides[%{{.*}}, %{{.*}}] map %arg4 : !tile.ptr<bf16> -> tensor<256x64xbf16>
// CHECK: %[[YT:.*]] = tile.trans %[[Y]] {order = array<i32: 1, 0>} : tensor<256x64xbf16> -> tensor<64x256xbf16>
// CHECK: tile.dot %{{.*}}, %[[YT]]
tile.func @b_rows_of_n(%b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %sbn: i32 {tile.divisibility = 16 : i32, tile.positive}, %nk: i32,
                       %c: !tile.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %acc0 = arith.constant dense<0.0> : tensor<128x256xf32>
  %v = arith.constant dense<1.0> : tensor<128x64xbf16>
  %r256 = tile.range 0, 256 : tensor<256xi32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %n2 = tile.expand_dims %r256 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
  %sbns = tile.splat %sbn : i32 -> tensor<1x256xi32>
  %noff = arith.muli %n2, %sbns : tensor<1x256xi32>
  %bs = tile.splat %b : !tile.ptr<bf16> -> tensor<1x256x!tile.ptr<bf16>>
  %bn = tile.addptr %bs, %noff : tensor<1x256x!tile.ptr<bf16>>, tensor<1x256xi32>
  %bnb = tile.broadcast %bn : tensor<1x256x!tile.ptr<bf16>> -> tensor<64x256x!tile.ptr<bf16>>
  %res = scf.for %k = %c0 to %nk step %c64 iter_args(%acc = %acc0) -> (tensor<128x256xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %r64, %ks : tensor<64xi32>
    %kc = tile.expand_dims %kk {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %kcb = tile.broadcast %kc : tensor<64x1xi32> -> tensor<64x256xi32>
    %pb = tile.addptr %bnb, %kcb : tensor<64x256x!tile.ptr<bf16>>, tensor<64x256xi32>
    %y = tile.load %pb : tensor<64x256x!tile.ptr<bf16>>
    %d = tile.dot %v, %y, %acc : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x256x!tile.ptr<f32>>
  tile.store %cs, %res : tensor<128x256x!tile.ptr<f32>>
  tile.return
}

// -----

// A base moved by a uniform offset, a whole number of rows of the
// constant row stride (a head's rows, `a + pid * n * 128`, in 64 bits): the
// rows move the box's outer coordinate (truncated to 32 bits; the map says
// so, `offset_rows`, and the launch refuses a tensor of 2^31 rows or more).
// CHECK: kgpu.tensor_maps = [{base = 0 : i32, box = array<i32: 128, 64>, offset_rows, parameter = 3 : i32, sizes_constants = array<i64: 2147483647, 2147483647>, sizes_parameters = array<i32: -1, -1>, strides_constants = array<i64: 128, 1>, strides_parameters = array<i32: -1, -1>, swizzle = 128 : i32}]
// CHECK-LABEL: tile.func @head_rows
// CHECK: %[[BEFORE:.*]] = arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: scf.for %[[K:.*]] = %c0_i32
// CHECK-NEXT: %[[ROWS:.*]] = arith.trunci %[[BEFORE]] : i64 to i32
// CHECK-NEXT: tile.descriptor_load %arg0[%[[ROWS]], %[[K]]]
tile.func @head_rows(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i32 {tile.positive}, %c: !tile.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i64
  %acc0 = arith.constant dense<0.0> : tensor<128x128xf32>
  %w = arith.constant dense<1.0> : tensor<64x128xbf16>
  %pid = tile.program_id y : i32
  %pid64 = arith.extsi %pid : i32 to i64
  %n64 = arith.extsi %n : i32 to i64
  %before = arith.muli %pid64, %n64 : i64
  %head = arith.muli %before, %c128 : i64
  %ah = tile.addptr %a, %head : !tile.ptr<bf16>, i64
  %r128 = tile.range 0, 128 : tensor<128xi32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %rows2 = tile.expand_dims %r128 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %stride = arith.constant dense<128> : tensor<128x1xi32>
  %roff = arith.muli %rows2, %stride : tensor<128x1xi32>
  %as = tile.splat %ah : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
  %ar = tile.addptr %as, %roff : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
  %arb = tile.broadcast %ar : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
  %res = scf.for %k = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %x = tile.load %pa : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %x, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %cs, %res : tensor<128x128x!tile.ptr<f32>>
  tile.return
}

// -----

// A parameter row stride (FlashAttention's [batch, seq, heads, D]: a token
// holds heads x 128 elements): the uniform offset's `x * stride` terms are
// rows (a batch's tokens), the rest a column offset within the row (a
// head's 128 columns, `pid_h * 128`, provably non-negative), moving the
// box's inner coordinate; the map says both (`offset_rows`,
// `offset_columns`: the launch refuses what 32 bits cannot count).
// CHECK: kgpu.tensor_maps = [{base = 0 : i32, box = array<i32: 128, 64>, offset_columns, offset_rows, parameter = 4 : i32, sizes_constants = array<i64: 2147483647, 2147483647>, sizes_parameters = array<i32: -1, -1>, strides_constants = array<i64: 0, 1>, strides_parameters = array<i32: 1, -1>, swizzle = 128 : i32}]
// CHECK-LABEL: tile.func @token_rows
// CHECK: %[[TOKENS:.*]] = arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: scf.for %[[K:.*]] = %c0_i32
// CHECK: %[[ROWS:.*]] = arith.trunci %[[TOKENS]] : i64 to i32
// CHECK: %[[COLUMNS:.*]] = arith.muli %{{.*}}, %c128_i32
// CHECK: %[[INNER:.*]] = arith.addi %[[K]], %[[COLUMNS]]
// CHECK: tile.descriptor_load %arg0[%[[ROWS]], %[[INNER]]]
tile.func @token_rows(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %stride: i64 {tile.divisibility = 16 : i32, tile.positive},
                      %tokens: i64 {tile.positive}, %c: !tile.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %c128w = arith.constant 128 : i64
  %acc0 = arith.constant dense<0.0> : tensor<128x128xf32>
  %w = arith.constant dense<1.0> : tensor<64x128xbf16>
  %pb = tile.program_id z : i32
  %ph = tile.program_id y : i32
  %pb64 = arith.extsi %pb : i32 to i64
  %ph64 = arith.extsi %ph : i32 to i64
  %batch_tokens = arith.muli %pb64, %tokens : i64
  %batch = arith.muli %batch_tokens, %stride : i64
  %head = arith.muli %ph64, %c128w : i64
  %offset = arith.addi %batch, %head : i64
  %ah = tile.addptr %a, %offset : !tile.ptr<bf16>, i64
  %r128 = tile.range 0, 128 : tensor<128xi32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %rows = tile.expand_dims %r128 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %rows64 = arith.extsi %rows : tensor<128x1xi32> to tensor<128x1xi64>
  %strides = tile.splat %stride : i64 -> tensor<128x1xi64>
  %roff = arith.muli %rows64, %strides : tensor<128x1xi64>
  %as = tile.splat %ah : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
  %ar = tile.addptr %as, %roff : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
  %arb = tile.broadcast %ar : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
  %res = scf.for %k = %c0 to %c128 step %c64 iter_args(%acc = %acc0) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %x = tile.load %pa : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %x, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %cs, %res : tensor<128x128x!tile.ptr<f32>>
  tile.return
}

// -----

// A column offset the analysis cannot prove non-negative (a parameter of
// any sign, `a + b * tokens * stride + shift`) keeps the pointer load: the
// copy engine would read zeros left of a row's start where the pointers
// read the row before.
// CHECK-NOT: kgpu.tensor_maps
// CHECK-LABEL: tile.func @token_rows_any_shift
// CHECK-NOT: tile.descriptor_load
tile.func @token_rows_any_shift(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32},
                                %stride: i64 {tile.divisibility = 16 : i32, tile.positive}, %tokens: i64 {tile.positive},
                                %shift: i64, %c: !tile.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %acc0 = arith.constant dense<0.0> : tensor<128x128xf32>
  %w = arith.constant dense<1.0> : tensor<64x128xbf16>
  %pb = tile.program_id z : i32
  %pb64 = arith.extsi %pb : i32 to i64
  %batch_tokens = arith.muli %pb64, %tokens : i64
  %batch = arith.muli %batch_tokens, %stride : i64
  %offset = arith.addi %batch, %shift : i64
  %ah = tile.addptr %a, %offset : !tile.ptr<bf16>, i64
  %r128 = tile.range 0, 128 : tensor<128xi32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %rows = tile.expand_dims %r128 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %rows64 = arith.extsi %rows : tensor<128x1xi32> to tensor<128x1xi64>
  %strides = tile.splat %stride : i64 -> tensor<128x1xi64>
  %roff = arith.muli %rows64, %strides : tensor<128x1xi64>
  %as = tile.splat %ah : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
  %ar = tile.addptr %as, %roff : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi64>
  %arb = tile.broadcast %ar : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
  %res = scf.for %k = %c0 to %c128 step %c64 iter_args(%acc = %acc0) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %x = tile.load %pa : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %x, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %cs, %res : tensor<128x128x!tile.ptr<f32>>
  tile.return
}

// -----

// Uniform offsets the box cannot take keep their pointer loads: an offset
// that is not a whole number of rows (`pid * n * 64` with rows of 128), rows
// bounded by a mask (the rows past the bound are the next head's, which the
// box would read instead of zeros), and a loop that chains dots
// (attention's operands stay per-thread copies).
// CHECK-NOT: kgpu.tensor_maps
// CHECK-LABEL: tile.func @head_not_rows
// CHECK-NOT: tile.descriptor_load
tile.func @head_not_rows(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %n: i32 {tile.positive},
                         %M: i32 {tile.positive}, %c: !tile.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c64w = arith.constant 64 : i64
  %c128w = arith.constant 128 : i64
  %acc0 = arith.constant dense<0.0> : tensor<128x128xf32>
  %zero = arith.constant dense<0.0> : tensor<128x64xbf16>
  %w = arith.constant dense<1.0> : tensor<64x128xbf16>
  %pid = tile.program_id y : i32
  %pid64 = arith.extsi %pid : i32 to i64
  %n64 = arith.extsi %n : i32 to i64
  %before = arith.muli %pid64, %n64 : i64
  %half = arith.muli %before, %c64w : i64
  %head = arith.muli %before, %c128w : i64
  %r128 = tile.range 0, 128 : tensor<128xi32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %rows2 = tile.expand_dims %r128 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %stride = arith.constant dense<128> : tensor<128x1xi32>
  %roff = arith.muli %rows2, %stride : tensor<128x1xi32>
  %Ms = tile.splat %M : i32 -> tensor<128x1xi32>
  %inM = arith.cmpi slt, %rows2, %Ms : tensor<128x1xi32>
  %inMb = tile.broadcast %inM : tensor<128x1xi1> -> tensor<128x64xi1>
  // a + pid * n * 64 + ...
  %ahalf = tile.addptr %a, %half : !tile.ptr<bf16>, i64
  %as1 = tile.splat %ahalf : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
  %ar1 = tile.addptr %as1, %roff : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
  %arb1 = tile.broadcast %ar1 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
  // a + pid * n * 128 + ...
  %ah = tile.addptr %a, %head : !tile.ptr<bf16>, i64
  %as2 = tile.splat %ah : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
  %ar2 = tile.addptr %as2, %roff : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
  %arb2 = tile.broadcast %ar2 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
  %r1 = scf.for %k = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb1, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %x = tile.load %pa : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %x, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %r2 = scf.for %k = %c0 to %n step %c64 iter_args(%acc = %r1) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb2, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %x = tile.load %pa, %inMb, %zero : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %x, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %r3 = scf.for %k = %c0 to %n step %c64 iter_args(%acc = %r2) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb2, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %x = tile.load %pa : tensor<128x64x!tile.ptr<bf16>>
    %s = tile.dot %x, %w, %acc0 : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    %p = arith.truncf %s : tensor<128x128xf32> to tensor<128x128xbf16>
    %v = arith.constant dense<1.0> : tensor<128x128xbf16>
    %d = tile.dot %p, %v, %acc : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %cs, %r3 : tensor<128x128x!tile.ptr<f32>>
  tile.return
}

// -----

// Loads whose masks or pointers do not describe one box of a tensor keep
// their pointer loads (each loop with one dot: a loop that chains dots
// keeps its pointer loads whatever they read): a mask against K that
// ignores the pointers' advance (not a fixed bound of the tensor), a mask
// by a size the specialization does not prove positive, masked elements
// that read as 1, and pointers moved by a uniform block (`ptrs + head`).
// CHECK-NOT: kgpu.tensor_maps
// CHECK-LABEL: tile.func @not_a_box
// CHECK-NOT: tile.descriptor_load
tile.func @not_a_box(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %K: i32 {tile.positive}, %K0: i32,
                     %head: i32, %nk: i32, %c: !tile.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %acc0 = arith.constant dense<0.0> : tensor<128x128xf32>
  %zero = arith.constant dense<0.0> : tensor<128x64xbf16>
  %one = arith.constant dense<1.0> : tensor<128x64xbf16>
  %w = arith.constant dense<1.0> : tensor<64x128xbf16>
  %r128 = tile.range 0, 128 : tensor<128xi32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %rows2 = tile.expand_dims %r128 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %stride = arith.constant dense<4096> : tensor<128x1xi32>
  %roff = arith.muli %rows2, %stride : tensor<128x1xi32>
  %as = tile.splat %a : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
  %ar = tile.addptr %as, %roff : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
  %arb = tile.broadcast %ar : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
  %heads = tile.splat %head : i32 -> tensor<128x64xi32>
  %kr0 = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %Ks = tile.splat %K : i32 -> tensor<1x64xi32>
  %K0s = tile.splat %K0 : i32 -> tensor<1x64xi32>
  %r1 = scf.for %k = %c0 to %nk step %c64 iter_args(%acc = %acc0) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    // offs_k < K while the pointers read k + offs_k
    %m1 = arith.cmpi slt, %kr0, %Ks : tensor<1x64xi32>
    %m1b = tile.broadcast %m1 : tensor<1x64xi1> -> tensor<128x64xi1>
    %x1 = tile.load %pa, %m1b, %zero : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %x1, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %r2 = scf.for %k = %c0 to %nk step %c64 iter_args(%acc = %r1) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    // k + offs_k < K0, K0 not known positive
    %m2 = arith.cmpi slt, %kr, %K0s : tensor<1x64xi32>
    %m2b = tile.broadcast %m2 : tensor<1x64xi1> -> tensor<128x64xi1>
    %x2 = tile.load %pa, %m2b, %zero : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %x2, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %r3 = scf.for %k = %c0 to %nk step %c64 iter_args(%acc = %r2) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    // k + offs_k < K, other 1
    %m3 = arith.cmpi slt, %kr, %Ks : tensor<1x64xi32>
    %m3b = tile.broadcast %m3 : tensor<1x64xi1> -> tensor<128x64xi1>
    %x3 = tile.load %pa, %m3b, %one : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %x3, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %res = scf.for %k = %c0 to %nk step %c64 iter_args(%acc = %r3) -> (tensor<128x128xf32>) : i32 {
    %ks = tile.splat %k : i32 -> tensor<64xi32>
    %kk = arith.addi %ks, %r64 : tensor<64xi32>
    %kr = tile.expand_dims %kk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %krb = tile.broadcast %kr : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %arb, %krb : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    // ptrs + head
    %ph = tile.addptr %pa, %heads : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    %x4 = tile.load %ph : tensor<128x64x!tile.ptr<bf16>>
    %d = tile.dot %x4, %w, %acc : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<128x128x!tile.ptr<f32>>
  tile.store %cs, %res : tensor<128x128x!tile.ptr<f32>>
  tile.return
}
