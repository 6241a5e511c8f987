//===- DType.cpp - names of Kiln's element types --------------------------===//

#include <kiln/dtype.h>

namespace kiln {

std::string_view name(DType type) {
  switch (type) {
  case DType::i1: return "i1";
  case DType::i8: return "i8";
  case DType::i16: return "i16";
  case DType::i32: return "i32";
  case DType::i64: return "i64";
  case DType::u8: return "u8";
  case DType::u16: return "u16";
  case DType::u32: return "u32";
  case DType::u64: return "u64";
  case DType::f16: return "f16";
  case DType::bf16: return "bf16";
  case DType::f32: return "f32";
  case DType::f64: return "f64";
  case DType::f8e4m3: return "f8e4m3";
  case DType::f8e5m2: return "f8e5m2";
  }
  return "?";
}

} // namespace kiln
