// Every math function compiles to PTX (no libdevice) that ptxas accepts.
// REQUIRES: ptxas
// RUN: kilnc %s --emit ptx | FileCheck %s
// RUN: kilnc %s --emit cubin-info | FileCheck %s --check-prefix=CUBIN

// CHECK: ex2.approx.ftz.f32
// CHECK: lg2.approx.f32
// CHECK: rsqrt.approx.f32
// CHECK: sqrt.rn.f32
// CHECK: rcp.approx.ftz.f32
// CHECK: cvt.rzi.s32.f32
// CUBIN: kernel math for sm_90a
tile.func @math(%p: !tile.ptr<f32>, %q: !tile.ptr<i32>, %h: !tile.ptr<f8E4M3FN>) {
  %v = tile.load %p : !tile.ptr<f32>
  %a = math.exp %v : f32
  %b = math.log %a : f32
  %c = math.rsqrt %b : f32
  %d = math.sqrt %c : f32
  %e = math.tanh %d : f32
  %f = math.erf %e : f32
  %fc = math.erfc %f : f32
  %g = math.sin %fc : f32
  %k = math.cos %g : f32
  %l = math.powf %k, %v : f32
  %m = math.exp2 %l : f32
  %n = math.log2 %m : f32
  %o = math.floor %n : f32
  %s = math.ceil %o : f32
  %t = math.absf %s : f32
  %u = math.fma %t, %t, %t : f32
  tile.store %p, %u : !tile.ptr<f32>
  %i = arith.fptosi %u : f32 to i32
  tile.store %q, %i : !tile.ptr<i32>
  %f8 = tile.fp_to_fp %u, rounding = rtne : f32 -> f8E4M3FN
  tile.store %h, %f8 : !tile.ptr<f8E4M3FN>
  tile.return
}
