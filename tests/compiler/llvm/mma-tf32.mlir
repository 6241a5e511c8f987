// f32 dots with precision tf32 or tf32x3 run on tensor cores (mma.sync
// m16n8k8): K-contiguous operands arrive through ldmatrix (4 tf32 per 16-byte
// row), the others one f32 per register; every register is rounded with
// cvt.rna. tf32x3 adds the two cross products of the rounding errors before
// the main one. ieee f32 stays on FMAs.
// RUN: kiln-opt %s --kgpu-assign-layouts --kgpu-to-llvm --split-input-file | FileCheck %s

// The second K step's fragments are read before the first step's mma.sync.
// CHECK-LABEL: llvm.func @tf32_row_major_b
// CHECK: "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, $1, $2, $3}, [$4];"
// CHECK-COUNT-4: "cvt.rna.tf32.f32 $0, $1;", "=r,f"
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-COUNT-4: "cvt.rna.tf32.f32 $0, $1;", "=r,f"
// CHECK-NOT: mma.sync
// CHECK: "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, $1, $2, $3}, [$4];"
// CHECK-COUNT-4: "cvt.rna.tf32.f32 $0, $1;", "=r,f"
// CHECK: "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};", "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f"
// CHECK-NOT: llvm.intr.fma
// CHECK: llvm.return
tile.func @tf32_row_major_b(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %c16m = arith.constant dense<16> : tensor<32x1xi32>
  %c16n = arith.constant dense<16> : tensor<1x32xi32>
  %c32k = arith.constant dense<32> : tensor<16x1xi32>
  %c32m = arith.constant dense<32> : tensor<32x1xi32>
  %r16 = tile.range 0, 16 : tensor<16xi32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %am = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ams = arith.muli %am, %c16m : tensor<32x1xi32>
  %ak = tile.expand_dims %r16 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<32x1xi32> -> tensor<32x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<32x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<32x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<32x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<32x16x!tile.ptr<f32>>, tensor<32x16xi32>
  %bk = tile.expand_dims %r16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bks = arith.muli %bk, %c32k : tensor<16x1xi32>
  %bn = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %bkb = tile.broadcast %bks : tensor<16x1xi32> -> tensor<16x32xi32>
  %bnb = tile.broadcast %bn : tensor<1x32xi32> -> tensor<16x32xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x32xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x32x!tile.ptr<f32>>, tensor<16x32xi32>
  %x = tile.load %ap : tensor<32x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x32x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero precision = tf32 : tensor<32x16xf32> * tensor<16x32xf32> -> tensor<32x32xf32>
  %cms = arith.muli %am, %c32m : tensor<32x1xi32>
  %cmb = tile.broadcast %cms : tensor<32x1xi32> -> tensor<32x32xi32>
  %r32e = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %cnb = tile.broadcast %r32e : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %cmb, %cnb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
  tile.return
}

// -----

// CHECK-LABEL: llvm.func @tf32_column_major_b
// CHECK-NOT: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-NOT: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK: llvm.return

tile.func @tf32_column_major_b(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %c16m = arith.constant dense<16> : tensor<32x1xi32>
  %c16n = arith.constant dense<16> : tensor<1x32xi32>
  %c32k = arith.constant dense<32> : tensor<16x1xi32>
  %c32m = arith.constant dense<32> : tensor<32x1xi32>
  %r16 = tile.range 0, 16 : tensor<16xi32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %am = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ams = arith.muli %am, %c16m : tensor<32x1xi32>
  %ak = tile.expand_dims %r16 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<32x1xi32> -> tensor<32x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<32x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<32x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<32x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<32x16x!tile.ptr<f32>>, tensor<32x16xi32>
  %bk = tile.expand_dims %r16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bn = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %bns = arith.muli %bn, %c16n : tensor<1x32xi32>
  %bkb = tile.broadcast %bk : tensor<16x1xi32> -> tensor<16x32xi32>
  %bnb = tile.broadcast %bns : tensor<1x32xi32> -> tensor<16x32xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x32xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x32x!tile.ptr<f32>>, tensor<16x32xi32>
  %x = tile.load %ap : tensor<32x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x32x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero precision = tf32 : tensor<32x16xf32> * tensor<16x32xf32> -> tensor<32x32xf32>
  %cms = arith.muli %am, %c32m : tensor<32x1xi32>
  %cmb = tile.broadcast %cms : tensor<32x1xi32> -> tensor<32x32xi32>
  %r32e = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %cnb = tile.broadcast %r32e : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %cmb, %cnb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
  tile.return
}

// -----

// CHECK-LABEL: llvm.func @tf32x3
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: %[[AHI:.*]] = llvm.inline_asm asm_dialect = att "cvt.rna.tf32.f32 $0, $1;", "=r,f" %[[A:.*]] : (f32) -> i32
// CHECK: %[[AHIF:.*]] = llvm.bitcast %[[AHI]] : i32 to f32
// CHECK: %[[AERR:.*]] = llvm.fsub %[[A]], %[[AHIF]] : f32
// CHECK: llvm.inline_asm asm_dialect = att "cvt.rna.tf32.f32 $0, $1;", "=r,f" %[[AERR]] : (f32) -> i32
// CHECK-COUNT-3: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK: llvm.return

tile.func @tf32x3(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %c16m = arith.constant dense<16> : tensor<32x1xi32>
  %c16n = arith.constant dense<16> : tensor<1x32xi32>
  %c32k = arith.constant dense<32> : tensor<16x1xi32>
  %c32m = arith.constant dense<32> : tensor<32x1xi32>
  %r16 = tile.range 0, 16 : tensor<16xi32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %am = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ams = arith.muli %am, %c16m : tensor<32x1xi32>
  %ak = tile.expand_dims %r16 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<32x1xi32> -> tensor<32x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<32x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<32x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<32x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<32x16x!tile.ptr<f32>>, tensor<32x16xi32>
  %bk = tile.expand_dims %r16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bn = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %bns = arith.muli %bn, %c16n : tensor<1x32xi32>
  %bkb = tile.broadcast %bk : tensor<16x1xi32> -> tensor<16x32xi32>
  %bnb = tile.broadcast %bns : tensor<1x32xi32> -> tensor<16x32xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x32xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x32x!tile.ptr<f32>>, tensor<16x32xi32>
  %x = tile.load %ap : tensor<32x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x32x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero precision = tf32x3 : tensor<32x16xf32> * tensor<16x32xf32> -> tensor<32x32xf32>
  %cms = arith.muli %am, %c32m : tensor<32x1xi32>
  %cmb = tile.broadcast %cms : tensor<32x1xi32> -> tensor<32x32xi32>
  %r32e = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %cnb = tile.broadcast %r32e : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %cmb, %cnb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
  tile.return
}

// -----

// CHECK-LABEL: llvm.func @ieee
// CHECK-NOT: mma.sync
// CHECK: llvm.intr.fma
// CHECK-NOT: mma.sync
// CHECK: llvm.return

tile.func @ieee(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %c16m = arith.constant dense<16> : tensor<32x1xi32>
  %c16n = arith.constant dense<16> : tensor<1x32xi32>
  %c32k = arith.constant dense<32> : tensor<16x1xi32>
  %c32m = arith.constant dense<32> : tensor<32x1xi32>
  %r16 = tile.range 0, 16 : tensor<16xi32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %am = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ams = arith.muli %am, %c16m : tensor<32x1xi32>
  %ak = tile.expand_dims %r16 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<32x1xi32> -> tensor<32x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<32x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<32x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<32x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<32x16x!tile.ptr<f32>>, tensor<32x16xi32>
  %bk = tile.expand_dims %r16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bks = arith.muli %bk, %c32k : tensor<16x1xi32>
  %bn = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %bkb = tile.broadcast %bks : tensor<16x1xi32> -> tensor<16x32xi32>
  %bnb = tile.broadcast %bn : tensor<1x32xi32> -> tensor<16x32xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x32xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x32x!tile.ptr<f32>>, tensor<16x32xi32>
  %x = tile.load %ap : tensor<32x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x32x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero : tensor<32x16xf32> * tensor<16x32xf32> -> tensor<32x32xf32>
  %cms = arith.muli %am, %c32m : tensor<32x1xi32>
  %cmb = tile.broadcast %cms : tensor<32x1xi32> -> tensor<32x32xi32>
  %r32e = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %cnb = tile.broadcast %r32e : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %cmb, %cnb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
  tile.return
}

// -----

// On sm_90a a tf32 dot with K-major A and B (B stored [N][K]) whose shape
// fits takes wgmma: k8 steps of 32 bytes, no transpose immediates.
// CHECK-LABEL: llvm.func @tf32_wgmma
// CHECK-NOT: cvt.rna
// CHECK: "wgmma.fence.sync.aligned;"
// CHECK-COUNT-2: wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {{.*}}, p, 1, 1; }
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK: llvm.return
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32, kgpu.target = "sm_90a"} {
tile.func @tf32_wgmma(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %ckm = arith.constant dense<16> : tensor<64x1xi32>
  %ckn = arith.constant dense<16> : tensor<1x64xi32>
  %cnk = arith.constant dense<64> : tensor<16x1xi32>
  %cnm = arith.constant dense<64> : tensor<64x1xi32>
  %rm = tile.range 0, 64 : tensor<64xi32>
  %rk = tile.range 0, 16 : tensor<16xi32>
  %rn = tile.range 0, 64 : tensor<64xi32>
  %am = tile.expand_dims %rm {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ams = arith.muli %am, %ckm : tensor<64x1xi32>
  %ak = tile.expand_dims %rk {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<64x1xi32> -> tensor<64x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<64x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<64x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<64x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<64x16x!tile.ptr<f32>>, tensor<64x16xi32>
  %bk = tile.expand_dims %rk {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bn = tile.expand_dims %rn {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %bns = arith.muli %bn, %ckn : tensor<1x64xi32>
  %bkb = tile.broadcast %bk : tensor<16x1xi32> -> tensor<16x64xi32>
  %bnb = tile.broadcast %bns : tensor<1x64xi32> -> tensor<16x64xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x64xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x64x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %x = tile.load %ap : tensor<64x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x64x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero precision = tf32 : tensor<64x16xf32> * tensor<16x64xf32> -> tensor<64x64xf32>
  %cms = arith.muli %am, %cnm : tensor<64x1xi32>
  %cmb = tile.broadcast %cms : tensor<64x1xi32> -> tensor<64x64xi32>
  %cn = tile.expand_dims %rn {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cnb = tile.broadcast %cn : tensor<1x64xi32> -> tensor<64x64xi32>
  %coff = arith.addi %cmb, %cnb : tensor<64x64xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %cp, %d : tensor<64x64x!tile.ptr<f32>>
  tile.return
}
}

// -----

// wgmma cannot transpose tf32: row-major B ([K][N]) stays on mma.sync, and
// so does tf32x3 (its operands are split in registers).
// CHECK-LABEL: llvm.func @tf32_n_major_b_on_hopper
// CHECK-NOT: wgmma
// CHECK: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK: llvm.return
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32, kgpu.target = "sm_90a"} {
tile.func @tf32_n_major_b_on_hopper(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %ckm = arith.constant dense<16> : tensor<64x1xi32>
  %ckn = arith.constant dense<16> : tensor<1x64xi32>
  %cnk = arith.constant dense<64> : tensor<16x1xi32>
  %cnm = arith.constant dense<64> : tensor<64x1xi32>
  %rm = tile.range 0, 64 : tensor<64xi32>
  %rk = tile.range 0, 16 : tensor<16xi32>
  %rn = tile.range 0, 64 : tensor<64xi32>
  %am = tile.expand_dims %rm {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ams = arith.muli %am, %ckm : tensor<64x1xi32>
  %ak = tile.expand_dims %rk {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<64x1xi32> -> tensor<64x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<64x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<64x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<64x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<64x16x!tile.ptr<f32>>, tensor<64x16xi32>
  %bk = tile.expand_dims %rk {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bks = arith.muli %bk, %cnk : tensor<16x1xi32>
  %bn = tile.expand_dims %rn {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %bkb = tile.broadcast %bks : tensor<16x1xi32> -> tensor<16x64xi32>
  %bnb = tile.broadcast %bn : tensor<1x64xi32> -> tensor<16x64xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x64xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x64x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %x = tile.load %ap : tensor<64x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x64x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero precision = tf32 : tensor<64x16xf32> * tensor<16x64xf32> -> tensor<64x64xf32>
  %cms = arith.muli %am, %cnm : tensor<64x1xi32>
  %cmb = tile.broadcast %cms : tensor<64x1xi32> -> tensor<64x64xi32>
  %cn = tile.expand_dims %rn {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cnb = tile.broadcast %cn : tensor<1x64xi32> -> tensor<64x64xi32>
  %coff = arith.addi %cmb, %cnb : tensor<64x64xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %cp, %d : tensor<64x64x!tile.ptr<f32>>
  tile.return
}
}

// -----

// CHECK-LABEL: llvm.func @tf32x3_on_hopper
// CHECK-NOT: wgmma
// CHECK: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK: llvm.return
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32, kgpu.target = "sm_90a"} {
tile.func @tf32x3_on_hopper(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %ckm = arith.constant dense<16> : tensor<64x1xi32>
  %ckn = arith.constant dense<16> : tensor<1x64xi32>
  %cnk = arith.constant dense<64> : tensor<16x1xi32>
  %cnm = arith.constant dense<64> : tensor<64x1xi32>
  %rm = tile.range 0, 64 : tensor<64xi32>
  %rk = tile.range 0, 16 : tensor<16xi32>
  %rn = tile.range 0, 64 : tensor<64xi32>
  %am = tile.expand_dims %rm {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ams = arith.muli %am, %ckm : tensor<64x1xi32>
  %ak = tile.expand_dims %rk {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %amb = tile.broadcast %ams : tensor<64x1xi32> -> tensor<64x16xi32>
  %akb = tile.broadcast %ak : tensor<1x16xi32> -> tensor<64x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<64x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<64x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<64x16x!tile.ptr<f32>>, tensor<64x16xi32>
  %bk = tile.expand_dims %rk {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bn = tile.expand_dims %rn {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %bns = arith.muli %bn, %ckn : tensor<1x64xi32>
  %bkb = tile.broadcast %bk : tensor<16x1xi32> -> tensor<16x64xi32>
  %bnb = tile.broadcast %bns : tensor<1x64xi32> -> tensor<16x64xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x64xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x64x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x64x!tile.ptr<f32>>, tensor<16x64xi32>
  %x = tile.load %ap : tensor<64x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x64x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero precision = tf32x3 : tensor<64x16xf32> * tensor<16x64xf32> -> tensor<64x64xf32>
  %cms = arith.muli %am, %cnm : tensor<64x1xi32>
  %cmb = tile.broadcast %cms : tensor<64x1xi32> -> tensor<64x64xi32>
  %cn = tile.expand_dims %rn {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cnb = tile.broadcast %cn : tensor<1x64xi32> -> tensor<64x64xi32>
  %coff = arith.addi %cmb, %cnb : tensor<64x64xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %cp, %d : tensor<64x64x!tile.ptr<f32>>
  tile.return
}
}

// -----

// Layout assignment's choice is recorded on the dot (kgpu.wgmma): an
// M-major A keeps this 256x32 dot on mma.sync even though its MMA layout
// (4 warps stacked along M) equals the wgmma layout.
// CHECK-LABEL: llvm.func @m_major_a_keeps_mma
// CHECK-NOT: wgmma
// CHECK: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK-NOT: wgmma
// CHECK: llvm.return
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32, kgpu.target = "sm_90a"} {
tile.func @m_major_a_keeps_mma(%a: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<256x32xf32>
  %cmk = arith.constant dense<256> : tensor<1x16xi32>
  %ckn = arith.constant dense<16> : tensor<1x32xi32>
  %cnm = arith.constant dense<32> : tensor<256x1xi32>
  %rm = tile.range 0, 256 : tensor<256xi32>
  %rk = tile.range 0, 16 : tensor<16xi32>
  %rn = tile.range 0, 32 : tensor<32xi32>
  %am = tile.expand_dims %rm {axis = 1 : i32} : tensor<256xi32> -> tensor<256x1xi32>
  %ak = tile.expand_dims %rk {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %aks = arith.muli %ak, %cmk : tensor<1x16xi32>
  %amb = tile.broadcast %am : tensor<256x1xi32> -> tensor<256x16xi32>
  %akb = tile.broadcast %aks : tensor<1x16xi32> -> tensor<256x16xi32>
  %aoff = arith.addi %amb, %akb : tensor<256x16xi32>
  %as = tile.splat %a : !tile.ptr<f32> -> tensor<256x16x!tile.ptr<f32>>
  %ap = tile.addptr %as, %aoff : tensor<256x16x!tile.ptr<f32>>, tensor<256x16xi32>
  %bk = tile.expand_dims %rk {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %bn = tile.expand_dims %rn {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %bns = arith.muli %bn, %ckn : tensor<1x32xi32>
  %bkb = tile.broadcast %bk : tensor<16x1xi32> -> tensor<16x32xi32>
  %bnb = tile.broadcast %bns : tensor<1x32xi32> -> tensor<16x32xi32>
  %boff = arith.addi %bkb, %bnb : tensor<16x32xi32>
  %bs = tile.splat %b : !tile.ptr<f32> -> tensor<16x32x!tile.ptr<f32>>
  %bp = tile.addptr %bs, %boff : tensor<16x32x!tile.ptr<f32>>, tensor<16x32xi32>
  %x = tile.load %ap : tensor<256x16x!tile.ptr<f32>>
  %y = tile.load %bp : tensor<16x32x!tile.ptr<f32>>
  %d = tile.dot %x, %y, %zero precision = tf32 : tensor<256x16xf32> * tensor<16x32xf32> -> tensor<256x32xf32>
  %cms = arith.muli %am, %cnm : tensor<256x1xi32>
  %cmb = tile.broadcast %cms : tensor<256x1xi32> -> tensor<256x32xi32>
  %cnb = tile.broadcast %bn : tensor<1x32xi32> -> tensor<256x32xi32>
  %coff = arith.addi %cmb, %cnb : tensor<256x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<256x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<256x32x!tile.ptr<f32>>, tensor<256x32xi32>
  tile.store %cp, %d : tensor<256x32x!tile.ptr<f32>>
  tile.return
}
}
