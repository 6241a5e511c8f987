// Value handles of the Kiln DSL: a Tensor is a scalar or a block (a tensor
// with a trace-time shape) of numbers or pointers, standing for an IR value
// of the kernel being traced. Public header: no MLIR.
#pragma once

#include <kiln/dtype.h>

#include <cstdint>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

/// Every DSL operation takes a defaulted `Loc`: the user's source line,
/// recorded in the IR and named by every trace-time error.
using Loc = std::source_location;
using Shape = std::vector<int64_t>;

/// "f32", "*f16", "*const u8", "tensormap<bf16, 2>".
std::string to_string(const ElementType &type);
/// "128x64", or "scalar" for rank 0.
std::string to_string(const Shape &shape);

namespace detail {
struct TraceAccess;
}

class Tensor {
public:
  /// An empty handle standing for no value (for optional arguments).
  Tensor() = default;

  bool valid() const { return value_ != nullptr; }
  const ElementType &type() const { return type_; }
  /// The element dtype (for pointers: the pointee's).
  DType dtype() const { return type_.dtype; }
  bool is_pointer() const { return type_.is_pointer; }
  const Shape &shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  bool is_scalar() const { return shape_.empty(); }
  /// Where the value was made.
  Loc defined_at() const { return defined_at_; }
  /// "128x64 f32 block" / "i32 scalar": how errors describe it.
  std::string describe() const;

  /// Value conversion: int <-> float (float to int rounds toward zero and
  /// saturates, NaN gives 0), widening/narrowing (floats round to nearest
  /// even; fp8 also saturates), int widening by the source's signedness, int
  /// narrowing wraps; to i1 means `!= 0`.
  Tensor to(DType type, Loc loc = Loc::current()) const;
  template <DType T> Tensor to(Loc loc = Loc::current()) const { return to(T, loc); }
  /// Reinterprets the bits as `type`, which must have the same width; for
  /// pointers, reinterprets the memory they point to as `type` elements.
  Tensor bitcast(DType type, Loc loc = Loc::current()) const;

  Tensor expand_dims(int axis, Loc loc = Loc::current()) const;
  Tensor reshape(const Shape &shape, Loc loc = Loc::current()) const;
  Tensor broadcast_to(const Shape &shape, Loc loc = Loc::current()) const;
  /// Permutes dimensions (default: reverses them).
  Tensor trans(const std::vector<int> &order = {}, Loc loc = Loc::current()) const;

private:
  friend struct detail::TraceAccess;
  void *value_ = nullptr; ///< the IR value (opaque)
  ElementType type_{};
  Shape shape_{};
  uint32_t trace_ = 0; ///< which trace made it: handles do not outlive theirs
  uint32_t scope_ = 0; ///< which region body made it
  Loc defined_at_{};
};

class Var;

/// An operand of an operator or an op: a Tensor, or a C++ number that takes
/// the dtype of the Tensor it meets (`x * 2` with `x` f16 multiplies by an
/// f16 2; an integer literal must fit that dtype, and a floating literal
/// needs a float one). Also remembers the source line of the expression.
class Operand {
public:
  enum class Kind : uint8_t { none, tensor, integer, floating };

  /// No operand (an absent optional argument).
  Operand() = default;
  Operand(const Tensor &tensor, Loc loc = Loc::current())
      : kind_(Kind::tensor), tensor_(tensor), loc_(loc) {}
  Operand(const Var &var, Loc loc = Loc::current());
  template <class T>
    requires std::is_arithmetic_v<T>
  Operand(T value, Loc loc = Loc::current()) : loc_(loc) {
    if constexpr (std::is_floating_point_v<T>) {
      kind_ = Kind::floating;
      floating_ = static_cast<double>(value);
    } else {
      kind_ = Kind::integer;
      is_bool_ = std::is_same_v<T, bool>;
      if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8)
        too_large_ = value > static_cast<T>(INT64_MAX);
      integer_ = static_cast<int64_t>(value);
    }
  }

  Kind kind() const { return kind_; }
  bool present() const { return kind_ != Kind::none; }
  const Tensor &tensor() const { return tensor_; }
  int64_t integer() const { return integer_; }
  double floating() const { return floating_; }
  bool is_bool() const { return is_bool_; }
  bool too_large() const { return too_large_; }
  Loc loc() const { return loc_; }

private:
  Kind kind_ = Kind::none;
  bool is_bool_ = false;
  bool too_large_ = false;
  Tensor tensor_{};
  int64_t integer_ = 0;
  double floating_ = 0;
  Loc loc_{};
};

} // namespace kiln
