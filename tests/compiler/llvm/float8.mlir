// 8-bit float conversions: cvt on sm_89+, integer arithmetic before it and
// for rounding toward zero.
// RUN: kiln-opt %s --kgpu-to-llvm | FileCheck %s --check-prefix=HOPPER
// RUN: kiln-opt %s --kgpu-to-llvm="compute-capability=80" | FileCheck %s --check-prefix=AMPERE

#l = #kgpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 32 : i32} {
  // HOPPER-LABEL: llvm.func @narrow_and_widen
  // AMPERE-LABEL: llvm.func @narrow_and_widen
  tile.func @narrow_and_widen(%p: !tile.ptr<f32>) {
    %x = arith.constant dense<3.0> : tensor<128xf32, #l>
    // HOPPER: cvt.rn.satfinite.e4m3x2.f32
    // AMPERE-NOT: cvt.rn.satfinite
    // AMPERE: llvm.intr.roundeven
    // AMPERE: llvm.intr.umin
    %e4 = tile.fp_to_fp %x, rounding = rtne : tensor<128xf32, #l> -> tensor<128xf8E4M3FN, #l>
    // Toward zero has no cvt: integer arithmetic on every target.
    // HOPPER: llvm.intr.trunc
    // HOPPER: llvm.intr.umin
    // AMPERE: llvm.intr.trunc
    %e5 = tile.fp_to_fp %x, rounding = rtz : tensor<128xf32, #l> -> tensor<128xf8E5M2, #l>
    // HOPPER: cvt.rn.f16x2.e4m3x2
    // AMPERE: llvm.shl {{.*}} : i16
    // AMPERE: llvm.fmul
    %w4 = tile.fp_to_fp %e4 : tensor<128xf8E4M3FN, #l> -> tensor<128xf32, #l>
    // HOPPER: cvt.rn.f16x2.e5m2x2
    // AMPERE: llvm.bitcast {{.*}} : i16 to f16
    %w5 = tile.fp_to_fp %e5 : tensor<128xf8E5M2, #l> -> tensor<128xf32, #l>
    tile.return
  }
}
