//===- GeneratedKernel.h - the kernels ops generate, and their cache -*- C++ -*-===//
//
// An op generates one DSL kernel per structure (shapes and strides are
// runtime arguments, so a new size reuses the kernel), kept for the
// process's life.
//
//===----------------------------------------------------------------------===//

#pragma once

#include <kiln/kiln.h>

#include <functional>
#include <string>
#include <vector>

namespace kiln::ops {

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

/// The target a stream's launches compile for: the device's, or an older
/// one KILN_TARGET names (target_for); empty for the interpreter.
std::string target_of(const Stream &stream);

/// The kernel made for `key`, made once per process by `make`.
Kernel cached_kernel(const std::string &key, const std::function<Kernel()> &make);

/// The kernel arguments at `positions`; -1 gives an empty Tensor (a size
/// not needed, a dimension a tensor does not step along).
std::vector<Tensor> arguments_at(const std::vector<int> &positions, const std::vector<Tensor> &args);

} // namespace kiln::ops
