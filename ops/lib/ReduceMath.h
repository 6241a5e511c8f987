//===- ReduceMath.h - what each reduction accumulates ---------------------===//
//
// A reduction keeps, per lane, a state of one or more values (a sum; a max;
// a value and its index; Welford's count, mean and M2), updates it with
// each element, combines states (lane with lane, program with program) and
// finishes with the reduced value. Traced while a kernel is traced.
//
//===----------------------------------------------------------------------===//

#pragma once

#include <kiln/kiln.h>
#include <kiln/ops/library.h>

#include <vector>

namespace kiln::ops {

class ReduceMath {
public:
  /// `value`: the dtype of what is reduced; `correction`: var's divisor is
  /// length - correction.
  ReduceMath(Reduce op, DType value, int correction);

  /// The state's dtypes, and its starting values (what no element changes).
  std::vector<DType> state_types() const;
  std::vector<Tensor> init(const Shape &shape) const;
  /// One element per lane where `mask`; `index` is its position along the
  /// reduced dimension, `chunk` (a scalar) which chunk of the lane's walk it
  /// belongs to (every valid lane of chunk k has seen k elements before).
  std::vector<Tensor> update(const std::vector<Tensor> &state, const Tensor &value, const Tensor &index,
                             const Tensor &mask, const Tensor &chunk) const;
  /// Two states into one (associative and commutative).
  std::vector<Tensor> combine(const std::vector<Tensor> &a, const std::vector<Tensor> &b) const;
  /// The states along `axis` into one.
  std::vector<Tensor> reduce(const std::vector<Tensor> &state, int axis) const;
  /// The reduced value of a final state over `length` elements.
  Tensor finish(const std::vector<Tensor> &state, const Tensor &length) const;
  /// Its dtype.
  DType result() const;

private:
  Tensor better(const Tensor &v, const Tensor &i, const Tensor &bestV, const Tensor &bestI) const;
  Reduce op_;
  DType acc_;
  int correction_;
};

} // namespace kiln::ops
