//===- ReduceMath.cpp - what each reduction accumulates -------------------===//

#include "ops/lib/ReduceMath.h"

#include <cmath>
#include <limits>

namespace kiln::ops {

const char *name(Reduce op) {
  switch (op) {
  case Reduce::sum: return "sum";
  case Reduce::mean: return "mean";
  case Reduce::max: return "max";
  case Reduce::min: return "min";
  case Reduce::argmax: return "argmax";
  case Reduce::argmin: return "argmin";
  case Reduce::var: return "var";
  }
  return "?";
}

namespace {

/// Sums and moments of floats accumulate in f32 (f64 for f64); integer sums
/// in 64 bits; extremes in the value's own dtype.
DType accumulatorType(Reduce op, DType value) {
  switch (op) {
  case Reduce::max:
  case Reduce::min:
  case Reduce::argmax:
  case Reduce::argmin:
    return value;
  case Reduce::sum:
    if (is_integer(value))
      return is_unsigned(value) ? DType::u64 : DType::i64;
    [[fallthrough]];
  case Reduce::mean:
  case Reduce::var:
    return value == DType::f64 ? DType::f64 : DType::f32;
  }
  return value;
}

/// A block of `shape` holding the lowest (or highest) value of `t`:
/// infinities for floats.
Tensor extreme(const Shape &shape, DType t, bool highest) {
  if (is_float(t))
    return full(shape, highest ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity(), t);
  if (is_unsigned(t)) {
    if (!highest)
      return zeros(shape, t);
    if (t == DType::u64) // all ones, which no i64 literal spells
      return full(shape, int64_t(-1), DType::i64).bitcast(DType::u64);
    return full(shape, (int64_t(1) << bit_width(t)) - 1, t);
  }
  int64_t limit = t == DType::i64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (bit_width(t) - 1)) - 1;
  return full(shape, highest ? limit : -limit - 1, t);
}

} // namespace

ReduceMath::ReduceMath(Reduce op, DType value, int correction)
    : op_(op), acc_(accumulatorType(op, value)), correction_(correction) {
  if ((op == Reduce::mean || op == Reduce::var) && !is_float(value))
    throw Error(std::string(name(op)) + " of " + std::string(kiln::name(value)) +
                " values: cast them to a float dtype first");
}

std::vector<DType> ReduceMath::state_types() const {
  switch (op_) {
  case Reduce::argmax:
  case Reduce::argmin:
    return {acc_, DType::i64};
  case Reduce::var:
    return {acc_, acc_, acc_};
  default:
    return {acc_};
  }
}

std::vector<Tensor> ReduceMath::init(const Shape &shape) const {
  switch (op_) {
  case Reduce::sum:
  case Reduce::mean:
    return {zeros(shape, acc_)};
  case Reduce::max:
    return {extreme(shape, acc_, false)};
  case Reduce::min:
    return {extreme(shape, acc_, true)};
  case Reduce::argmax:
  case Reduce::argmin: // an index no element has: ties go to real ones
    return {extreme(shape, acc_, op_ == Reduce::argmin), full(shape, std::numeric_limits<int64_t>::max(), DType::i64)};
  case Reduce::var:
    return {zeros(shape, acc_), zeros(shape, acc_), zeros(shape, acc_)};
  }
  return {};
}

Tensor ReduceMath::better(const Tensor &v, const Tensor &i, const Tensor &bestV, const Tensor &bestI) const {
  // The larger (argmax) or smaller (argmin) value, ties to the smaller
  // index; a NaN beats every number (the first NaN wins), as in PyTorch.
  Tensor strictly = op_ == Reduce::argmax ? v > bestV : v < bestV;
  Tensor tie = (v == bestV) & (i < bestI);
  if (!is_float(acc_))
    return strictly | tie;
  Tensor nan = v != v, bestNan = bestV != bestV;
  return (nan & ((!bestNan) | (i < bestI))) | ((!nan) & (!bestNan) & (strictly | tie));
}

std::vector<Tensor> ReduceMath::update(const std::vector<Tensor> &state, const Tensor &value, const Tensor &index,
                                       const Tensor &mask, const Tensor &chunk) const {
  Tensor v = value.dtype() == acc_ ? value : value.to(acc_);
  switch (op_) {
  case Reduce::sum:
  case Reduce::mean:
    return {state[0] + where(mask, v, 0)};
  case Reduce::max:
    return {where(mask, maximum(state[0], v), state[0])};
  case Reduce::min:
    return {where(mask, minimum(state[0], v), state[0])};
  case Reduce::argmax:
  case Reduce::argmin: {
    Tensor take = mask & better(v, index, state[0], state[1]);
    return {where(take, v, state[0]), where(take, index, state[1])};
  }
  case Reduce::var: {
    // Welford, with the count a scalar: each valid lane of chunk k has seen
    // k elements before this one.
    Tensor n = (chunk + 1).to(acc_);
    Tensor delta = v - state[1];
    Tensor mean = state[1] + delta * (1.0 / n);
    Tensor m2 = state[2] + delta * (v - mean);
    return {where(mask, n, state[0]), where(mask, mean, state[1]), where(mask, m2, state[2])};
  }
  }
  return state;
}

std::vector<Tensor> ReduceMath::combine(const std::vector<Tensor> &a, const std::vector<Tensor> &b) const {
  switch (op_) {
  case Reduce::sum:
  case Reduce::mean:
    return {a[0] + b[0]};
  case Reduce::max:
    return {maximum(a[0], b[0])};
  case Reduce::min:
    return {minimum(a[0], b[0])};
  case Reduce::argmax:
  case Reduce::argmin: {
    Tensor take = better(b[0], b[1], a[0], a[1]);
    return {where(take, b[0], a[0]), where(take, b[1], a[1])};
  }
  case Reduce::var: { // Chan et al.: two partial (count, mean, M2) into one
    Tensor n = a[0] + b[0];
    Tensor delta = b[1] - a[1];
    Tensor share = where(n > 0, b[0] / where(n > 0, n, 1.0), 0.0);
    return {n, a[1] + delta * share, a[2] + b[2] + delta * delta * a[0] * share};
  }
  }
  return a;
}

std::vector<Tensor> ReduceMath::reduce(const std::vector<Tensor> &state, int axis) const {
  switch (op_) {
  case Reduce::sum:
  case Reduce::mean:
    return {sum(state[0], axis)};
  case Reduce::max:
    return {max(state[0], axis)};
  case Reduce::min:
    return {min(state[0], axis)};
  default:
    return kiln::reduce(state, axis,
                        [this](const std::vector<Tensor> &a, const std::vector<Tensor> &b) { return combine(a, b); });
  }
}

Tensor ReduceMath::finish(const std::vector<Tensor> &state, const Tensor &length) const {
  switch (op_) {
  case Reduce::mean:
    return state[0] / length.to(acc_);
  case Reduce::argmax:
  case Reduce::argmin:
    return state[1];
  case Reduce::var:
    // PyTorch's divisor, max(0, length - correction): an empty or too short
    // reduction gives NaN (0 / 0), never a negative variance.
    return state[2] / maximum(length - correction_, 0).to(acc_);
  default:
    return state[0];
  }
}

DType ReduceMath::result() const {
  return op_ == Reduce::argmax || op_ == Reduce::argmin ? DType::i64 : acc_;
}

} // namespace kiln::ops
