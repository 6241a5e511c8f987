// kiln-finalize-llvm: fast f32 math, saturating conversions, the rest by
// the standard conversions.
// RUN: kiln-opt %s --kiln-finalize-llvm | FileCheck %s

// CHECK-LABEL: llvm.func @math
llvm.func @math(%x: f32, %d: f64) -> f32 {
  // CHECK: %[[L2E:.*]] = llvm.mlir.constant(1.44269502 : f32) : f32
  // CHECK: llvm.fmul %{{.*}}, %[[L2E]]
  // CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
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

// erfc on f32: one formula for every x, t = 1 / (1 + |x|/2) by rcp.approx,
// a degree-9 polynomial in t, one ex2.approx, 2 - e for negative x; no
// division, one compare.
// CHECK-LABEL: llvm.func @erfc
llvm.func @erfc(%x: f32) -> f32 {
  // CHECK-NOT: llvm.fdiv
  // CHECK: llvm.intr.fabs
  // CHECK: llvm.intr.fma
  // CHECK: llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"
  // CHECK-COUNT-9: llvm.intr.fma
  // CHECK: llvm.fmul
  // CHECK: llvm.intr.fma
  // CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
  // CHECK: llvm.fmul
  // CHECK: llvm.fcmp "olt"
  // CHECK-NOT: llvm.fcmp
  // CHECK: llvm.fsub
  // CHECK: llvm.select
  // CHECK-NOT: llvm.fdiv
  %e = math.erfc %x : f32
  llvm.return %e : f32
}

// fast_erfc (fastmath afn): the degree-5 polynomial.
// CHECK-LABEL: llvm.func @fast_erfc
llvm.func @fast_erfc(%x: f32) -> f32 {
  // CHECK: llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"
  // CHECK-COUNT-5: llvm.intr.fma
  // CHECK-NEXT: llvm.fmul
  // CHECK-NEXT: llvm.intr.fma
  // CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
  %e = math.erfc %x fastmath<afn> : f32
  llvm.return %e : f32
}

// erfc of a value times a constant (GELU's erfc(-x / sqrt 2)) folds the
// constant into its own: no multiply before |x|, and a negative constant
// turns the sign test around.
// CHECK-LABEL: llvm.func @erfc_scaled
llvm.func @erfc_scaled(%x: f32) -> f32 {
  // CHECK-NOT: llvm.fmul
  // CHECK: llvm.intr.fabs(%arg0)
  // CHECK: llvm.fcmp "ogt" %arg0
  %c = llvm.mlir.constant(-0.707106769 : f32) : f32
  %y = llvm.fmul %x, %c : f32
  %e = math.erfc %y : f32
  llvm.return %e : f32
}

// erfc(x) / 2 (GELU's Phi) moves the halving into the exponent: the last
// multiply is t * 2^(..), and negative x give 1 - e.
// CHECK-LABEL: llvm.func @half_erfc
llvm.func @half_erfc(%x: f32) -> f32 {
  // CHECK: %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32)
  // CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
  // CHECK-NEXT: llvm.fmul
  // CHECK-NEXT: llvm.fcmp
  // CHECK-NEXT: llvm.fsub %[[ONE]]
  // CHECK-NEXT: llvm.select
  // CHECK-NEXT: llvm.return
  %h = llvm.mlir.constant(0.5 : f32) : f32
  %e = math.erfc %x : f32
  %y = llvm.fmul %e, %h : f32
  llvm.return %y : f32
}
