//===- FloatRounding.h - how a back end may round floats -------*- C++ -*-===//

#pragma once

namespace kiln::backend {

/// How the GPU code may round floats (CompileOptions' fp_fusion and
/// approx_div).
struct FloatRounding {
  /// Contract float multiplies and adds into fmas (else LLVM keeps both
  /// roundings, and tells the target's assembler not to fuse them either).
  bool fpFusion = true;
  /// f32 division at most ~2 ulp from the IEEE quotient (a reciprocal and
  /// a multiply with range scaling), else the IEEE quotient.
  bool approxDiv = true;
};

} // namespace kiln::backend
