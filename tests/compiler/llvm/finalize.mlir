// kiln-finalize-llvm: fast f32 math, saturating conversions, the rest by
// the standard conversions.
// RUN: kiln-opt %s --kiln-finalize-llvm | FileCheck %s

// CHECK-LABEL: llvm.func @math
llvm.func @math(%x: f32, %d: f64) -> f32 {
  // CHECK: %[[L2E:.*]] = llvm.mlir.constant(1.44269502 : f32) : f32
  // CHECK: llvm.fmul %{{.*}}, %[[L2E]]
  // CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"
  %e = math.exp %x : f32
  // CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
  %l = math.log %e : f32
  // CHECK: llvm.call_intrinsic "llvm.nvvm.rsqrt.approx.f"
  %r = math.rsqrt %l : f32
  // CHECK: llvm.intr.sqrt
  %s = math.sqrt %r : f32
  // Polynomial approximations: no libm calls, no unselectable intrinsics.
  // CHECK-NOT: llvm.intr.tanh
  // CHECK-NOT: llvm.intr.sin
  %t = math.tanh %s : f32
  %c = math.sin %t : f32
  // CHECK: llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"
  %i = arith.fptosi %c : f32 to i32
  // CHECK: llvm.call_intrinsic "llvm.fptoui.sat.i8.f64"
  %u = arith.fptoui %d : f64 to i8
  %f = arith.sitofp %i : i32 to f32
  %uf = arith.uitofp %u : i8 to f32
  %sum = arith.addf %f, %uf : f32
  llvm.return %sum : f32
}

// erf on f32: two polynomials (6 and 9 coefficients) and 2^Q by
// ex2.approx.ftz (Q never reaches the denormals), selected by one unordered
// compare (NaN takes the polynomial that carries it), without a branch or a
// division.
// CHECK-LABEL: llvm.func @erf
llvm.func @erf(%x: f32) -> f32 {
  // CHECK-NOT: llvm.fdiv
  // CHECK-COUNT-5: llvm.intr.fma
  // CHECK: llvm.fmul
  // CHECK: llvm.intr.minimum
  // CHECK-COUNT-8: llvm.intr.fma
  // CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
  // CHECK: llvm.intr.copysign
  // CHECK: llvm.fcmp "ult"
  // CHECK-NOT: llvm.fcmp
  // CHECK: llvm.select
  // CHECK-NOT: llvm.fdiv
  %e = math.erf %x : f32
  llvm.return %e : f32
}
