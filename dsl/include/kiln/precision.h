// How f32 operands of a matrix product multiply; shared by the DSL's `dot`
// and the ops library's matmul. Public header: no MLIR.
#pragma once

namespace kiln {

/// How `dot` treats f32 operands: `tf32` rounds them to tf32 first (tensor
/// cores; the default, as in Triton), `tf32x3` recovers near-f32 accuracy
/// with three tf32 products, `ieee` multiplies in full f32.
enum class Precision { tf32, tf32x3, ieee };

} // namespace kiln
