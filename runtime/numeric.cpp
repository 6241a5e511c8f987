// Float formats: exact rounding from double, and bit encodings.

#include <kiln/error.h>
#include <kiln/numeric.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace kiln {

namespace {

/// An IEEE-like binary format: sign, `exponent` bits, `mantissa` bits.
struct Format {
  int exponent;
  int mantissa;
  bool has_infinity; ///< f8e4m3 (e4m3fn) has none: its all-ones pattern is NaN
  int bias() const { return (1 << (exponent - 1)) - 1; }
  /// Largest finite value.
  double max_finite() const {
    int top = has_infinity ? (1 << exponent) - 2 : (1 << exponent) - 1; // biased exponent
    // e4m3fn: the top exponent holds finite values except mantissa all-ones.
    double fraction = has_infinity ? 2.0 - std::ldexp(1.0, -mantissa)
                                   : 2.0 - std::ldexp(2.0, -mantissa);
    return std::ldexp(fraction, top - bias());
  }
};

Format format_of(DType type) {
  switch (type) {
  case DType::f16: return {5, 10, true};
  case DType::bf16: return {8, 7, true};
  case DType::f32: return {8, 23, true};
  case DType::f64: return {11, 52, true};
  case DType::f8e4m3: return {4, 3, false};
  case DType::f8e5m2: return {5, 2, true};
  default: throw Error("not a float dtype: " + std::string(name(type)));
  }
}

double round_integral(double x, Rounding rounding) {
  switch (rounding) {
  case Rounding::nearest_even: return std::nearbyint(x); // default FP environment: ties to even
  case Rounding::toward_zero: return std::trunc(x);
  case Rounding::nearest_away: return std::round(x);
  }
  return x;
}

} // namespace

double round_to(DType type, double value, Rounding rounding, bool saturate) {
  if (type == DType::f64 || std::isnan(value))
    return value;
  if (type == DType::f32 && rounding == Rounding::nearest_even && !saturate)
    return static_cast<double>(static_cast<float>(value));
  Format f = format_of(type);
  double limit = f.max_finite();
  if (std::isinf(value)) {
    if (saturate || !f.has_infinity)
      return saturate ? std::copysign(limit, value) : std::numeric_limits<double>::quiet_NaN();
    return value;
  }
  if (value == 0)
    return value;
  double magnitude = std::fabs(value);
  int exp2 = std::ilogb(magnitude); // magnitude in [2^exp2, 2^(exp2+1))
  int min_normal = 1 - f.bias();
  if (exp2 < min_normal)
    exp2 = min_normal; // subnormal: fixed quantum
  double quantum = std::ldexp(1.0, exp2 - f.mantissa);
  double rounded = round_integral(magnitude / quantum, rounding) * quantum;
  if (rounded > limit) {
    if (saturate || (rounding == Rounding::toward_zero && f.has_infinity))
      rounded = limit;
    else
      rounded = f.has_infinity ? std::numeric_limits<double>::infinity()
                               : std::numeric_limits<double>::quiet_NaN();
  }
  return std::copysign(rounded, value);
}

uint64_t encode_float(DType type, double value) {
  if (type == DType::f64) {
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    return bits;
  }
  if (type == DType::f32) {
    float f = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
  }
  Format f = format_of(type);
  uint64_t sign = std::signbit(value) ? 1 : 0;
  uint64_t sign_bit = sign << (f.exponent + f.mantissa);
  uint64_t exponent_ones = (uint64_t(1) << f.exponent) - 1;
  if (std::isnan(value)) // canonical quiet NaN; e4m3fn's only NaN is all ones
    return sign_bit | (exponent_ones << f.mantissa) |
           (f.has_infinity ? uint64_t(1) << (f.mantissa - 1) : (uint64_t(1) << f.mantissa) - 1);
  if (std::isinf(value))
    return sign_bit | (exponent_ones << f.mantissa);
  double magnitude = std::fabs(value);
  if (magnitude == 0)
    return sign_bit;
  int exp2 = std::ilogb(magnitude);
  int min_normal = 1 - f.bias();
  if (exp2 < min_normal) { // subnormal
    uint64_t m = static_cast<uint64_t>(std::ldexp(magnitude, f.mantissa - min_normal));
    return sign_bit | m;
  }
  uint64_t biased = static_cast<uint64_t>(exp2 + f.bias());
  double fraction = std::ldexp(magnitude, -exp2) - 1.0;
  uint64_t m = static_cast<uint64_t>(std::ldexp(fraction, f.mantissa));
  return sign_bit | (biased << f.mantissa) | m;
}

double decode_float(DType type, uint64_t bits) {
  if (type == DType::f64) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  if (type == DType::f32) {
    uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  Format f = format_of(type);
  uint64_t m = bits & ((uint64_t(1) << f.mantissa) - 1);
  uint64_t e = (bits >> f.mantissa) & ((uint64_t(1) << f.exponent) - 1);
  bool negative = (bits >> (f.exponent + f.mantissa)) & 1;
  uint64_t exponent_ones = (uint64_t(1) << f.exponent) - 1;
  double value;
  if (e == exponent_ones && f.has_infinity)
    value = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (e == exponent_ones && !f.has_infinity && m == (uint64_t(1) << f.mantissa) - 1)
    value = std::numeric_limits<double>::quiet_NaN();
  else if (e == 0)
    value = std::ldexp(static_cast<double>(m), 1 - f.bias() - f.mantissa);
  else
    value = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.mantissa),
                       static_cast<int>(e) - f.bias());
  return negative ? -value : value;
}

float round_to_tf32(float value) {
  if (!std::isfinite(value))
    return value;
  Format tf32{8, 10, true};
  double magnitude = std::fabs(static_cast<double>(value));
  if (magnitude == 0)
    return value;
  int exp2 = std::max(std::ilogb(magnitude), 1 - tf32.bias());
  double quantum = std::ldexp(1.0, exp2 - tf32.mantissa);
  double rounded = std::round(magnitude / quantum) * quantum;
  return static_cast<float>(std::copysign(rounded, static_cast<double>(value)));
}

} // namespace kiln
