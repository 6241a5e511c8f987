// Matrix products on the GPU: Kiln's DSL matmul next to cuBLAS (cublasGemmEx
// from the toolkit's libcublas, loaded at run time) in the same process, on
// the same buffers and stream. Each result is checked (against cuBLAS on
// every element, and against a double-precision reference on sampled
// elements) before it is timed; times are medians of CUDA-event-timed
// launches after a warm-up.
//
//   matmul_bench [--records FILE] [--command TEXT] [--reps N] [--shapes llm|square|ragged|tf32|ksweep|all|MxNxK,...]
//                [--op-only [--versus CONFIG]...] [--host-overhead]
//   matmul_bench --compile-only    (no GPU: ptxas's registers and spills per config)
//
// Records are bench/results' format (see memory_bench.cpp), ratio = Kiln's
// TFLOP/s over cuBLAS's. Next to this file's DSL kernel, each shape also
// times the ops library's matmul (kiln::ops::matmul) with its default tile
// (which splits K for skinny products) and with the tile its autotuner
// picks (pattern search). Both go through the tuning store of
// KILN_CACHE_DIR, which bench/device/run.sh makes fresh for each run, so the
// default row is the default tile. `--shapes tf32` multiplies f32 operands
// on tensor cores (Kiln's tf32, the op with Precision::tf32) against
// cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32. `--op-only` times just the op: its
// defaults (tensor descriptors, i.e. the copy engine, on Hopper where the
// operands allow), then the defaults with each `--versus` config applied
// (repeatable; default DESCRIPTORS=0, pointer loads), without this file's
// kernel or tuning; cuBLAS and the variants are timed in turn, seven rounds, each in a new random order.
// `--op-only --host-overhead` measures instead the host's time a call takes
// to queue its work (ops::matmul, its planning and its launch apart, and
// cuBLAS), beside the GPU's time a product takes.
#include <kiln/kiln.h>
#include <kiln/numeric.h>
#include <kiln/autotune.h>
#include <kiln/ops/library.h>
#include <kiln/tuning_store.h>

#include "ops/lib/MatmulPlan.h"

#include <dlfcn.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace kiln;

namespace {

/// C = A x B, A and C row-major, B [K][N] row-major (stride_bn 1) or
/// [N][K] (stride_bk 1, as torch.nn.Linear's weight), C in the operands'
/// type, f32 accumulation (f32 operands as tf32); tiles visited in groups of
/// GROUP_M rows so that neighbours share L2.
template <DType T>
void matmul(const Config &cfg, ConstPtr<T> a, ConstPtr<T> b, Ptr<T> c, Int M, Int N, Int K, Int stride_bk,
            Int stride_bn) {
  const int64_t BM = cfg["BLOCK_M"], BN = cfg["BLOCK_N"], BK = cfg["BLOCK_K"], GROUP = cfg["GROUP_M"];
  Tensor pid = program_id(0);
  Tensor tiles_m = cdiv(M, BM), tiles_n = cdiv(N, BN);
  Tensor group = pid / (GROUP * tiles_n);
  Tensor first_m = group * GROUP;
  Tensor rows_in_group = minimum(tiles_m - first_m, GROUP);
  Tensor pid_m = first_m + pid % rows_in_group;
  Tensor pid_n = (pid % (GROUP * tiles_n)) / rows_in_group;
  Tensor rm = pid_m * BM + arange(0, BM);
  Tensor rn = pid_n * BN + arange(0, BN);
  Tensor rk = arange(0, BK);
  // Rows and columns past the edge wrap around (in bounds) and are never
  // stored: the K loop needs no masks when BLOCK_K divides K.
  Tensor am = rm % M, bn = rn % N;
  Tensor a_tile = a + expand_dims(am, 1) * K + expand_dims(rk, 0);
  Tensor b_tile = b + expand_dims(rk, 1) * stride_bk + expand_dims(bn, 0) * stride_bn;
  Tensor acc = for_range(0, K, BK, carry(zeros({BM, BN}, f32)), [&](const Tensor &k, const Tensor &acc) {
    return dot(load(a_tile + k), load(b_tile + k * stride_bk), acc);
  });
  store(c + expand_dims(rm, 1) * N + expand_dims(rn, 0), acc.to(T),
        expand_dims(rm < M, 1) & expand_dims(rn < N, 0));
}

// The slice of cuBLAS this benchmark calls.
using cublasHandle = void *;
enum {
  CUBLAS_OP_N = 0,
  CUBLAS_OP_T = 1,
  CUDA_R_32F = 0,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
  CUBLAS_GEMM_DEFAULT = -1
};
struct Cublas {
  int (*create)(cublasHandle *);
  int (*set_stream)(cublasHandle, void *);
  int (*gemm_ex)(cublasHandle, int, int, int, int, int, const void *, const void *, int, int, const void *, int,
                 int, const void *, void *, int, int, int, int);
  cublasHandle handle = nullptr;
  std::string library;

  Cublas() {
    void *lib = nullptr;
    for (const char *name : {"libcublas.so", "libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL))) {
        library = name;
        break;
      }
    if (!lib)
      throw std::runtime_error("cuBLAS not found (libcublas.so): " + std::string(dlerror()));
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasCreate_v2"));
    set_stream = reinterpret_cast<decltype(set_stream)>(dlsym(lib, "cublasSetStream_v2"));
    gemm_ex = reinterpret_cast<decltype(gemm_ex)>(dlsym(lib, "cublasGemmEx"));
    if (!create || !set_stream || !gemm_ex || create(&handle) != 0)
      throw std::runtime_error("cuBLAS: cannot create a handle");
  }
  /// Row-major C = A x B as column-major C^T = B^T x A^T; B given as
  /// [N][K] (`b_nk`) is B^T already. f32 operands multiply as tf32.
  void gemm(const Stream &stream, DType dtype, int64_t M, int64_t N, int64_t K, const Buffer &a, const Buffer &b,
            Buffer &c, bool b_nk) {
    float one = 1, zero = 0;
    int type = dtype == f32 ? CUDA_R_32F : dtype == f16 ? CUDA_R_16F : CUDA_R_16BF;
    int compute = dtype == f32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (set_stream(handle, stream.native()) != 0 ||
        gemm_ex(handle, b_nk ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), &one,
                reinterpret_cast<const void *>(b.address()), type, int(b_nk ? K : N),
                reinterpret_cast<const void *>(a.address()),
                type, int(K), &zero, reinterpret_cast<void *>(c.address()), type, int(N), compute, CUBLAS_GEMM_DEFAULT) != 0)
      throw std::runtime_error("cublasGemmEx failed");
  }
};

struct Problem {
  int64_t M, N, K;
  bool b_nk; ///< B stored [N][K] (K-major), else [K][N]
};

/// --op-only: rounds of interleaved timings; launches a back-to-back batch.
constexpr int kOpRounds = 7, kBatch = 10;

/// Milliseconds a launch of `launch` adds when `count` run back to back
/// (the host queues ahead of the GPU, so host-side costs hide behind the
/// GPU's): median over `reps` such batches.
double back_to_back_ms(const Stream &stream, int reps, int count, const std::function<void()> &launch) {
  std::vector<float> times;
  Event start(stream.device()), stop(stream.device());
  for (int i = 0; i < reps; ++i) {
    start.record(stream);
    for (int j = 0; j < count; ++j)
      launch();
    stop.record(stream);
    stop.synchronize();
    times.push_back(stop.elapsed_ms(start) / count);
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[reps / 2];
}

double median_ms(const Stream &stream, int reps, const std::function<void()> &launch) {
  for (int i = 0; i < 10; ++i)
    launch();
  std::vector<float> times;
  Event start(stream.device()), stop(stream.device());
  for (int i = 0; i < reps; ++i) {
    start.record(stream);
    launch();
    stop.record(stream);
    stop.synchronize();
    times.push_back(stop.elapsed_ms(start));
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[reps / 2];
}

/// A matrix in the GPU's encoding and as the values it holds.
struct HostMatrix {
  std::vector<uint8_t> bytes;
  std::vector<double> values;
};

/// Element `i` of `bytes` holding `dtype` (f32, f16 or bf16).
double element(DType dtype, const std::vector<uint8_t> &bytes, size_t i) {
  if (dtype == f32) {
    float v;
    std::memcpy(&v, &bytes[i * 4], 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, &bytes[i * 2], 2);
  return decode_float(dtype, h);
}

HostMatrix random_matrix(DType dtype, size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  HostMatrix m{std::vector<uint8_t>(n * size_in_bytes(dtype)), std::vector<double>(n)};
  for (size_t i = 0; i < n; ++i) {
    double v = round_to(dtype, dist(rng), Rounding::nearest_even, false);
    if (dtype == f32) {
      float f = static_cast<float>(v);
      std::memcpy(&m.bytes[i * 4], &f, 4);
    } else {
      uint16_t h = static_cast<uint16_t>(encode_float(dtype, v));
      std::memcpy(&m.bytes[i * 2], &h, 2);
    }
    m.values[i] = element(dtype, m.bytes, i);
  }
  return m;
}

} // namespace

int main(int argc, char **argv) {
  std::string records, command = "matmul_bench", which = "all";
  int reps = 50;
  bool compile_only = false, op_only = false, host_overhead = false;
  std::vector<Config> versus;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (arg == "--records")
      records = next();
    else if (arg == "--command")
      command = next();
    else if (arg == "--reps")
      reps = std::stoi(next());
    else if (arg == "--shapes")
      which = next();
    else if (arg == "--compile-only")
      compile_only = true;
    else if (arg == "--op-only")
      op_only = true;
    else if (arg == "--host-overhead")
      host_overhead = true;
    else if (arg == "--versus")
      versus.push_back(Config::parse(next()));
  }
  if (versus.empty())
    versus.push_back(Config{{"DESCRIPTORS", 0}});
  // Candidate configurations; each shape reports its best (and which):
  // those whose pipelining rings fit (f32 operands take twice the bytes).
  std::vector<Config> configs = {
      {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 32}, {"GROUP_M", 8}, {"num_warps", 4}, {"num_stages", 4}},
      {{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 32}, {"GROUP_M", 8}, {"num_warps", 8}, {"num_stages", 3}},
      {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 8}, {"num_stages", 3}},
      {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 4}, {"num_stages", 4}},
      {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 4}, {"num_stages", 3}},
      {{"BLOCK_M", 256}, {"BLOCK_N", 128}, {"BLOCK_K", 32}, {"GROUP_M", 8}, {"num_warps", 8}, {"num_stages", 4}},
      {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 4}, {"num_stages", 4}},
      {{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 8}, {"num_stages", 3}},
      {{"BLOCK_M", 256}, {"BLOCK_N", 128}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 8}, {"num_stages", 3}},
      {{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 32}, {"GROUP_M", 8}, {"num_warps", 8}, {"num_stages", 6}},
      {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 4}, {"num_stages", 5}},
      {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 32}, {"GROUP_M", 8}, {"num_warps", 8}, {"num_stages", 3}},
      {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 32}, {"GROUP_M", 8}, {"num_warps", 4}, {"num_stages", 3}},
  };
  auto fitsRings = [](const Config &c, int64_t bytes) {
    return c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * bytes <= 192 * 1024;
  };
  Kernel kernels[3] = {jit(matmul<bf16>, "bench_matmul_bf16"), jit(matmul<f16>, "bench_matmul_f16"),
                       jit(matmul<f32>, "bench_matmul_tf32")};
  auto kernelFor = [&](DType dtype) -> const Kernel & { return kernels[dtype == f16 ? 1 : dtype == f32 ? 2 : 0]; };
  if (compile_only) { // aligned pointers, sizes divisible by 16
    Specialization spec;
    spec.args.assign(8, ArgSpecialization{.divisible_by_16 = true});
    spec.args[6] = ArgSpecialization{.divisible_by_16 = false, .equal_to_1 = true}; // B [N][K]: wgmma on sm_90a
    for (const Kernel &k : kernels)
      for (const Config &config : configs) {
        if (&k == &kernels[2] && !fitsRings(config, 4))
          continue;
        CompiledKernel c = k.compile(config, spec, "sm_90a");
        std::printf("%s %s: %d registers, %d bytes spilled, %d bytes shared\n", k.name().c_str(),
                    config.str().c_str(), c.registers, c.spill_stores, c.shared_memory);
      }
    return 0;
  }
  if (!Device::cuda_available()) {
    std::printf("matmul_bench: no GPU (%s)\n", Device::cuda_unavailable_reason().c_str());
    return 77;
  }
  Device device = Device::cuda(0);
  Stream stream = Stream::create(device);
  Cublas cublas;

  std::vector<Problem> shapes;
  if (which == "ksweep") // one tile grid, growing K: time = fixed cost + K * per-K cost
    for (int64_t K : {1024, 2048, 4096, 8192, 16384})
      shapes.push_back({4096, 4096, K, false});
  else if (which == "ragged") // K not a multiple of any BLOCK_K: masked K loops (the op only; this file's kernel has no masks)
    shapes = {{4096, 4096, 4040, true}, {128, 4096, 4040, true}, {16, 4096, 11000, true}};
  else if (which.find('x') != std::string::npos) { // MxNxK[,MxNxK...], B [N][K] as the LLM shapes
    for (size_t start = 0; start < which.size();) {
      size_t end = std::min(which.find(',', start), which.size());
      Problem p{0, 0, 0, true};
      if (std::sscanf(which.substr(start, end - start).c_str(), "%ldx%ldx%ld", &p.M, &p.N, &p.K) != 3 || p.M < 1 ||
          p.N < 1 || p.K < 1) {
        std::fprintf(stderr, "matmul_bench: --shapes %s: expected MxNxK[,MxNxK...]\n", which.c_str());
        return 2;
      }
      shapes.push_back(p);
      start = end + 1;
    }
  } else if (which == "tf32")
    shapes = {{4096, 4096, 4096, false}, {8192, 8192, 8192, false}, {4096, 4096, 4096, true},
              {8192, 8192, 8192, true}, {128, 4096, 4096, true}, {4096, 11008, 4096, true}};
  else if (which != "llm" && shapes.empty())
    shapes = {{4096, 4096, 4096, false}, {8192, 8192, 8192, false}, {4096, 4096, 4096, true}, {8192, 8192, 8192, true}};
  if (which == "llm" || which == "all")
    for (int64_t M : {16, 128, 4096})
      for (auto [N, K] : std::vector<std::pair<int64_t, int64_t>>{{4096, 4096}, {11008, 4096}, {4096, 11008}})
        if (!(which == "all" && M == N && N == K)) // 4096^3 is already among the square shapes
          shapes.push_back({M, N, K, true}); // activations x weights [N][K], as nn.Linear

  nlohmann::json out = nlohmann::json::array();
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  std::printf("%-30s %-5s %10s %10s %7s  %s\n", "shape (MxNxK)", "dtype", "Kiln TF/s", "cuBLAS", "ratio", "Kiln config");
  std::vector<std::string> op_rows;
  const std::vector<DType> dtypes = which == "tf32" ? std::vector<DType>{f32} : std::vector<DType>{bf16, f16};
  for (DType dtype : dtypes) {
    const int64_t bytes = size_in_bytes(dtype);
    for (const Problem &s : shapes) {
      if (dtype == f16 && (s.M != s.N || s.b_nk))
        continue; // f16: the square shapes, B [K][N], only
      Buffer a = Buffer::allocate(device, s.M * s.K * bytes), b = Buffer::allocate(device, s.K * s.N * bytes);
      Buffer c = Buffer::allocate(device, s.M * s.N * bytes), ref = Buffer::allocate(device, s.M * s.N * bytes);
      HostMatrix ha = random_matrix(dtype, s.M * s.K, 1), hb = random_matrix(dtype, s.K * s.N, 2);
      a.copy_from_host(ha.bytes.data(), ha.bytes.size());
      b.copy_from_host(hb.bytes.data(), hb.bytes.size());
      cublas.gemm(stream, dtype, s.M, s.N, s.K, a, b, ref, s.b_nk);
      stream.synchronize();
      std::vector<uint8_t> expected(s.M * s.N * bytes), got(s.M * s.N * bytes);
      ref.copy_to_host(expected.data(), expected.size());
      double flop = 2.0 * s.M * s.N * s.K;
      double cublas_ms = median_ms(stream, reps, [&] { cublas.gemm(stream, dtype, s.M, s.N, s.K, a, b, ref, s.b_nk); });
      const Kernel &k = kernelFor(dtype);
      int64_t sbk = s.b_nk ? 1 : s.N, sbn = s.b_nk ? s.K : 1;
      // Runs `launch` on a poisoned c and counts wrong elements: against
      // cuBLAS everywhere (both round f32 sums once), and exactly computed
      // sums at sampled elements. tf32 products carry operand rounding
      // errors (2^-11 each, random in sign), which add up as sqrt(K).
      const double spread = dtype == f32 ? 2e-3 * std::sqrt(double(s.K)) : 0.0;
      auto wrong = [&](const std::function<void()> &launch) {
        c.fill_bytes(0xFF);
        launch();
        stream.synchronize();
        c.copy_to_host(got.data(), got.size());
        size_t bad = 0;
        for (size_t i = 0; i < size_t(s.M * s.N); ++i) {
          double g = element(dtype, got, i), e = element(dtype, expected, i);
          if (!(std::fabs(g - e) <= 2e-2 * std::max(1.0, std::fabs(e)) + spread))
            ++bad;
        }
        std::mt19937 rng(3);
        for (int sample = 0; sample < 64; ++sample) {
          int64_t i = rng() % s.M, j = rng() % s.N;
          double exact = 0;
          for (int64_t l = 0; l < s.K; ++l)
            exact += ha.values[i * s.K + l] * hb.values[s.b_nk ? j * s.K + l : l * s.N + j];
          double g = element(dtype, got, i * s.N + j);
          if (!(std::fabs(g - exact) <= 1e-2 * std::max(1.0, std::fabs(exact)) + spread))
            ++bad;
        }
        return bad;
      };
      double best_ms = 1e30;
      std::string best_config;
      for (const Config &config : configs) {
        if (op_only || s.K % config["BLOCK_K"] != 0 || !fitsRings(config, bytes))
          continue;
        Grid grid(cdiv(s.M, config["BLOCK_M"]) * cdiv(s.N, config["BLOCK_N"]));
        auto launch = [&] { k.launch(grid, config, stream, a, b, c, s.M, s.N, s.K, sbk, sbn); };
        if (size_t bad = wrong(launch)) {
          std::printf("  WRONG: %zu elements differ (%s)\n", bad, config.str().c_str());
          continue;
        }
        double ms = median_ms(stream, reps, launch);
        if (ms < best_ms)
          best_ms = ms, best_config = config.str();
      }
      // The op: its defaults (timed before tuning, which would change
      // them), then the tuned tile.
      ops::TensorView bv = ops::TensorView::of(b, dtype, {s.K, s.N});
      bv.strides = {sbk, sbn};
      ops::MatmulArgs op_args;
      op_args.a = ops::TensorView::of(a, dtype, {s.M, s.K});
      op_args.b = bv;
      op_args.out = ops::TensorView::of(c, dtype, {s.M, s.N});
      op_args.precision = Precision::tf32; // f32 operands on tensor cores, as cuBLAS's FAST_TF32
      if (host_overhead) {
        // Host microseconds a call takes to queue its work: 100 calls in a
        // row (the GPU's queue takes them without blocking), median of 7.
        auto host_us = [&](const std::function<void()> &call) {
          for (int i = 0; i < 20; ++i)
            call();
          stream.synchronize();
          std::vector<double> per_call;
          for (int round = 0; round < 7; ++round) {
            auto start = std::chrono::steady_clock::now();
            for (int i = 0; i < 100; ++i)
              call();
            auto stop = std::chrono::steady_clock::now();
            stream.synchronize();
            per_call.push_back(std::chrono::duration<double, std::micro>(stop - start).count() / 100);
          }
          std::nth_element(per_call.begin(), per_call.begin() + 3, per_call.end());
          return per_call[3];
        };
        const ops::MatmulLaunch plan = ops::prepare_matmul(op_args, stream, {});
        const double cublas_us = host_us([&] { cublas.gemm(stream, dtype, s.M, s.N, s.K, a, b, c, s.b_nk); });
        const double op_us = host_us([&] { ops::matmul(op_args, stream); });
        const double plan_us = host_us([&] { (void)ops::prepare_matmul(op_args, stream, {}); });
        const double queue_us = host_us([&] { plan.queue(stream); });
        const double gpu_us = 1e3 * back_to_back_ms(stream, 10, kBatch, [&] { plan.queue(stream); });
        std::string shape = std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K) +
                            (s.b_nk ? " B[N][K]" : "");
        const std::string type(name(dtype));
        char row[256];
        std::snprintf(row, sizeof row, "%-30s %-5s %10.2f %10.2f %10.2f %10.2f %10.2f", shape.c_str(), type.c_str(),
                      cublas_us, op_us, plan_us, queue_us, gpu_us);
        op_rows.push_back(row);
        for (auto [what, us] : {std::pair{"ops::matmul", op_us}, {"prepare_matmul", plan_us}, {"queue", queue_us}})
          out.push_back({{"workload", std::string("host time a call: ") + what + " " + shape + " " + type},
                         {"metric", "us"},
                         {"kiln", us},
                         {"peer", "cuBLAS (cublasGemmEx, " + cublas.library + ")"},
                         {"peer_value", cublas_us},
                         {"ratio", us / cublas_us},
                         {"device", device.name()},
                         {"date", date},
                         {"command", command}});
        continue;
      }
      auto time_op = [&](const Config &config) {
        auto launch = [&] { ops::matmul(op_args, stream, config); };
        if (size_t bad = wrong(launch)) {
          std::printf("  WRONG: %zu elements differ (op, %s)\n", bad, config.str().c_str());
          return 1e30;
        }
        return median_ms(stream, reps, launch);
      };
      double defaults_ms = 1e30, cublas_b2b_ms = 1e30, defaults_b2b_ms = 1e30;
      std::vector<double> versus_ms(versus.size(), 1e30), versus_b2b_ms(versus.size(), 1e30);
      if (op_only) {
        // cuBLAS, the defaults and each --versus config, each checked, then
        // timed in turn for kOpRounds rounds (the GPU's clocks drift under
        // sustained load), in a new random order each round (on ~10 us
        // shapes the one timed first in a fixed order read up to 4 % slow):
        // each one's median over the rounds' medians.
        // Each is also timed back to back (kBatch launches between two
        // events), which hides host-side launch costs: on ~10-20 us shapes
        // those are a large part of one launch's time, cuBLAS's too.
        auto cublas_launch = [&] { cublas.gemm(stream, dtype, s.M, s.N, s.K, a, b, ref, s.b_nk); };
        std::vector<std::function<double()>> timers{
            [&] { return median_ms(stream, reps, cublas_launch); },
            [&] { return back_to_back_ms(stream, std::max(1, reps / kBatch), kBatch, cublas_launch); }};
        std::vector<double *> results{&cublas_ms, &cublas_b2b_ms, &defaults_ms, &defaults_b2b_ms};
        for (size_t v = 0; v < versus.size(); ++v) {
          results.push_back(&versus_ms[v]);
          results.push_back(&versus_b2b_ms[v]);
        }
        std::vector<Config> variants{Config()};
        variants.insert(variants.end(), versus.begin(), versus.end());
        for (size_t v = 0; v < variants.size(); ++v) {
          std::function<void()> launch = [&, config = variants[v]] { ops::matmul(op_args, stream, config); };
          if (size_t bad = wrong(launch)) {
            std::printf("  WRONG: %zu elements differ (op, %s)\n", bad, variants[v].str().c_str());
            launch = nullptr;
          }
          timers.push_back([&stream, &reps, launch] { return launch ? median_ms(stream, reps, launch) : 1e30; });
          timers.push_back([&stream, &reps, launch] {
            return launch ? back_to_back_ms(stream, std::max(1, reps / kBatch), kBatch, launch) : 1e30;
          });
        }
        std::vector<std::vector<double>> rounds(timers.size());
        std::vector<size_t> order(timers.size());
        for (size_t i = 0; i < order.size(); ++i)
          order[i] = i;
        std::mt19937 shuffler(2026);
        for (int round = 0; round < kOpRounds; ++round) {
          std::shuffle(order.begin(), order.end(), shuffler);
          for (size_t i : order)
            rounds[i].push_back(timers[i]());
        }
        for (size_t i = 0; i < timers.size(); ++i) {
          std::nth_element(rounds[i].begin(), rounds[i].begin() + kOpRounds / 2, rounds[i].end());
          *results[i] = rounds[i][kOpRounds / 2];
        }
      } else {
        defaults_ms = time_op({});
      }
      autotune::Report tuned;
      if (!op_only) {
        autotune::Options tuning;
        tuning.strategy = autotune::Strategy::pattern;
        tuned = autotune::tune(ops::tuning_task(op_args, stream), stream, tuning, TuningStore());
      }
      double tuned_ms = tuned.best ? time_op(*tuned.best) : 1e30;
      std::string tuned_config = tuned.best ? tuned.best->str() : "none";
      double cublas_tf = flop / cublas_ms / 1e9;
      std::string shape = std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K) +
                          (s.b_nk ? " B[N][K]" : "");
      const std::string type = dtype == f32 ? "tf32" : std::string(name(dtype));
      auto report = [&](const std::string &what, double ms, const std::string &config, double peer_tf = 0.0) {
        double tf = ms < 1e30 ? flop / ms / 1e9 : 0.0;
        peer_tf = peer_tf > 0.0 ? peer_tf : cublas_tf;
        out.push_back({{"workload", what + " " + shape + " " + type},
                       {"metric", "TFLOP/s"},
                       {"kiln", tf},
                       {"kiln_config", config},
                       {"peer", "cuBLAS (cublasGemmEx" + std::string(dtype == f32 ? ", FAST_TF32, " : ", ") +
                                    cublas.library + ")"},
                       {"peer_value", peer_tf},
                       {"ratio", tf / peer_tf},
                       {"device", device.name()},
                       {"date", date},
                       {"command", command}});
        return tf;
      };
      double kiln_tf = op_only ? 0.0 : report("matmul", best_ms, best_config);
      double defaults_tf = report("matmul op (default tile)", defaults_ms, "defaults");
      char row[320];
      std::snprintf(row, sizeof row, "%-30s %-5s %10.1f %10.1f %7.3f", shape.c_str(), type.c_str(), cublas_tf,
                    defaults_tf, defaults_tf / cublas_tf);
      std::string op_row = row;
      if (op_only) {
        std::printf("%-30s %-5s %10s %10.1f %7s\n", shape.c_str(), type.c_str(), "-", cublas_tf, "-");
        const double cublas_b2b_tf = flop / cublas_b2b_ms / 1e9;
        double tf = report("matmul op (default tile, back to back)", defaults_b2b_ms, "defaults", cublas_b2b_tf);
        std::snprintf(row, sizeof row, " %10.1f %10.1f %7.3f", cublas_b2b_tf, tf, tf / cublas_b2b_tf);
        op_row += row;
        for (size_t v = 0; v < versus.size(); ++v) {
          double tf = report("matmul op (default tile, " + versus[v].str() + ")", versus_ms[v], versus[v].str());
          double b2b = report("matmul op (default tile, " + versus[v].str() + ", back to back)", versus_b2b_ms[v],
                              versus[v].str(), cublas_b2b_tf);
          std::snprintf(row, sizeof row, " %10.1f %7.3f %7.3f", tf, tf / cublas_tf, b2b / cublas_b2b_tf);
          op_row += row;
        }
      } else {
        std::printf("%-30s %-5s %10.1f %10.1f %7.3f  %s\n", shape.c_str(), type.c_str(), kiln_tf, cublas_tf,
                    kiln_tf / cublas_tf, best_config.c_str());
        double tf = report("matmul op (tuned tile)", tuned_ms, tuned_config);
        std::snprintf(row, sizeof row, " %10.1f %7.3f  %s (%d timed)", tf, tf / cublas_tf, tuned_config.c_str(),
                      tuned.timed);
        op_row += row;
      }
      op_rows.push_back(op_row);
      std::fflush(stdout);
    }
  }
  if (host_overhead) {
    std::printf("\nhost microseconds a call takes to queue its work (100 calls in a row, median of 7), and the\n"
                "GPU's microseconds a product takes back to back\n");
    std::printf("%-30s %-5s %10s %10s %10s %10s %10s\n", "shape (MxNxK)", "dtype", "cuBLAS", "ops::matmul",
                "prepare", "queue", "GPU");
    for (const std::string &row : op_rows)
      std::printf("%s\n", row.c_str());
    if (!records.empty())
      std::ofstream(records) << out.dump(2) << "\n";
    return 0;
  }
  std::printf("\nthe ops library's matmul (kiln::ops::matmul), TFLOP/s and ratios to cuBLAS\n");
  if (op_only) {
    std::printf("  b2b: %d launches back to back between two events (host-side costs hidden)\n", kBatch);
    for (size_t v = 0; v < versus.size(); ++v)
      std::printf("  [%zu]: the defaults with %s\n", v + 1, versus[v].str().c_str());
  }
  std::printf("%-30s %-5s %10s %10s %7s", "shape (MxNxK)", "dtype", "cuBLAS", "default", "ratio");
  if (op_only) {
    std::printf(" %10s %10s %7s", "cuBLAS b2b", "default b2b", "ratio");
    for (size_t v = 0; v < versus.size(); ++v)
      std::printf(" %10s %7s %7s", ("[" + std::to_string(v + 1) + "]").c_str(), "ratio", "b2b");
  }
  else
    std::printf(" %10s %7s  %s", "tuned", "ratio", "tuned tile (pattern search)");
  std::printf("\n");
  for (const std::string &row : op_rows)
    std::printf("%s\n", row.c_str());
  if (!records.empty())
    std::ofstream(records) << out.dump(2) << "\n";
  return 0;
}
