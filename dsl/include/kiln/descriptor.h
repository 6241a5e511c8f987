// Tensor descriptors: a tensor in global memory given by its base, sizes and
// strides, read and written a block at a time. On Hopper a block load that
// feeds a tensor-core dot in a pipelined loop becomes a copy-engine (TMA)
// copy; elsewhere it is the masked load it describes. Public header: no MLIR.
#pragma once

#include <kiln/ops.h>
#include <kiln/runtime.h>
#include <kiln/tensor.h>

#include <array>
#include <span>
#include <vector>

namespace kiln {

/// The handle of a descriptor parameter inside a kernel. Its parts are
/// kernel parameters in a row: the tensor map (which the runtime builds for
/// the copy engine), the base pointer, then the sizes and the strides (i64,
/// in elements) of each dimension, outermost first.
class Descriptor {
public:
  Descriptor() = default;
  /// From the `2 + 2 * rank` parameter handles, in the order above.
  explicit Descriptor(std::span<const Tensor> parts, Loc loc = Loc::current());

  int rank() const { return static_cast<int>(sizes_.size()); }
  DType dtype() const { return base_.dtype(); }
  /// The base pointer (a pointer scalar) and the i64 sizes and strides.
  const Tensor &base() const { return base_; }
  const Tensor &size(int dim) const { return sizes_.at(dim); }
  const Tensor &stride(int dim) const { return strides_.at(dim); }

  /// The block of `shape` (powers of two) whose first element is the
  /// tensor's element `offsets` (integer scalars or literals, as i32; they
  /// may be negative): elements outside the sizes read as zero.
  Tensor load(const std::vector<Operand> &offsets, const Shape &shape, Loc loc = Loc::current()) const;
  /// Writes `value` (a block of this descriptor's dtype) at `offsets`;
  /// elements outside the sizes are not written.
  void store(const std::vector<Operand> &offsets, const Tensor &value, Loc loc = Loc::current()) const;

private:
  Tensor map_, base_;
  std::vector<Tensor> sizes_, strides_;
};

/// A kernel parameter: a descriptor of a rank-`Rank` tensor of `T` (the
/// launch passes a TensorArg).
template <DType T, int Rank = 2> struct TensorDesc : Descriptor {
  static_assert(Rank >= 1 && Rank <= 5, "descriptors have 1 to 5 dimensions");
  static constexpr int arity = 2 + 2 * Rank;
  static constexpr std::array<ElementType, arity> elements() {
    std::array<ElementType, arity> types{};
    types[0] = ElementType{T, false, true, Rank};
    types[1] = ElementType{T, true, false};
    for (int i = 2; i < arity; ++i)
      types[i] = ElementType{DType::i64, false, false};
    return types;
  }
  TensorDesc() = default;
  explicit TensorDesc(std::span<const Tensor> parts) : Descriptor(parts) {}
};

/// The launch argument of a descriptor parameter: memory (a Buffer, or a
/// host span for the interpreter) and the tensor's sizes and strides in
/// elements (default strides: contiguous, row-major).
struct TensorArg {
  TensorArg(Arg memory, std::vector<int64_t> sizes, std::vector<int64_t> strides = {});
  Arg memory;
  std::vector<int64_t> sizes, strides;
  /// The launch arguments of its parameters, in order, appended to `out`.
  void append_to(std::vector<Arg> &out) const;
};

} // namespace kiln
