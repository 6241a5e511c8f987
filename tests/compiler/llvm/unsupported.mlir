// Transcendental math on f64 is reported, never left for LLVM to reject.
// RUN: kiln-opt %s --kiln-finalize-llvm --verify-diagnostics

llvm.func @f64_exp(%x: f64) -> f64 {
  // expected-error @+1 {{'math.exp' on f64 is not supported on the GPU yet (f32 is)}}
  %e = math.exp %x : f64
  llvm.return %e : f64
}
