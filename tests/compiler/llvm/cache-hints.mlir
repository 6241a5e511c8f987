// Eviction priorities on global loads and stores: from sm_80 an L2 policy
// (createpolicy, passed as the access's last operand) with the L1 priority;
// before sm_80 the L1 priority alone. A cache operator keeps the L2 policy.
// RUN: kiln-opt %s --kgpu-to-llvm | FileCheck %s
// RUN: kiln-opt %s --kgpu-to-llvm="compute-capability=75" | FileCheck %s --check-prefix=TURING

#b4 = #kgpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // CHECK-LABEL: llvm.func @hints
  // TURING-LABEL: llvm.func @hints
  tile.func @hints(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
    %r = tile.range 0, 512 : tensor<512xi32, #b4>
    %xs = tile.splat %x : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>, #b4>
    %px = tile.addptr %xs, %r : tensor<512x!tile.ptr<f32>, #b4>, tensor<512xi32, #b4>
    // CHECK: %[[KEEP:.*]] = llvm.inline_asm {{.*}}"createpolicy.fractional.L2::evict_last.b64 $0, 1.0;", "=l"
    // CHECK: llvm.inline_asm has_side_effects {{.*}}"ld.global.L1::evict_last.L2::cache_hint.v4.b32 {$0, $1, $2, $3}, [$4], $5;", "=r,=r,=r,=r,l,l" %{{.*}}, %[[KEEP]] :
    // TURING-NOT: createpolicy
    // TURING: "ld.global.L1::evict_last.v4.b32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l"
    %a = tile.load %px evict = evict_last : tensor<512x!tile.ptr<f32>, #b4>
    // CHECK: "createpolicy.fractional.L2::evict_first.b64 $0, 1.0;"
    // CHECK: "ld.global.cg.L2::cache_hint.v4.b32 {$0, $1, $2, $3}, [$4], $5;"
    // TURING: "ld.global.cg.v4.b32 {$0, $1, $2, $3}, [$4];"
    %b = tile.load %px cache = cg evict = evict_first : tensor<512x!tile.ptr<f32>, #b4>
    %s = arith.addf %a, %b : tensor<512xf32, #b4>
    %ys = tile.splat %y : !tile.ptr<f32> -> tensor<512x!tile.ptr<f32>, #b4>
    %py = tile.addptr %ys, %r : tensor<512x!tile.ptr<f32>, #b4>, tensor<512xi32, #b4>
    // The store's policy follows its values.
    // CHECK: "createpolicy.fractional.L2::evict_first.b64 $0, 1.0;"
    // CHECK: "{ .reg .pred p; setp.ne.b32 p, $1, 0; @p st.global.L1::evict_first.L2::cache_hint.v4.b32 [$0], {$2, $3, $4, $5}, $6; }", "l,r,r,r,r,r,l"
    // TURING: "{ .reg .pred p; setp.ne.b32 p, $1, 0; @p st.global.L1::evict_first.v4.b32 [$0], {$2, $3, $4, $5}; }", "l,r,r,r,r,r"
    tile.store %py, %s evict = evict_first : tensor<512x!tile.ptr<f32>, #b4>
    tile.return
  }
}
