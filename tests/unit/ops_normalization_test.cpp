// Softmax, log-softmax, layer norm and RMS norm on the interpreter: short
// rows (several per program), rows held in one pass, long rows walked twice,
// strided and 3-D inputs, f32/f16/bf16, optional weight/bias/mean/rstd, and
// argument errors; against double-precision references.
#include "TraceTestSupport.h"
#include "tests/common/OpsTestSupport.h"
#include "ops/lib/NormalizationPlan.h"

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::HostTensor;
using kiln::testing::occurrences;

namespace {

Stream cpu() { return Stream(Device::interp()); }

/// Row `row` (coordinates of the leading dimensions) of x, as doubles.
std::vector<double> rowOf(const HostTensor &x, std::vector<int64_t> row) {
  std::vector<double> v;
  row.push_back(0);
  for (int64_t j = 0; j < x.shape().back(); ++j) {
    row.back() = j;
    v.push_back(x.at(row));
  }
  return v;
}

struct Stats {
  double max, logsum, mean, var, meanSquare;
};
Stats stats(const std::vector<double> &v) {
  Stats s{-INFINITY, 0, 0, 0, 0};
  for (double e : v)
    s.max = std::max(s.max, e);
  double total = 0;
  for (double e : v) {
    total += std::exp(e - s.max);
    s.mean += e / v.size();
    s.meanSquare += e * e / v.size();
  }
  s.logsum = std::log(total);
  for (double e : v)
    s.var += (e - s.mean) * (e - s.mean) / v.size();
  return s;
}

std::vector<int64_t> leadingOf(const std::vector<int64_t> &at) { return {at.begin(), at.end() - 1}; }

/// The overrides that force the two-walk plan with short chunks, so the
/// interpreter tests both plans at small sizes.
Config twoWalks() { return {{"ONE_PASS", 0}, {"BLOCK_N", 128}, {"num_warps", 4}}; }

Config with(Config c, const std::string &key, int64_t value) {
  c.set(key, value);
  return c;
}

} // namespace

TEST(OpsNormalization, SoftmaxAndLogSoftmaxInBothPlans) {
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (int64_t N : {1, 7, 64, 1000})
      for (const auto &[label, plan] : std::vector<std::pair<std::string, Config>>{
               {"one pass", {}}, {"two walks", twoWalks()}, {"two walks in place", with(twoWalks(), "AHEAD", 0)}}) {
        HostTensor x = HostTensor::random(t, {5, N}, 40, -4, 4);
        HostTensor y = HostTensor::poisoned(t, {5, N}), ly = HostTensor::poisoned(t, {5, N});
        softmax(x.view(), y.view(), cpu(), plan);
        log_softmax(x.view(), ly.view(), cpu(), plan);
        SCOPED_TRACE(std::string(name(t)) + " N=" + std::to_string(N) + " " + label);
        double tolerance = t == DType::f32 ? 2e-6 : t == DType::f16 ? 2e-3 : 1.6e-2;
        y.expect_near([&](const std::vector<int64_t> &at) {
          Stats s = stats(rowOf(x, leadingOf(at)));
          return std::exp(x.at(at) - s.max - s.logsum);
        }, tolerance);
        ly.expect_near([&](const std::vector<int64_t> &at) {
          Stats s = stats(rowOf(x, leadingOf(at)));
          return x.at(at) - s.max - s.logsum;
        }, tolerance * 4);
      }
}

TEST(OpsNormalization, LayerNormWithWeightBiasMeanAndRstd) {
  const std::vector<std::pair<std::string, Config>> plans{
      {"one pass, two reductions", {{"SHIFTED", 0}}},
      {"one pass, shifted sums", {{"SHIFTED", 1}}},
      {"two walks, Welford", with(twoWalks(), "SHIFTED", 0)},
      {"two walks, shifted sums", with(twoWalks(), "SHIFTED", 1)},
      {"two walks in place, Welford", with(with(twoWalks(), "SHIFTED", 0), "AHEAD", 0)},
      {"two walks in place, shifted sums", with(with(twoWalks(), "SHIFTED", 1), "AHEAD", 0)}};
  for (DType t : {DType::f32, DType::bf16})
    for (int64_t N : {3, 300, 700})
      for (const auto &[label, plan] : plans) {
        HostTensor x = HostTensor::random(t, {2, 3, N}, 41, -3, 5), w = HostTensor::random(t, {N}, 42),
                   b = HostTensor::random(t, {N}, 43);
        HostTensor y = HostTensor::poisoned(t, {2, 3, N}), mean = HostTensor::poisoned(DType::f32, {2, 3}),
                   rstd = HostTensor::poisoned(DType::f32, {2, 3});
        const double eps = 1e-5;
        layer_norm(x.view(), w.view(), b.view(), eps, y.view(), mean.view(), rstd.view(), cpu(), plan);
        SCOPED_TRACE(std::string(name(t)) + " N=" + std::to_string(N) + " " + label);
        y.expect_near([&](const std::vector<int64_t> &at) {
          Stats s = stats(rowOf(x, leadingOf(at)));
          return (x.at(at) - s.mean) / std::sqrt(s.var + eps) * w.at({at.back()}) + b.at({at.back()});
        }, t == DType::f32 ? 1e-5 : 3e-2);
        mean.expect_near([&](const std::vector<int64_t> &at) { return stats(rowOf(x, at)).mean; }, 1e-5);
        rstd.expect_near([&](const std::vector<int64_t> &at) { return 1 / std::sqrt(stats(rowOf(x, at)).var + eps); },
                         1e-5);
      }
}

TEST(OpsNormalization, RmsNormAndOptionalOperands) {
  for (const Config &plan : {Config{}, twoWalks(), with(twoWalks(), "AHEAD", 0)}) {
    HostTensor x = HostTensor::random(DType::f16, {9, 520}, 44), w = HostTensor::random(DType::f32, {520}, 45);
    HostTensor y = HostTensor::poisoned(DType::f16, {9, 520}), rstd = HostTensor::poisoned(DType::f32, {9});
    rms_norm(x.view(), w.view(), 1e-6, y.view(), rstd.view(), cpu(), plan);
    y.expect_near([&](const std::vector<int64_t> &at) {
      Stats s = stats(rowOf(x, leadingOf(at)));
      return x.at(at) / std::sqrt(s.meanSquare + 1e-6) * w.at({at.back()});
    }, 3e-3);
    rstd.expect_near([&](const std::vector<int64_t> &at) { return 1 / std::sqrt(stats(rowOf(x, at)).meanSquare + 1e-6); },
                     1e-5);
    // Neither weight, bias nor statistics.
    HostTensor y2 = HostTensor::poisoned(DType::f16, {9, 520});
    layer_norm(x.view(), {}, {}, 1e-5, y2.view(), {}, {}, cpu(), plan);
    y2.expect_near([&](const std::vector<int64_t> &at) {
      Stats s = stats(rowOf(x, leadingOf(at)));
      return (x.at(at) - s.mean) / std::sqrt(s.var + 1e-5);
    }, 3e-3);
  }
}

TEST(OpsNormalization, RepeatedCallsReusePlansWithTheirOwnTensors) {
  // Calls like a recent one reuse its plan, rebound to their own tensors
  // and eps: each output is its own row's layer norm; a call without the
  // statistics, or as RMS norm, plans afresh.
  const int64_t R = 5, N = 300;
  const double eps[] = {1e-5, 0.5, 3.0};
  std::vector<HostTensor> xs, ws, ys, means;
  for (unsigned i = 0; i < 3; ++i) {
    xs.push_back(HostTensor::random(DType::f32, {R, N}, 90 + i, -3, 5));
    ws.push_back(HostTensor::random(DType::f32, {N}, 95 + i));
    ys.push_back(HostTensor::poisoned(DType::f32, {R, N}));
    means.push_back(HostTensor::poisoned(DType::f32, {R}));
  }
  for (int i = 0; i < 3; ++i)
    layer_norm(xs[i].view(), ws[i].view(), {}, eps[i], ys[i].view(), means[i].view(), {}, cpu());
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    ys[i].expect_near([&](const std::vector<int64_t> &at) {
      Stats s = stats(rowOf(xs[i], leadingOf(at)));
      return (xs[i].at(at) - s.mean) / std::sqrt(s.var + eps[i]) * ws[i].at({at.back()});
    }, 1e-5);
    means[i].expect_near([&](const std::vector<int64_t> &at) { return stats(rowOf(xs[i], at)).mean; }, 1e-5);
  }
  HostTensor y = HostTensor::poisoned(DType::f32, {R, N});
  rms_norm(xs[1].view(), ws[1].view(), eps[1], y.view(), {}, cpu());
  y.expect_near([&](const std::vector<int64_t> &at) {
    Stats s = stats(rowOf(xs[1], leadingOf(at)));
    return xs[1].at(at) / std::sqrt(s.meanSquare + eps[1]) * ws[1].at({at.back()});
  }, 1e-5);
}

TEST(OpsNormalization, OnePassKernelsAskL2ToKeepX) {
  // The one-pass kernels read x once, with evict_last (measured faster on
  // the H100): every global load, x's and the weight's, carries the hint.
  HostTensor x = HostTensor::random(DType::f32, {64, 8192}, 46), w = HostTensor::random(DType::f32, {8192}, 47);
  HostTensor y = HostTensor::poisoned(DType::f32, {64, 8192});
  for (Normalization op : {Normalization::rms_norm, Normalization::layer_norm, Normalization::softmax}) {
    autotune::Task task = tuning_task(op, NormalizationArgs{x.view(), y.view(), w.view(), {}, {}, {}, 1e-5}, cpu(), "sm_90a");
    std::string ptx = task.compile(Config{{"ONE_PASS", 1}, {"BLOCK_N", 8192}, {"num_warps", 8}}).ptx;
    EXPECT_GT(occurrences(ptx, "ld.global"), 0u);
    EXPECT_EQ(occurrences(ptx, "ld.global.L1::evict_last"), occurrences(ptx, "ld.global")) << ptx;
  }
}

TEST(OpsNormalization, OnePassProgramsHoldMoreOfARowWhereMemoryOutrunsTheMultiprocessors) {
  // Machine balances (bytes a multiprocessor-cycle) of the H100 SXM and
  // the H200: 16 values a thread on the first, 32 on the second, unless
  // that leaves fewer than 4 warps; the interpreter (0) keeps 16.
  EXPECT_EQ(one_pass_values_per_thread(8192, 12.8), 16);
  EXPECT_EQ(one_pass_values_per_thread(8192, 18.4), 32);
  EXPECT_EQ(one_pass_values_per_thread(4096, 18.4), 32);
  EXPECT_EQ(one_pass_values_per_thread(2048, 18.4), 16);
  EXPECT_EQ(one_pass_values_per_thread(32768, 0), 16);
}

TEST(OpsNormalization, DefaultPlansForAmdTargetsCountTheirWavefronts) {
  // A plan made for gfx942 or gfx90a counts threads by 64-lane wavefronts:
  // at most 16 a program (1024 work-items), a one-pass program's values a
  // thread as on NVIDIA GPUs; two walks a whole 16-wavefront program. Each
  // default compiles to a code object with no scratch and no spills, for
  // rows of 1000 to 65536 (nothing of it has run on an AMD GPU).
  if (!has_amd_back_end())
    GTEST_SKIP() << "built without the AMD back end";
  for (int64_t N : {1000, 8192, 32768, 65536})
    for (DType t : {DType::bf16, DType::f32}) {
      HostTensor x = HostTensor::random(t, {4, N}, 48), w = HostTensor::random(t, {N}, 49);
      HostTensor y = HostTensor::poisoned(t, {4, N});
      for (Normalization op : {Normalization::softmax, Normalization::layer_norm, Normalization::rms_norm}) {
        SCOPED_TRACE(std::string(name(op)) + " " + std::string(name(t)) + " N " + std::to_string(N));
        const NormalizationArgs args{x.view(), y.view(), op == Normalization::softmax ? TensorView{} : w.view(),
                                     {},       {},       {},
                                     1e-5};
        for (const char *arch : {"gfx942", "gfx90a"}) {
          const NormalizationLaunch amd = prepare_normalization(op, args, cpu(), {}, arch);
          EXPECT_LE(amd.config["num_warps"], 16);
          if (N > 32768) { // (two walks)
            EXPECT_EQ(amd.config["num_warps"], 16);
          }
          const CompiledKernel kernel = amd.compile(arch);
          EXPECT_EQ(kernel.threads_per_warp, 64);
          EXPECT_EQ(kernel.stack_frame, 0) << kernel.resources;
          EXPECT_EQ(kernel.spill_stores, 0) << kernel.resources;
        }
      }
    }
}

TEST(OpsNormalization, BlocksThatTileTheProblemExactly) {
  // 8 rows of 256: one pass takes 8 rows of 256 a program and two walks
  // chunks of 128, so neither needs a mask; the chunk two walks fetch
  // ahead past the row's end still must not be read.
  const std::vector<std::pair<std::string, Config>> plans{
      {"one pass", {}}, {"one pass, shifted", {{"SHIFTED", 1}}}, {"two walks", twoWalks()},
      {"two walks in place", with(twoWalks(), "AHEAD", 0)},
      {"two walks, Welford", with(twoWalks(), "SHIFTED", 0)}};
  for (const auto &[label, plan] : plans) {
    SCOPED_TRACE(label);
    HostTensor x = HostTensor::random(DType::f32, {8, 256}, 46, -3, 5), w = HostTensor::random(DType::f32, {256}, 47);
    HostTensor y = HostTensor::poisoned(DType::f32, {8, 256}), s = HostTensor::poisoned(DType::f32, {8, 256});
    HostTensor r = HostTensor::poisoned(DType::f32, {8, 256});
    layer_norm(x.view(), w.view(), {}, 1e-5, y.view(), {}, {}, cpu(), plan);
    y.expect_near([&](const std::vector<int64_t> &at) {
      Stats st = stats(rowOf(x, leadingOf(at)));
      return (x.at(at) - st.mean) / std::sqrt(st.var + 1e-5) * w.at({at.back()});
    }, 1e-5);
    if (plan.has("SHIFTED"))
      continue; // a layer-norm choice
    softmax(x.view(), s.view(), cpu(), plan);
    s.expect_near([&](const std::vector<int64_t> &at) {
      Stats st = stats(rowOf(x, leadingOf(at)));
      return std::exp(x.at(at) - st.max - st.logsum);
    }, 2e-6);
    rms_norm(x.view(), w.view(), 1e-6, r.view(), {}, cpu(), plan);
    r.expect_near([&](const std::vector<int64_t> &at) {
      Stats st = stats(rowOf(x, leadingOf(at)));
      return x.at(at) / std::sqrt(st.meanSquare + 1e-6) * w.at({at.back()});
    }, 1e-5);
  }
}

TEST(OpsNormalization, StridedRowsAndColumns) {
  // x: every other row of a [20, 64] f32 matrix; y: a column-strided view.
  HostTensor base = HostTensor::random(DType::f32, {20, 64}, 46);
  TensorView xs = base.view();
  xs.shape = {10, 64};
  xs.strides = {128, 1};
  HostTensor out = HostTensor::poisoned(DType::f32, {64, 10});
  TensorView yt = out.view(); // the transpose of out: [10, 64] with strides [1, 10]
  yt.shape = {10, 64};
  yt.strides = {1, 10};
  softmax(xs, yt, cpu());
  out.expect_near([&](const std::vector<int64_t> &at) { // out[j][i] = softmax(x row i)[j]
    std::vector<double> row;
    for (int64_t j = 0; j < 64; ++j)
      row.push_back(base.at({2 * at[1], j}));
    Stats s = stats(row);
    return std::exp(row[at[0]] - s.max - s.logsum);
  }, 2e-6);
}

TEST(OpsNormalization, OperandsBroadcastAlongTheRow) {
  // A weight of one value and a bias of one value seen as N (stride 0), and
  // rows whose every column is one value: each read as what it is, nothing
  // past it.
  for (bool two : {false, true}) {
    SCOPED_TRACE(two ? "two walks" : "one pass");
    HostTensor x = HostTensor::random(DType::f32, {6, 300}, 48), w1 = HostTensor::random(DType::f32, {1}, 49),
               b1 = HostTensor::random(DType::f32, {1}, 50);
    auto broadcast = [](HostTensor &t, std::vector<int64_t> shape, std::vector<int64_t> strides) {
      TensorView v = t.view();
      v.shape = std::move(shape);
      v.strides = std::move(strides);
      return v;
    };
    TensorView w = broadcast(w1, {300}, {0}), b = broadcast(b1, {300}, {0});
    HostTensor y = HostTensor::poisoned(DType::f32, {6, 300});
    layer_norm(x.view(), w, b, 1e-5, y.view(), {}, {}, cpu(), two ? twoWalks() : Config{});
    y.expect_near([&](const std::vector<int64_t> &at) {
      Stats s = stats(rowOf(x, leadingOf(at)));
      return (x.at(at) - s.mean) / std::sqrt(s.var + 1e-5) * w1.at({0}) + b1.at({0});
    }, 1e-5);
    HostTensor column = HostTensor::random(DType::f32, {6}, 51), r = HostTensor::poisoned(DType::f32, {6, 300});
    rms_norm(broadcast(column, {6, 300}, {1, 0}), w, 1e-6, r.view(), {}, cpu(), two ? twoWalks() : Config{});
    r.expect_near([&](const std::vector<int64_t> &at) {
      double v = column.at({at[0]});
      return v / std::sqrt(v * v + 1e-6) * w1.at({0});
    }, 1e-5);
  }
}

TEST(OpsNormalization, BadArgumentsAreClearErrors) {
  HostTensor x = HostTensor::random(DType::f32, {4, 8}, 47), y = HostTensor::poisoned(DType::f32, {4, 8});
  HostTensor w = HostTensor::random(DType::f32, {7}, 48), ints = HostTensor::random(DType::i32, {4, 8}, 49);
  HostTensor mean = HostTensor::poisoned(DType::f16, {4});
  auto message = kiln::testing::error_of;
  EXPECT_NE(message([&] { layer_norm(x.view(), w.view(), {}, 1e-5, y.view(), {}, {}, cpu()); })
                .find("weight f32[7] must be 1-D of x's last size 8"),
            std::string::npos);
  EXPECT_NE(message([&] { softmax(ints.view(), y.view(), cpu()); }).find("x and y must be f32, f16 or bf16"),
            std::string::npos);
  EXPECT_NE(message([&] { layer_norm(x.view(), {}, {}, 1e-5, y.view(), mean.view(), {}, cpu()); })
                .find("mean must be f32"),
            std::string::npos);
  EXPECT_NE(message([&] { softmax(x.view(), y.view(), cpu(), {{"ONE_PASS", 1}, {"BLOCK_N", 4}}); })
                .find("BLOCK_N 4 is shorter than the rows (8) in one pass"),
            std::string::npos);
  HostTensor wrong = HostTensor::poisoned(DType::f32, {4, 9});
  EXPECT_NE(message([&] { softmax(x.view(), wrong.view(), cpu()); }).find("must have x's shape"), std::string::npos);
}

TEST(OpsNormalization, LayerNormOfRowsFarFromZero) {
  // Mean 10000, spread 1: the variance must not cancel away in f32.
  HostTensor x = HostTensor::random(DType::f32, {6, 1000}, 50, 9999, 10001);
  HostTensor y = HostTensor::poisoned(DType::f32, {6, 1000}), rstd = HostTensor::poisoned(DType::f32, {6});
  for (const Config &plan : {Config{{"SHIFTED", 0}}, Config{{"SHIFTED", 1}}, with(twoWalks(), "SHIFTED", 0),
                             with(twoWalks(), "SHIFTED", 1)}) {
    layer_norm(x.view(), {}, {}, 1e-5, y.view(), {}, rstd.view(), cpu(), plan);
    rstd.expect_near([&](const std::vector<int64_t> &at) { return 1 / std::sqrt(stats(rowOf(x, at)).var + 1e-5); },
                     1e-3);
    y.expect_near([&](const std::vector<int64_t> &at) {
      Stats s = stats(rowOf(x, leadingOf(at)));
      return (x.at(at) - s.mean) / std::sqrt(s.var + 1e-5);
    }, 2e-3);
  }
}
