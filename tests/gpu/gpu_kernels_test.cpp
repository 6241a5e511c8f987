// Kernels run on the GPU and on the interpreter with the same random inputs
// (ragged sizes included) must agree on every output element.
#include "GpuTestSupport.h"

#include <kiln/compiler.h>

#include <cstdlib>
#include <functional>
#include <random>

using namespace kiln;
using namespace kiln::testing;

namespace {

void copy_kernel(const Config &cfg, ConstPtr<f32> x, Ptr<f32> y, Int n) {
  const int64_t B = cfg["BLOCK"];
  Tensor o = program_id(0) * B + arange(0, B);
  store(y + o, load(x + o, o < n) * 2.0 + 1.0, o < n);
}

template <DType T> void typed_add(const Config &cfg, ConstPtr<T> x, ConstPtr<T> y, Ptr<T> out, Int n) {
  const int64_t B = cfg["BLOCK"];
  Tensor o = program_id(0) * B + arange(0, B);
  Tensor m = o < n;
  store(out + o, load(x + o, m) + load(y + o, m), m);
}

} // namespace

TEST(GpuKernels, PointwiseAtRaggedSizes) {
  Kernel k = jit(copy_kernel, "copy_kernel");
  for (int64_t n : {1, 17, 1000, 4096, 100003}) {
    Array x = random_array(f32, n, -4, 4, 1), y = output_array(f32, n);
    for (int64_t block : {128, 1024})
      expect_same(k, Grid(cdiv(n, block)), {{"BLOCK", block}}, {&x, &y, n});
  }
}

TEST(GpuKernels, PointwiseInEveryDtype) {
  const int64_t n = 3000;
  auto check = [&](auto kernel_fn, DType t, const char *name) {
    Kernel k = jit(kernel_fn, name);
    Array x = random_array(t, n, -50, 50, 2), y = random_array(t, n, -50, 50, 3), out = output_array(t, n);
    expect_same(k, Grid(cdiv(n, 512)), {{"BLOCK", 512}}, {&x, &y, &out, n}, 1e-2);
  };
  check(typed_add<f32>, f32, "add_f32");
  check(typed_add<f16>, f16, "add_f16");
  check(typed_add<bf16>, bf16, "add_bf16");
  check(typed_add<f64>, f64, "add_f64");
  check(typed_add<i32>, i32, "add_i32");
  check(typed_add<i8>, i8, "add_i8");
  check(typed_add<u16>, u16, "add_u16");
  check(typed_add<i64>, i64, "add_i64");
}

TEST(GpuKernels, MathConversionsAndSelects) {
  Kernel k = jit(
      [](ConstPtr<f32> x, Ptr<f32> out, Ptr<i32> ints, Ptr<f16> halves, Ptr<f8e4m3> e4, Ptr<f8e5m2> e5, Int n) {
        Tensor o = program_id(0) * 256 + arange(0, 256);
        Tensor m = o < n;
        Tensor v = load(x + o, m, 1.0);
        Tensor r = exp(v * 0.5) + log(abs(v) + 1.0) + sqrt(abs(v)) + rsqrt(abs(v) + 1.0) + tanh(v) +
                   sigmoid(v) + erf(v) + sin(v) + cos(v) + exp2(v * 0.25) + log2(abs(v) + 2.0) +
                   floor(v) + ceil(v) + pow(abs(v) + 0.5, 1.5) + fma(v, v, v) + where(v > 0.0, v, -v) +
                   maximum(v, 0.5) + minimum(v, -0.5) + clamp(v, -1.0, 1.0);
        store(out + o, r, m);
        store(ints + o, (v * 100.0).to(i32) + (v * 1e9).to(i32) / 1000, m); // saturating conversion
        store(halves + o, v.to(f16), m);
        store(e4 + o, (v * 200.0).to(f8e4m3), m);
        store(e5 + o, v.to(f8e5m2), m);
      },
      "math_conversions");
  const int64_t n = 2000;
  Array x = random_array(f32, n, -8, 8, 4);
  Array out = output_array(f32, n), ints = output_array(i32, n), halves = output_array(f16, n),
        e4 = output_array(f8e4m3, n), e5 = output_array(f8e5m2, n);
  // Approximate GPU transcendentals: a few ulps, relative to the sum.
  expect_same(k, Grid(cdiv(n, 256)), {}, {&x, &out, &ints, &halves, &e4, &e5, n}, 2e-5);
}

TEST(GpuKernels, ReductionsAlongEachAxis) {
  Kernel k = jit(
      [](const Config &cfg, ConstPtr<f32> x, Ptr<f32> rows, Ptr<f32> cols, Ptr<i32> arg, Ptr<f32> all, Int R, Int C) {
        const int64_t BR = cfg["BR"], BC = cfg["BC"];
        Tensor r = arange(0, BR), c = arange(0, BC);
        Tensor mask = expand_dims(r < R, 1) & expand_dims(c < C, 0);
        Tensor v = load(x + expand_dims(r, 1) * C + expand_dims(c, 0), mask, -INFINITY);
        Tensor vz = where(mask, v, 0.0);
        store(rows + r, sum(vz, 1) + max(v, 1), r < R);
        store(cols + c, sum(vz, 0) + min(where(mask, v, INFINITY), 0), c < C);
        store(arg + c, argmax(v, 0), c < C);
        store(all, sum(vz));
      },
      "reductions");
  for (auto [R, C, BR, BC, warps] : std::vector<std::array<int64_t, 5>>{
           {16, 32, 16, 32, 4}, {5, 100, 8, 128, 4}, {64, 64, 64, 64, 8}, {3, 1000, 4, 1024, 4}, {200, 3, 256, 4, 2}}) {
    Array x = random_array(f32, R * C, -10, 10, 5);
    Array rows = output_array(f32, R), cols = output_array(f32, C), arg = output_array(i32, C), all = output_array(f32, 1);
    expect_same(k, Grid(1), {{"BR", BR}, {"BC", BC}, {"num_warps", warps}}, {&x, &rows, &cols, &arg, &all, R, C}, 1e-4);
  }
}

TEST(GpuKernels, BroadcastsTransposesReshapesJoinSplit) {
  Kernel k = jit(
      [](ConstPtr<f32> x, Ptr<f32> out) {
        Tensor i = expand_dims(arange(0, 32), 1), j = expand_dims(arange(0, 64), 0);
        Tensor v = load(x + i * 64 + j);                          // 32x64
        Tensor t = trans(v);                                      // 64x32
        Tensor r = reshape(t, {128, 16});
        Tensor back = reshape(r, {64, 32});
        auto [a, b] = split(reshape(join(back, back * 2.0), {64, 32, 2}));
        Tensor row = expand_dims(sum(v, 1), 1);                   // 32x1
        Tensor centered = v - row;                                // broadcast
        store(out + i * 64 + j, centered + trans(a + b));
      },
      "views");
  Array x = random_array(f32, 32 * 64, -1, 1, 6), out = output_array(f32, 32 * 64);
  expect_same(k, Grid(1), {}, {&x, &out}, 1e-5);
}

TEST(GpuKernels, LoopsBranchesAndVars) {
  Kernel k = jit(
      [](ConstPtr<f32> x, Ptr<f32> out, Int n) {
        Var acc(zeros({128}, f32));
        Var count(constant(0, i32));
        for_range(0, n, 128, [&](const Tensor &start) {
          Tensor o = start + arange(0, 128);
          Tensor v = load(x + o, o < n, 0.0);
          if_(count.get() < 3, [&] { acc = acc.get() + v; }, [&] { acc = acc.get() - v * 0.5; });
          count += 1;
        });
        Var steps(constant(0, i32));
        while_([&] { return steps.get() * steps.get() < n; }, [&] { steps += 1; });
        store(out + arange(0, 128), acc.get() + steps.get().to(f32));
      },
      "control");
  const int64_t n = 1000;
  Array x = random_array(f32, n, -1, 1, 7), out = output_array(f32, 128);
  expect_same(k, Grid(1), {}, {&x, &out, n}, 1e-5);
}

TEST(GpuKernels, ScansForwardAndReverse) {
  Kernel k = jit(
      [](ConstPtr<i32> x, Ptr<i32> out) {
        Tensor i = expand_dims(arange(0, 8), 1), j = expand_dims(arange(0, 64), 0);
        Tensor v = load(x + i * 64 + j);
        store(out + i * 64 + j, cumsum(v, 1) + cumsum(v, 0, /*reverse=*/true));
        Tensor flat = load(x + arange(0, 512));
        store(out + 512 + arange(0, 512), scan(flat, 0, [](const Tensor &a, const Tensor &b) { return maximum(a, b); }));
      },
      "scans");
  Array x = random_array(i32, 512, -100, 100, 8), out = output_array(i32, 1024);
  expect_same(k, Grid(1), {}, {&x, &out});
}

TEST(GpuKernels, LongScansAcrossWarpsAndRepetitions) {
  // 4096 elements over 4 warps: chunks in registers, lanes, warps through
  // shared memory, and two repetitions; axis 0 of a 64x64 block with 8 warps.
  Kernel k = jit(
      [](ConstPtr<i32> x, ConstPtr<f32> y, Ptr<i32> out, Ptr<f32> fout) {
        Tensor o = arange(0, 4096);
        Tensor v = load(x + o);
        store(out + o, cumsum(v, 0));
        store(out + 4096 + o, cumsum(v, 0, /*reverse=*/true));
        Tensor i = expand_dims(arange(0, 64), 1), j = expand_dims(arange(0, 64), 0);
        Tensor f = load(y + i * 64 + j);
        store(fout + i * 64 + j, cumsum(f, 0) + scan(f, 0, [](const Tensor &a, const Tensor &b) { return maximum(a, b); },
                                                     /*reverse=*/true));
      },
      "long_scans");
  Array x = random_array(i32, 4096, -1000, 1000, 21), y = random_array(f32, 4096, -1, 1, 22);
  Array out = output_array(i32, 8192), fout = output_array(f32, 4096);
  for (int warps : {4, 8})
    expect_same(k, Grid(1), {{"num_warps", warps}}, {&x, &y, &out, &fout}, 1e-5);
}

TEST(GpuKernels, AtomicsAndCompareAndSwap) {
  Kernel k = jit(
      [](Ptr<i32> counters, Ptr<f32> sums, Ptr<f32> best, Ptr<i32> old) {
        Tensor lanes = arange(0, 128);
        atomic_add(counters + lanes % 4, 1);
        atomic_add(sums + lanes % 8, lanes.to(f32) * 0.25);
        atomic_max(best, program_id(0).to(f32) - 3.5);
        atomic_min(best + 1, program_id(0).to(f32) - 3.5);
        store(old + program_id(0), atomic_cas(counters + 4, 0, 7)); // only the first program's CAS sees 0
      },
      "atomics");
  Array counters = random_array(i32, 5, 0, 1, 9), sums = random_array(f32, 8, 0, 0.001, 10);
  counters.role = sums.role = Role::in_out;
  Array best = random_array(f32, 2, -100, -99, 11);
  best.set(1, 100.0);
  best.role = Role::in_out;
  Array old = output_array(i32, 1);
  // One program: atomics of several programs land in an unspecified order.
  expect_same(k, Grid(1), {}, {&counters, &sums, &best, &old}, 1e-5);
}

TEST(GpuKernels, DotsOfEveryOperandType) {
  Kernel k = jit(
      [](const Config &cfg, ConstPtr<f16> a, ConstPtr<f16> b, ConstPtr<f32> fa, ConstPtr<f32> fb, ConstPtr<i8> ia,
         ConstPtr<i8> ib, Ptr<f32> c, Ptr<f32> fc, Ptr<i32> ic) {
        const int64_t M = cfg["M"], N = cfg["N"], K = cfg["K"];
        Tensor am = expand_dims(arange(0, M), 1) * K + expand_dims(arange(0, K), 0);
        Tensor bn = expand_dims(arange(0, K), 1) * N + expand_dims(arange(0, N), 0);
        Tensor cn = expand_dims(arange(0, M), 1) * N + expand_dims(arange(0, N), 0);
        store(c + cn, dot(load(a + am), load(b + bn)));
        store(fc + cn, dot(load(fa + am), load(fb + bn), {}, {Precision::ieee}) +
                           dot(load(fa + am), load(fb + bn)));
        store(ic + cn, dot(load(ia + am), load(ib + bn)));
      },
      "dots");
  for (auto [M, N, K] : std::vector<std::array<int64_t, 3>>{{16, 16, 16}, {32, 64, 16}, {64, 32, 32}}) {
    Array a = random_array(f16, M * K, -1, 1, 12), b = random_array(f16, K * N, -1, 1, 13);
    Array fa = random_array(f32, M * K, -1, 1, 14), fb = random_array(f32, K * N, -1, 1, 15);
    Array ia = random_array(i8, M * K, -100, 100, 16), ib = random_array(i8, K * N, -100, 100, 17);
    Array c = output_array(f32, M * N), fc = output_array(f32, M * N), ic = output_array(i32, M * N);
    expect_same(k, Grid(1), {{"M", M}, {"N", N}, {"K", K}}, {&a, &b, &fa, &fb, &ia, &ib, &c, &fc, &ic}, 1e-4);
  }
}

TEST(GpuKernels, PointerBlocksReadAsBoxesByTheCopyEngine) {
  // A matmul as users write it without K masks (K a multiple of BLOCK_K),
  // the pointers formed from the loop counter, rows and columns masked
  // (not wrapped), B stored [N][K]: on Hopper both operands are boxes the
  // copy engine reads (B's transposed), K reaching as far as the pointers.
  Kernel k = jit(
      [](const Config &cfg, ConstPtr<bf16> a, ConstPtr<bf16> b, Ptr<f32> c, Int M, Int N, Int K) {
        const int64_t BM = cfg["BM"], BN = cfg["BN"], BK = cfg["BK"];
        Tensor rows = program_id(0) * BM + arange(0, BM), cols = program_id(1) * BN + arange(0, BN);
        Tensor offs_k = arange(0, BK);
        Tensor acc = for_range(0, K, BK, carry(zeros({BM, BN}, f32)), [&](const Tensor &k, const Tensor &acc) {
          Tensor av = load(a + expand_dims(rows, 1) * K + expand_dims(k + offs_k, 0), expand_dims(rows < M, 1), 0.0);
          Tensor bv = load(b + expand_dims(k + offs_k, 1) + expand_dims(cols, 0) * K, expand_dims(cols < N, 0), 0.0);
          return dot(av, bv, acc);
        });
        store(c + expand_dims(rows, 1) * N + expand_dims(cols, 0), acc,
              expand_dims(rows < M, 1) & expand_dims(cols < N, 0));
      },
      "even_k_matmul");
  const Config config{{"BM", 128}, {"BN", 128}, {"BK", 64}, {"num_warps", 4}, {"num_stages", 4}};
  const int64_t m = 200, n = 136, kk = 256;
  std::vector<Arg> launch{Arg::device_pointer(1 << 20, m * kk * 2), Arg::device_pointer(1 << 24, n * kk * 2),
                          Arg::device_pointer(1 << 28, m * n * 4), Arg(int32_t(m)), Arg(int32_t(n)),
                          Arg(int32_t(kk))};
  CompiledKernel hopper = k.compile(config, k.specialize(launch), "sm_90a");
  ASSERT_EQ(hopper.tensor_maps.size(), 2u);
  const TensorMapSource unbounded{-1, 2147483647};
  EXPECT_EQ(hopper.tensor_maps[0].sizes, (std::vector<TensorMapSource>{{3, 0}, unbounded}));
  EXPECT_EQ(hopper.tensor_maps[1].sizes, (std::vector<TensorMapSource>{{4, 0}, unbounded}));
  Array a = random_array(DType::bf16, m * kk, -1, 1, 41), b = random_array(DType::bf16, n * kk, -1, 1, 42);
  Array c = output_array(f32, m * n);
  expect_same(k, Grid(cdiv(m, 128), cdiv(n, 128)), config, {&a, &b, &c, m, n, kk}, 1e-3);
}

TEST(GpuKernels, FlashAttentionKeepsEachProductsLayout) {
  // The attention example's kernel (examples/kernels/attention.cpp): row
  // maxima of a wgmma product, expanded back over an mma.sync product, at
  // a ragged sequence length, causal or not. Its layouts once derived the
  // expanded rows from the accumulator's unchanged (bases past the size-1
  // dimension), which only the GPU computed wrongly.
  const RegisteredKernel *attention = find_kernel("attention");
  ASSERT_NE(attention, nullptr);
  const int64_t heads = 2, n = 200, d = 64;
  for (int64_t causal : {0, 1}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    Array q = random_array(f16, heads * n * d, -1, 1, 31), k = random_array(f16, heads * n * d, -1, 1, 32),
          v = random_array(f16, heads * n * d, -1, 1, 33), out = output_array(f16, heads * n * d);
    expect_same(attention->kernel, Grid(cdiv(n, 64), heads),
                {{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"HEAD_DIM", d}, {"CAUSAL", causal}},
                {&q, &k, &v, &out, n, 0.125}, 2e-2);
  }
}

TEST(GpuKernels, MaskedLoadsKeepOther) {
  Kernel k = jit(
      [](ConstPtr<f16> x, Ptr<f16> y, Int n) {
        Tensor o = arange(0, 1024);
        store(y + o, load(x + o, o < n, 7.0) * 2.0);
      },
      "other_values");
  Array x = random_array(f16, 1024, -2, 2, 18), y = output_array(f16, 1024);
  expect_same(k, Grid(1), {}, {&x, &y, int64_t(333)}, 1e-3);
}

TEST(GpuKernels, Float8ConversionsOfEveryCodeOnEveryTarget) {
  // Every fp8 code widened, and f32 values across the fp8 ranges (ties,
  // subnormals, saturation, infinities, NaN) narrowed: with the hardware's
  // cvt (sm_90a) and with the integer arithmetic older targets use (sm_80,
  // run here as PTX the driver compiles).
  Kernel k = jit(
      [](ConstPtr<u8> codes, ConstPtr<f32> x, Ptr<f32> wide4, Ptr<f32> wide5, Ptr<f8e4m3> e4, Ptr<f8e5m2> e5) {
        Tensor c = arange(0, 256);
        store(wide4 + c, bitcast(load(codes + c), f8e4m3).to(f32));
        store(wide5 + c, bitcast(load(codes + c), f8e5m2).to(f32));
        Tensor o = arange(0, 4096);
        Tensor v = load(x + o);
        store(e4 + o, v.to(f8e4m3));
        store(e5 + o, v.to(f8e5m2));
      },
      "float8_codes");
  Array codes = random_array(u8, 256, 0, 1, 25);
  for (int i = 0; i < 256; ++i)
    codes.set(i, i);
  Array x = random_array(f32, 4096, -1, 1, 23);
  std::mt19937 rng(24);
  for (int i = 0; i < 4096; ++i) {
    double magnitude = std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng), i % 40 - 22);
    x.set(i, (i & 1 ? -1 : 1) * magnitude);
  }
  for (int i = 0; i < 16; ++i) // exact ties between e4m3 neighbours (1 + 1/16, ...) and special values
    x.set(i, 1.0 + (2 * i + 1) / 16.0);
  x.set(16, INFINITY);
  x.set(17, -INFINITY);
  x.set(18, NAN);
  x.set(19, 1e30);
  x.set(20, 448.0 + 16.0);
  x.set(21, 57344.0 * 1.1);
  Array wide4 = output_array(f32, 256), wide5 = output_array(f32, 256);
  Array e4 = output_array(f8e4m3, 4096), e5 = output_array(f8e5m2, 4096);
  expect_same(k, Grid(1), {}, {&codes, &x, &wide4, &wide5, &e4, &e5}, 0);
  setenv("KILN_TARGET", "sm_80", 1);
  expect_same(k, Grid(1), {}, {&codes, &x, &wide4, &wide5, &e4, &e5}, 0);
  unsetenv("KILN_TARGET");
}

TEST(GpuRuntime, OwnStreamsAndDeviceCopies) {
  if (compile_only())
    GTEST_SKIP() << "needs a GPU";
  Device gpu = Device::cuda(0);
  EXPECT_EQ(gpu.arch(), target_for(gpu));
  EXPECT_EQ(Device::gpus().at(0), gpu); // (CUDA devices first)
  setenv("KILN_TARGET", "gfx942", 1);
  try {
    target_for(gpu);
    ADD_FAILURE() << "an AMD target on an NVIDIA GPU should be refused";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()), "KILN_TARGET: gfx942 is an AMD GPU's target; " + gpu.name() + " is an NVIDIA GPU");
  }
  unsetenv("KILN_TARGET");
  Stream stream = Stream::create(gpu);
  ASSERT_NE(stream.native(), nullptr);
  const int64_t n = 100003;
  Array host = random_array(f32, n, -3, 3, 26);
  Buffer x = Buffer::allocate(gpu, n * 4), y = Buffer::allocate(gpu, n * 4), z = Buffer::allocate(gpu, n * 4);
  x.copy_from_host(host.bytes.data(), n * 4);
  y.fill_bytes(0xFF);
  z.fill_bytes(0xFF);
  Stream(gpu).synchronize(); // the fills ran on the default stream
  jit(copy_kernel, "copy_on_stream").launch(Grid(cdiv(n, 1024)), {{"BLOCK", 1024}}, stream, x, y, n);
  z.copy_from(y, n * 4, stream);
  stream.synchronize();
  std::vector<float> in(n), out(n);
  x.copy_to_host(in.data(), n * 4);
  z.copy_to_host(out.data(), n * 4);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], in[i] * 2.0f + 1.0f) << "element " << i;
  Stream wrapped = Stream::wrap(gpu, stream.native());
  EXPECT_EQ(wrapped.native(), stream.native());
  EXPECT_THROW(z.copy_from(y, n * 4 + 4, stream), Error);
}

TEST(GpuKernels, TranscendentalsWithinTheirDocumentedError) {
  // f32 math on the GPU uses approximate instructions and polynomials; each
  // stays within the error docs/dsl.md states, measured against the
  // interpreter's double-precision values: relative error |gpu - ref| /
  // max(|ref|, floor), so that a floor of 1 makes it absolute (sin, cos).
  struct Case {
    const char *name;
    std::function<Tensor(const Tensor &)> fn;
    double lo, hi, floor, bound;
  };
  std::vector<Case> cases = {
      {"exp", [](const Tensor &v) { return exp(v); }, -20, 20, 1e-30, 2e-6},
      {"exp2", [](const Tensor &v) { return exp2(v); }, -30, 30, 1e-30, 5e-7},
      {"log", [](const Tensor &v) { return log(v); }, 1e-3, 1e4, 1e-3, 5e-7},
      {"log2", [](const Tensor &v) { return log2(v); }, 1e-3, 1e4, 1e-3, 5e-7},
      {"sqrt", [](const Tensor &v) { return sqrt(v); }, 0, 1e4, 1e-30, 1e-7},
      {"rsqrt", [](const Tensor &v) { return rsqrt(v); }, 1e-3, 1e4, 1e-30, 5e-7},
      {"erf", [](const Tensor &v) { return erf(v); }, -5, 5, 1e-30, 4e-7},
      {"erfc", [](const Tensor &v) { return erfc(v); }, -4, 9, 1e-30, 1.5e-5},
      {"fast_erfc", [](const Tensor &v) { return fast_erfc(v); }, -4, 9, 1e-30, 2e-5},
      {"tanh", [](const Tensor &v) { return tanh(v); }, -10, 10, 1e-30, 2e-6},
      {"sigmoid", [](const Tensor &v) { return sigmoid(v); }, -20, 20, 1e-30, 2e-6},
      {"sin", [](const Tensor &v) { return sin(v); }, -10, 10, 1, 2e-6},
      {"cos", [](const Tensor &v) { return cos(v); }, -10, 10, 1, 2e-6},
  };
  const int64_t n = 1 << 16;
  for (const Case &c : cases) {
    auto fn = c.fn;
    Kernel k = jit(
        [fn](ConstPtr<f32> x, Ptr<f32> out) {
          Tensor o = program_id(0) * 1024 + arange(0, 1024);
          store(out + o, fn(load(x + o)));
        },
        std::string("math_") + c.name);
    Array x = random_array(f32, n, c.lo, c.hi, 27);
    Array out = output_array(f32, n);
    if (compile_only()) {
      expect_same(k, Grid(n / 1024), {}, {&x, &out});
      continue;
    }
    std::vector<Array> gpu = run_on(Device::cuda(0), k, Grid(n / 1024), {}, {&x, &out}, 0xFF);
    std::vector<Array> cpu = run_on(Device::interp(), k, Grid(n / 1024), {}, {&x, &out}, 0xFE);
    double worst = 0, at = 0;
    for (int64_t i = 0; i < n; ++i) {
      double g = gpu[0].at(i), r = cpu[0].at(i);
      double error = std::fabs(g - r) / std::max(std::fabs(r), c.floor);
      if (!(error <= worst)) // NaN counts as the worst
        worst = error, at = x.at(i);
    }
    std::printf("  %-8s on [%g, %g]: max %s error %.3g (at %.9g), bound %.3g\n", c.name, c.lo, c.hi,
                c.floor == 1 ? "absolute" : "relative", worst, at, c.bound);
    EXPECT_LE(worst, c.bound) << c.name << " at " << at;
  }
}

TEST(GpuKernels, ClustersNumberTheirPrograms) {
  // cluster_id() and cluster_rank() from the GPU's cluster registers, as the
  // interpreter computes them (x / size, x % size), for clusters of 2 and 4
  // along x with a y axis; a grid of partial clusters is refused.
  Kernel k = jit(
      [](Ptr<i32> out) {
        Tensor at = (program_id(1) * num_programs(0) + program_id(0)) * 2;
        store(out + at, cluster_id());
        store(out + at + 1, cluster_rank());
      },
      "cluster_numbers");
  for (int64_t size : {2, 4}) {
    Array out = output_array(i32, 16 * 3 * 2);
    expect_same(k, Grid(16, 3), {{"cluster_size", size}}, {&out});
  }
  Array out = output_array(i32, 6 * 2);
  try {
    run_on(compile_only() ? Device::interp() : Device::cuda(0), k, Grid(6), {{"cluster_size", 4}}, {&out}, 0xFF);
    ADD_FAILURE() << "a grid of 6 ran in clusters of 4";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("clusters of 4"), std::string::npos) << e.what();
  }
}
