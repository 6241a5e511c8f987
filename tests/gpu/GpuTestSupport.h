// Running a kernel on the GPU and on the interpreter with the same inputs,
// and comparing every element of every output.
#pragma once

#include <kiln/kiln.h>
#include <kiln/numeric.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <variant>
#include <vector>

namespace kiln::testing {

/// Set by --compile-only: run on the interpreter only, which (through
/// KILN_CHECK_PTX, set by gpu_main) compiles every kernel it runs for the
/// GPU targets with ptxas.
inline bool &compile_only() {
  static bool value = false;
  return value;
}

/// The targets a compile-only run compiles every kernel the interpreter
/// runs for (KILN_CHECK_PTX, set by gpu_main).
inline constexpr const char *kCheckedTargets = "sm_90a,sm_80";

/// While it lives, a compile-only run also compiles every kernel the
/// interpreter runs for AMD's gfx942 and gfx90a, with the interpreter's
/// plans (the ops whose plans fit those targets: docs/amd.md).
class AlsoForAmdTargets {
public:
  AlsoForAmdTargets() {
    if (compile_only())
      setenv("KILN_CHECK_PTX", (std::string(kCheckedTargets) + ",gfx942,gfx90a").c_str(), 1);
  }
  ~AlsoForAmdTargets() {
    if (compile_only())
      setenv("KILN_CHECK_PTX", kCheckedTargets, 1);
  }
  AlsoForAmdTargets(const AlsoForAmdTargets &) = delete;
  AlsoForAmdTargets &operator=(const AlsoForAmdTargets &) = delete;
};

/// Whether a ptxas can be found (Kernel::compile then emits cubins).
inline bool ptxas_available() {
  if (const char *path = std::getenv("KILN_PTXAS"); path && *path)
    return true;
  return std::system("command -v ptxas > /dev/null 2>&1 || test -x /usr/local/cuda/bin/ptxas") == 0;
}

/// What a kernel does with an array: reads it; writes it (poisoned before
/// each run, so unwritten elements show); or reads and updates it in place
/// (atomics), starting from its contents on both devices.
enum class Role { input, output, in_out };

/// A host array of `dtype` elements (as raw bytes).
struct Array {
  DType dtype;
  std::vector<uint8_t> bytes;
  Role role = Role::input;
  bool compared() const { return role != Role::input; }

  size_t count() const { return bytes.size() / size_in_bytes(dtype); }
  double at(size_t i) const {
    uint64_t raw = 0;
    std::memcpy(&raw, bytes.data() + i * size_in_bytes(dtype), size_in_bytes(dtype));
    if (is_float(dtype))
      return decode_float(dtype, raw);
    int bits = bit_width(dtype) == 1 ? 8 : bit_width(dtype);
    if (is_unsigned(dtype) || dtype == DType::i1)
      return static_cast<double>(raw);
    int64_t v = static_cast<int64_t>(raw << (64 - bits)) >> (64 - bits);
    return static_cast<double>(v);
  }
  void set(size_t i, double v) {
    uint64_t raw = is_float(dtype) ? encode_float(dtype, round_to(dtype, v, Rounding::nearest_even, is_float8(dtype)))
                                   : static_cast<uint64_t>(static_cast<int64_t>(v));
    std::memcpy(bytes.data() + i * size_in_bytes(dtype), &raw, size_in_bytes(dtype));
  }
};

/// Random values in [lo, hi) (integers: whole numbers), from `seed`.
inline Array random_array(DType dtype, size_t count, double lo, double hi, unsigned seed) {
  Array a{dtype, std::vector<uint8_t>(count * size_in_bytes(dtype)), Role::input};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (size_t i = 0; i < count; ++i)
    a.set(i, is_float(dtype) ? dist(rng) : std::floor(dist(rng)));
  return a;
}

/// An output array, poisoned (all bits set) before each run.
inline Array output_array(DType dtype, size_t count) {
  return Array{dtype, std::vector<uint8_t>(count * size_in_bytes(dtype), 0xFF), Role::output};
}

using HostArg = std::variant<Array *, int64_t, double>;

/// Runs `kernel` on `device` and returns the outputs' final contents.
inline std::vector<Array> run_on(const Device &device, const Kernel &kernel, Grid grid, const Config &config,
                                 const std::vector<HostArg> &args, uint8_t poison) {
  std::vector<Buffer> buffers;
  std::vector<Arg> launch;
  std::vector<Array> outputs;
  std::vector<size_t> output_buffers;
  for (const HostArg &arg : args) {
    if (auto *array = std::get_if<Array *>(&arg)) {
      Buffer b = Buffer::allocate(device, (*array)->bytes.size());
      b.copy_from_host((*array)->bytes.data(), (*array)->bytes.size());
      if ((*array)->role == Role::output) // each device starts from its own poison: unwritten elements differ
        b.fill_bytes(poison);
      if ((*array)->compared())
        output_buffers.push_back(buffers.size());
      buffers.push_back(b);
      launch.push_back(Arg(b));
    } else if (auto *i = std::get_if<int64_t>(&arg)) {
      launch.push_back(Arg(*i));
    } else {
      launch.push_back(Arg(std::get<double>(arg)));
    }
  }
  Stream stream(device);
  kernel.launch_with(grid, config, stream, launch);
  stream.synchronize();
  size_t o = 0;
  for (const HostArg &arg : args)
    if (auto *array = std::get_if<Array *>(&arg); array && (*array)->compared()) {
      Array result = **array;
      buffers[output_buffers[o++]].copy_to_host(result.bytes.data(), result.bytes.size());
      outputs.push_back(result);
    }
  return outputs;
}

/// The GPU and the interpreter agree on every element of every output:
/// exactly for integers, within `tolerance` (relative to the larger
/// magnitude, absolute near zero) for floats; no output stays poisoned.
inline void expect_same(const Kernel &kernel, Grid grid, const Config &config, std::vector<HostArg> args,
                        double tolerance = 1e-5) {
  if (compile_only()) { // the interpreter runs it; KILN_CHECK_PTX compiles it for the GPUs
    run_on(Device::interp(), kernel, grid, config, args, 0xFE);
    return;
  }
  std::vector<Array> gpu = run_on(Device::cuda(0), kernel, grid, config, args, 0xFF);
  std::vector<Array> cpu = run_on(Device::interp(), kernel, grid, config, args, 0xFE);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t k = 0; k < gpu.size(); ++k) {
    size_t mismatches = 0;
    for (size_t i = 0; i < gpu[k].count(); ++i) {
      double g = gpu[k].at(i), c = cpu[k].at(i);
      bool same = std::isnan(g) ? std::isnan(c)
                                : g == c || (is_float(gpu[k].dtype)
                                       ? std::fabs(g - c) <= tolerance * std::max({1.0, std::fabs(g), std::fabs(c)})
                                       : g == c);
      if (!same && mismatches++ < 5)
        ADD_FAILURE() << kernel.name() << " output #" << k << " element " << i << ": GPU " << g
                      << ", interpreter " << c;
    }
    EXPECT_EQ(mismatches, 0u) << kernel.name() << " output #" << k << " (" << gpu[k].count() << " elements)";
  }
}

} // namespace kiln::testing
