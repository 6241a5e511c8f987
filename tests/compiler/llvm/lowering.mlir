// Lowering of the GPU level to LLVM + NVVM, pattern by pattern.
// RUN: kiln-opt %s --kgpu-to-llvm --split-input-file | FileCheck %s

#b4 = #kgpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // Kernels take LLVM pointers in the global space and run 128 threads.
  // CHECK-LABEL: llvm.func @vectorized(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>}
  tile.func @vectorized(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32 {tile.divisibility = 16 : i32}) {
    // CHECK: nvvm.read.ptx.sreg.ctaid.x
    %pid = tile.program_id x : i32
    // The range: each thread's coordinates from its lane and warp bits.
    // CHECK: nvvm.read.ptx.sreg.tid.x
    %r = tile.range 0, 512 : tensor<512xi32, #b4>
    %ns = tile.splat %n : i32 -> tensor<512xi32, #b4>
    %m = arith.cmpi slt, %r, %ns : tensor<512xi32, #b4>
    %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>, #b4>
    // CHECK: llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %px = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>, #b4>, tensor<512xi32, #b4>
    %zero = arith.constant dense<0.0> : tensor<512xf32, #b4>
    // One 16-byte predicated load per 4 registers; masked-off lanes keep `other`.
    // CHECK: llvm.inline_asm has_side_effects {{.*}}"{ .reg .pred p; setp.ne.b32 p, $5, 0; mov.b32 $0, $6; mov.b32 $1, $7; mov.b32 $2, $8; mov.b32 $3, $9; @p ld.global.cg.v4.b32 {$0, $1, $2, $3}, [$4]; }", "=r,=r,=r,=r,l,r,r,r,r,r"
    %v = tile.load %px, %m, %zero cache = cg : tensor<512x!tile.ptr<f32>, #b4>
    // Scalar arithmetic stays arith until kiln-finalize-llvm.
    // CHECK: arith.addf %{{.*}}, %{{.*}} : f32
    %w = arith.addf %v, %v : tensor<512xf32, #b4>
    %ys = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>, #b4>
    %py = tile.addptr %ys, %r : tensor<512x!tile.ptr<f32>, #b4>, tensor<512xi32, #b4>
    // CHECK: "{ .reg .pred p; setp.ne.b32 p, $1, 0; @p st.global.v4.b32 [$0], {$2, $3, $4, $5}; }"
    tile.store %py, %w, %m : tensor<512x!tile.ptr<f32>, #b4>
    // CHECK: llvm.return
    tile.return
  }
}

// -----

#b1 = #kgpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32, kgpu.target = "sm_90a"} {
  // A reduction over lanes (butterfly shuffles) and then warps (shared
  // memory between two barriers); of the lanes that hold a warp's partial
  // after the butterflies, lane 0 alone writes it.
  // CHECK-LABEL: llvm.func @reduce
  tile.func @reduce(%out: !tile.ptr<f32>) {
    %c = arith.constant dense<1.0> : tensor<128xf32, #b1>
    // CHECK-COUNT-5: nvvm.shfl.sync  bfly
    // CHECK: nvvm.barrier0
    // CHECK: llvm.mlir.constant(31 : i32)
    // CHECK: llvm.icmp "eq"
    // CHECK: @p st.shared.b32
    // CHECK: nvvm.barrier0
    // CHECK-COUNT-4: llvm.load
    %s = tile.reduce(%c) axis = 0 : (tensor<128xf32, #b1>) -> f32 {
    ^bb0(%a: f32, %b: f32):
      %d = arith.addf %a, %b : f32
      tile.reduce.return %d : f32
    }
    // A scalar store: the first thread writes.
    // CHECK: st.global.b32
    tile.store %out, %s : !tile.ptr<f32>
    tile.return
  }
}

// -----

#a = #kgpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#b = #kgpu.blocked<{sizePerThread = [4, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
#c = #kgpu.blocked<{sizePerThread = [2, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // CHECK-LABEL: llvm.func @conversions
  tile.func @conversions(%p: !tile.ptr<f32>) {
    %x = arith.constant dense<2.0> : tensor<32x16xf32, #a>
    // Other threads: through shared memory, rows of 16 padded to 20
    // elements (bank conflicts), each side in vectors of the registers it
    // holds contiguously along rows: #a's 4, #b's none. #b's 32 columns of
    // threads hold the 16 columns twice: one copy of each is written.
    // CHECK: llvm.mlir.addressof @kiln_shared_memory
    // CHECK: nvvm.barrier0
    // CHECK: llvm.mlir.constant(20 : i32)
    // CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<3>
    // CHECK: nvvm.barrier0
    // CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
    // CHECK: nvvm.barrier0
    // CHECK: @p st.shared.b32
    // CHECK: nvvm.barrier0
    // CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
    %y = kgpu.convert_layout %x : tensor<32x16xf32, #a> -> tensor<32x16xf32, #b>
    %z = kgpu.convert_layout %y : tensor<32x16xf32, #b> -> tensor<32x16xf32, #a>
    tile.return
  }
}

// -----

#l = #kgpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [2, 2], order = [1, 0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // The FMA fallback of dot (f32 operands; f16 and bf16 ones take the
  // tensor cores, mma.test): fused multiply-adds in f32.
  // CHECK-LABEL: llvm.func @dot
  // CHECK-NOT: mma.sync
  // CHECK: llvm.intr.fma
  tile.func @dot(%p: !tile.ptr<f32>) {
    %a = arith.constant dense<1.0> : tensor<16x16xf32, #l>
    %b = arith.constant dense<2.0> : tensor<16x16xf32, #l>
    %c = arith.constant dense<0.0> : tensor<16x16xf32, #l>
    %d = tile.dot %a, %b, %c : tensor<16x16xf32, #l> * tensor<16x16xf32, #l> -> tensor<16x16xf32, #l>
    tile.return
  }
}

// -----

#l = #kgpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // CHECK-LABEL: llvm.func @atomics
  tile.func @atomics(%p: !tile.ptr<f32>, %q: !tile.ptr<i32>) {
    %r = tile.range 0, 128 : tensor<128xi32, #l>
    %ps = tile.splat %p : !tile.ptr<f32> -> tensor<128x!tile.ptr<f32>, #l>
    %pp = tile.addptr %ps, %r : tensor<128x!tile.ptr<f32>, #l>, tensor<128xi32, #l>
    %v = arith.constant dense<1.0> : tensor<128xf32, #l>
    // CHECK: @p atom.acq_rel.gpu.global.add.f32 $0, [$1], $3;
    %o = tile.atomic_rmw fadd, %pp, %v : tensor<128x!tile.ptr<f32>, #l>
    // Relaxed updates whose old values nobody reads are reductions (`red`:
    // no value comes back); an acquiring one stays an atomic.
    // CHECK: @p red.relaxed.gpu.global.add.f32 [$1], $3;
    %u = tile.atomic_rmw fadd, %pp, %v sem = relaxed scope = gpu : tensor<128x!tile.ptr<f32>, #l>
    // CHECK: @p red.release.gpu.global.max.s32 [$1], $3; @q red.release.gpu.global.min.u32 [$1], $3;
    %m = tile.atomic_rmw max, %pp, %v sem = release scope = gpu : tensor<128x!tile.ptr<f32>, #l>
    // CHECK: @p atom.acquire.gpu.global.add.f32 $0, [$1], $3;
    %a = tile.atomic_rmw fadd, %pp, %v sem = acquire scope = gpu : tensor<128x!tile.ptr<f32>, #l>
    // CHECK: @p atom.relaxed.gpu.global.exch.b32 $0, [$1], $3;
    %x = tile.atomic_rmw xchg, %pp, %v sem = relaxed scope = gpu : tensor<128x!tile.ptr<f32>, #l>
    %one = arith.constant 1 : i32
    %two = arith.constant 2 : i32
    // CHECK: @p atom.relaxed.cta.global.cas.b32 $0, [$1], $3, $4;
    %c = tile.atomic_cas %q, %one, %two sem = relaxed scope = cta : !tile.ptr<i32>
    tile.return
  }
}
