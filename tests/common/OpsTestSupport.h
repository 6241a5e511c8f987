// Host tensors for the ops library's tests: random contents (never zeros),
// poisoned outputs (NaN / all ones), decoding any dtype, and checks of every
// element against a double-precision reference.
#pragma once

#include <kiln/kiln.h>
#include <kiln/numeric.h>
#include <kiln/ops/library.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace kiln::testing {

/// The message of the kiln::Error `f` throws, or "no error".
inline std::string error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "no error";
}

class HostTensor {
public:
  /// Random values in [lo, hi) (integers: whole numbers in [-50, 50)).
  static HostTensor random(DType dtype, std::vector<int64_t> shape, unsigned seed, double lo = -2, double hi = 2) {
    HostTensor t(dtype, std::move(shape), 0);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(is_float(dtype) ? lo : -50, is_float(dtype) ? hi : 50);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = dist(rng);
      t.set_flat(i, is_float(dtype) ? v : std::floor(v));
    }
    return t;
  }
  /// All bits set: NaN for floats, so unwritten elements show.
  static HostTensor poisoned(DType dtype, std::vector<int64_t> shape) {
    return HostTensor(dtype, std::move(shape), 0xFF);
  }

  ops::TensorView view() {
    ops::TensorView v;
    v.address = reinterpret_cast<uint64_t>(bytes_.data());
    v.dtype = dtype_;
    v.shape = shape_;
    v.device = DeviceKind::interp;
    return v;
  }
  /// The raw bytes (the elements, then 64 spare bytes).
  std::vector<uint8_t> &bytes() { return bytes_; }
  const std::vector<uint8_t> &bytes() const { return bytes_; }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape_)
      n *= d;
    return n;
  }
  double flat(int64_t i) const {
    uint64_t raw = 0;
    std::memcpy(&raw, bytes_.data() + i * size_in_bytes(dtype_), size_in_bytes(dtype_));
    if (is_float(dtype_))
      return decode_float(dtype_, raw);
    int bits = bit_width(dtype_) == 1 ? 8 : bit_width(dtype_);
    if (is_unsigned(dtype_))
      return static_cast<double>(raw);
    return static_cast<double>(static_cast<int64_t>(raw << (64 - bits)) >> (64 - bits));
  }
  void set_flat(int64_t i, double v) {
    uint64_t raw = is_float(dtype_) ? encode_float(dtype_, round_to(dtype_, v, Rounding::nearest_even, is_float8(dtype_)))
                                    : static_cast<uint64_t>(static_cast<int64_t>(v));
    std::memcpy(bytes_.data() + i * size_in_bytes(dtype_), &raw, size_in_bytes(dtype_));
  }
  int64_t index(const std::vector<int64_t> &at) const {
    int64_t i = 0;
    for (size_t d = 0; d < shape_.size(); ++d)
      i = i * shape_[d] + at[d];
    return i;
  }
  double at(const std::vector<int64_t> &at) const { return flat(index(at)); }
  std::vector<int64_t> coords(int64_t flat) const {
    std::vector<int64_t> c(shape_.size());
    for (size_t d = shape_.size(); d-- > 0;) {
      c[d] = flat % shape_[d];
      flat /= shape_[d];
    }
    return c;
  }

  /// Every element within `tolerance` (relative, absolute near zero) of
  /// `reference`; NaN matches NaN only.
  void expect_near(const std::function<double(const std::vector<int64_t> &)> &reference, double tolerance) const {
    int mismatches = 0;
    for (int64_t i = 0; i < numel(); ++i) {
      double got = flat(i), want = reference(coords(i));
      bool ok = std::isnan(want) ? std::isnan(got)
                                 : got == want || std::fabs(got - want) <= tolerance * std::max(1.0, std::fabs(want));
      if (!ok && mismatches++ < 5)
        ADD_FAILURE() << "element " << i << ": got " << got << ", want " << want;
    }
    EXPECT_EQ(mismatches, 0) << "of " << numel() << " elements";
  }
  /// As expect_near, within 1.5 units in the last place of the dtype.
  void expect_rounded(const std::function<double(const std::vector<int64_t> &)> &reference) const {
    double ulp = dtype_ == DType::bf16 ? std::ldexp(1.0, -7) : dtype_ == DType::f16 ? std::ldexp(1.0, -10)
                                                                                    : std::ldexp(1.0, -23);
    expect_near(reference, 1.5 * ulp);
  }

private:
  HostTensor(DType dtype, std::vector<int64_t> shape, uint8_t fill) : dtype_(dtype), shape_(std::move(shape)) {
    bytes_.assign(static_cast<size_t>(numel()) * size_in_bytes(dtype_) + 64, fill);
  }
  DType dtype_;
  std::vector<int64_t> shape_;
  std::vector<uint8_t> bytes_;
};

} // namespace kiln::testing
