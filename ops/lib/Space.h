//===- Space.h - iteration spaces, launch arguments, kernel cache ---------===//
//
// What every op shares: checking views, broadcasting them to an iteration
// space, merging the dimensions all tensors walk as one, the launch
// arguments, the signature a generated kernel takes, and the process-wide
// cache of generated kernels (by structure: shapes and strides are runtime
// arguments, so a new size reuses the kernel).
//
//===----------------------------------------------------------------------===//

#pragma once

#include <kiln/kiln.h>
#include <kiln/ops/view.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::ops {

/// Throws kiln::Error "<op>: <role> <why>" unless `view` is usable: an
/// address, a rank of at most 8, strides (if given) one per dimension and
/// not negative, no negative sizes.
void check_view(const TensorView &view, const std::string &op, const std::string &role);
/// check_view of each present view (a nonzero address) of `views`, named by
/// `roles`: before anything sizes a plan or a tuning key from them.
void check_present_views(const std::vector<std::pair<const TensorView *, const char *>> &views,
                         const std::string &op);
/// Throws unless every element of the output `view` has memory of its own:
/// ordered by stride, each dimension must step past all that the smaller
/// ones reach (a sufficient test; a zero stride or rows that overlap fail
/// it). An empty view writes nothing and passes.
void check_no_overlap(const TensorView &view, const std::string &op, const std::string &role);
/// Every view on the stream's device kind.
void check_devices(const std::vector<const TensorView *> &views, const Stream &stream, const std::string &op);

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

/// The launch argument of a view: its address, and (for the interpreter's
/// checks) the bytes it spans.
Arg arg_of(const TensorView &view);

/// A generated kernel's parameters, in order.
class Signature {
public:
  int pointer(DType dtype, bool is_const) { return add({dtype, true, is_const}); }
  int scalar(DType dtype) { return add({dtype, false, false}); }
  /// A descriptor of a rank-`rank` tensor (TensorDesc): its 2 + 2 * rank
  /// parameters, the position of the first returned.
  int descriptor(DType dtype, int rank) {
    int first = add({dtype, false, true, rank});
    add({dtype, true, false});
    for (int i = 0; i < 2 * rank; ++i)
      add({DType::i64, false, false});
    return first;
  }
  const std::vector<ElementType> &types() const { return types_; }

private:
  int add(ElementType t) {
    types_.push_back(t);
    return static_cast<int>(types_.size()) - 1;
  }
  std::vector<ElementType> types_;
};

/// The kernel made for `key`, made once per process by `make`.
Kernel cached_kernel(const std::string &key, const std::function<Kernel()> &make);

/// The kernel arguments at `positions`; -1 gives an empty Tensor (a size
/// not needed, a dimension a tensor does not step along).
std::vector<Tensor> arguments_at(const std::vector<int> &positions, const std::vector<Tensor> &args);

/// Coordinates of the flat (row-major) indices `flat` in a space of
/// `sizes` (runtime scalars; sizes[0] is not needed and may be empty).
std::vector<Tensor> unflatten(const Tensor &flat, const std::vector<Tensor> &sizes);
/// sum(coords[i] * strides[i]); a zero scalar when there are none.
Tensor offset_of(const std::vector<Tensor> &coords, const std::vector<Tensor> &strides, DType index);

/// The next power of two >= n (1 for n <= 1); above 2^62, where none fits,
/// 2^62: callers only compare it with or cap it by far smaller tile sizes.
int64_t next_pow2(int64_t n);

} // namespace kiln::ops
