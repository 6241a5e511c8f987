// The grouped matmul op on the interpreter: ragged groups (empty ones,
// one row, rows not a multiple of the tile), both orders of b, pointer
// loads and descriptors, persistent programs, epilogues, fp8 with row and
// per-group column scales, offsets out of order, rows past the last group,
// argument errors; and its default plan through ptxas for sm_90a. Against
// double-precision references.
#include "tests/common/OpsTestSupport.h"

#include <kiln/ops/library.h>

#include "ops/lib/MatmulPlan.h"

#include <numeric>

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::HostTensor;

namespace {

Stream cpu() { return Stream(Device::interp()); }

Config small() {
  return {{"BLOCK_M", 16}, {"BLOCK_N", 32}, {"BLOCK_K", 16}, {"GROUP_M", 2}, {"num_warps", 4}, {"num_stages", 2}};
}

/// An int32 tensor of `values`.
HostTensor int32s(const std::vector<int64_t> &values) {
  HostTensor t = HostTensor::random(DType::i32, {static_cast<int64_t>(values.size())}, 0);
  for (size_t i = 0; i < values.size(); ++i)
    t.set_flat(static_cast<int64_t>(i), static_cast<double>(values[i]));
  return t;
}

/// int32 cumulative ends of groups of `sizes` rows.
HostTensor offsetsOf(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> ends(sizes.size());
  std::partial_sum(sizes.begin(), sizes.end(), ends.begin());
  return int32s(ends);
}

/// b's [G, K, N] view of `stored`: as stored ([G][K][N]), or its groups
/// transposed (`stored` holds [G][N][K]: K-major).
TensorView groupsOf(HostTensor &stored, bool kMajor) {
  TensorView v = stored.view();
  if (kMajor) {
    const int64_t G = stored.shape()[0], N = stored.shape()[1], K = stored.shape()[2];
    v.shape = {G, K, N};
    v.strides = {N * K, 1, K};
  }
  return v;
}

/// Group of each row: the clamped, non-decreasing reading of `offsets`
/// (-1: past the last group).
std::vector<int64_t> groupOfRows(const std::vector<int64_t> &offsets, int64_t M) {
  std::vector<int64_t> group(M, -1);
  int64_t start = 0;
  for (size_t g = 0; g < offsets.size(); ++g) {
    const int64_t end = std::max(start, std::clamp<int64_t>(offsets[g], 0, M));
    for (int64_t r = start; r < end; ++r)
      group[r] = static_cast<int64_t>(g);
    start = end;
  }
  return group;
}

} // namespace

TEST(OpsGroupedMatmul, RaggedGroupsInEveryLayoutAndSchedule) {
  // Groups of 0, 1, 37, 64, 5, 0 and 20 rows; b as stored and K-major; one
  // program a tile (pointer loads, descriptors) and persistent programs;
  // alpha and an activation, bf16 and f32 out.
  const std::vector<int64_t> sizes{0, 1, 37, 64, 5, 0, 20};
  const int64_t G = static_cast<int64_t>(sizes.size()), M = std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
  const int64_t K = 48, N = 40;
  struct Case {
    bool kMajor;
    DType out;
    Config config;
  };
  for (const Case &c : {Case{false, DType::f32, small()}, Case{true, DType::bf16, small()},
                        Case{false, DType::f32, Config(small()).set("DESCRIPTORS", 1)},
                        Case{true, DType::f32, Config(small()).set("DESCRIPTORS", 1).set("PERSISTENT", 1)},
                        Case{false, DType::f32, Config(small()).set("PERSISTENT", 1)}}) {
    SCOPED_TRACE(std::string(c.kMajor ? "K-major b " : "b ") + c.config.str());
    HostTensor a = HostTensor::random(DType::bf16, {M, K}, 1);
    HostTensor b = c.kMajor ? HostTensor::random(DType::bf16, {G, N, K}, 2) : HostTensor::random(DType::bf16, {G, K, N}, 2);
    HostTensor offsets = offsetsOf(sizes), out = HostTensor::poisoned(c.out, {M, N});
    GroupedMatmulArgs args{a.view(), groupsOf(b, c.kMajor), offsets.view(), out.view(), 0.5, Activation::silu};
    grouped_matmul(args, cpu(), c.config);
    const std::vector<int64_t> group = groupOfRows({0, 1, 38, 102, 107, 107, 127}, M);
    out.expect_near(
        [&](const std::vector<int64_t> &at) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += a.at({at[0], k}) * (c.kMajor ? b.at({group[at[0]], at[1], k}) : b.at({group[at[0]], k, at[1]}));
          s *= 0.5;
          return s / (1 + std::exp(-s));
        },
        c.out == DType::f32 ? 1e-5 : 1e-2);
  }
}

TEST(OpsGroupedMatmul, OffsetsAreClampedAndOrderedAndRowsPastTheLastGroupStayUnwritten) {
  // offsets {10, 5, 200, 30, 25} over 40 rows read as {10, 10, 40, 40, 40}
  // clamped and non-decreasing: groups 0 and 2 hold rows; {3, 12} leave
  // rows 12.. unwritten.
  const int64_t M = 40, K = 32, N = 32;
  HostTensor a = HostTensor::random(DType::f16, {M, K}, 3), b = HostTensor::random(DType::f16, {5, K, N}, 4);
  for (const std::vector<int64_t> &ends : {std::vector<int64_t>{10, 5, 200, 30, 25}, std::vector<int64_t>{3, 12, 12, 12, 12}}) {
    HostTensor offsets = int32s(ends);
    HostTensor out = HostTensor::poisoned(DType::f32, {M, N});
    grouped_matmul({a.view(), b.view(), offsets.view(), out.view()}, cpu(), small());
    const std::vector<int64_t> group = groupOfRows(ends, M);
    out.expect_near(
        [&](const std::vector<int64_t> &at) {
          if (group[at[0]] < 0)
            return std::nan("");
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += a.at({at[0], k}) * b.at({group[at[0]], k, at[1]});
          return s;
        },
        1e-5);
  }
}

TEST(OpsGroupedMatmul, Fp8WithRowAndPerGroupColumnScales) {
  // fp8 operands K-major (b's groups transposes of [N, K] matrices), a's
  // row scales and each group's column scales ([G, N]), and tensor scales;
  // descriptors and pointer loads.
  const std::vector<int64_t> sizes{9, 0, 30, 17};
  const int64_t G = 4, M = 56, K = 64, N = 48;
  for (bool rowsAndColumns : {true, false}) {
    SCOPED_TRACE(rowsAndColumns ? "row and column scales" : "tensor scales");
    HostTensor a = HostTensor::random(DType::f8e4m3, {M, K}, 5), b = HostTensor::random(DType::f8e5m2, {G, N, K}, 6);
    HostTensor sa = HostTensor::random(DType::f32, {rowsAndColumns ? M : 1}, 7, 0.25, 2);
    HostTensor sb = rowsAndColumns ? HostTensor::random(DType::f32, {G, N}, 8, 0.25, 2)
                                   : HostTensor::random(DType::f32, {1}, 8, 0.25, 2);
    HostTensor offsets = offsetsOf(sizes), out = HostTensor::poisoned(DType::f32, {M, N});
    GroupedMatmulArgs args{a.view(), groupsOf(b, true), offsets.view(), out.view()};
    args.scale_a = sa.view();
    args.scale_b = sb.view();
    grouped_matmul(args, cpu(), Config(small()).set("BLOCK_K", 32).set("DESCRIPTORS", rowsAndColumns ? 1 : 0));
    const std::vector<int64_t> group = groupOfRows({9, 9, 39, 56}, M);
    out.expect_near(
        [&](const std::vector<int64_t> &at) {
          const int64_t g = group[at[0]];
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += a.at({at[0], k}) * b.at({g, at[1], k});
          return s * sa.at({rowsAndColumns ? at[0] : 0}) * (rowsAndColumns ? sb.at({g, at[1]}) : sb.at({0}));
        },
        1e-5);
  }
}

TEST(OpsGroupedMatmul, BadArgumentsAreRejectedWithReasons) {
  HostTensor a = HostTensor::random(DType::bf16, {8, 16}, 9), b = HostTensor::random(DType::bf16, {2, 16, 8}, 10);
  HostTensor offsets = offsetsOf({3, 5}), out = HostTensor::poisoned(DType::f32, {8, 8});
  auto fails = [&](GroupedMatmulArgs args, const Config &config, const std::string &why) {
    std::string message = kiln::testing::error_of([&] { grouped_matmul(args, cpu(), config); });
    EXPECT_NE(message.find(why), std::string::npos) << why << ": " << message;
  };
  HostTensor wrongK = HostTensor::random(DType::bf16, {2, 12, 8}, 11);
  fails({a.view(), wrongK.view(), offsets.view(), out.view()}, {}, "shapes do not fit");
  HostTensor three = offsetsOf({1, 2, 5});
  fails({a.view(), b.view(), three.view(), out.view()}, {}, "shapes do not fit");
  HostTensor floats = HostTensor::random(DType::f32, {2}, 12);
  fails({a.view(), b.view(), floats.view(), out.view()}, {}, "offsets must be int32");
  HostTensor flat = HostTensor::random(DType::bf16, {16, 8}, 13);
  fails({a.view(), flat.view(), offsets.view(), out.view()}, {}, "[G, K, N]");
  HostTensor none = HostTensor::random(DType::bf16, {0, 16, 8}, 14), noOffsets = int32s({});
  fails({a.view(), none.view(), noOffsets.view(), out.view()}, {}, "between 1 and 4096 groups");
  HostTensor longA = HostTensor::random(DType::bf16, {8, 64}, 20), longB = HostTensor::random(DType::bf16, {2, 64, 8}, 21);
  fails({longA.view(), longB.view(), offsets.view(), out.view()}, Config(small()).set("SPLIT_K", 2), "run unsplit");
  fails({a.view(), b.view(), offsets.view(), out.view()},
        Config(small()).set("PERSISTENT", 1).set("DESCRIPTORS", 1).set("cluster_size", 2), "no clusters");
  HostTensor a8 = HostTensor::random(DType::f8e4m3, {8, 16}, 15), b8 = HostTensor::random(DType::f8e4m3, {2, 16, 8}, 16);
  fails({a8.view(), b8.view(), offsets.view(), out.view()}, {}, "fp8 operands must be K-major");
  HostTensor rows = HostTensor::random(DType::f32, {7}, 17);
  GroupedMatmulArgs scaled{a.view(), b.view(), offsets.view(), out.view()};
  scaled.scale_b = rows.view();
  fails(scaled, {}, "scale_b");
}

TEST(OpsGroupedMatmul, DefaultPlanOnHopperReadsTheGroupsThroughTheCopyEngine) {
  // Eight experts' K-major bf16 weights: the default plan on sm_90a (one
  // program a 128x256 tile, a producer warpgroup, the copy engine reading
  // a and the stacked groups of b, wgmma) and the tile table, through the
  // compiler and ptxas, without spills.
  const int64_t G = 8, M = 2048, K = 512, N = 1024;
  HostTensor a = HostTensor::random(DType::bf16, {M, K}, 18), b = HostTensor::random(DType::bf16, {G, N, K}, 19);
  HostTensor offsets = offsetsOf({100, 300, 0, 500, 148, 400, 300, 300}), out = HostTensor::poisoned(DType::bf16, {M, N});
  GroupedMatmulArgs args{a.view(), groupsOf(b, true), offsets.view(), out.view()};
  autotune::Task task = grouped_matmul_tuning_task(args, cpu(), "sm_90a");
  const Config seed = task.seeds.at(0);
  EXPECT_EQ(task.space.check(seed), "") << seed.str();
  EXPECT_EQ(task.op, "grouped_matmul");
  EXPECT_NE(task.key.find("groups=8"), std::string::npos) << task.key;
  MatmulLaunch launch = prepare_grouped_matmul(args, cpu(), Config(seed).set("DESCRIPTORS", 1));
  ASSERT_EQ(launch.steps.size(), 2u);
  for (const MatmulLaunch::Step &step : launch.steps) {
    CompiledKernel kernel = step.kernel.compile(step.config, step.kernel.specialize(step.args), "sm_90a");
    EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
  }
  CompiledKernel product = task.compile(Config(seed).set("DESCRIPTORS", 1));
  EXPECT_EQ(seed["PERSISTENT"], 0) << seed.str();
  EXPECT_NE(product.ptx.find("wgmma.mma_async"), std::string::npos);
  EXPECT_NE(product.ptx.find("setmaxnreg"), std::string::npos);
  EXPECT_NE(product.ptx.find("cp.async.bulk.tensor.2d"), std::string::npos);
  EXPECT_EQ(product.spill_stores, 0) << product.ptxas_log;
}
