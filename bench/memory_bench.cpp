// Memory-bound kernels on the GPU, side by side with a device-to-device copy
// (cuMemcpyDtoD) in the same run: Google Benchmark with manual timing (CUDA
// events around each launch), medians of repetitions, bandwidth counted as
// each input read once plus each output written once. Also times what a
// user waits for around a launch: a cold compile, a disk-cache hit, and the
// host's cost per launch, of a kernel and of an op's call (C++ and C ABI).
//
//   memory_bench [--records FILE] [--command TEXT] [google benchmark flags]
//
// --records writes bench/results' format: a JSON list of {"workload",
// "metric", "kiln", "peer", "peer_value", "ratio", "device", "date",
// "command"}, ratio = Kiln over the peer for rates, the peer's time over
// Kiln's for latencies (higher is better either way).
#include "memory_kernels.h"

#include <kiln/ops/library.h>
#include <kiln_ops.h>

#include <kiln/numeric.h>

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace kiln;
using namespace kiln::bench;

namespace {

constexpr int64_t kVectorElements = int64_t(128) << 20; // 128 Mi
constexpr int64_t kRows = 16384, kCols = 8192;

struct Workload {
  std::string name;   ///< the benchmark's name
  double bytes;       ///< moved per run
  std::string peer;   ///< the benchmark it is compared with ("" for the peer itself)
};

std::vector<Workload> &workloads() {
  static std::vector<Workload> all;
  return all;
}

Device &gpu() {
  static Device device = Device::cuda(0);
  return device;
}

/// The default stream: buffer fills and copies queue there too.
Stream &stream() {
  static Stream s(gpu());
  return s;
}

/// A device buffer of `count` elements of `dtype` holding random values in
/// [-2, 2) (never zeros: they hide unwritten outputs and can run faster):
/// a tile of 2^20 random values, repeated with a shift per repetition.
/// Benchmarks only read these, so each (dtype, count, seed) is made once.
Buffer random_buffer(DType dtype, int64_t count, uint32_t seed) {
  static std::map<std::tuple<DType, int64_t, uint32_t>, Buffer> made;
  auto key = std::make_tuple(dtype, count, seed);
  if (auto it = made.find(key); it != made.end())
    return it->second;
  const size_t width = size_in_bytes(dtype);
  const int64_t tile = 1 << 20;
  std::vector<uint8_t> pattern(tile * width);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  for (int64_t i = 0; i < tile; ++i) {
    uint64_t raw = encode_float(dtype, round_to(dtype, dist(rng), Rounding::nearest_even, false));
    std::memcpy(pattern.data() + i * width, &raw, width);
  }
  std::vector<uint8_t> bytes(count * width);
  for (int64_t start = 0, shift = 0; start < count; start += tile, shift = (shift + 7919) % tile) {
    int64_t length = std::min(tile, count - start), head = std::min(length, tile - shift);
    std::memcpy(bytes.data() + start * width, pattern.data() + shift * width, head * width);
    std::memcpy(bytes.data() + (start + head) * width, pattern.data(), (length - head) * width);
  }
  Buffer b = Buffer::allocate(gpu(), bytes.size());
  b.copy_from_host(bytes.data(), bytes.size());
  made.emplace(key, b);
  return b;
}

Buffer output_buffer(DType dtype, int64_t count) {
  Buffer b = Buffer::allocate(gpu(), count * size_in_bytes(dtype));
  b.fill_bytes(0xFF); // NaN: an unwritten output shows in the checks
  return b;
}

/// A buffer's contents on the host, decoded element by element on demand.
class HostView {
public:
  HostView(const Buffer &b, DType dtype) : dtype_(dtype), raw_(b.bytes()) { b.copy_to_host(raw_.data(), raw_.size()); }
  double operator[](int64_t i) const {
    uint64_t bits = 0;
    std::memcpy(&bits, raw_.data() + i * size_in_bytes(dtype_), size_in_bytes(dtype_));
    return decode_float(dtype_, bits);
  }

private:
  DType dtype_;
  std::vector<uint8_t> raw_;
};

/// Fails the run when `got` is off the double-precision `want` by more than
/// `tolerance` (relative, absolute near zero): a fast wrong kernel is no
/// result.
void check_close(const char *what, double got, double want, double tolerance) {
  if (!(std::fabs(got - want) <= tolerance * std::max(1.0, std::fabs(want)))) {
    std::fprintf(stderr, "memory_bench: %s is wrong: got %.8g, want %.8g\n", what, got, want);
    std::exit(1);
  }
}

/// Checks sampled rows of a softmax of `x` (rows x cols) in `y`.
void check_softmax(const char *what, const HostView &xs, const HostView &ys, int64_t rows, int64_t cols,
                   double tolerance) {
  for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 7)) {
    double top = -INFINITY, total = 0;
    for (int64_t c = 0; c < cols; ++c)
      top = std::max(top, xs[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c)
      total += std::exp(xs[r * cols + c] - top);
    for (int64_t c = 0; c < cols; c += 61) // scaled by cols: probabilities are small
      check_close(what, ys[r * cols + c] * cols, std::exp(xs[r * cols + c] - top) / total * cols, tolerance);
  }
}

/// Times `launch` with CUDA events, one launch per iteration.
void time_launches(benchmark::State &state, const std::function<void()> &launch) {
  for (int i = 0; i < 3; ++i) // warm-up: module load and first-touch out of the numbers
    launch();
  stream().synchronize();
  Event start(gpu()), stop(gpu());
  for (auto _ : state) {
    start.record(stream());
    launch();
    stop.record(stream());
    stop.synchronize();
    state.SetIterationTime(stop.elapsed_ms(start) / 1e3);
  }
}

void register_timed(const std::string &name, double bytes, const std::string &peer,
                    std::function<void(benchmark::State &)> body) {
  workloads().push_back({name, bytes, peer});
  benchmark::RegisterBenchmark(name.c_str(), [body, bytes](benchmark::State &state) {
    body(state);
    state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond)
      ->Iterations(20)
      ->Repetitions(10)
      ->ReportAggregatesOnly(true);
}

const std::string kCopy = "device copy f32 128Mi (cuMemcpyDtoD)";

void register_vector_benchmarks() {
  const int64_t n = kVectorElements;
  register_timed(kCopy, 2.0 * n * 4, "", [n](benchmark::State &state) {
    Buffer x = random_buffer(f32, n, 1), y = output_buffer(f32, n);
    time_launches(state, [&] { y.copy_from(x, n * 4, stream()); });
  });
  for (int64_t block : {1024, 4096}) {
    Config config{{"BLOCK", block}, {"num_warps", block >= 4096 ? 8 : 4}};
    register_timed("kiln copy f32 128Mi BLOCK=" + std::to_string(block), 2.0 * n * 4, kCopy,
                   [n, config](benchmark::State &state) {
                     static Kernel k = jit(copy_kernel, "bench_copy");
                     Buffer x = random_buffer(f32, n, 2), y = output_buffer(f32, n);
                     time_launches(state, [&] { k.launch(Grid(cdiv(n, config["BLOCK"])), config, stream(), x, y, n); });
                   });
    register_timed("vector add f32 128Mi BLOCK=" + std::to_string(block), 3.0 * n * 4, kCopy,
                   [n, config](benchmark::State &state) {
                     static Kernel k = jit(add_kernel, "bench_add");
                     Buffer x = random_buffer(f32, n, 3), y = random_buffer(f32, n, 4), z = output_buffer(f32, n);
                     time_launches(state,
                                   [&] { k.launch(Grid(cdiv(n, config["BLOCK"])), config, stream(), x, y, z, n); });
                     HostView xs(x, f32), ys(y, f32), zs(z, f32);
                     for (int64_t i = 0; i < n; i += 9973)
                       check_close("vector add", zs[i], xs[i] + ys[i], 1e-7);
                   });
  }
}

template <DType T> const char *dtype_name() { return T == DType::f32 ? "f32" : T == DType::bf16 ? "bf16" : "f16"; }

template <DType T> void register_row_benchmarks(int64_t rows, int64_t cols) {
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  const double row_bytes = 2.0 * rows * cols * size_in_bytes(T); // read once, write once
  const double tolerance = T == DType::f32 ? 1e-5 : 2e-2;
  // 8192 columns: 8 or 16 warps (32 or 16 elements per thread); 32768: 16 or 32.
  for (int64_t warps : {std::min<int64_t>(cols / 1024, 16), std::min<int64_t>(cols / 512, 32)}) {
    Config config{{"BLOCK", cols}, {"num_warps", warps}};
    std::string suffix = std::string(" ") + dtype_name<T>() + " " + shape + " warps=" + std::to_string(warps);
    register_timed("softmax" + suffix, row_bytes, kCopy, [=](benchmark::State &state) {
      static Kernel k = jit(softmax_kernel<T>, std::string("bench_softmax_") + dtype_name<T>());
      Buffer x = random_buffer(T, rows * cols, 5), y = output_buffer(T, rows * cols);
      time_launches(state, [&] { k.launch(Grid(rows), config, stream(), x, y, cols); });
      check_softmax("softmax", HostView(x, T), HostView(y, T), rows, cols, tolerance);
    });
    register_timed("layer norm" + suffix, row_bytes, kCopy, [=](benchmark::State &state) {
      static Kernel k = jit(layer_norm_kernel<T>, std::string("bench_layer_norm_") + dtype_name<T>());
      Buffer x = random_buffer(T, rows * cols, 6), w = random_buffer(T, cols, 7), b = random_buffer(T, cols, 8);
      Buffer y = output_buffer(T, rows * cols);
      const float eps = 1e-5f;
      time_launches(state, [&] { k.launch(Grid(rows), config, stream(), x, w, b, y, cols, eps); });
      HostView xs(x, T), ws(w, T), bs(b, T), ys(y, T);
      for (int64_t r = 0; r < rows; r += rows / 7) {
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; ++c)
          mean += xs[r * cols + c] / cols;
        for (int64_t c = 0; c < cols; ++c)
          var += (xs[r * cols + c] - mean) * (xs[r * cols + c] - mean) / cols;
        for (int64_t c = 0; c < cols; c += 61)
          check_close("layer norm", ys[r * cols + c], (xs[r * cols + c] - mean) / std::sqrt(var + eps) * ws[c] + bs[c],
                      tolerance * 4);
      }
    });
  }
}

template <DType T> void register_gelu_benchmark(int64_t rows, int64_t cols) {
  const double bytes = (2.0 * rows * cols + 2.0 * cols) * size_in_bytes(T);
  for (auto [bm, bn, warps] : std::vector<std::array<int64_t, 3>>{{8, 512, 4}, {2, 2048, 4}, {1, 4096, 8}, {4, 2048, 8}}) {
    Config config{{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"num_warps", warps}};
    const std::string name = std::string("fused gelu(x*w+b) ") + dtype_name<T>() + " " + std::to_string(rows) + "x" +
                             std::to_string(cols) + " " + config.str();
    register_timed(name, bytes, kCopy, [=](benchmark::State &state) {
      static Kernel k = jit(gelu_kernel<T>, std::string("bench_gelu_") + dtype_name<T>());
      Buffer x = random_buffer(T, rows * cols, 9), w = random_buffer(T, cols, 10), b = random_buffer(T, cols, 11);
      Buffer y = output_buffer(T, rows * cols);
      Grid grid(cdiv(rows, config["BLOCK_M"]), cdiv(cols, config["BLOCK_N"]));
      time_launches(state, [&] { k.launch(grid, config, stream(), x, w, b, y, rows, cols); });
      HostView xs(x, T), ws(w, T), bs(b, T), ys(y, T);
      for (int64_t i = 0; i < rows * cols; i += 7919) {
        double v = xs[i] * ws[i % cols] + bs[i % cols];
        check_close("fused gelu", ys[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), T == DType::f32 ? 1e-5 : 2e-2);
      }
    });
  }
}

/// The ops library (ops/) on the same workloads: its own plans (and, for
/// long rows, both plans forced), checked like the kernels above.
template <DType T> void register_ops_benchmarks(int64_t rows, int64_t cols) {
  const std::string shape = std::string(dtype_name<T>()) + " " + std::to_string(rows) + "x" + std::to_string(cols);
  const double row_bytes = 2.0 * rows * cols * size_in_bytes(T);
  const double tolerance = T == DType::f32 ? 1e-5 : 2e-2;
  std::vector<std::pair<std::string, Config>> plans{{"", Config{}}, {" shifted", Config{{"SHIFTED", 1}}},
                                                    {" two reductions", Config{{"SHIFTED", 0}}}};
  if (cols > 16384)
    plans = {{"", Config{}},
             {" shifted", Config{{"SHIFTED", 1}}},
             {" two reductions", Config{{"SHIFTED", 0}}},
             {" one pass 16 warps", Config{{"ONE_PASS", 1}, {"num_warps", 16}}},
             {" two walks", Config{{"ONE_PASS", 0}}}};
  for (const auto &[plan, config] : plans) {
    bool layerNormOnly = config.has("SHIFTED"); // a choice only layer norm has
    if (!layerNormOnly)
      register_timed("ops softmax " + shape + plan, row_bytes, kCopy, [=](benchmark::State &state) {
        Buffer x = random_buffer(T, rows * cols, 14), y = output_buffer(T, rows * cols);
        ops::TensorView xv = ops::TensorView::of(x, T, {rows, cols}), yv = ops::TensorView::of(y, T, {rows, cols});
        time_launches(state, [&] { ops::softmax(xv, yv, stream(), config); });
        check_softmax("ops softmax", HostView(x, T), HostView(y, T), rows, cols, tolerance);
      });
    for (bool rms : {false, true}) {
      if (rms && layerNormOnly)
        continue;
      register_timed(std::string(rms ? "ops rms norm " : "ops layer norm ") + shape + plan, row_bytes, kCopy,
                     [=](benchmark::State &state) {
                       Buffer x = random_buffer(T, rows * cols, 15), w = random_buffer(T, cols, 16),
                              b = random_buffer(T, cols, 17), y = output_buffer(T, rows * cols);
                       auto view = [](const Buffer &buffer, std::vector<int64_t> dims) {
                         return ops::TensorView::of(buffer, T, std::move(dims));
                       };
                       ops::TensorView xv = view(x, {rows, cols}), wv = view(w, {cols}), bv = view(b, {cols});
                       ops::TensorView yv = view(y, {rows, cols});
                       const double eps = 1e-5;
                       time_launches(state, [&] {
                         if (rms)
                           ops::rms_norm(xv, wv, eps, yv, {}, stream(), config);
                         else
                           ops::layer_norm(xv, wv, bv, eps, yv, {}, {}, stream(), config);
                       });
                       HostView xs(x, T), ws(w, T), bs(b, T), ys(y, T);
                       for (int64_t r = 0; r < rows; r += rows / 5) {
                         double mean = 0, var = 0, square = 0;
                         for (int64_t c = 0; c < cols; ++c) {
                           mean += xs[r * cols + c] / cols;
                           square += xs[r * cols + c] * xs[r * cols + c] / cols;
                         }
                         for (int64_t c = 0; c < cols; ++c)
                           var += (xs[r * cols + c] - mean) * (xs[r * cols + c] - mean) / cols;
                         for (int64_t c = 0; c < cols; c += 61) {
                           double x = xs[r * cols + c];
                           double want = rms ? x / std::sqrt(square + eps) * ws[c]
                                             : (x - mean) / std::sqrt(var + eps) * ws[c] + bs[c];
                           check_close(rms ? "ops rms norm" : "ops layer norm", ys[r * cols + c], want, tolerance * 4);
                         }
                       }
                     });
    }
  }
}

/// The ops library's fused pointwise: gelu(x * w + b), w and b broadcast.
template <DType T> void register_ops_pointwise(int64_t rows, int64_t cols) {
  const double bytes = (2.0 * rows * cols + 2.0 * cols) * size_in_bytes(T);
  register_timed(std::string("ops pointwise gelu(x*w+b) ") + dtype_name<T>() + " " + std::to_string(rows) + "x" +
                     std::to_string(cols),
                 bytes, kCopy, [=](benchmark::State &state) {
                   Buffer x = random_buffer(T, rows * cols, 18), w = random_buffer(T, cols, 19),
                          b = random_buffer(T, cols, 20), y = output_buffer(T, rows * cols);
                   ops::Pointwise pw;
                   ops::Expr xe = pw.input(ops::TensorView::of(x, T, {rows, cols}));
                   ops::Expr we = pw.input(ops::TensorView::of(w, T, {cols}));
                   ops::Expr be = pw.input(ops::TensorView::of(b, T, {cols}));
                   pw.output(ops::TensorView::of(y, T, {rows, cols}), ops::gelu(xe * we + be));
                   time_launches(state, [&] { pw.run(stream()); });
                   HostView xs(x, T), ws(w, T), bs(b, T), ys(y, T);
                   for (int64_t i = 0; i < rows * cols; i += 7919) {
                     double v = xs[i] * ws[i % cols] + bs[i % cols];
                     check_close("ops pointwise", ys[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))),
                                 T == DType::f32 ? 1e-5 : 2e-2);
                   }
                 });
}

/// Medians (in the benchmark's time unit) of every benchmark, captured as
/// the console report goes by.
class RecordingReporter : public benchmark::ConsoleReporter {
public:
  std::map<std::string, double> median_us;
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &run : runs)
      if (run.aggregate_name == "median")
        median_us[run.run_name.function_name] = run.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// What a user waits for around a launch of a small pointwise kernel.
struct LaunchCosts {
  double first_cold_compile_s;  ///< the first compile in the process (LLVM's one-time set-up included)
  double cold_compile_s;        ///< later cold compiles, empty disk cache: median
  double cache_hit_s;           ///< a new Kernel whose binary is on disk: trace, load, launch
  double cache_lookup_s;        ///< of which Kernel::compile (trace, key, disk read): median
  double launch_us;             ///< wall time per launch, 2000 launches of a small kernel and a sync
  double launch_call_us;        ///< host time in Kernel::launch per call, 200 calls, no sync
  double driver_call_us;        ///< the driver's own cuLaunchKernel per call, the same way
  double ops_call_us;           ///< ops::layer_norm (64x1024 f32) per call, 200 calls, no sync
  double c_abi_call_us;         ///< the same through kiln_layer_norm (DLTensors)
};

/// Host microseconds per call of `call`, 200 calls in a row without a sync
/// (few enough that the driver's queue never fills), median of 5.
template <class Call> double host_us_per_call(const Call &call) {
  call();
  std::vector<double> per_call;
  for (int trial = 0; trial < 5; ++trial) {
    stream().synchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i)
      call();
    per_call.push_back(seconds_since(t0) / 200 * 1e6);
  }
  stream().synchronize();
  return median(per_call);
}

/// The CUDA driver's own cost per cuLaunchKernel of `kernel` (the same
/// arguments, 200 calls, no sync): the floor under Kiln's launch path.
double driver_launch_us(const CompiledKernel &kernel, const std::vector<uint64_t> &values) {
  using Result = int;
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto symbol = [&](const char *name) {
    void *f = dlsym(library, name);
    if (!f)
      throw Error(std::string("driver floor: no ") + name);
    return f;
  };
  auto moduleLoadData = reinterpret_cast<Result (*)(void **, const void *)>(symbol("cuModuleLoadData"));
  auto moduleGetFunction = reinterpret_cast<Result (*)(void **, void *, const char *)>(symbol("cuModuleGetFunction"));
  auto launchKernel = reinterpret_cast<Result (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                                  unsigned, void *, void **, void **)>(symbol("cuLaunchKernel"));
  void *module = nullptr, *function = nullptr;
  if (moduleLoadData(&module, kernel.cubin.data()) || moduleGetFunction(&function, module, kernel.name.c_str()))
    throw Error("driver floor: cannot load the kernel");
  std::vector<uint64_t> storage = values;
  std::vector<void *> params;
  for (uint64_t &v : storage)
    params.push_back(&v);
  std::vector<double> per_call;
  for (int trial = 0; trial < 5; ++trial) {
    stream().synchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i)
      if (launchKernel(function, 1, 1, 1, kernel.num_warps * 32, 1, 1, 0, nullptr, params.data(), nullptr))
        throw Error("driver floor: cuLaunchKernel failed");
    per_call.push_back(seconds_since(t0) / 200 * 1e6);
  }
  stream().synchronize();
  return median(per_call);
}

LaunchCosts measure_launch_costs() {
  namespace fs = std::filesystem;
  LaunchCosts costs{};
  const int64_t n = 1 << 20;
  Buffer x = random_buffer(f32, n, 12), y = random_buffer(f32, n, 13), z = output_buffer(f32, n);
  Config config{{"BLOCK", 1024}};
  fs::path root = fs::temp_directory_path() / ("kiln-bench-cache-" + std::to_string(::getpid()));
  auto first_launch = [&](const fs::path &cache) {
    setenv("KILN_CACHE_DIR", cache.c_str(), 1);
    Kernel k = jit(add_kernel, "bench_cold_add"); // a new Kernel: nothing in memory
    auto t0 = std::chrono::steady_clock::now();
    k.launch(Grid(n / 1024), config, stream(), x, y, z, n);
    stream().synchronize();
    return seconds_since(t0);
  };
  std::vector<double> cold, hit, lookup;
  for (int i = 0; i < 6; ++i) {
    fs::path cache = root / std::to_string(i);
    double t = first_launch(cache);
    if (i == 0)
      costs.first_cold_compile_s = t;
    else
      cold.push_back(t);
    hit.push_back(first_launch(cache));
    Kernel fresh = jit(add_kernel, "bench_cold_add");
    Specialization spec = fresh.specialize(std::vector<Arg>{x, y, z, n});
    auto t0 = std::chrono::steady_clock::now();
    fresh.compile(config, spec, "sm_" + std::to_string(gpu().compute_capability()) + "a");
    lookup.push_back(seconds_since(t0));
  }
  costs.cold_compile_s = median(cold);
  costs.cache_hit_s = median(hit);
  costs.cache_lookup_s = median(lookup);

  Kernel k = jit(add_kernel, "bench_launch_add");
  k.launch(Grid(1), config, stream(), x, y, z, int64_t(1024));
  stream().synchronize();
  std::vector<double> per_launch;
  for (int trial = 0; trial < 5; ++trial) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i)
      k.launch(Grid(1), config, stream(), x, y, z, int64_t(1024));
    stream().synchronize();
    per_launch.push_back(seconds_since(t0) / 2000 * 1e6);
  }
  costs.launch_us = median(per_launch);
  std::vector<double> per_call;
  for (int trial = 0; trial < 5; ++trial) {
    stream().synchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) // few enough that the driver's queue never fills
      k.launch(Grid(1), config, stream(), x, y, z, int64_t(1024));
    per_call.push_back(seconds_since(t0) / 200 * 1e6);
  }
  stream().synchronize();
  costs.launch_call_us = median(per_call);
  CompiledKernel compiled =
      k.compile(config, k.specialize(std::vector<Arg>{x, y, z, int64_t(1024)}), "sm_" + std::to_string(gpu().compute_capability()) + "a");
  costs.driver_call_us = driver_launch_us(compiled, {x.address(), y.address(), z.address(), 1024});

  // An op's call as a runtime makes it, again and again on the same shapes
  // (its plan reused, docs/ops.md): small enough that the GPU keeps up.
  const int64_t R = 64, N = 1024;
  Buffer lx = random_buffer(f32, R * N, 14), lw = random_buffer(f32, N, 15), lb = random_buffer(f32, N, 16),
         ly = output_buffer(f32, R * N);
  ops::TensorView X = ops::TensorView::of(lx, f32, {R, N}), Y = ops::TensorView::of(ly, f32, {R, N});
  ops::TensorView W = ops::TensorView::of(lw, f32, {N}), B = ops::TensorView::of(lb, f32, {N});
  costs.ops_call_us = host_us_per_call([&] { ops::layer_norm(X, W, B, 1e-5, Y, {}, {}, stream()); });
  int64_t rowsShape[2] = {R, N}, rowShape[1] = {N};
  auto dl = [&](const Buffer &b, int ndim, int64_t *shape) {
    return DLTensor{reinterpret_cast<void *>(b.address()), {kDLCUDA, gpu().ordinal()}, ndim, {kDLFloat, 32, 1},
                    shape, nullptr, 0};
  };
  DLTensor dx = dl(lx, 2, rowsShape), dy = dl(ly, 2, rowsShape), dw = dl(lw, 1, rowShape), db = dl(lb, 1, rowShape);
  costs.c_abi_call_us = host_us_per_call([&] {
    if (kiln_layer_norm(&dx, &dw, &db, 1e-5, &dy, nullptr, nullptr, stream().native()) != 0)
      throw Error(std::string("kiln_layer_norm: ") + kiln_ops_last_error());
  });
  fs::remove_all(root);
  unsetenv("KILN_CACHE_DIR");
  return costs;
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

} // namespace

int main(int argc, char **argv) {
  std::string records_path, command = "memory_bench";
  std::vector<char *> args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--records") == 0 && i + 1 < argc)
      records_path = argv[++i];
    else if (std::strcmp(argv[i], "--command") == 0 && i + 1 < argc)
      command = argv[++i];
    else
      args.push_back(argv[i]);
  }
  try {
    if (!Device::cuda_available() || std::getenv("KILN_INTERPRET")) {
      std::printf("memory_bench: no GPU (%s); nothing to time\n", Device::cuda_unavailable_reason().c_str());
      return 0;
    }
    register_vector_benchmarks();
    register_gelu_benchmark<DType::f16>(kRows, kCols);
    register_gelu_benchmark<DType::f32>(kRows, kCols);
    register_row_benchmarks<DType::f32>(kRows, kCols);
    register_row_benchmarks<DType::bf16>(kRows, kCols);
    register_row_benchmarks<DType::f32>(4096, 32768);
    register_row_benchmarks<DType::bf16>(4096, 32768);
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{kRows, kCols}, {4096, 32768}}) {
      register_ops_benchmarks<DType::f32>(rows, cols);
      register_ops_benchmarks<DType::bf16>(rows, cols);
    }
    register_ops_pointwise<DType::f32>(kRows, kCols);
    register_ops_pointwise<DType::bf16>(kRows, kCols);

    int count = static_cast<int>(args.size());
    benchmark::Initialize(&count, args.data());
    RecordingReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    LaunchCosts costs = measure_launch_costs();
    std::printf("\ncold compile (first in process) %.1f ms, cold compile %.1f ms, cache hit %.2f ms (Kernel::compile "
                "%.2f ms of it), launch %.2f us per launch (2000 and a sync), %.2f us per call (the driver's "
                "cuLaunchKernel alone: %.2f us)\n",
                costs.first_cold_compile_s * 1e3, costs.cold_compile_s * 1e3, costs.cache_hit_s * 1e3,
                costs.cache_lookup_s * 1e3, costs.launch_us, costs.launch_call_us, costs.driver_call_us);
    std::printf("an op's call, 64x1024 f32 layer norm: ops::layer_norm %.2f us, kiln_layer_norm (C ABI) %.2f us\n",
                costs.ops_call_us, costs.c_abi_call_us);

    nlohmann::json records = nlohmann::json::array();
    std::string device = gpu().name(), date = today();
    auto add = [&](const std::string &workload, const std::string &metric, double kiln, const std::string &peer,
                   double peer_value, double ratio) {
      records.push_back({{"workload", workload}, {"metric", metric}, {"kiln", kiln}, {"peer", peer},
                         {"peer_value", peer_value}, {"ratio", ratio}, {"device", device}, {"date", date},
                         {"command", command}});
    };
    std::printf("\n| workload | Kiln TB/s | device copy TB/s | ratio |\n| --- | --- | --- | --- |\n");
    for (const Workload &w : workloads()) {
      if (w.peer.empty() || !reporter.median_us.count(w.name))
        continue;
      double tbps = w.bytes / (reporter.median_us[w.name] * 1e-6) / 1e12;
      const Workload &peer = *std::find_if(workloads().begin(), workloads().end(),
                                           [&](const Workload &p) { return p.name == w.peer; });
      double peer_tbps = peer.bytes / (reporter.median_us[peer.name] * 1e-6) / 1e12;
      add(w.name, "TB/s", tbps, peer.name, peer_tbps, tbps / peer_tbps);
      std::printf("| %s | %.3f | %.3f | %.3f |\n", w.name.c_str(), tbps, peer_tbps, tbps / peer_tbps);
    }
    // Latencies: the bar the issue sets, as the peer value (ratio = bar / Kiln).
    add("cold compile, small pointwise kernel (first in process)", "ms", costs.first_cold_compile_s * 1e3,
        "target", 50.0, 50.0 / (costs.first_cold_compile_s * 1e3));
    add("cold compile, small pointwise kernel", "ms", costs.cold_compile_s * 1e3, "target", 50.0,
        50.0 / (costs.cold_compile_s * 1e3));
    add("disk cache hit, new Kernel object", "ms", costs.cache_hit_s * 1e3, "target", 1.0,
        1.0 / (costs.cache_hit_s * 1e3));
    add("host time per launch", "us", costs.launch_us, "target", 3.0, 3.0 / costs.launch_us);
    add("host time per launch call (no sync)", "us", costs.launch_call_us, "target", 3.0, 3.0 / costs.launch_call_us);
    add("host time per launch call (no sync)", "us", costs.launch_call_us, "cuLaunchKernel alone", costs.driver_call_us,
        costs.driver_call_us / costs.launch_call_us);
    add("host time per call, ops::layer_norm 64x1024 f32 (no sync)", "us", costs.ops_call_us,
        "cuLaunchKernel alone", costs.driver_call_us, costs.driver_call_us / costs.ops_call_us);
    add("host time per call, kiln_layer_norm 64x1024 f32 (C ABI, no sync)", "us", costs.c_abi_call_us,
        "cuLaunchKernel alone", costs.driver_call_us, costs.driver_call_us / costs.c_abi_call_us);
    if (!records_path.empty())
      std::ofstream(records_path) << records.dump(1) << "\n";
    return 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "memory_bench: %s\n", e.what());
    return 1;
  }
}
