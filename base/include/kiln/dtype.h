// Element types of Kiln values: the scalar types a kernel computes with and
// points to. Public header: no MLIR.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace kiln {

/// The scalar element types. Signedness is part of the type here (u8..u64
/// use unsigned division, comparison, extension and max/min), as in C++;
/// the IR below is signless like LLVM's.
enum class DType : uint8_t {
  i1, i8, i16, i32, i64,
  u8, u16, u32, u64,
  f16, bf16, f32, f64,
  f8e4m3, ///< 8-bit float, 4 exponent and 3 mantissa bits, no infinities (e4m3fn)
  f8e5m2, ///< 8-bit float, 5 exponent and 2 mantissa bits
};

inline constexpr DType i1 = DType::i1;
inline constexpr DType i8 = DType::i8;
inline constexpr DType i16 = DType::i16;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType u8 = DType::u8;
inline constexpr DType u16 = DType::u16;
inline constexpr DType u32 = DType::u32;
inline constexpr DType u64 = DType::u64;
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;
inline constexpr DType f8e4m3 = DType::f8e4m3;
inline constexpr DType f8e5m2 = DType::f8e5m2;

/// "f32", "u8", "f8e4m3", ...
std::string_view name(DType type);

constexpr int bit_width(DType t) {
  switch (t) {
  case DType::i1: return 1;
  case DType::i8: case DType::u8: case DType::f8e4m3: case DType::f8e5m2: return 8;
  case DType::i16: case DType::u16: case DType::f16: case DType::bf16: return 16;
  case DType::i32: case DType::u32: case DType::f32: return 32;
  case DType::i64: case DType::u64: case DType::f64: return 64;
  }
  return 0;
}

constexpr bool is_float(DType t) {
  return t == DType::f16 || t == DType::bf16 || t == DType::f32 ||
         t == DType::f64 || t == DType::f8e4m3 || t == DType::f8e5m2;
}
constexpr bool is_float8(DType t) {
  return t == DType::f8e4m3 || t == DType::f8e5m2;
}
constexpr bool is_unsigned(DType t) {
  return t == DType::u8 || t == DType::u16 || t == DType::u32 || t == DType::u64;
}
/// Integers, including i1 and the unsigned types.
constexpr bool is_integer(DType t) { return !is_float(t); }
constexpr bool is_signed_integer(DType t) {
  return is_integer(t) && !is_unsigned(t) && t != DType::i1;
}
constexpr int size_in_bytes(DType t) { return t == DType::i1 ? 1 : bit_width(t) / 8; }

/// The DType of a C++ scalar type (`dtype_of<float>() == f32`).
template <class T> constexpr DType dtype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>) return DType::i1;
  else if constexpr (std::is_same_v<U, float>) return DType::f32;
  else if constexpr (std::is_same_v<U, double>) return DType::f64;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
    if constexpr (sizeof(U) == 1) return DType::i8;
    else if constexpr (sizeof(U) == 2) return DType::i16;
    else if constexpr (sizeof(U) == 4) return DType::i32;
    else return DType::i64;
  } else if constexpr (std::is_integral_v<U>) {
    if constexpr (sizeof(U) == 1) return DType::u8;
    else if constexpr (sizeof(U) == 2) return DType::u16;
    else if constexpr (sizeof(U) == 4) return DType::u32;
    else return DType::u64;
  } else {
    static_assert(sizeof(U) == 0, "no Kiln dtype for this C++ type");
  }
}

/// What a kernel parameter or a DSL handle's elements are: numbers of
/// `dtype`, pointers to them, or (descriptor_rank > 0) a tensor map.
struct ElementType {
  DType dtype = DType::f32;
  bool is_pointer = false;
  bool is_const = false; ///< pointer to const: stores and atomics are refused
  /// > 0: the tensor map of a descriptor of this rank (see descriptor.h)
  int descriptor_rank = 0;
  friend bool operator==(const ElementType &, const ElementType &) = default;
};

} // namespace kiln
