//===- Build.h - shared helpers of the DSL's operations ------*- C++ -*-===//
//
// Type promotion, broadcasting, literal materialization and conversions:
// the rules of docs/dsl.md ("Mixing dtypes and shapes"), in one place.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "dsl/lib/Trace.h"

#include <kiln/ops.h>

#include <string>

namespace kiln::detail {

/// A constant of `dtype` with `shape` (scalar for {}), from an integer or a
/// floating value.
Tensor make_constant(double floating, int64_t integer, bool is_float_value, DType dtype,
                     const Shape &shape, Loc loc);

/// `operand` as a Tensor: tensors as they are; literals as a scalar constant
/// of `dtype` (an integer literal must fit it; a floating literal needs a
/// float dtype). `what` names the operation for messages.
Tensor materialize(const Operand &operand, DType dtype, const char *what);

/// A Tensor operand, or a TraceError naming `what` if it is a literal or
/// absent.
const Tensor &require_tensor(const Operand &operand, const char *what);

/// The common dtype of two number operands (see the promotion rules) or a
/// TraceError naming both.
DType promote(DType a, DType b, Loc loc, const char *what);

/// Turns two operands into Tensors of one dtype and one shape: literals
/// take the other side's dtype; dtypes promote; shapes broadcast.
std::pair<Tensor, Tensor> unify(const Operand &a, const Operand &b, const char *what);
/// The same for the value operands of an elementwise op with several.
std::vector<Tensor> unify(const std::vector<const Operand *> &operands, const char *what);

/// The broadcast shape of two shapes, or a TraceError naming them.
Shape broadcast_shape(const Shape &a, const Shape &b, Loc loc, const char *what);
/// `t` broadcast to `shape` (scalars splat; lower ranks gain leading 1s).
Tensor broadcast_to_shape(const Tensor &t, const Shape &shape, Loc loc);

/// Value conversion of numbers (see Tensor::to).
Tensor convert(const Tensor &t, DType to, Loc loc);

/// Checks that `t` holds numbers (not pointers) for `what`.
void require_numbers(const Tensor &t, Loc loc, const char *what);

/// The element type of a number Tensor of `dtype`.
inline ElementType number(DType dtype) { return ElementType{dtype, false, false}; }

} // namespace kiln::detail
