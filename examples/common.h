// What every example program shares: random inputs, poisoned outputs, and a
// comparison against a double-precision reference that prints what it
// checked.
#pragma once

#include <kiln/kiln.h>
#include <kiln/numeric.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace examples {

/// Uniform random floats in [lo, hi), from a fixed seed (runs repeat).
inline std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// f16 bits of each value, and the values those bits stand for.
inline std::vector<uint16_t> to_f16(const std::vector<float> &v, std::vector<float> *rounded = nullptr) {
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    bits[i] = kiln::to_f16_bits(v[i]);
  if (rounded) {
    rounded->resize(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      (*rounded)[i] = kiln::from_f16_bits(bits[i]);
  }
  return bits;
}

inline std::vector<float> from_f16(const std::vector<uint16_t> &bits) {
  std::vector<float> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    v[i] = kiln::from_f16_bits(bits[i]);
  return v;
}

/// A buffer on `device` holding `values`.
template <class T> kiln::Buffer upload(const kiln::Device &device, const std::vector<T> &values) {
  return kiln::Buffer::from_host(device, values);
}

/// An output buffer of `count` elements of T, poisoned (all bits set: NaN
/// for floats) so that elements the kernel fails to write are caught.
template <class T> kiln::Buffer poisoned(const kiln::Device &device, size_t count) {
  kiln::Buffer b = kiln::Buffer::allocate(device, count * sizeof(T));
  b.fill_bytes(0xFF);
  return b;
}

/// Compares `out` with `reference` over every element: the relative error
/// ||out - ref|| / ||ref|| must stay under `tolerance`, and no element may
/// be NaN (an unwritten, poisoned output). Prints one line; returns success.
inline bool check(const std::string &what, const std::vector<float> &out,
                  const std::vector<double> &reference, double tolerance) {
  double diff = 0, norm = 0, max_abs = 0;
  size_t bad = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    if (!std::isfinite(out[i]) && std::isfinite(reference[i])) {
      ++bad;
      continue;
    }
    double d = out[i] - reference[i];
    diff += d * d;
    norm += reference[i] * reference[i];
    max_abs = std::max(max_abs, std::fabs(d));
  }
  double relative = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  bool ok = bad == 0 && relative <= tolerance && out.size() == reference.size();
  std::printf("  %-44s %9zu elements  rel err %.2e (tol %.0e)  max abs err %.2e%s  %s\n",
              what.c_str(), reference.size(), relative, tolerance, max_abs,
              bad ? ("  " + std::to_string(bad) + " non-finite").c_str() : "", ok ? "ok" : "MISMATCH");
  return ok;
}

inline void header(const char *name, const kiln::Device &device) {
  std::printf("%s on %s\n", name, device.name().c_str());
}

/// Runs `body`, turning a kiln::Error into a message and exit code 1.
template <class Body> int run(Body body) {
  try {
    return body() ? 0 : 1;
  } catch (const kiln::Error &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

} // namespace examples
