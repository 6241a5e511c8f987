// Dots on AMD matrix cores (gfx942, gfx90a: 64-lane wavefronts). Layout
// assignment anchors the accumulator to the MFMA layout (each lane one
// column, 4-row groups; Mfma.h); the lowering stages both operands K-major
// in LDS, reads each lane's run of K as one vector (two instructions' K at
// once where K holds pairs: 16 bytes) and issues v_mfma on vectors of f32.
// gfx942 runs f32 dots at tf32 precision as xf32 (operands rounded to
// tf32 first; tf32x3: three instructions). Other dots (f32 at ieee
// precision, f32 on gfx90a, RDNA's gfx1100) stay on FMAs.
// RUN: kiln-opt %s --kgpu-assign-layouts="target=gfx942" --split-input-file | FileCheck %s --check-prefix=LAYOUT
// RUN: kiln-opt %s --kgpu-assign-layouts="target=gfx942" --kgpu-to-llvm --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kgpu-assign-layouts="target=gfx90a" --kgpu-to-llvm --split-input-file | FileCheck %s --check-prefix=CDNA2
// RUN: kiln-opt %s --kgpu-assign-layouts="target=gfx1100" --kgpu-to-llvm --split-input-file | FileCheck %s --check-prefix=RDNA

// 32x32 pieces: wavefronts 2 along N (columns 32 apart) and 2 copies; K 16 = one pair.
// LAYOUT: #[[MFMA:.*]] = #kgpu.linear<{register = {{\[\[}}1, 0], [2, 0], [8, 0], [16, 0]], lane = {{\[\[}}0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [4, 0]], warp = {{\[\[}}0, 32], [0, 0]]}>
// LAYOUT-LABEL: tile.func @f16_pieces_32
// LAYOUT: tile.dot {{.*}} -> tensor<32x64xf32, #[[MFMA]]>
// CHECK-LABEL: llvm.func @f16_pieces_32
// CHECK: rocdl.s.barrier
// CHECK: rocdl.s.barrier
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<8xf16>
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<8xf16>
// CHECK: llvm.shufflevector %{{.*}} [0, 1, 2, 3]
// CHECK: llvm.shufflevector %{{.*}} [0, 1, 2, 3]
// CHECK: rocdl.mfma.f32.32x32x8f16 {{.*}} : (vector<4xf16>, vector<4xf16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
// CHECK: llvm.shufflevector %{{.*}} [4, 5, 6, 7]
// CHECK: llvm.shufflevector %{{.*}} [4, 5, 6, 7]
// CHECK: rocdl.mfma.f32.32x32x8f16
// CHECK-NOT: rocdl.mfma
// CHECK: llvm.return
// RDNA-LABEL: llvm.func @f16_pieces_32
// RDNA-NOT: rocdl.mfma
// RDNA: llvm.return
tile.func @f16_pieces_32(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<32x64xf32>
  %cK = arith.constant dense<16> : tensor<32x1xi32>
  %cN = arith.constant dense<64> : tensor<16x1xi32>
  %cNm = arith.constant dense<64> : tensor<32x1xi32>
  %rM = tile.range 0, 32 : tensor<32xi32>
  %rK = tile.range 0, 16 : tensor<16xi32>
  %rN = tile.range 0, 64 : tensor<64xi32>
  %am = tile.expand_dims %rM {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ams = arith.muli %am, %cK : tensor<32x1xi32>
  %ak = tile.expand_dims %rK {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<32x1xi32> -> tensor<32x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<32x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<32x16xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<32x16x!tile.ptr<f16>>
  %ap = tile.addptr %as, %aoff : tensor<32x16x!tile.ptr<f16>>, tensor<32x16xi32>
  %bk = tile.expand_dims %rK {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bks = arith.muli %bk, %cN : tensor<16x1xi32>
  %bn = tile.expand_dims %rN {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %bkb = tile.broadcast %bks : tensor<16x1xi32> -> tensor<16x64xi32>
  %bnb = tile.broadcast %bn : tensor<1x64xi32> -> tensor<16x64xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x64xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<16x64x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<16x64x!tile.ptr<f16>>, tensor<16x64xi32>
  %x = tile.load %ap : tensor<32x16x!tile.ptr<f16>>
  %y = tile.load %bp : tensor<16x64x!tile.ptr<f16>>
  %d = tile.dot %x, %y, %zero : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf32>
  %cms = arith.muli %am, %cNm : tensor<32x1xi32>
  %cmb = tile.broadcast %cms : tensor<32x1xi32> -> tensor<32x64xi32>
  %rNe = tile.expand_dims %rN {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cnb = tile.broadcast %rNe : tensor<1x64xi32> -> tensor<32x64xi32>
  %coff = arith.addi %cmb, %cnb : tensor<32x64xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x64x!tile.ptr<f32>>, tensor<32x64xi32>
  tile.store %cp, %d : tensor<32x64x!tile.ptr<f32>>
  tile.return
}

// -----

// 16x16 pieces of bf16 (the _1k instructions take i16 vectors); K 32 = one pair.
// LAYOUT: #[[MFMA16:.*]] = #kgpu.linear<{register = {{\[\[}}1, 0], [2, 0]], lane = {{\[\[}}0, 1], [0, 2], [0, 4], [0, 8], [4, 0], [8, 0]], warp = {{\[\[}}0, 0], [0, 0]]}>
// LAYOUT-LABEL: tile.func @bf16_pieces_16
// LAYOUT: tile.dot {{.*}} -> tensor<16x16xf32, #[[MFMA16]]>
// CHECK-LABEL: llvm.func @bf16_pieces_16
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<8xbf16>
// CHECK: llvm.bitcast %{{.*}} : vector<4xbf16> to vector<4xi16>
// CHECK: rocdl.mfma.f32.16x16x16bf16.1k {{.*}} : (vector<4xi16>, vector<4xi16>, vector<4xf32>, i32, i32, i32) -> vector<4xf32>
// CHECK: rocdl.mfma.f32.16x16x16bf16.1k
// CHECK-NOT: rocdl.mfma
// CHECK: llvm.return
tile.func @bf16_pieces_16(%a: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<bf16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %cK = arith.constant dense<32> : tensor<16x1xi32>
  %cN = arith.constant dense<16> : tensor<32x1xi32>
  %cNm = arith.constant dense<16> : tensor<16x1xi32>
  %rM = tile.range 0, 16 : tensor<16xi32>
  %rK = tile.range 0, 32 : tensor<32xi32>
  %rN = tile.range 0, 16 : tensor<16xi32>
  %am = tile.expand_dims %rM {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ams = arith.muli %am, %cK : tensor<16x1xi32>
  %ak = tile.expand_dims %rK {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %amb = tile.broadcast %ams : tensor<16x1xi32> -> tensor<16x32xi32>
  %akb = tile.broadcast %ak : tensor<1x32xi32> -> tensor<16x32xi32>
  %aoff = arith.addi %amb, %akb : tensor<16x32xi32>
  %as = tile.splat %a : !tile.ptr<bf16> -> tensor<16x32x!tile.ptr<bf16>>
  %ap = tile.addptr %as, %aoff : tensor<16x32x!tile.ptr<bf16>>, tensor<16x32xi32>
  %bk = tile.expand_dims %rK {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %bks = arith.muli %bk, %cN : tensor<32x1xi32>
  %bn = tile.expand_dims %rN {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %bkb = tile.broadcast %bks : tensor<32x1xi32> -> tensor<32x16xi32>
  %bnb = tile.broadcast %bn : tensor<1x16xi32> -> tensor<32x16xi32>
  %boff = arith.addi %bkb, %bnb : tensor<32x16xi32>
  %bs = tile.splat %b : !tile.ptr<bf16> -> tensor<32x16x!tile.ptr<bf16>>
  %bp = tile.addptr %bs, %boff : tensor<32x16x!tile.ptr<bf16>>, tensor<32x16xi32>
  %x = tile.load %ap : tensor<16x32x!tile.ptr<bf16>>
  %y = tile.load %bp : tensor<32x16x!tile.ptr<bf16>>
  %d = tile.dot %x, %y, %zero : tensor<16x32xbf16> * tensor<32x16xbf16> -> tensor<16x16xf32>
  %cms = arith.muli %am, %cNm : tensor<16x1xi32>
  %cmb = tile.broadcast %cms : tensor<16x1xi32> -> tensor<16x16xi32>
  %rNe = tile.expand_dims %rN {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %cnb = tile.broadcast %rNe : tensor<1x16xi32> -> tensor<16x16xi32>
  %coff = arith.addi %cmb, %cnb : tensor<16x16xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<16x16x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<16x16x!tile.ptr<f32>>, tensor<16x16xi32>
  tile.store %cp, %d : tensor<16x16x!tile.ptr<f32>>
  tile.return
}

// -----

// K 8: one instruction, each lane's 4 of K an 8-byte read.
// CHECK-LABEL: llvm.func @f16_single_step
// CHECK: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<4xf16>
// CHECK: rocdl.mfma.f32.32x32x8f16
// CHECK-NOT: rocdl.mfma
// CHECK: llvm.return
tile.func @f16_single_step(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %cK = arith.constant dense<8> : tensor<32x1xi32>
  %cN = arith.constant dense<32> : tensor<8x1xi32>
  %cNm = arith.constant dense<32> : tensor<32x1xi32>
  %rM = tile.range 0, 32 : tensor<32xi32>
  %rK = tile.range 0, 8 : tensor<8xi32>
  %rN = tile.range 0, 32 : tensor<32xi32>
  %am = tile.expand_dims %rM {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ams = arith.muli %am, %cK : tensor<32x1xi32>
  %ak = tile.expand_dims %rK {axis = 0 : i32} : tensor<8xi32> -> tensor<1x8xi32>
  %amb = tile.broadcast %ams : tensor<32x1xi32> -> tensor<32x8xi32>
  %akb = tile.broadcast %ak : tensor<1x8xi32> -> tensor<32x8xi32>
  %aoff = arith.addi %amb, %akb : tensor<32x8xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<32x8x!tile.ptr<f16>>
  %ap = tile.addptr %as, %aoff : tensor<32x8x!tile.ptr<f16>>, tensor<32x8xi32>
  %bk = tile.expand_dims %rK {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
  %bks = arith.muli %bk, %cN : tensor<8x1xi32>
  %bn = tile.expand_dims %rN {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %bkb = tile.broadcast %bks : tensor<8x1xi32> -> tensor<8x32xi32>
  %bnb = tile.broadcast %bn : tensor<1x32xi32> -> tensor<8x32xi32>
  %boff = arith.addi %bkb, %bnb : tensor<8x32xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<8x32x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<8x32x!tile.ptr<f16>>, tensor<8x32xi32>
  %x = tile.load %ap : tensor<32x8x!tile.ptr<f16>>
  %y = tile.load %bp : tensor<8x32x!tile.ptr<f16>>
  %d = tile.dot %x, %y, %zero : tensor<32x8xf16> * tensor<8x32xf16> -> tensor<32x32xf32>
  %cms = arith.muli %am, %cNm : tensor<32x1xi32>
  %cmb = tile.broadcast %cms : tensor<32x1xi32> -> tensor<32x32xi32>
  %rNe = tile.expand_dims %rN {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %cnb = tile.broadcast %rNe : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %cmb, %cnb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
  tile.return
}

// -----

// An f16 accumulator accumulates in f32 on the matrix cores, rounded back
// to f16 after the product.
// CHECK-LABEL: llvm.func @f16_accumulator
// CHECK: llvm.fpext %{{.*}} : f16 to f32
// CHECK: rocdl.mfma.f32.32x32x8f16
// CHECK: llvm.fptrunc %{{.*}} : f32 to f16
// CHECK: llvm.return
tile.func @f16_accumulator(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f16> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf16>
  %cK = arith.constant dense<8> : tensor<32x1xi32>
  %cN = arith.constant dense<32> : tensor<8x1xi32>
  %cNm = arith.constant dense<32> : tensor<32x1xi32>
  %rM = tile.range 0, 32 : tensor<32xi32>
  %rK = tile.range 0, 8 : tensor<8xi32>
  %rN = tile.range 0, 32 : tensor<32xi32>
  %am = tile.expand_dims %rM {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ams = arith.muli %am, %cK : tensor<32x1xi32>
  %ak = tile.expand_dims %rK {axis = 0 : i32} : tensor<8xi32> -> tensor<1x8xi32>
  %amb = tile.broadcast %ams : tensor<32x1xi32> -> tensor<32x8xi32>
  %akb = tile.broadcast %ak : tensor<1x8xi32> -> tensor<32x8xi32>
  %aoff = arith.addi %amb, %akb : tensor<32x8xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<32x8x!tile.ptr<f16>>
  %ap = tile.addptr %as, %aoff : tensor<32x8x!tile.ptr<f16>>, tensor<32x8xi32>
  %bk = tile.expand_dims %rK {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
  %bks = arith.muli %bk, %cN : tensor<8x1xi32>
  %bn = tile.expand_dims %rN {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %bkb = tile.broadcast %bks : tensor<8x1xi32> -> tensor<8x32xi32>
  %bnb = tile.broadcast %bn : tensor<1x32xi32> -> tensor<8x32xi32>
  %boff = arith.addi %bkb, %bnb : tensor<8x32xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<8x32x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<8x32x!tile.ptr<f16>>, tensor<8x32xi32>
  %x = tile.load %ap : tensor<32x8x!tile.ptr<f16>>
  %y = tile.load %bp : tensor<8x32x!tile.ptr<f16>>
  %d = tile.dot %x, %y, %zero : tensor<32x8xf16> * tensor<8x32xf16> -> tensor<32x32xf16>
  %cms = arith.muli %am, %cNm : tensor<32x1xi32>
  %cmb = tile.broadcast %cms : tensor<32x1xi32> -> tensor<32x32xi32>
  %rNe = tile.expand_dims %rN {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %cnb = tile.broadcast %rNe : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %cmb, %cnb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f16> -> tensor<32x32x!tile.ptr<f16>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f16>>, tensor<32x32xi32>
  tile.store %cp, %d : tensor<32x32x!tile.ptr<f16>>
  tile.return
}

// -----

// f32 operands at ieee precision stay on FMAs.
// CHECK-LABEL: llvm.func @f32_on_fmas
// CHECK-NOT: rocdl.mfma
// CHECK: llvm.return
tile.func @f32_on_fmas(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %cK = arith.constant dense<16> : tensor<32x1xi32>
  %cN = arith.constant dense<32> : tensor<16x1xi32>
  %cNm = arith.constant dense<32> : tensor<32x1xi32>
  %rM = tile.range 0, 32 : tensor<32xi32>
  %rK = tile.range 0, 16 : tensor<16xi32>
  %rN = tile.range 0, 32 : tensor<32xi32>
  %am = tile.expand_dims %rM {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ams = arith.muli %am, %cK : tensor<32x1xi32>
  %ak = tile.expand_dims %rK {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<32x1xi32> -> tensor<32x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<32x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<32x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<32x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<32x16x!tile.ptr<f32>>, tensor<32x16xi32>
  %bk = tile.expand_dims %rK {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bks = arith.muli %bk, %cN : tensor<16x1xi32>
  %bn = tile.expand_dims %rN {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %bkb = tile.broadcast %bks : tensor<16x1xi32> -> tensor<16x32xi32>
  %bnb = tile.broadcast %bn : tensor<1x32xi32> -> tensor<16x32xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x32xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x32x!tile.ptr<f32>>, tensor<16x32xi32>
  %x = tile.load %ap : tensor<32x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x32x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero : tensor<32x16xf32> * tensor<16x32xf32> -> tensor<32x32xf32>
  %cms = arith.muli %am, %cNm : tensor<32x1xi32>
  %cmb = tile.broadcast %cms : tensor<32x1xi32> -> tensor<32x32xi32>
  %rNe = tile.expand_dims %rN {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %cnb = tile.broadcast %rNe : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %cmb, %cnb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
  tile.return
}

// -----

// At tf32 on gfx942: v_mfma_f32_32x32x4_xf32 on operands rounded to tf32
// (integer arithmetic: add half an ulp of tf32, clear the 13 low bits), two
// instructions' K read as one 16-byte vector (K 16 = two pairs).
// CHECK-LABEL: llvm.func @f32_tf32_on_xf32
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
// CHECK: llvm.mlir.constant(4096 : i32)
// CHECK: llvm.mlir.constant(-8192 : i32)
// CHECK: llvm.shufflevector %{{.*}} [0, 1]
// CHECK: rocdl.mfma.f32.32x32x4.xf32 {{.*}} : (vector<2xf32>, vector<2xf32>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
// CHECK: llvm.shufflevector %{{.*}} [2, 3]
// CHECK-COUNT-3: rocdl.mfma.f32.32x32x4.xf32
// CHECK-NOT: rocdl.mfma
// CHECK: llvm.return
// gfx90a has no xf32: FMAs.
// CDNA2-LABEL: llvm.func @f32_tf32_on_xf32
// CDNA2-NOT: rocdl.mfma
// CDNA2: llvm.return
tile.func @f32_tf32_on_xf32(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %cK = arith.constant dense<16> : tensor<32x1xi32>
  %cN = arith.constant dense<32> : tensor<16x1xi32>
  %cNm = arith.constant dense<32> : tensor<32x1xi32>
  %rM = tile.range 0, 32 : tensor<32xi32>
  %rK = tile.range 0, 16 : tensor<16xi32>
  %rN = tile.range 0, 32 : tensor<32xi32>
  %am = tile.expand_dims %rM {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ams = arith.muli %am, %cK : tensor<32x1xi32>
  %ak = tile.expand_dims %rK {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<32x1xi32> -> tensor<32x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<32x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<32x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<32x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<32x16x!tile.ptr<f32>>, tensor<32x16xi32>
  %bk = tile.expand_dims %rK {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bks = arith.muli %bk, %cN : tensor<16x1xi32>
  %bn = tile.expand_dims %rN {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %bkb = tile.broadcast %bks : tensor<16x1xi32> -> tensor<16x32xi32>
  %bnb = tile.broadcast %bn : tensor<1x32xi32> -> tensor<16x32xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x32xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x32x!tile.ptr<f32>>, tensor<16x32xi32>
  %x = tile.load %ap : tensor<32x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x32x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero precision = tf32 : tensor<32x16xf32> * tensor<16x32xf32> -> tensor<32x32xf32>
  %cms = arith.muli %am, %cNm : tensor<32x1xi32>
  %cmb = tile.broadcast %cms : tensor<32x1xi32> -> tensor<32x32xi32>
  %rNe = tile.expand_dims %rN {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %cnb = tile.broadcast %rNe : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %cmb, %cnb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
  tile.return
}

// -----

// tf32x3: each operand's rounded remainder times the other, then the
// rounded operands: three instructions a K step.
// CHECK-LABEL: llvm.func @f32_tf32x3_on_xf32
// CHECK-COUNT-12: rocdl.mfma.f32.32x32x4.xf32
// CHECK-NOT: rocdl.mfma
// CHECK: llvm.return
tile.func @f32_tf32x3_on_xf32(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %cK = arith.constant dense<16> : tensor<32x1xi32>
  %cN = arith.constant dense<32> : tensor<16x1xi32>
  %cNm = arith.constant dense<32> : tensor<32x1xi32>
  %rM = tile.range 0, 32 : tensor<32xi32>
  %rK = tile.range 0, 16 : tensor<16xi32>
  %rN = tile.range 0, 32 : tensor<32xi32>
  %am = tile.expand_dims %rM {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ams = arith.muli %am, %cK : tensor<32x1xi32>
  %ak = tile.expand_dims %rK {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<32x1xi32> -> tensor<32x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<32x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<32x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<32x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<32x16x!tile.ptr<f32>>, tensor<32x16xi32>
  %bk = tile.expand_dims %rK {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bks = arith.muli %bk, %cN : tensor<16x1xi32>
  %bn = tile.expand_dims %rN {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %bkb = tile.broadcast %bks : tensor<16x1xi32> -> tensor<16x32xi32>
  %bnb = tile.broadcast %bn : tensor<1x32xi32> -> tensor<16x32xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x32xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x32x!tile.ptr<f32>>, tensor<16x32xi32>
  %x = tile.load %ap : tensor<32x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x32x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero precision = tf32x3 : tensor<32x16xf32> * tensor<16x32xf32> -> tensor<32x32xf32>
  %cms = arith.muli %am, %cNm : tensor<32x1xi32>
  %cmb = tile.broadcast %cms : tensor<32x1xi32> -> tensor<32x32xi32>
  %rNe = tile.expand_dims %rN {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %cnb = tile.broadcast %rNe : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %cmb, %cnb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
  tile.return
}
