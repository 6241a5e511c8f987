// The autotuner on synthetic costs (no GPU): exhaustive and pattern search,
// pruning reasons, compile failures and timeouts, reuse of stored timings,
// and an end-to-end tuning of a real kernel on the interpreter. Stored
// configs are not trusted: one that does not parse or lies outside the
// space is ignored (by the ops library too), and an import with an invalid
// entry writes nothing.
#include "tests/common/CacheDirScope.h"
#include <kiln/autotune.h>
#include <kiln/kiln.h>
#include <kiln/ops/library.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

using namespace kiln;
using namespace kiln::autotune;
namespace fs = std::filesystem;

namespace {

class TempStore {
public:
  TempStore() {
    std::random_device random;
    dir_ = fs::temp_directory_path() / ("kiln-autotune-test-" + std::to_string(random()));
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::owner_all); // private whatever the umask: the store refuses others' access
  }
  ~TempStore() { fs::remove_all(dir_); }
  TuningStore store() const { return TuningStore((dir_ / "autotune.json").string()); }
  const fs::path &path() const { return dir_; }

private:
  fs::path dir_;
};

/// A space like a tiled kernel's, with a smooth cost: best at BLOCK=256,
/// WARPS=4, STAGES=3; configs over 256 threads of work each are pruned.
Task syntheticTask() {
  Task task;
  task.op = "synthetic";
  task.key = "n=" + std::to_string(bucket(3000));
  task.space.axis("BLOCK", {16, 32, 64, 128, 256, 512, 1024, 2048})
      .axis("WARPS", {1, 2, 4, 8, 16})
      .axis("STAGES", {1, 2, 3, 4, 5})
      .constraint("BLOCK / WARPS must be at least 16", [](const Config &c) { return c["BLOCK"] / c["WARPS"] >= 16; });
  task.bytes = 1e9;
  return task;
}

double syntheticCost(const Config &c) {
  double b = std::log2(c["BLOCK"]) - 8, w = std::log2(c["WARPS"]) - 2, s = c["STAGES"] - 3;
  return 1.0 + 0.05 * b * b + 0.08 * w * w + 0.03 * s * s + 0.01 * b * w;
}

/// Options that time configs by syntheticCost, counting the timings.
Options countingSynthetic(std::atomic<int> &measured) {
  Options options;
  options.measure = [&measured](const Config &c) {
    ++measured;
    return syntheticCost(c);
  };
  return options;
}

using kiln::testing::CacheDirScope;

size_t occurrences(const std::string &text, const std::string &part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

/// Records `best` as the winner of `task` on the interpreter, as a store
/// edited by hand or planted would hold it.
void plant(const TuningStore &store, const Task &task, const std::string &best) {
  ASSERT_TRUE(store.record(store_key(task, Device::interp()), {best, 0.001, {{best, 0.001}}, ""}));
}

} // namespace

TEST(Autotune, BucketsAreThePowerOfTwoAtOrAbove) {
  EXPECT_EQ(bucket(1), 1);
  EXPECT_EQ(bucket(3000), 4096);
  EXPECT_EQ(bucket(4096), 4096);
  EXPECT_EQ(bucket(4097), 8192);
}

TEST(Autotune, BucketsAreTotal) {
  EXPECT_EQ(bucket(0), 1);
  EXPECT_EQ(bucket(-7), 1);
  EXPECT_EQ(bucket(INT64_MIN), 1);
  EXPECT_EQ(bucket(int64_t(1) << 62), int64_t(1) << 62);
  EXPECT_EQ(bucket((int64_t(1) << 62) + 1), (int64_t(1) << 62) + 1);
  EXPECT_EQ(bucket(INT64_MAX), INT64_MAX); // looped forever once doubling passed 2^62
}

TEST(Autotune, ConfigsAreCheckedAgainstTheirSpace) {
  Task task = syntheticTask();
  EXPECT_EQ(space_problem(task.space, Config::parse("BLOCK=256,STAGES=3,WARPS=4")), "");
  EXPECT_EQ(space_problem(task.space, Config::parse("BLOCK=1048576,STAGES=3,WARPS=4")),
            "BLOCK=1048576 is not among the values tuned (16, 32, 64, 128, 256, 512, 1024, 2048)");
  EXPECT_EQ(space_problem(task.space, Config::parse("BLOCK=256,EXTRA=1,STAGES=3,WARPS=4")),
            "'EXTRA' is not one of the axes tuned");
  EXPECT_EQ(space_problem(task.space, Config::parse("BLOCK=256,STAGES=3")), "it gives no value for WARPS");
  EXPECT_EQ(space_problem(task.space, Config::parse("BLOCK=16,STAGES=3,WARPS=16")),
            "BLOCK / WARPS must be at least 16");
  EXPECT_EQ(config_text_problem("BLOCK=256,WARPS=4"), "");
  EXPECT_NE(config_text_problem("BLOCK=lots").find("is not an integer"), std::string::npos);
  EXPECT_EQ(config_text_problem(""), "it names no value");
}

TEST(Autotune, AStoredConfigOutsideTheSpaceIsIgnoredWithOneWarning) {
  Task task = syntheticTask();
  Device cpu = Device::interp();
  for (const std::string bad : {"BLOCK=1048576,STAGES=3,WARPS=4", "BLOCK=lots", "BLOCK=256,EXTRA=1,STAGES=3,WARPS=4",
                                "BLOCK=16,STAGES=3,WARPS=16"}) {
    TempStore dir;
    TuningStore store = dir.store();
    plant(store, task, bad);
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(tuned(task, cpu, store).has_value()) << bad;
    EXPECT_FALSE(tuned(task, cpu, store).has_value()) << bad;
    std::string said = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(occurrences(said, "ignoring the tuned config '" + bad + "'"), 1u) << said;
  }
  TempStore dir;
  plant(dir.store(), task, "BLOCK=512,STAGES=2,WARPS=8");
  auto best = tuned(task, cpu, dir.store());
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->str(), "BLOCK=512,STAGES=2,WARPS=8");
}

TEST(Autotune, AnImportWithAnInvalidEntryWritesNothing) {
  TempStore dir;
  TuningStore store = dir.store();
  const std::string text = R"({"kiln_tuning_export": 1, "best": {
    "good": {"config": "BLOCK=256", "ms": 0.5},
    "garbled": {"config": "BLOCK=lots", "ms": 0.5},
    "negative": {"config": "BLOCK=256", "ms": -1},
    "text_ms": {"config": "BLOCK=256", "ms": "fast"},
    "no_config": {"ms": 0.5}}})";
  try {
    store.import_best(text, config_text_problem);
    ADD_FAILURE() << "an export with invalid entries was imported";
  } catch (const std::runtime_error &e) {
    std::string why = e.what();
    EXPECT_NE(why.find("nothing was imported"), std::string::npos) << why;
    for (const char *key : {"'garbled': its config 'BLOCK=lots' is not a config", "'negative'", "'text_ms'", "'no_config'"})
      EXPECT_NE(why.find(key), std::string::npos) << key << " in: " << why;
    EXPECT_EQ(why.find("'good'"), std::string::npos) << why;
  }
  EXPECT_FALSE(fs::exists(store.path())) << "an import that failed wrote the store";
}

TEST(Autotune, AnImportThatCannotBeWrittenThrows) {
  TempStore dir;
  std::ofstream(dir.path() / "a-file") << "not a directory";
  TuningStore store((dir.path() / "a-file" / "autotune.json").string());
  const std::string text = R"({"kiln_tuning_export": 1, "best": {"k": {"config": "BLOCK=256", "ms": 0.5}}})";
  try {
    store.import_best(text, config_text_problem);
    ADD_FAILURE() << "imported into a store that cannot be written";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("is not a directory"), std::string::npos) << e.what();
  }
}

TEST(Autotune, ATuningRunSaysWhetherItsResultsWereStored) {
  TempStore dir;
  fs::path shared = dir.path() / "shared";
  fs::create_directories(shared);
  fs::permissions(shared, fs::perms::all); // others may write: refused
  Task task = syntheticTask();
  std::atomic<int> measured{0};
  Options options = countingSynthetic(measured);
  Stream cpu(Device::interp());
  ::testing::internal::CaptureStderr();
  Report refused = tune(task, cpu, options, TuningStore((shared / "autotune.json").string()));
  std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(refused.best.has_value());
  EXPECT_FALSE(refused.stored);
  EXPECT_NE(said.find("writable by other users"), std::string::npos) << said;
  EXPECT_TRUE(tune(task, cpu, options, dir.store()).stored);
}

TEST(AutotunedOps, AStoredPlanOutsideTheOpsSpaceFallsBackToTheDefaults) {
  // A planted BLOCK_M=1048576 made every call take minutes, then fail.
  TempStore dir;
  CacheDirScope scope(dir.path());
  const int64_t rows = 3, cols = 1500;
  std::vector<float> x(rows * cols), y(rows * cols, NAN);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>((i * 37) % 101) / 25 - 2;
  ops::NormalizationArgs args;
  args.x = ops::TensorView::of_host(x.data(), {rows, cols});
  args.y = ops::TensorView::of_host(y.data(), {rows, cols});
  Stream cpu(Device::interp());
  const std::string planted = "AHEAD=1,BLOCK_M=1048576,BLOCK_N=2048,ONE_PASS=1,min_blocks_per_sm=0,num_warps=4";
  plant(TuningStore(), ops::tuning_task(ops::Normalization::log_softmax, args, cpu), planted);
  ::testing::internal::CaptureStderr();
  ops::normalize(ops::Normalization::log_softmax, args, cpu);
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("ignoring the tuned config '" + planted + "'"), std::string::npos) << said;
  EXPECT_NE(said.find("BLOCK_M=1048576 is not among the values tuned"), std::string::npos) << said;
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t c = 0; c < cols; ++c)
      total += std::exp(static_cast<double>(y[r * cols + c]));
    EXPECT_NEAR(total, 1.0, 1e-4) << "row " << r;
  }
}

TEST(AutotunedOps, AnUnparsableStoredMatmulConfigFallsBackToTheDefaults) {
  TempStore dir;
  CacheDirScope scope(dir.path());
  const int64_t M = 33, N = 20, K = 9;
  std::vector<float> a(M * K), b(K * N), out(M * N, NAN);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i % 7) - 3;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<float>(i % 5) - 2;
  ops::MatmulArgs args;
  args.a = ops::TensorView::of_host(a.data(), {M, K});
  args.b = ops::TensorView::of_host(b.data(), {K, N});
  args.out = ops::TensorView::of_host(out.data(), {M, N});
  Stream cpu(Device::interp());
  plant(TuningStore(), ops::tuning_task(args, cpu), "BLOCK_M=lots");
  ::testing::internal::CaptureStderr();
  ops::matmul(args, cpu);
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("ignoring the tuned config 'BLOCK_M=lots'"), std::string::npos) << said;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double expected = 0;
      for (int64_t k = 0; k < K; ++k)
        expected += static_cast<double>(a[i * K + k]) * b[k * N + j];
      EXPECT_NEAR(out[i * N + j], expected, 1e-4) << i << "," << j;
    }
}

TEST(Autotune, ExhaustiveFindsTheBestAndRecordsPruningReasons) {
  TempStore dir;
  TuningStore store = dir.store();
  Task task = syntheticTask();
  std::atomic<int> measured{0};
  Options options = countingSynthetic(measured);
  Stream cpu(Device::interp());
  Report report = tune(task, cpu, options, store);
  ASSERT_TRUE(report.best.has_value());
  EXPECT_EQ(report.best->str(), "BLOCK=256,STAGES=3,WARPS=4");
  EXPECT_EQ(report.space, 8 * 5 * 5);
  EXPECT_GT(report.pruned, 0);
  EXPECT_EQ(measured, report.space - report.pruned);
  int withReason = 0;
  for (const Measured &m : report.configs)
    withReason += m.rejected == "pruned: BLOCK / WARPS must be at least 16";
  EXPECT_EQ(withReason, report.pruned);
  // The store has it, for this device.
  auto best = tuned(task, cpu.device(), store);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->str(), "BLOCK=256,STAGES=3,WARPS=4");
  std::ostringstream table;
  print_report(table, task, report);
  EXPECT_NE(table.str().find("pruned " + std::to_string(report.pruned) + ": BLOCK / WARPS must be at least 16"),
            std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("best"), std::string::npos);
}

TEST(Autotune, PatternSearchGetsWithinThreePercentInAFractionOfTheEvaluations) {
  TempStore dir;
  Task task = syntheticTask();
  std::atomic<int> measured{0};
  Options options = countingSynthetic(measured);
  options.strategy = Strategy::pattern;
  Report report = tune(task, Stream(Device::interp()), options, dir.store());
  ASSERT_TRUE(report.best.has_value());
  double exhaustiveBest = 1.0;
  EXPECT_LE(report.best_ms, exhaustiveBest * 1.03);
  EXPECT_LT(measured, (report.space - report.pruned) / 3) << "pattern search evaluated " << measured.load();
}

TEST(Autotune, PatternSearchStartsFromTheFastestSeed) {
  // A space whose middle point is a local minimum (every neighbour is
  // slower) and whose best config sits far away: from the middle alone the
  // search stops there; seeded with a config near the best, it gets there.
  TempStore dir;
  Task task = syntheticTask();
  auto distance = [](const Config &c, int64_t block, int64_t warps, int64_t stages) {
    return std::abs(std::log2(c["BLOCK"]) - std::log2(block)) + std::abs(std::log2(c["WARPS"]) - std::log2(warps)) +
           std::abs(c["STAGES"] - stages);
  };
  Options options;
  options.strategy = Strategy::pattern;
  options.measure = [&](const Config &c) {
    double nearBest = distance(c, 2048, 1, 5), nearMiddle = distance(c, 256, 4, 3);
    return nearBest <= 2 ? 0.5 + 0.1 * nearBest : 2.0 + 0.1 * nearMiddle;
  };
  Report unseeded = tune(task, Stream(Device::interp()), options, dir.store());
  ASSERT_TRUE(unseeded.best.has_value());
  EXPECT_EQ(unseeded.best->str(), "BLOCK=256,STAGES=3,WARPS=4");
  task.seeds = {Config{{"BLOCK", 1024}, {"WARPS", 2}, {"STAGES", 5}}, Config{{"BLOCK", 7}, {"WARPS", 1}, {"STAGES", 1}}};
  options.force = true;
  Report seeded = tune(task, Stream(Device::interp()), options, dir.store());
  ASSERT_TRUE(seeded.best.has_value());
  EXPECT_EQ(seeded.best->str(), "BLOCK=2048,STAGES=5,WARPS=1");
}

TEST(Autotune, AChangedSpaceReusesStoredTimings) {
  TempStore dir;
  TuningStore store = dir.store();
  Task task = syntheticTask();
  std::atomic<int> measured{0};
  Options options = countingSynthetic(measured);
  Stream cpu(Device::interp());
  tune(task, cpu, options, store);
  int first = measured;
  // One more value on an axis: only its configs are timed.
  task.space = ConfigSpace()
                   .axis("BLOCK", {16, 32, 64, 128, 256, 512, 1024, 2048})
                   .axis("WARPS", {1, 2, 4, 8, 16, 32})
                   .axis("STAGES", {1, 2, 3, 4, 5})
                   .constraint("BLOCK / WARPS must be at least 16",
                               [](const Config &c) { return c["BLOCK"] / c["WARPS"] >= 16; });
  measured = 0;
  Report again = tune(task, cpu, options, store);
  int stored = 0;
  for (const Measured &m : again.configs)
    stored += m.from_store;
  EXPECT_EQ(stored, first);
  EXPECT_EQ(measured, again.space - again.pruned - first) << "stored configs were timed again";
  options.force = true;
  measured = 0;
  Report forced = tune(task, cpu, options, store);
  EXPECT_EQ(measured, forced.space - forced.pruned);
}

TEST(Autotune, FailedAndSlowCompilesAreRejectedWithTheirReasons) {
  TempStore dir;
  Task task;
  task.op = "compiles";
  task.key = "k";
  task.space.axis("V", {1, 2, 3, 4});
  task.compile = [](const Config &c) {
    if (c["V"] == 2)
      throw Error("ptxas: too many resources");
    if (c["V"] == 3)
      std::this_thread::sleep_for(std::chrono::seconds(2));
    CompiledKernel k;
    k.registers = 10 * static_cast<int>(c["V"]);
    return k;
  };
  Options options;
  options.compile_timeout_s = 0.3;
  options.measure = [](const Config &c) { return 5.0 - c["V"]; };
  Report report = tune(task, Stream(Device::interp()), options, dir.store());
  std::map<int64_t, std::string> why;
  for (const Measured &m : report.configs)
    why[m.config["V"]] = m.rejected;
  EXPECT_EQ(why[1], "");
  EXPECT_EQ(why[2], "compile failed: ptxas: too many resources");
  EXPECT_EQ(why[3].rfind("compile timed out", 0), 0u) << why[3];
  EXPECT_EQ(why[4], "");
  ASSERT_TRUE(report.best.has_value());
  EXPECT_EQ((*report.best)["V"], 4);
  for (const Measured &m : report.configs)
    if (m.config["V"] == 4) {
      EXPECT_EQ(m.compiled.registers, 40);
    }
}

namespace {
void scale(const Config &cfg, ConstPtr<f32> x, Ptr<f32> y, Int n) {
  const int64_t B = cfg["BLOCK"];
  Tensor o = program_id(0) * B + arange(0, B);
  store(y + o, load(x + o, o < n) * 2.0, o < n);
}
} // namespace

TEST(Autotune, TunesARealKernelAndRejectsWrongResults) {
  // On the interpreter: every config really runs, is checked, and timed;
  // a config that writes wrong results is rejected.
  TempStore dir;
  const int64_t n = 5000;
  auto x = std::make_shared<std::vector<float>>(n), y = std::make_shared<std::vector<float>>(n);
  for (int64_t i = 0; i < n; ++i)
    (*x)[i] = static_cast<float>(i % 97) - 40;
  Kernel kernel = jit(scale, "tuned_scale");
  Task task;
  task.op = "scale";
  task.key = "n=" + std::to_string(bucket(n));
  task.space.axis("BLOCK", {64, 256, 1024});
  task.run = [=](const Config &c, const Stream &s) {
    int64_t block = c["BLOCK"] == 256 ? 512 : c["BLOCK"]; // a bug in one config: half the grid
    kernel.launch(Grid(cdiv(n, block)), c, s, *x, *y, n);
  };
  task.restore = [=](const Stream &) { std::fill(y->begin(), y->end(), NAN); };
  task.check = [=](const Config &) -> std::string {
    for (int64_t i = 0; i < n; ++i)
      if ((*y)[i] != 2 * (*x)[i])
        return "element " + std::to_string(i) + " is " + std::to_string((*y)[i]);
    return "";
  };
  task.bytes = 8.0 * n;
  Options options;
  options.reps = 3;
  Report report = tune(task, Stream(Device::interp()), options, dir.store());
  std::map<int64_t, std::string> why;
  for (const Measured &m : report.configs)
    why[m.config["BLOCK"]] = m.rejected;
  EXPECT_EQ(why[64], "");
  EXPECT_EQ(why[1024], "");
  EXPECT_EQ(why[256].rfind("wrong results: element", 0), 0u) << why[256];
  ASSERT_TRUE(report.best.has_value());
  EXPECT_NE((*report.best)["BLOCK"], 256);
}
