// fp8 dots on Hopper (sm_90a): with both operands K-major in shared memory (A row-major, B read as the
// transpose of an [N][K] tile), layout assignment chooses wgmma, which takes 32 K a step (32 bytes of each K
// row), each operand in its own format (e4m3 times e5m2 here), both from descriptors and with no transpose
// immediates (16-bit operands only have them): four instructions for a K block of 128 (128-byte swizzled
// rows). With B N-major ([K][N] row-major), which fp8 wgmma cannot read, the dot stays on FMAs over operands
// widened in pairs by cvt (mma.sync has no fp8 here either).
// RUN: kiln-opt %s --kgpu-assign-layouts --kgpu-pipeline-loops=num-stages=3 | FileCheck %s --check-prefix=GPU
// RUN: kiln-opt %s --kgpu-assign-layouts --kgpu-pipeline-loops=num-stages=3 --kgpu-to-llvm | FileCheck %s

// GPU-LABEL: tile.func @fp8_k_major
// GPU: kgpu.local_alloc : tensor<3x64x128xf8E4M3FN, #kgpu.shared<{vec = 16, perPhase = 1, maxPhase = 8, order = [1, 0]}>>
// GPU: kgpu.local_alloc : tensor<3x128x64xf8E5M2, #kgpu.shared<{vec = 16, perPhase = 1, maxPhase = 8, order = [0, 1]}>>
// GPU: tile.dot {{.*}} {kgpu.wgmma} : tensor<64x128xf8E4M3FN
// GPU-LABEL: tile.func @fp8_n_major_b
// GPU-NOT: kgpu.wgmma
// GPU: tile.dot {{.*}} : tensor<64x128xf8E4M3FN, #blocked{{[0-9]*}}> * tensor<128x64xf8E4M3FN, #blocked{{[0-9]*}}> -> tensor<64x64xf32, #blocked{{[0-9]*}}>

// CHECK-LABEL: llvm.func @fp8_k_major
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2 {$0, {{.*}}, $31}, $64, $65, p, 1, 1; }
// CHECK-NOT: wgmma.mma_async
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-LABEL: llvm.func @fp8_n_major_b
// CHECK-NOT: wgmma
// CHECK: "cvt.rn.f16x2.e4m3x2 $0, $1;"
// CHECK: llvm.intr.fma
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32, kgpu.target = "sm_90a"} {
tile.func @fp8_k_major(%a: !tile.ptr<f8E4M3FN> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f8E5M2> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %r128 = tile.range 0, 128 : tensor<128xi32>
  %rows = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ks = tile.splat %k : i32 -> tensor<64x1xi32>
  %rowoff = arith.muli %rows, %ks : tensor<64x1xi32>
  %kcols = tile.expand_dims %r128 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x128xi32>
  %cb = tile.broadcast %kcols : tensor<1x128xi32> -> tensor<64x128xi32>
  %aoff = arith.addi %rb, %cb : tensor<64x128xi32>
  %as = tile.splat %a : !tile.ptr<f8E4M3FN> -> tensor<64x128x!tile.ptr<f8E4M3FN>>
  %a0 = tile.addptr %as, %aoff : tensor<64x128x!tile.ptr<f8E4M3FN>>, tensor<64x128xi32>
  %krows = tile.expand_dims %r128 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %cols64 = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %kc = tile.splat %k : i32 -> tensor<1x64xi32>
  %coloff = arith.muli %cols64, %kc : tensor<1x64xi32>
  %bcb = tile.broadcast %coloff : tensor<1x64xi32> -> tensor<128x64xi32>
  %brb = tile.broadcast %krows : tensor<128x1xi32> -> tensor<128x64xi32>
  %boff = arith.addi %brb, %bcb : tensor<128x64xi32>
  %bs = tile.splat %b : !tile.ptr<f8E5M2> -> tensor<128x64x!tile.ptr<f8E5M2>>
  %b0 = tile.addptr %bs, %boff : tensor<128x64x!tile.ptr<f8E5M2>>, tensor<128x64xi32>
  %astep = arith.constant dense<128> : tensor<64x128xi32>
  %k128 = arith.constant dense<128> : tensor<128x64xi32>
  %k8192 = arith.constant dense<8192> : tensor<128x64xi32>
  %acc, %pa, %pb = scf.for %i = %c0 to %k step %c128 iter_args(%sum = %zero, %p = %a0, %q = %b0) -> (tensor<64x64xf32>, tensor<64x128x!tile.ptr<f8E4M3FN>>, tensor<128x64x!tile.ptr<f8E5M2>>) : i32 {
    %av = tile.load %p : tensor<64x128x!tile.ptr<f8E4M3FN>>
    %bv = tile.load %q : tensor<128x64x!tile.ptr<f8E5M2>>
    %d = tile.dot %av, %bv, %sum : tensor<64x128xf8E4M3FN> * tensor<128x64xf8E5M2> -> tensor<64x64xf32>
    %nexta = tile.addptr %p, %astep : tensor<64x128x!tile.ptr<f8E4M3FN>>, tensor<64x128xi32>
    %nextb = tile.addptr %q, %k128 : tensor<128x64x!tile.ptr<f8E5M2>>, tensor<128x64xi32>
    scf.yield %d, %nexta, %nextb : tensor<64x64xf32>, tensor<64x128x!tile.ptr<f8E4M3FN>>, tensor<128x64x!tile.ptr<f8E5M2>>
  }
  %r64c = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %c64s = arith.constant dense<64> : tensor<64x1xi32>
  %crow = arith.muli %rows, %c64s : tensor<64x1xi32>
  %crb = tile.broadcast %crow : tensor<64x1xi32> -> tensor<64x64xi32>
  %ccb = tile.broadcast %r64c : tensor<1x64xi32> -> tensor<64x64xi32>
  %coff = arith.addi %crb, %ccb : tensor<64x64xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %cp, %acc : tensor<64x64x!tile.ptr<f32>>
  tile.return
}
tile.func @fp8_n_major_b(%a: !tile.ptr<f8E4M3FN> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f8E4M3FN> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %r128 = tile.range 0, 128 : tensor<128xi32>
  %rows = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ks = tile.splat %k : i32 -> tensor<64x1xi32>
  %rowoff = arith.muli %rows, %ks : tensor<64x1xi32>
  %kcols = tile.expand_dims %r128 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  %rb = tile.broadcast %rowoff : tensor<64x1xi32> -> tensor<64x128xi32>
  %cb = tile.broadcast %kcols : tensor<1x128xi32> -> tensor<64x128xi32>
  %aoff = arith.addi %rb, %cb : tensor<64x128xi32>
  %as = tile.splat %a : !tile.ptr<f8E4M3FN> -> tensor<64x128x!tile.ptr<f8E4M3FN>>
  %a0 = tile.addptr %as, %aoff : tensor<64x128x!tile.ptr<f8E4M3FN>>, tensor<64x128xi32>
  %krows = tile.expand_dims %r128 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
  %cols64 = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %c64t = arith.constant dense<64> : tensor<128x1xi32>
  %krowoff = arith.muli %krows, %c64t : tensor<128x1xi32>
  %brb = tile.broadcast %krowoff : tensor<128x1xi32> -> tensor<128x64xi32>
  %bcb = tile.broadcast %cols64 : tensor<1x64xi32> -> tensor<128x64xi32>
  %boff = arith.addi %brb, %bcb : tensor<128x64xi32>
  %bs = tile.splat %b : !tile.ptr<f8E4M3FN> -> tensor<128x64x!tile.ptr<f8E4M3FN>>
  %b0 = tile.addptr %bs, %boff : tensor<128x64x!tile.ptr<f8E4M3FN>>, tensor<128x64xi32>
  %astep = arith.constant dense<128> : tensor<64x128xi32>
  %k128 = arith.constant dense<128> : tensor<128x64xi32>
  %k8192 = arith.constant dense<8192> : tensor<128x64xi32>
  %acc, %pa, %pb = scf.for %i = %c0 to %k step %c128 iter_args(%sum = %zero, %p = %a0, %q = %b0) -> (tensor<64x64xf32>, tensor<64x128x!tile.ptr<f8E4M3FN>>, tensor<128x64x!tile.ptr<f8E4M3FN>>) : i32 {
    %av = tile.load %p : tensor<64x128x!tile.ptr<f8E4M3FN>>
    %bv = tile.load %q : tensor<128x64x!tile.ptr<f8E4M3FN>>
    %d = tile.dot %av, %bv, %sum : tensor<64x128xf8E4M3FN> * tensor<128x64xf8E4M3FN> -> tensor<64x64xf32>
    %nexta = tile.addptr %p, %astep : tensor<64x128x!tile.ptr<f8E4M3FN>>, tensor<64x128xi32>
    %nextb = tile.addptr %q, %k8192 : tensor<128x64x!tile.ptr<f8E4M3FN>>, tensor<128x64xi32>
    scf.yield %d, %nexta, %nextb : tensor<64x64xf32>, tensor<64x128x!tile.ptr<f8E4M3FN>>, tensor<128x64x!tile.ptr<f8E4M3FN>>
  }
  %r64c = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %c64s = arith.constant dense<64> : tensor<64x1xi32>
  %crow = arith.muli %rows, %c64s : tensor<64x1xi32>
  %crb = tile.broadcast %crow : tensor<64x1xi32> -> tensor<64x64xi32>
  %ccb = tile.broadcast %r64c : tensor<1x64xi32> -> tensor<64x64xi32>
  %coff = arith.addi %crb, %ccb : tensor<64x64xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<64x64x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
  tile.store %cp, %acc : tensor<64x64x!tile.ptr<f32>>
  tile.return
}
}
