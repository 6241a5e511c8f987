//===- Space.h - iteration spaces ----------------------------*- C++ -*-===//
//
// The space an op's tensors are walked in: broadcast to one shape, with
// the dimensions all tensors walk as one merged, and the coordinates and
// offsets a kernel forms in it.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ops/lib/Views.h"

#include <kiln/kiln.h>
#include <kiln/ops/view.h>

#include <string>
#include <vector>

namespace kiln::ops {

/// `view`'s strides in `shape` by NumPy broadcasting (0 where it
/// broadcasts); throws naming `op` and `role` when it cannot.
std::vector<int64_t> broadcast_strides(const TensorView &view, const std::vector<int64_t> &shape,
                                       const std::string &op, const std::string &role);
/// The shape `views` broadcast to.
std::vector<int64_t> broadcast_shape(const std::vector<const TensorView *> &views, const std::string &op);

/// Dimensions of size 1 dropped and neighbours merged where every tensor
/// steps through them as one (stride[i] == stride[i+1] * size[i+1]).
struct Collapsed {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides; ///< per tensor, per dimension
};
Collapsed collapse(const std::vector<int64_t> &sizes, const std::vector<std::vector<int64_t>> &strides);

/// Whether every offset the tensors reach, and the element count, fit i32.
bool fits_i32(const std::vector<int64_t> &sizes, const std::vector<std::vector<int64_t>> &strides);

/// Coordinates of the flat (row-major) indices `flat` in a space of
/// `sizes` (runtime scalars; sizes[0] is not needed and may be empty).
std::vector<Tensor> unflatten(const Tensor &flat, const std::vector<Tensor> &sizes);
/// sum(coords[i] * strides[i]); a zero scalar when there are none.
Tensor offset_of(const std::vector<Tensor> &coords, const std::vector<Tensor> &strides, DType index);

} // namespace kiln::ops
