// The ops library on the GPU against the interpreter, with the same random
// inputs: fused pointwise, every reduction (split ones included) and the
// normalizations in both plans, at odd sizes, strided, in f32/f16/bf16.
// With --compile-only only the interpreter runs, and every kernel it runs
// is compiled for sm_90a and sm_80 through ptxas (pointwise and reduction
// kernels for AMD's gfx942 and gfx90a too).
#include "GpuTestSupport.h"
#include "tests/common/AttentionReference.h"
#include "tests/common/OpsTestSupport.h"

#include <cstring>
#include <unistd.h>

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::HostTensor;
using kiln::testing::compile_only;

namespace {

/// A host tensor and its copy on the GPU; views of the same element layout
/// on both (strides and offsets carry over).
class Pair {
public:
  explicit Pair(HostTensor host) : host_(std::move(host)) {
    if (!compile_only()) {
      gpu_ = Buffer::allocate(Device::cuda(0), host_.bytes().size());
      gpu_.copy_from_host(host_.bytes().data(), host_.bytes().size());
    }
  }
  /// `view` of the host tensor's memory, and the same on the GPU.
  TensorView host(const TensorView &view) const { return view; }
  TensorView gpu(TensorView view) const {
    view.address = view.address - reinterpret_cast<uint64_t>(host_.bytes().data()) + gpu_.address();
    view.device = DeviceKind::cuda;
    return view;
  }
  HostTensor &tensor() { return host_; }
  /// The GPU's contents as a host tensor of the same shape.
  HostTensor fetched() const {
    HostTensor copy = host_;
    gpu_.copy_to_host(copy.bytes().data(), copy.bytes().size());
    return copy;
  }

private:
  HostTensor host_;
  Buffer gpu_;
};

/// Runs `op` on the interpreter (host views) and on the GPU (device
/// views), then compares each output pair.
void expect_same(std::vector<Pair *> outputs, const std::function<void(bool gpu, const Stream &)> &op,
                 double tolerance) {
  op(false, Stream(Device::interp()));
  if (compile_only())
    return;
  Stream stream(Device::cuda(0));
  op(true, stream);
  stream.synchronize();
  for (size_t o = 0; o < outputs.size(); ++o) {
    HostTensor got = outputs[o]->fetched();
    const HostTensor &want = outputs[o]->tensor();
    SCOPED_TRACE("output " + std::to_string(o));
    got.expect_near([&](const std::vector<int64_t> &at) { return want.at(at); }, tolerance);
  }
}

/// As expect_same for an fp8 product into `out`, whose element may be off
/// by 2^-11 of its sum of |terms| (fp8 tensor cores keep about 14 bits of
/// a running sum; a lost or doubled step of products is far more) besides
/// bf16's rounding of both results. The sums of |terms| are the op's on
/// |operands| (the scales are positive), on the interpreter.
void expect_same_fp8_sums(Pair &out, std::vector<Pair *> operands,
                          const std::function<void(bool gpu, const Stream &)> &op) {
  if (compile_only()) {
    op(false, Stream(Device::interp()));
    return;
  }
  std::vector<std::vector<uint8_t>> kept;
  for (Pair *p : operands) {
    kept.push_back(p->tensor().bytes());
    for (int64_t i = 0; i < p->tensor().numel(); ++i)
      p->tensor().set_flat(i, std::fabs(p->tensor().flat(i)));
  }
  op(false, Stream(Device::interp()));
  const HostTensor magnitude = out.tensor();
  for (size_t i = 0; i < operands.size(); ++i)
    std::copy(kept[i].begin(), kept[i].end(), operands[i]->tensor().bytes().begin());
  op(false, Stream(Device::interp()));
  Stream stream(Device::cuda(0));
  op(true, stream);
  stream.synchronize();
  const HostTensor got = out.fetched(), &want = out.tensor();
  int mismatches = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double bound = std::ldexp(std::fabs(want.flat(i)), -7) + std::ldexp(magnitude.flat(i), -11);
    if (!(std::fabs(got.flat(i) - want.flat(i)) <= bound) && mismatches++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << got.flat(i) << ", want " << want.flat(i) << " (sum of |terms| "
                    << magnitude.flat(i) << ")";
  }
  EXPECT_EQ(mismatches, 0) << "of " << want.numel() << " elements";
}

double toleranceFor(DType t) { return t == DType::f32 ? 2e-5 : t == DType::f16 ? 2e-3 : 1.6e-2; }

/// KILN_CACHE_DIR set to a directory of the test's own while it lives, so
/// that tuning tests neither read nor write the user's store.
class OwnTuningStore {
public:
  explicit OwnTuningStore(const std::string &prefix) {
    std::string dir = ::testing::TempDir() + prefix + std::to_string(::getpid());
    setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  }
  ~OwnTuningStore() { unsetenv("KILN_CACHE_DIR"); }
  OwnTuningStore(const OwnTuningStore &) = delete;
  OwnTuningStore &operator=(const OwnTuningStore &) = delete;
};

/// Tunes into the current store with few timed runs a config.
autotune::Report tuneQuickly(const autotune::Task &task, const Stream &stream) {
  autotune::Options options;
  options.reps = 5;
  return autotune::tune(task, stream, options, TuningStore());
}

} // namespace

TEST(GpuOps, FusedPointwiseAtOddShapesAndStrides) {
  kiln::testing::AlsoForAmdTargets amd;
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (auto [M, N] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 3}, {300, 1000}, {65, 4097}}) {
      Pair x(HostTensor::random(t, {M, N}, 1)), w(HostTensor::random(t, {N}, 2)), b(HostTensor::random(t, {N}, 3));
      Pair y(HostTensor::poisoned(t, {M, N})), z(HostTensor::poisoned(DType::f32, {M, N}));
      SCOPED_TRACE(std::string(name(t)) + " " + std::to_string(M) + "x" + std::to_string(N));
      expect_same({&y, &z}, [&](bool gpu, const Stream &s) {
        auto v = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
        Pointwise pw;
        Expr xe = pw.input(v(x)), we = pw.input(v(w)), be = pw.input(v(b));
        pw.output(v(y), gelu(xe * we + be));
        pw.output(v(z), where(xe > 0, silu(xe), exp(xe) - 1));
        pw.run(s);
      }, toleranceFor(t));
    }
  // A transposed input.
  Pair base(HostTensor::random(DType::f32, {129, 70}, 4)), out(HostTensor::poisoned(DType::f32, {70, 129}));
  expect_same({&out}, [&](bool gpu, const Stream &s) {
    TensorView xt = gpu ? base.gpu(base.tensor().view()) : base.tensor().view();
    xt.shape = {70, 129};
    xt.strides = {1, 70};
    Pointwise pw;
    pw.output(gpu ? out.gpu(out.tensor().view()) : out.tensor().view(), tanh(pw.input(xt)) * 3);
    pw.run(s);
  }, 2e-5);
}

TEST(GpuOps, ReductionsAlongRowsColumnsAndSplits) {
  kiln::testing::AlsoForAmdTargets amd;
  for (DType t : {DType::f32, DType::bf16})
    for (auto shape : std::vector<std::vector<int64_t>>{{33, 1000}, {4, 200003}, {5000, 9}})
      for (int dim : {0, 1})
        for (Reduce op : {Reduce::sum, Reduce::max, Reduce::argmax, Reduce::var}) {
          Pair x(HostTensor::random(t, shape, 5));
          std::vector<int64_t> kept = shape;
          kept.erase(kept.begin() + dim);
          Pair y(HostTensor::poisoned(op == Reduce::argmax ? DType::i64 : DType::f32, kept));
          SCOPED_TRACE(std::string(name(op)) + " " + std::string(name(t)) + " dim " + std::to_string(dim) + " of " +
                       std::to_string(shape[0]) + "x" + std::to_string(shape[1]));
          expect_same({&y}, [&](bool gpu, const Stream &s) {
            reduce(op, gpu ? x.gpu(x.tensor().view()) : x.tensor().view(), dim,
                   gpu ? y.gpu(y.tensor().view()) : y.tensor().view(), s);
          }, op == Reduce::argmax ? 0 : 1e-4);
        }
}

TEST(GpuOps, NormalizationsInBothPlans) {
  for (DType t : {DType::f32, DType::bf16})
    for (int64_t N : {7, 1000, 8192, 20000}) {
      Pair x(HostTensor::random(t, {37, N}, 6, -3, 3)), w(HostTensor::random(t, {N}, 7)), b(HostTensor::random(t, {N}, 8));
      Pair sm(HostTensor::poisoned(t, {37, N})), lsm(HostTensor::poisoned(t, {37, N}));
      Pair ln(HostTensor::poisoned(t, {37, N})), mean(HostTensor::poisoned(DType::f32, {37}));
      Pair rstd(HostTensor::poisoned(DType::f32, {37})), rms(HostTensor::poisoned(t, {37, N}));
      SCOPED_TRACE(std::string(name(t)) + " N=" + std::to_string(N));
      expect_same({&sm, &lsm, &ln, &mean, &rstd, &rms}, [&](bool gpu, const Stream &s) {
        auto v = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
        softmax(v(x), v(sm), s);
        log_softmax(v(x), v(lsm), s);
        layer_norm(v(x), v(w), v(b), 1e-5, v(ln), v(mean), v(rstd), s);
        rms_norm(v(x), v(w), 1e-6, v(rms), {}, s);
      }, toleranceFor(t) * 2);
    }
}

TEST(GpuOps, AutotunesASoftmaxAndLaterCallsUseTheWinner) {
  if (compile_only())
    GTEST_SKIP() << "needs a GPU";
  OwnTuningStore own("kiln-tune-");
  Pair x(HostTensor::random(DType::f32, {300, 1000}, 9)), y(HostTensor::poisoned(DType::f32, {300, 1000}));
  Stream stream(Device::cuda(0));
  NormalizationArgs args{x.gpu(x.tensor().view()), y.gpu(y.tensor().view())};
  autotune::Task task = tuning_task(Normalization::softmax, args, stream);
  autotune::Report report = tuneQuickly(task, stream);
  ASSERT_TRUE(report.best.has_value());
  EXPECT_GT(report.timed, 3);
  for (const auto &m : report.configs)
    EXPECT_EQ(m.rejected.rfind("wrong results", 0), std::string::npos) << m.config.str() << ": " << m.rejected;
  // Tuning again measures nothing: every config's time is stored.
  autotune::Report again = tuneQuickly(task, stream);
  EXPECT_EQ(again.timed, 0);
  EXPECT_EQ(again.compiled, 0);
  EXPECT_EQ(again.best->str(), report.best->str());
  // A call without a plan takes the stored winner, and is right.
  expect_same({&y}, [&](bool gpu, const Stream &s) {
    softmax(gpu ? x.gpu(x.tensor().view()) : x.tensor().view(), gpu ? y.gpu(y.tensor().view()) : y.tensor().view(), s);
  }, 2e-5);
}

TEST(GpuOps, MatmulWithEpiloguesBatchesAndTransposes) {
  // Default tiles (tensor cores, pipelined when sizes allow) and a small
  // explicit tile; K not a multiple of BLOCK_K; a transposed B; a batch
  // with a broadcast A; the gelu + bias + residual epilogue; split-K (the
  // default for a skinny product, and 3 chunks with a ragged last one); f32
  // as tf32 and tf32x3 on tensor cores; operands through descriptors (the
  // default on Hopper where they qualify; asked for here so that the
  // interpreter and --compile-only runs take that kernel too); persistent
  // programs.
  struct Case {
    DType dtype;
    std::vector<int64_t> a, b, out;
    bool bTransposed;
    Config config;
    Precision precision = Precision::ieee;
  };
  // The interpreter rounds tf32 operands to nearest; Hopper's wgmma
  // truncates them (2^-10 of a product at most, random in sign over K).
  auto tolerance = [](const Case &c) { return c.precision == Precision::tf32 ? 2e-2 : 2e-4; };
  Config small{{"BLOCK_M", 32}, {"BLOCK_N", 64}, {"BLOCK_K", 32}, {"GROUP_M", 4}, {"num_warps", 4}, {"num_stages", 3}};
  std::vector<Case> cases{{DType::bf16, {256, 192}, {192, 320}, {256, 320}, false, {}},
                          {DType::f16, {100, 72}, {72, 90}, {100, 90}, false, small},
                          {DType::bf16, {128, 80}, {96, 80}, {128, 96}, true, {}},
                          {DType::f16, {1, 64, 96}, {3, 96, 128}, {3, 64, 128}, false, small},
                          {DType::f32, {40, 24}, {24, 56}, {40, 56}, false, {}},
                          {DType::bf16, {16, 2048}, {128, 2048}, {16, 128}, true, {}},
                          {DType::f16, {100, 72}, {72, 90}, {100, 90}, false, Config(small).set("SPLIT_K", 3)},
                          {DType::f32, {256, 192}, {192, 320}, {256, 320}, false, {}, Precision::tf32},
                          {DType::f32, {128, 80}, {96, 80}, {128, 96}, true, {}, Precision::tf32},
                          {DType::f32, {100, 72}, {72, 90}, {100, 90}, false, small, Precision::tf32x3},
                          // A and B through descriptors (the copy engine on Hopper)
                          {DType::bf16, {256, 192}, {192, 320}, {256, 320}, false, Config{{"DESCRIPTORS", 1}}},
                          {DType::bf16, {128, 80}, {96, 80}, {128, 96}, true, Config{{"DESCRIPTORS", 1}}},
                          // ragged M, N and K (rows still whole 16-byte multiples)
                          {DType::f16, {100, 72}, {72, 88}, {100, 88}, false,
                           Config(small).set("DESCRIPTORS", 1).set("SPLIT_K", 3)},
                          {DType::f32, {128, 80}, {96, 80}, {128, 96}, true, Config{{"DESCRIPTORS", 1}},
                           Precision::tf32},
                          // persistent programs (one a multiprocessor; two, on a ragged small tile)
                          {DType::bf16, {256, 192}, {192, 320}, {256, 320}, false, Config{{"PERSISTENT", 1}}},
                          {DType::f16, {100, 72}, {88, 72}, {100, 88}, true, Config(small).set("PERSISTENT", 2)},
                          // more tiles (144) than programs (one a multiprocessor), ragged N and
                          // K, through descriptors: programs carry their K loop across tiles
                          {DType::bf16, {768, 136}, {136, 1480}, {768, 1480}, false,
                           Config{{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"BLOCK_K", 64}, {"GROUP_M", 4}, {"num_warps", 4},
                                  {"num_stages", 3}, {"DESCRIPTORS", 1}, {"PERSISTENT", 1}}},
                          // a producer warp issuing the copies (warp_specialize): one tile a
                          // program, B [N][K], and persistent programs over ragged tiles
                          {DType::bf16, {256, 192}, {192, 320}, {256, 320}, false,
                           Config{{"DESCRIPTORS", 1}, {"warp_specialize", 1}}},
                          {DType::bf16, {128, 80}, {96, 80}, {128, 96}, true, Config{{"DESCRIPTORS", 1}, {"warp_specialize", 1}}},
                          {DType::bf16, {768, 136}, {136, 1480}, {768, 1480}, false,
                           Config{{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"BLOCK_K", 64}, {"GROUP_M", 4}, {"num_warps", 4},
                                  {"num_stages", 3}, {"DESCRIPTORS", 1}, {"PERSISTENT", 1}, {"warp_specialize", 1}}},
                          // two consumer warpgroups (setmaxnreg), 144 tiles on 132 programs
                          {DType::bf16, {1000, 136}, {136, 2296}, {1000, 2296}, false,
                           Config{{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 8},
                                  {"num_stages", 3}, {"DESCRIPTORS", 1}, {"PERSISTENT", 1}, {"warp_specialize", 1}}},
                          // two such programs a multiprocessor, each a consumer warpgroup
                          {DType::bf16, {1000, 136}, {136, 2296}, {1000, 2296}, false,
                           Config{{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 4},
                                  {"num_stages", 2}, {"DESCRIPTORS", 1}, {"PERSISTENT", 2}, {"warp_specialize", 1},
                                  {"min_blocks_per_sm", 2}}},
                          // clusters of two sharing B's copies (multicast): 7 rows of tiles (the
                          // last pair half past M), 72 pairs on fewer clusters, ragged K, both B orders
                          {DType::bf16, {840, 72}, {72, 4600}, {840, 4600}, false,
                           Config{{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 8},
                                  {"num_stages", 3}, {"DESCRIPTORS", 1}, {"PERSISTENT", 1}, {"warp_specialize", 1},
                                  {"cluster_size", 2}}},
                          {DType::bf16, {840, 72}, {4600, 72}, {840, 4600}, true,
                           Config{{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 8},
                                  {"num_stages", 3}, {"DESCRIPTORS", 1}, {"PERSISTENT", 1}, {"warp_specialize", 1},
                                  {"cluster_size", 2}}}};
  for (const Case &c : cases) {
    Pair a(HostTensor::random(c.dtype, c.a, 21)), b(HostTensor::random(c.dtype, c.b, 22));
    const int64_t N = c.out.back();
    Pair bias(HostTensor::random(DType::f32, {N}, 23)), residual(HostTensor::random(DType::bf16, c.out, 24));
    Pair out(HostTensor::poisoned(DType::f32, c.out));
    SCOPED_TRACE(std::string(name(c.dtype)) + " " + name(c.precision) + " out " + std::to_string(c.out[0]) + "x" + std::to_string(c.out[1]));
    expect_same({&out}, [&](bool gpu, const Stream &s) {
      auto v = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
      MatmulArgs args{v(a), v(b), v(out), v(bias), v(residual), 0.75, Activation::gelu, c.precision};
      if (c.bTransposed) { // b holds [N, K]: view it as [K, N]
        args.b.shape = {c.b[1], c.b[0]};
        args.b.strides = {1, c.b[1]};
      }
      matmul(args, s, c.config);
    }, tolerance(c));
  }
}

TEST(GpuOps, MatmulStoresItsOutputThroughTheCopyEngine) {
  // The default on Hopper for a row-major out the copy engine can write
  // (OUT_DESCRIPTOR, asked for here so that the interpreter and
  // --compile-only runs take that kernel too): bf16 and f32 outputs of
  // ragged M and N (the boxes clipped at the edges), with the bias + gelu +
  // residual epilogue; persistent programs over 144 tiles on 132, with and
  // without a producer warpgroup, reuse the staging buffer tile after tile;
  // the 64x64 tile with a producer (128-row products' default).
  struct Case {
    DType out;
    int64_t M, N, K;
    Config config;
  };
  const Config tile{{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 64}, {"GROUP_M", 8},
                    {"num_warps", 8},   {"num_stages", 3}, {"DESCRIPTORS", 1}, {"OUT_DESCRIPTOR", 1}};
  std::vector<Case> cases{{DType::bf16, 200, 328, 192, tile},
                          {DType::f32, 200, 328, 192, tile},
                          {DType::bf16, 2000, 2296, 136, Config(tile).set("PERSISTENT", 1)},
                          {DType::bf16, 2000, 2296, 136, Config(tile).set("PERSISTENT", 1).set("warp_specialize", 1)},
                          // the 64x64 tile of 128-row products: one consumer warpgroup, a producer
                          {DType::bf16, 100, 328, 200,
                           Config{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 4},
                                  {"num_stages", 8}, {"DESCRIPTORS", 1}, {"OUT_DESCRIPTOR", 1},
                                  {"warp_specialize", 1}}}};
  for (const Case &c : cases) {
    Pair a(HostTensor::random(DType::bf16, {c.M, c.K}, 41)), b(HostTensor::random(DType::bf16, {c.K, c.N}, 42));
    Pair bias(HostTensor::random(DType::f32, {c.N}, 43)), residual(HostTensor::random(DType::bf16, {c.M, c.N}, 44));
    Pair out(HostTensor::poisoned(c.out, {c.M, c.N}));
    SCOPED_TRACE(std::string(name(c.out)) + " out " + std::to_string(c.M) + "x" + std::to_string(c.N) + " " +
                 c.config.str());
    expect_same({&out}, [&](bool gpu, const Stream &s) {
      auto v = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
      matmul({v(a), v(b), v(out), v(bias), v(residual), 0.75, Activation::gelu}, s, c.config);
    }, c.out == DType::bf16 ? 1e-2 : 2e-4);
  }
}

TEST(GpuOps, MatmulOfFp8OperandsWithTheirScales) {
  // fp8 operands (b the transpose of an [N][K] tensor: K-major) on wgmma,
  // with row and column scales or the tensors': the default plan (on
  // Hopper, the copy engine and a producer warpgroup), the 128x256 tile's
  // persistent programs over ragged tiles, and K rows the copy engine
  // cannot read (136 bytes apart: cp.async). Against the interpreter's f32
  // sums, within fp8 wgmma's accumulation error (expect_same_fp8_sums).
  struct Case {
    DType ta, tb;
    int64_t M, N, K;
    bool rows, columns;
    Config config;
  };
  const Config persistent{{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 128}, {"GROUP_M", 8}, {"num_warps", 8},
                          {"num_stages", 3}, {"DESCRIPTORS", 1}, {"PERSISTENT", 1}, {"warp_specialize", 1}};
  for (const Case &c : {Case{DType::f8e4m3, DType::f8e4m3, 256, 320, 512, true, true, {}},
                        Case{DType::f8e4m3, DType::f8e5m2, 600, 900, 256, false, false, persistent},
                        Case{DType::f8e5m2, DType::f8e4m3, 600, 900, 256, true, false, persistent},
                        Case{DType::f8e4m3, DType::f8e4m3, 130, 200, 136, false, true, {}}}) {
    Pair a(HostTensor::random(c.ta, {c.M, c.K}, 51)), b(HostTensor::random(c.tb, {c.N, c.K}, 52));
    Pair sa(HostTensor::random(DType::f32, {c.rows ? c.M : 1}, 53, 0.25, 2));
    Pair sb(HostTensor::random(DType::f32, {c.columns ? c.N : 1}, 54, 0.25, 2));
    Pair out(HostTensor::poisoned(DType::bf16, {c.M, c.N}));
    SCOPED_TRACE(std::string(name(c.ta)) + " x " + std::string(name(c.tb)) + " " + std::to_string(c.M) + "x" +
                 std::to_string(c.N) + "x" + std::to_string(c.K) + " " + c.config.str());
    // (Before Hopper fp8 runs on FMAs, where a 128x256 tile's kernel would
    // take ptxas minutes: a compile-only run checks those for sm_90a only.)
    if (compile_only())
      setenv("KILN_CHECK_PTX", c.config.values().empty() ? kiln::testing::kCheckedTargets : "sm_90a", 1);
    expect_same_fp8_sums(out, {&a, &b}, [&](bool gpu, const Stream &s) {
      auto v = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
      MatmulArgs args{v(a), v(b), v(out)};
      args.b.shape = {c.K, c.N}; // (b holds [N, K])
      args.b.strides = {1, c.K};
      args.scale_a = v(sa);
      args.scale_b = v(sb);
      matmul(args, s, c.config);
    });
  }
  if (compile_only())
    setenv("KILN_CHECK_PTX", kiln::testing::kCheckedTargets, 1);
}

TEST(GpuOps, MatmulOfFp8OperandsWithBlockScales) {
  // Block scales (a's [M, ceil(K / 128)], b's [ceil(K / 128), ceil(N /
  // 128)] as the transpose of its [N / 128, K / 128] tensor): the default
  // plan (on Hopper 128x128 tiles, persistent, each K step's wgmma sum
  // scaled into f32 registers), over ragged tiles and partial last blocks,
  // and a K whose rows the copy engine cannot read (cp.async). Against the
  // interpreter's f32 sums.
  struct Case {
    int64_t M, N, K;
  };
  for (const Case &c : {Case{512, 384, 640}, Case{300, 200, 300}, Case{130, 264, 136}}) {
    const int64_t kBlocks = (c.K + 127) / 128, nBlocks = (c.N + 127) / 128;
    Pair a(HostTensor::random(DType::f8e4m3, {c.M, c.K}, 61)), b(HostTensor::random(DType::f8e4m3, {c.N, c.K}, 62));
    Pair sa(HostTensor::random(DType::f32, {c.M, kBlocks}, 63, 0.25, 2));
    Pair sbT(HostTensor::random(DType::f32, {nBlocks, kBlocks}, 64, 0.25, 2));
    Pair out(HostTensor::poisoned(DType::bf16, {c.M, c.N}));
    SCOPED_TRACE(std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K));
    expect_same_fp8_sums(out, {&a, &b}, [&](bool gpu, const Stream &s) {
      auto v = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
      auto transposed = [](TensorView t) {
        std::swap(t.shape[0], t.shape[1]);
        t.strides = {1, t.shape[0]};
        return t;
      };
      MatmulArgs args{v(a), transposed(v(b)), v(out)};
      args.scale_a = v(sa);
      args.scale_b = transposed(v(sbT));
      matmul(args, s);
    });
  }
}

TEST(GpuOps, MatmulOfOperandsTheCopyEngineCannotRead) {
  // An odd K (rows of 2002 bytes): on Hopper the default plan copies both
  // operands with padded rows into the workspace and the copy engine feeds
  // wgmma from the copies; b as stored and K-major. Against the
  // interpreter's f32 sums.
  const int64_t M = 256, N = 320, K = 1001;
  for (bool kMajor : {false, true}) {
    SCOPED_TRACE(kMajor ? "K-major b" : "b [K][N]");
    Pair a(HostTensor::random(DType::bf16, {M, K}, 81));
    Pair b(HostTensor::random(DType::bf16, kMajor ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 82));
    Pair out(HostTensor::poisoned(DType::bf16, {M, N}));
    expect_same({&out}, [&](bool gpu, const Stream &s) {
      auto v = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
      MatmulArgs args{v(a), v(b), v(out)};
      if (kMajor) {
        args.b.shape = {K, N};
        args.b.strides = {1, K};
      }
      matmul(args, s);
    }, 1.6e-2);
  }
}

TEST(GpuOps, GroupedMatmulOverRaggedGroups) {
  // Eight groups of 0 to 511 rows (offsets on the device only): b K-major
  // (the copy engine reads its stacked groups, a producer warpgroup feeds
  // wgmma), as stored with K a multiple of BLOCK_K and not (pointer
  // loads), persistent programs, and fp8 with row and per-group column
  // scales. Against the interpreter's f32 sums.
  const std::vector<int32_t> ends{0, 1, 201, 712, 776, 776, 1076, 1536};
  const int64_t G = 8, M = 1536, N = 1024;
  struct Case {
    DType operands;
    bool kMajor;
    int64_t K;
    Config config;
  };
  for (const Case &c : {Case{DType::bf16, true, 512, {}}, Case{DType::bf16, false, 512, {}},
                        Case{DType::f16, false, 200, {}}, Case{DType::bf16, true, 512, Config{{"PERSISTENT", 1}}},
                        Case{DType::f8e4m3, true, 512, {}}}) {
    SCOPED_TRACE(std::string(name(c.operands)) + (c.kMajor ? " K-major b, K " : " b, K ") + std::to_string(c.K) +
                 " " + c.config.str());
    const bool fp8 = is_float8(c.operands);
    Pair a(HostTensor::random(c.operands, {M, c.K}, 71));
    Pair b(HostTensor::random(c.operands, c.kMajor ? std::vector<int64_t>{G, N, c.K} : std::vector<int64_t>{G, c.K, N}, 72));
    HostTensor ends32 = HostTensor::random(DType::i32, {G}, 73);
    for (int64_t g = 0; g < G; ++g)
      ends32.set_flat(g, ends[g]);
    Pair offsets(ends32);
    Pair sa(HostTensor::random(DType::f32, {M}, 74, 0.25, 2)), sb(HostTensor::random(DType::f32, {G, N}, 75, 0.25, 2));
    Pair out(HostTensor::poisoned(DType::bf16, {M, N}));
    auto run = [&](bool gpu, const Stream &s) {
      auto v = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
      GroupedMatmulArgs args{v(a), v(b), v(offsets), v(out)};
      if (c.kMajor) {
        args.b.shape = {G, c.K, N};
        args.b.strides = {N * c.K, 1, c.K};
      }
      if (fp8) {
        args.scale_a = v(sa);
        args.scale_b = v(sb);
      }
      grouped_matmul(args, s, c.config);
    };
    if (fp8)
      expect_same_fp8_sums(out, {&a, &b}, run);
    else
      expect_same({&out}, run, 1.6e-2);
  }
}

TEST(GpuOps, MatmulTuningChecksEveryConfigAndAWarmStoreDoesNothing) {
  if (compile_only())
    GTEST_SKIP() << "needs a GPU";
  OwnTuningStore own("kiln-tune-matmul-");
  Pair a(HostTensor::random(DType::bf16, {64, 1024}, 31)), b(HostTensor::random(DType::bf16, {1024, 256}, 32));
  Pair out(HostTensor::poisoned(DType::bf16, {64, 256}));
  Stream stream(Device::cuda(0));
  MatmulArgs args{a.gpu(a.tensor().view()), b.gpu(b.tensor().view()), out.gpu(out.tensor().view())};
  autotune::Task task = tuning_task(args, stream);
  // Five configs, two of them split-K, one persistent: each is compared on
  // the GPU with the default tile's output, which `prepare` made while they
  // compiled.
  task.space.constraint("the test's five", [](const Config &c) {
    return c["BLOCK_M"] == 64 && c["BLOCK_K"] == 64 && c["GROUP_M"] == 8 && c["num_warps"] == 4 && c["num_stages"] == 3 &&
           (c["BLOCK_N"] == 64 || c["BLOCK_N"] == 128) && (c["SPLIT_K"] == 1 || c["SPLIT_K"] == 4) &&
           (c["PERSISTENT"] == 0 || c["BLOCK_N"] == 128);
  });
  autotune::Report report = tuneQuickly(task, stream);
  ASSERT_TRUE(report.best.has_value());
  EXPECT_EQ(report.timed, 5);
  for (const auto &m : report.configs)
    if (m.rejected.rfind("pruned", 0) != 0) {
      EXPECT_TRUE(m.rejected.empty()) << m.config.str() << ": " << m.rejected;
    }
  autotune::Report again = tuneQuickly(task, stream);
  EXPECT_EQ(again.timed, 0);
  EXPECT_EQ(again.compiled, 0);
  // A call without a config takes the winner, and is right.
  expect_same({&out}, [&](bool gpu, const Stream &s) {
    auto v = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
    matmul({v(a), v(b), v(out)}, s);
  }, 1e-2);
}

TEST(GpuOps, AttentionEveryMaskLayoutAndHeadDimension) {
  // The default tile (the op's schedule), grouped-query heads, ragged
  // sequences, the log-sum-exp: against the interpreter and against double
  // precision.
  struct Case {
    int64_t D;
    AttentionMask mask;
    AttentionLayout layout;
    DType dtype;
    int64_t seqQ, seqK;
  };
  for (const Case &c : {Case{64, AttentionMask::none, AttentionLayout::bshd, DType::bf16, 200, 300},
                        Case{128, AttentionMask::causal_bottom_right, AttentionLayout::bhsd, DType::bf16, 300, 200},
                        Case{128, AttentionMask::causal_top_left, AttentionLayout::bshd, DType::f16, 257, 257},
                        Case{40, AttentionMask::causal_bottom_right, AttentionLayout::bshd, DType::bf16, 70, 130},
                        // Keys the blocks divide (no masked load: the
                        // producer warpgroup's schedule), and D 256.
                        Case{128, AttentionMask::causal_top_left, AttentionLayout::bhsd, DType::bf16, 300, 256},
                        Case{128, AttentionMask::causal_bottom_right, AttentionLayout::bshd, DType::bf16, 200, 256},
                        Case{64, AttentionMask::none, AttentionLayout::bshd, DType::f16, 130, 128},
                        Case{256, AttentionMask::none, AttentionLayout::bshd, DType::f16, 129, 128},
                        Case{256, AttentionMask::causal_bottom_right, AttentionLayout::bhsd, DType::bf16, 100, 150}}) {
    kiln::testing::DenseAttention p;
    p.layout = c.layout, p.mask = c.mask, p.batch = 2, p.seqQ = c.seqQ, p.seqK = c.seqK, p.headsQ = 4, p.headsKV = 2;
    p.D = c.D;
    Pair q(HostTensor::random(c.dtype, p.shape(c.seqQ, 4), 41)), k(HostTensor::random(c.dtype, p.shape(c.seqK, 2), 42));
    Pair v(HostTensor::random(c.dtype, p.shape(c.seqK, 2), 43)), out(HostTensor::poisoned(c.dtype, p.shape(c.seqQ, 4)));
    Pair lse(HostTensor::poisoned(DType::f32, {2, 4, c.seqQ}));
    SCOPED_TRACE("D " + std::to_string(c.D) + " " + name(c.mask) + " " + std::to_string(c.seqQ) + "x" +
                 std::to_string(c.seqK));
    expect_same({&out, &lse}, [&](bool gpu, const Stream &s) {
      auto view = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
      attention({view(q), view(k), view(v), view(out), view(lse), c.layout, c.mask}, s);
    }, toleranceFor(c.dtype));
    if (compile_only())
      continue;
    // The GPU's out and lse against double precision too.
    kiln::testing::AttentionReference reference(p, q.tensor(), k.tensor(), v.tensor());
    out.fetched().expect_near([&](const std::vector<int64_t> &x) { return reference.out(x); },
                              c.dtype == DType::bf16 ? 2e-2 : 4e-3);
    lse.fetched().expect_near([&](const std::vector<int64_t> &x) { return reference.lse(x); }, 1e-4);
  }
}

TEST(GpuOps, AttentionProgramsWalkingTheTiles) {
  // Persistent programs (config `persistent`): the compiler's producer
  // walks the tiles with the consumers, its ring continued from one tile's
  // loops of keys to the next's. Small calls against the interpreter (a
  // program a tile on the GPU, one program walking them all there); then
  // calls of more tiles than the GPU has multiprocessors, each program
  // walking several, against the same tile launched a program a tile.
  struct Case {
    int64_t D;
    AttentionMask mask;
    AttentionLayout layout;
    DType dtype;
    int64_t batch, heads, seqQ, seqK;
  };
  auto run = [](const Case &c, Pair &q, Pair &k, Pair &v, Pair &out, Pair &lse, bool gpu, const Stream &s,
                int64_t persistent) {
    auto view = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
    attention({view(q), view(k), view(v), view(out), view(lse), c.layout, c.mask}, s, {{"persistent", persistent}});
  };
  auto make = [](const Case &c, kiln::testing::DenseAttention &p) {
    p.layout = c.layout, p.mask = c.mask, p.batch = c.batch, p.seqQ = c.seqQ, p.seqK = c.seqK, p.headsQ = c.heads;
    p.headsKV = c.heads / 2, p.D = c.D;
  };
  const AttentionLayout bshd = AttentionLayout::bshd, bhsd = AttentionLayout::bhsd;
  const AttentionMask none = AttentionMask::none, topLeft = AttentionMask::causal_top_left;
  const AttentionMask bottomRight = AttentionMask::causal_bottom_right;
  for (const Case &c : {Case{64, none, bshd, DType::bf16, 2, 4, 200, 300},
                        Case{128, none, bhsd, DType::bf16, 2, 4, 300, 256},
                        Case{128, topLeft, bshd, DType::f16, 2, 4, 257, 256},
                        Case{40, bottomRight, bshd, DType::bf16, 2, 4, 70, 130}}) {
    kiln::testing::DenseAttention p;
    make(c, p);
    Pair q(HostTensor::random(c.dtype, p.shape(c.seqQ, c.heads), 51));
    Pair k(HostTensor::random(c.dtype, p.shape(c.seqK, c.heads / 2), 52));
    Pair v(HostTensor::random(c.dtype, p.shape(c.seqK, c.heads / 2), 53));
    Pair out(HostTensor::poisoned(c.dtype, p.shape(c.seqQ, c.heads)));
    Pair lse(HostTensor::poisoned(DType::f32, {2, 4, c.seqQ}));
    SCOPED_TRACE("D " + std::to_string(c.D) + " " + name(c.mask) + " " + std::to_string(c.seqQ) + "x" +
                 std::to_string(c.seqK));
    expect_same({&out, &lse}, [&](bool gpu, const Stream &s) { run(c, q, k, v, out, lse, gpu, s, 1); },
                toleranceFor(c.dtype));
  }
  if (compile_only())
    return;
  for (const Case &c : {Case{128, none, bhsd, DType::bf16, 4, 16, 1024, 1024},
                        Case{64, bottomRight, bshd, DType::bf16, 3, 8, 1500, 2000},
                        Case{128, topLeft, bhsd, DType::f16, 2, 16, 2048, 2048}}) {
    kiln::testing::DenseAttention p;
    make(c, p);
    SCOPED_TRACE("D " + std::to_string(c.D) + " " + name(c.mask) + ", " + std::to_string(c.batch * c.heads) +
                 " heads of " + std::to_string(c.seqQ));
    Pair q(HostTensor::random(c.dtype, p.shape(c.seqQ, c.heads), 61));
    Pair k(HostTensor::random(c.dtype, p.shape(c.seqK, c.heads / 2), 62));
    Pair v(HostTensor::random(c.dtype, p.shape(c.seqK, c.heads / 2), 63));
    Pair walked(HostTensor::poisoned(c.dtype, p.shape(c.seqQ, c.heads)));
    Pair launched(HostTensor::poisoned(c.dtype, p.shape(c.seqQ, c.heads)));
    Pair walkedLse(HostTensor::poisoned(DType::f32, {c.batch, c.heads, c.seqQ}));
    Pair launchedLse(HostTensor::poisoned(DType::f32, {c.batch, c.heads, c.seqQ}));
    Stream stream(Device::cuda(0));
    run(c, q, k, v, walked, walkedLse, true, stream, 1);
    run(c, q, k, v, launched, launchedLse, true, stream, 0);
    stream.synchronize();
    const HostTensor want = launched.fetched(), wantLse = launchedLse.fetched();
    walked.fetched().expect_near([&](const std::vector<int64_t> &at) { return want.at(at); }, toleranceFor(c.dtype));
    walkedLse.fetched().expect_near([&](const std::vector<int64_t> &at) { return wantLse.at(at); }, 1e-5);
  }
}

TEST(GpuOps, AttentionOnAPagedCache) {
  // Caches of 1000, 1 and 300 keys in pages of 64 scattered in reverse,
  // grouped-query heads: one query a sequence (decoding: split-KV on the
  // GPU, whose many multiprocessors ask for it; one run on the interpreter)
  // and five (chunked prefill, causal from the cache's end), split in 3.
  const std::vector<int32_t> lengths{1000, 1, 300};
  const int64_t B = 3, HQ = 8, HKV = 2, D = 128, P = 64, maxPages = 16, pages = 24;
  std::vector<int32_t> table(B * maxPages, -1);
  int32_t next = pages;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < cdiv(lengths[b], P); ++j)
      table[b * maxPages + j] = --next;
  auto ints = [](const std::vector<int32_t> &v, std::vector<int64_t> shape) {
    HostTensor t = HostTensor::poisoned(DType::i32, shape);
    std::memcpy(t.bytes().data(), v.data(), v.size() * 4);
    return t;
  };
  Pair k(HostTensor::random(DType::bf16, {pages, P, HKV, D}, 71)), v(HostTensor::random(DType::bf16, {pages, P, HKV, D}, 72));
  Pair blockTable(ints(table, {B, maxPages})), seqlens(ints(lengths, {B}));
  for (auto [seqQ, splits] : {std::pair<int64_t, int>{1, 0}, {5, 3}}) {
    SCOPED_TRACE(std::to_string(seqQ) + " queries");
    Pair q(HostTensor::random(DType::bf16, {B, seqQ, HQ, D}, 73)), out(HostTensor::poisoned(DType::bf16, {B, seqQ, HQ, D}));
    Pair lse(HostTensor::poisoned(DType::f32, {B, HQ, seqQ}));
    expect_same({&out, &lse}, [&](bool gpu, const Stream &s) {
      auto view = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
      AttentionArgs args{view(q), view(k), view(v), view(out), view(lse)};
      args.mask = seqQ > 1 ? AttentionMask::causal_bottom_right : AttentionMask::none;
      args.block_table = view(blockTable);
      args.cache_seqlens = view(seqlens);
      args.num_splits = splits;
      attention(args, s);
    }, toleranceFor(DType::bf16));
  }
}

TEST(GpuOps, AttentionBackward) {
  // The backward pass after the forward, each on its own side: dense
  // (causal with grouped heads at D 64, dq by atomic adds; no mask at D
  // 128 in BHSD, deterministic) and a packed batch (causal bottom-right,
  // sequences of 1, 150, 0 and 97 queries). Against the interpreter's.
  struct Case {
    int64_t D;
    AttentionMask mask;
    AttentionLayout layout;
    bool deterministic, packed;
  };
  const std::vector<int32_t> cuQ{0, 1, 151, 151, 248}, cuK{0, 40, 190, 195, 292};
  for (const Case &c : {Case{64, AttentionMask::causal_top_left, AttentionLayout::bshd, false, false},
                        Case{128, AttentionMask::none, AttentionLayout::bhsd, true, false},
                        Case{64, AttentionMask::causal_bottom_right, AttentionLayout::bshd, false, true}}) {
    SCOPED_TRACE("D " + std::to_string(c.D) + " " + name(c.mask) + (c.deterministic ? ", deterministic" : ", atomic") +
                 (c.packed ? ", packed" : ""));
    const int64_t B = 2, N = 200, HQ = 4, HKV = 2;
    auto shape = [&](int64_t heads, int64_t tokens) {
      return c.packed ? std::vector<int64_t>{tokens, heads, c.D}
             : c.layout == AttentionLayout::bshd ? std::vector<int64_t>{B, N, heads, c.D}
                                                 : std::vector<int64_t>{B, heads, N, c.D};
    };
    auto ints = [](const std::vector<int32_t> &v) {
      HostTensor t = HostTensor::poisoned(DType::i32, {static_cast<int64_t>(v.size())});
      std::memcpy(t.bytes().data(), v.data(), v.size() * 4);
      return t;
    };
    Pair q(HostTensor::random(DType::bf16, shape(HQ, cuQ.back()), 91, -1, 1));
    Pair k(HostTensor::random(DType::bf16, shape(HKV, cuK.back()), 92, -1, 1));
    Pair v(HostTensor::random(DType::bf16, shape(HKV, cuK.back()), 93, -1, 1));
    Pair dout(HostTensor::random(DType::bf16, shape(HQ, cuQ.back()), 94, -1, 1));
    Pair out(HostTensor::poisoned(DType::bf16, shape(HQ, cuQ.back())));
    Pair lse(HostTensor::poisoned(DType::f32, c.packed ? std::vector<int64_t>{HQ, cuQ.back()} : std::vector<int64_t>{B, HQ, N}));
    Pair dq(HostTensor::poisoned(DType::bf16, shape(HQ, cuQ.back()))), dk(HostTensor::poisoned(DType::bf16, shape(HKV, cuK.back())));
    Pair dv(HostTensor::poisoned(DType::bf16, shape(HKV, cuK.back()))), cq(ints(cuQ)), ck(ints(cuK));
    expect_same({&dq, &dk, &dv}, [&](bool gpu, const Stream &s) {
      auto view = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
      AttentionBackwardArgs b;
      b.forward = AttentionArgs{view(q), view(k), view(v), view(out), view(lse)};
      b.forward.mask = c.mask, b.forward.layout = c.layout;
      if (c.packed)
        b.forward.cu_seqlens_q = view(cq), b.forward.cu_seqlens_k = view(ck);
      attention(b.forward, s);
      b.dout = view(dout), b.dq = view(dq), b.dk = view(dk), b.dv = view(dv), b.deterministic = c.deterministic;
      attention_backward(b, s);
    }, 3e-2);
  }
}

TEST(GpuOps, AttentionWithModifiers) {
  // ALiBi (a captured slope a head) and a document mask (captured ids,
  // documents of 40, 1, 100 and 59 tokens), causal, D 128: the forward and
  // backward passes against the interpreter's.
  const int64_t B = 1, N = 200, H = 4, D = 128;
  std::vector<int32_t> documents;
  for (auto [id, length] : {std::pair{0, 40}, {1, 1}, {2, 100}, {3, 59}})
    documents.insert(documents.end(), length, id);
  HostTensor idsHost = HostTensor::poisoned(DType::i32, {N}), slopesHost = HostTensor::poisoned(DType::f32, {H});
  std::memcpy(idsHost.bytes().data(), documents.data(), N * 4);
  for (int64_t h = 0; h < H; ++h)
    slopesHost.set_flat(h, std::ldexp(1.0, -static_cast<int>(h) - 1));
  Pair ids(idsHost), slopes(slopesHost);
  Pair q(HostTensor::random(DType::bf16, {B, N, H, D}, 101, -1, 1)), k(HostTensor::random(DType::bf16, {B, N, H, D}, 102, -1, 1));
  Pair v(HostTensor::random(DType::bf16, {B, N, H, D}, 103, -1, 1)), dout(HostTensor::random(DType::bf16, {B, N, H, D}, 104, -1, 1));
  Pair out(HostTensor::poisoned(DType::bf16, {B, N, H, D})), lse(HostTensor::poisoned(DType::f32, {B, H, N}));
  Pair dq(HostTensor::poisoned(DType::bf16, {B, N, H, D})), dk(HostTensor::poisoned(DType::bf16, {B, N, H, D}));
  Pair dv(HostTensor::poisoned(DType::bf16, {B, N, H, D}));
  expect_same({&out, &lse, &dq, &dk, &dv}, [&](bool gpu, const Stream &s) {
    auto view = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
    auto modifiers = std::make_shared<AttentionModifiers>();
    modifiers->name = "alibi-document";
    modifiers->tensors = {view(slopes), view(ids)};
    modifiers->score_mod = [](const Tensor &score, const ModifierIndices &at) {
      return score + load(at.captured[0] + at.head) * (at.kv_idx - at.q_idx).to(DType::f32);
    };
    modifiers->score_mod_grad = [](const Tensor &score, const ModifierIndices &) { return score * 0.0 + 1.0; };
    modifiers->mask_mod = [](const ModifierIndices &at) {
      return load(at.captured[1] + at.q_idx) == load(at.captured[1] + at.kv_idx);
    };
    AttentionBackwardArgs b;
    b.forward = AttentionArgs{view(q), view(k), view(v), view(out), view(lse)};
    b.forward.mask = AttentionMask::causal_top_left, b.forward.modifiers = modifiers;
    attention(b.forward, s);
    b.dout = view(dout), b.dq = view(dq), b.dk = view(dk), b.dv = view(dv);
    attention_backward(b, s);
  }, 3e-2);
}

TEST(GpuOps, AttentionOnAPackedBatch) {
  // Sequences of 1, 200, 0 and 333 queries over 70, 200, 5 and 129 keys,
  // causal bottom-right in each, grouped-query heads.
  const std::vector<int32_t> lengthsQ{1, 200, 0, 333}, lengthsK{70, 200, 5, 129};
  std::vector<int32_t> cuQ{0}, cuK{0};
  for (size_t b = 0; b < lengthsQ.size(); ++b) {
    cuQ.push_back(cuQ.back() + lengthsQ[b]);
    cuK.push_back(cuK.back() + lengthsK[b]);
  }
  const int64_t HQ = 4, HKV = 1, D = 128;
  auto ints = [](const std::vector<int32_t> &v) {
    HostTensor t = HostTensor::poisoned(DType::i32, {static_cast<int64_t>(v.size())});
    std::memcpy(t.bytes().data(), v.data(), v.size() * 4);
    return t;
  };
  Pair q(HostTensor::random(DType::bf16, {cuQ.back(), HQ, D}, 61)), k(HostTensor::random(DType::bf16, {cuK.back(), HKV, D}, 62));
  Pair v(HostTensor::random(DType::bf16, {cuK.back(), HKV, D}, 63)), cq(ints(cuQ)), ck(ints(cuK));
  // Launched a program a tile, then walked by persistent programs (on
  // Hopper beside a producer that reads the walk's tile table too).
  for (int64_t persistent : {0, 1}) {
    SCOPED_TRACE("persistent " + std::to_string(persistent));
    Pair out(HostTensor::poisoned(DType::bf16, {cuQ.back(), HQ, D})), lse(HostTensor::poisoned(DType::f32, {HQ, cuQ.back()}));
    expect_same({&out, &lse}, [&](bool gpu, const Stream &s) {
      auto view = [&](Pair &p) { return gpu ? p.gpu(p.tensor().view()) : p.tensor().view(); };
      AttentionArgs args{view(q), view(k), view(v), view(out), view(lse)};
      args.mask = AttentionMask::causal_bottom_right;
      args.cu_seqlens_q = view(cq);
      args.cu_seqlens_k = view(ck);
      attention(args, s, {{"persistent", persistent}});
    }, toleranceFor(DType::bf16));
  }
}
