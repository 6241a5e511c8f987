// Memory-bound kernels on the GPU: time (CUDA events, median of many
// repetitions after warm-up) and bandwidth (bytes = each input read once +
// each output written once). Prints a table and writes JSON for
// bench/compare.py, which times the same operations in PyTorch in the same
// run and prints the ratios.
//   memory_bench [out.json]
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

using namespace kiln;

namespace {

void copy_kernel(const Config &cfg, ConstPtr<f32> x, Ptr<f32> y, Long n) {
  const int64_t B = cfg["BLOCK"];
  Tensor o = program_id(0).to(i64) * B + arange(0, B);
  store(y + o, load(x + o, o < n), o < n);
}

void add_kernel(const Config &cfg, ConstPtr<f32> x, ConstPtr<f32> y, Ptr<f32> z, Long n) {
  const int64_t B = cfg["BLOCK"];
  Tensor o = program_id(0).to(i64) * B + arange(0, B);
  Tensor m = o < n;
  store(z + o, load(x + o, m) + load(y + o, m), m);
}

template <DType T> void softmax_kernel(const Config &cfg, ConstPtr<T> x, Ptr<T> y, Int n_cols) {
  const int64_t B = cfg["BLOCK"];
  Tensor row = program_id(0).to(i64) * n_cols;
  Tensor cols = arange(0, B);
  Tensor m = cols < n_cols;
  Tensor v = load(x + row + cols, m, -INFINITY).to(f32);
  Tensor e = exp(v - max(v, 0));
  store(y + row + cols, (e / sum(e, 0)).to(T), m);
}

struct Result {
  std::string name;
  double ms, tbps;
};

/// Median milliseconds of `launch` over `reps` runs after `warmup` runs.
double time_ms(const Device &device, const std::function<void()> &launch, int warmup = 10, int reps = 50) {
  Stream stream(device);
  for (int i = 0; i < warmup; ++i)
    launch();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    Event start(device), stop(device);
    start.record(stream);
    launch();
    stop.record(stream);
    stop.synchronize();
    times.push_back(stop.elapsed_ms(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  try {
    Device device = Device::default_device();
    if (device.kind() != DeviceKind::cuda) {
      std::printf("memory_bench: no GPU (%s)\n", Device::cuda_unavailable_reason().c_str());
      return 0;
    }
    Stream stream(device);
    std::vector<Result> results;
    auto record = [&](const std::string &name, double bytes, const std::function<void()> &launch) {
      double ms = time_ms(device, launch);
      results.push_back({name, ms, bytes / ms / 1e9});
      std::printf("%-36s %9.4f ms %8.3f TB/s\n", name.c_str(), ms, bytes / ms / 1e9);
    };

    const int64_t n = int64_t(128) << 20; // 128 Mi f32
    Buffer x = Buffer::allocate(device, n * 4), y = Buffer::allocate(device, n * 4), z = Buffer::allocate(device, n * 4);
    x.fill_bytes(0x3f);
    y.fill_bytes(0x3e);
    Kernel copy = jit(copy_kernel, "bench_copy"), add = jit(add_kernel, "bench_add");
    for (int64_t block : {1024, 2048, 4096}) {
      Config c{{"BLOCK", block}, {"num_warps", block >= 2048 ? 8 : 4}};
      record("copy f32 128Mi BLOCK=" + std::to_string(block), 2.0 * n * 4,
             [&] { copy.launch(Grid(cdiv(n, block)), c, stream, x, z, n); });
      record("vector add f32 128Mi BLOCK=" + std::to_string(block), 3.0 * n * 4,
             [&] { add.launch(Grid(cdiv(n, block)), c, stream, x, y, z, n); });
    }

    const int64_t rows = 16384, cols = 8192;
    Buffer a = Buffer::allocate(device, rows * cols * 4), b = Buffer::allocate(device, rows * cols * 4);
    a.fill_bytes(0x3c);
    Kernel softmax32 = jit(softmax_kernel<f32>, "bench_softmax_f32"), softmax16 = jit(softmax_kernel<bf16>, "bench_softmax_bf16");
    for (int warps : {8, 16}) {
      Config c{{"BLOCK", cols}, {"num_warps", warps}};
      record("softmax f32 16384x8192 warps=" + std::to_string(warps), 2.0 * rows * cols * 4,
             [&] { softmax32.launch(Grid(rows), c, stream, a, b, cols); });
      record("softmax bf16 16384x8192 warps=" + std::to_string(warps), 2.0 * rows * cols * 2,
             [&] { softmax16.launch(Grid(rows), c, stream, a, b, cols); });
    }
    if (argc > 1) {
      std::ofstream out(argv[1]);
      out << "{\n";
      for (size_t i = 0; i < results.size(); ++i)
        out << "  \"" << results[i].name << "\": {\"ms\": " << results[i].ms << ", \"TBps\": " << results[i].tbps
            << "}" << (i + 1 < results.size() ? "," : "") << "\n";
      out << "}\n";
    }
    return 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "memory_bench: %s\n", e.what());
    return 1;
  }
}
