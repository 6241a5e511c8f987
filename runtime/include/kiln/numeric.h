// Host-side conversions between C++ floats and the narrow float formats a
// kernel may load or store (f16, bf16, fp8), rounding exactly as the GPU
// does. The CPU interpreter uses the same functions. Public header: no MLIR.
#pragma once

#include <kiln/dtype.h>

#include <cstdint>

namespace kiln {

enum class Rounding {
  nearest_even,         ///< IEEE round to nearest, ties to even (the default)
  toward_zero,          ///< truncation
  nearest_away,         ///< round to nearest, ties away from zero (tf32 conversion)
};

/// `value` rounded to the nearest value of float dtype `type` (f16, bf16,
/// f32, f64, f8e4m3, f8e5m2). Beyond the largest finite value: infinity for
/// types that have one, NaN for f8e4m3 (it has none) -- or, with
/// `saturate`, the largest finite value of the same sign. Kiln's own
/// conversions to 8-bit floats (DSL, interpreter, GPU) always saturate, as
/// `cvt.rn.satfinite`: pass `saturate` (or use to_f8e4m3_bits below) to
/// match them. NaN stays NaN.
double round_to(DType type, double value, Rounding rounding = Rounding::nearest_even,
                bool saturate = false);

/// The bit pattern of `value` (which must already be a value of `type`,
/// e.g. from round_to) in float dtype `type`, right-aligned.
uint64_t encode_float(DType type, double value);
/// The value of the bit pattern `bits` of float dtype `type`.
double decode_float(DType type, uint64_t bits);

/// Rounds an f32 to tf32 (10 mantissa bits, ties away from zero), as the
/// tensor cores' `cvt.rna.tf32.f32`.
float round_to_tf32(float value);

/// Convenience for host buffers of half and 8-bit floats.
inline uint16_t to_f16_bits(float v) { return static_cast<uint16_t>(encode_float(DType::f16, round_to(DType::f16, v))); }
inline uint16_t to_bf16_bits(float v) { return static_cast<uint16_t>(encode_float(DType::bf16, round_to(DType::bf16, v))); }
inline float from_f16_bits(uint16_t b) { return static_cast<float>(decode_float(DType::f16, b)); }
inline float from_bf16_bits(uint16_t b) { return static_cast<float>(decode_float(DType::bf16, b)); }
/// fp8 conversions saturate, as the GPU's.
inline uint8_t to_f8e4m3_bits(float v) {
  return static_cast<uint8_t>(encode_float(DType::f8e4m3, round_to(DType::f8e4m3, v, Rounding::nearest_even, true)));
}
inline uint8_t to_f8e5m2_bits(float v) {
  return static_cast<uint8_t>(encode_float(DType::f8e5m2, round_to(DType::f8e5m2, v, Rounding::nearest_even, true)));
}
inline float from_f8e4m3_bits(uint8_t b) { return static_cast<float>(decode_float(DType::f8e4m3, b)); }
inline float from_f8e5m2_bits(uint8_t b) { return static_cast<float>(decode_float(DType::f8e5m2, b)); }

} // namespace kiln
