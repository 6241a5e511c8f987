// Loads and stores with eviction priorities assemble with ptxas on Hopper
// and Ampere (an L2 policy register) and Turing (L1 priorities only).
// REQUIRES: ptxas
// RUN: kilnc %s --emit ptx | FileCheck %s
// RUN: kilnc %s --emit cubin-info | FileCheck %s --check-prefix=CUBIN
// RUN: kilnc %s --arch sm_80 --emit cubin-info | FileCheck %s --check-prefix=AMPERE
// RUN: kilnc %s --arch sm_75 --emit ptx | FileCheck %s --check-prefix=TURING

// CHECK: createpolicy.fractional.L2::evict_last.b64
// CHECK: ld.global.L1::evict_last.L2::cache_hint.v4.b32
// CHECK: createpolicy.fractional.L2::evict_first.b64
// CHECK: st.global.L1::evict_first.L2::cache_hint.v4.b32
// CUBIN: kernel hints for sm_90a
// AMPERE: kernel hints for sm_80
// TURING-NOT: cache_hint
// TURING: ld.global.L1::evict_last.v4.b32
tile.func @hints(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}) {
  %r = tile.range 0, 1024 : tensor<1024xi32>
  %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %px = tile.addptr %xs, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  %v = tile.load %px evict = evict_last : tensor<1024x!tile.ptr<f32>>
  %ys = tile.splat %y : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>>
  %py = tile.addptr %ys, %r : tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>
  tile.store %py, %v evict = evict_first : tensor<1024x!tile.ptr<f32>>
  tile.return
}
