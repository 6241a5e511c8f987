// autotune: tune an op of the ops library for a problem on this machine's
// GPU and store the winner, which the ops library then uses; or compile
// every candidate without a GPU (--dry-run); or move tuning results
// between machines (export, import). docs/autotune.md.
#include <kiln/autotune.h>
#include <kiln/version.h>
#include <kiln/kiln.h>
#include <kiln/numeric.h>
#include <kiln/ops/library.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <algorithm>
#include <vector>

using namespace kiln;

namespace {

const char *kUsage = R"(autotune: tune an op of Kiln's ops library for a problem, store the winner

usage: autotune --op OP --rows R --cols C [options]
       autotune --op matmul --m M --n N --k K [options]
       autotune --op grouped_matmul --groups G --m M --n N --k K [options]
       autotune --op attention --batch B --heads H --seq N --head-dim D [options]
       autotune export [FILE]        best configs of the tuning store, as JSON (stdout without FILE)
       autotune import FILE          merge an export into the tuning store

  --op OP               softmax, log_softmax, layer_norm, rms_norm, matmul, grouped_matmul or attention
  --rows R, --cols C    a normalization's problem: R rows of C values (normalized along C)
  --m M, --n N, --k K   a matmul's problem: [M, K] x [K, N] -> [M, N] (row-major, out in --dtype;
                        fp8: b the transpose of an [N, K] weight, out bf16)
  --groups G            grouped_matmul: G groups of ragged sizes (fixed seed) summing to M rows, each
                        times its own [K, N] (the transpose of an [N, K] weight: a mixture of experts)
  --scales S            fp8 scales: tensor (default), rows (a's rows, b's columns) or blocks (1x128 and
                        128x128; matmul only)
  --bias, --activation A  matmul epilogue: a bias of N values; none, relu, gelu or silu
  --batch B, --heads H, --seq N, --head-dim D  attention's problem: q, k and v [B, H, N, D]
  --kv-heads H, --seq-k N  attention: fewer K/V heads (grouped-query), another number of keys
  --causal              attention: a causal mask (top-left; with --page-size, bottom-right)
  --page-size P         attention: k and v a paged cache of --seq-k keys a sequence in pages of P
                        keys, scattered by a block table (decoding: --seq 1)
  --dtype T             f32 (default; bf16 for attention), f16, bf16, or for matmuls fp8e4m3 or fp8e5m2
  --precision P         how a matmul multiplies f32: ieee (default, FMAs), tf32 or tf32x3 (tensor cores)
  --config C            tune only these configs (repeatable; "BLOCK_M=128,BLOCK_N=128,..."; axes left
                        out take their first value)
  --strategy S          exhaustive (default) or pattern
  --budget-s N          stop timing new configs after N seconds
  --reps N              timed runs per config (default 20)
  --force               time configs the store already measured again
  --dry-run             no GPU needed: compile every candidate and report registers,
                        spills and shared memory (--arch, default sm_90a)
  --json                the report as JSON on stdout
  --version             Kiln's version
  --help                this text

The store is $KILN_CACHE_DIR/autotune.json (default ~/.cache/kiln). Library
calls use the stored winners; KILN_AUTOTUNE=quick|full tunes missing ones on
first use and KILN_PRINT_AUTOTUNING=1 says what they chose.
)";

[[noreturn]] void fail(const std::string &why) {
  std::fprintf(stderr, "autotune: %s\n", why.c_str());
  std::exit(1);
}

int64_t number(const std::string &flag, const char *text) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (!end || *end || v <= 0 || errno == ERANGE)
    fail(flag + " needs a positive integer, not '" + text + "'");
  return v;
}

/// The problem's tensors. A tuning run gets device memory, its inputs
/// filled with random values in [-2, 2). A dry run only compiles, and the
/// code depends on the tensors' shapes, dtypes and alignment, not on their
/// data: its views point at placeholder addresses (aligned, apart from one
/// another) and nothing is allocated, so that any problem size compiles.
class Operands {
public:
  Operands(const Device &device, bool dryRun) : device_(device), dryRun_(dryRun) {}

  ops::TensorView make(DType dtype, std::vector<int64_t> shape, unsigned seed, bool random) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    const size_t width = size_in_bytes(dtype);
    if (dryRun_) {
      ops::TensorView view;
      view.address = nextPlaceholder_;
      view.dtype = dtype;
      view.shape = std::move(shape);
      view.device = device_.kind();
      nextPlaceholder_ += (static_cast<uint64_t>(n) * width + kPlaceholderAlignment) / kPlaceholderAlignment *
                          kPlaceholderAlignment;
      return view;
    }
    Buffer buffer = Buffer::allocate(device_, n * width);
    if (random) {
      // 4096 values encoded once, then drawn at random: fast enough for
      // 4096x4096 operands (encoding every element took seconds).
      std::mt19937 rng(seed);
      std::uniform_real_distribution<double> dist(-2, 2);
      std::vector<uint64_t> table(4096);
      for (uint64_t &raw : table)
        raw = encode_float(dtype, round_to(dtype, dist(rng), Rounding::nearest_even, is_float8(dtype)));
      std::minstd_rand pick(seed);
      std::vector<uint8_t> bytes(n * width);
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(bytes.data() + i * width, &table[pick() % table.size()], width);
      buffer.copy_from_host(bytes.data(), bytes.size());
    } else {
      buffer.fill_bytes(0);
    }
    buffers_.push_back(buffer);
    return ops::TensorView::of(buffer, dtype, std::move(shape));
  }

  /// An int32 tensor holding `values` (a placeholder in a dry run).
  ops::TensorView indices(const std::vector<int32_t> &values, std::vector<int64_t> shape) {
    ops::TensorView view = make(DType::i32, std::move(shape), 0, false);
    if (!dryRun_)
      buffers_.back().copy_from_host(values.data(), values.size() * sizeof(int32_t));
    return view;
  }

private:
  /// As aligned as any allocation, so that placeholders specialize as
  /// device memory does.
  static constexpr uint64_t kPlaceholderAlignment = 4096;
  Device device_;
  bool dryRun_;
  std::vector<Buffer> buffers_; ///< what the views of a tuning run point into
  uint64_t nextPlaceholder_ = uint64_t(1) << 40;
};

/// An attention problem as the command line gives it.
struct AttentionShape {
  int64_t batch, heads, kvHeads, seq, keys, headDim, pageSize; ///< pageSize 0: dense
  bool causal;
};

/// Dense: q, k, v and out [batch, heads, seq, D] (PyTorch's layout), the
/// mask top-left. Paged: q and out [batch, seq, heads, D], k and v a cache
/// of `keys` keys a sequence in pages ([pages, page, heads, D]) in a
/// shuffled order, the mask bottom-right (decoding's and chunked
/// prefill's).
ops::AttentionArgs attentionArgs(Operands &operands, DType dtype, const AttentionShape &a) {
  ops::AttentionArgs args;
  const bool paged = a.pageSize > 0;
  const std::vector<int64_t> rows = paged ? std::vector<int64_t>{a.batch, a.seq, a.heads, a.headDim}
                                          : std::vector<int64_t>{a.batch, a.heads, a.seq, a.headDim};
  std::vector<int64_t> cache{a.batch, a.kvHeads, a.keys, a.headDim};
  if (paged) {
    const int64_t perSequence = cdiv(a.keys, a.pageSize);
    std::vector<int32_t> table(a.batch * perSequence), lengths(a.batch, static_cast<int32_t>(a.keys));
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), std::mt19937(5));
    cache = {a.batch * perSequence, a.pageSize, a.kvHeads, a.headDim};
    args.block_table = operands.indices(table, {a.batch, perSequence});
    args.cache_seqlens = operands.indices(lengths, {a.batch});
    args.check_indices = false; // (made here; a dry run has none to read)
  }
  args.q = operands.make(dtype, rows, 1, true);
  args.k = operands.make(dtype, cache, 2, true);
  args.v = operands.make(dtype, cache, 3, true);
  args.out = operands.make(dtype, rows, 4, false);
  args.layout = paged ? ops::AttentionLayout::bshd : ops::AttentionLayout::bhsd;
  args.mask = !a.causal ? ops::AttentionMask::none
              : paged   ? ops::AttentionMask::causal_bottom_right
                        : ops::AttentionMask::causal_top_left;
  return args;
}

/// A (grouped) matmul's operand b for `groups` groups (0: a plain
/// matmul's [K, N]): [K, N] row-major, or for fp8 the transpose of [N, K]
/// weights (K-major, as fp8 tensor cores read it).
ops::TensorView matmulB(Operands &operands, DType dtype, int64_t groups, int64_t n, int64_t k) {
  const bool kMajor = is_float8(dtype);
  std::vector<int64_t> stored = kMajor ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
  if (groups)
    stored.insert(stored.begin(), groups);
  ops::TensorView b = operands.make(dtype, stored, 2, true);
  if (kMajor) {
    b.shape = groups ? std::vector<int64_t>{groups, k, n} : std::vector<int64_t>{k, n};
    b.strides = groups ? std::vector<int64_t>{n * k, 1, k} : std::vector<int64_t>{1, k};
  }
  return b;
}

/// Ragged group sizes summing to m (a fixed seed: the same problem every
/// run), as cumulative int32 ends.
std::vector<int32_t> raggedEnds(int64_t groups, int64_t m) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> weight(0.25, 1.75);
  std::vector<double> weights(groups);
  for (double &w : weights)
    w = weight(rng);
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<int32_t> ends(groups);
  double sum = 0;
  for (int64_t g = 0; g < groups; ++g)
    ends[g] = static_cast<int32_t>(g + 1 == groups ? m : std::llround((sum += weights[g]) / total * m));
  return ends;
}

/// How many configs a dry run compiled.
int compiledCount(const autotune::Report &report) {
  return static_cast<int>(std::count_if(report.configs.begin(), report.configs.end(),
                                        [](const autotune::Measured &m) { return m.rejected == "not timed (dry run)"; }));
}

nlohmann::json reportJson(const autotune::Task &task, const autotune::Report &report) {
  nlohmann::json configs = nlohmann::json::array();
  for (const auto &m : report.configs)
    configs.push_back({{"config", m.config.str()},
                       {"ms", m.rejected.empty() ? nlohmann::json(m.ms) : nlohmann::json()},
                       {"rejected", m.rejected},
                       {"from_store", m.from_store},
                       {"outliers", m.outliers},
                       {"registers", m.compiled.registers},
                       {"spill_stores", m.compiled.spill_stores},
                       {"shared_memory", m.compiled.shared_memory}});
  return {{"op", task.op},
          {"key", task.key},
          {"store_key", report.store_key},
          {"best", report.best ? nlohmann::json(report.best->str()) : nlohmann::json()},
          {"best_ms", report.best_ms},
          {"seconds", report.seconds},
          {"compile_seconds", report.compile_seconds},
          {"space", report.space},
          {"pruned", report.pruned},
          {"compiled", report.compiled},
          {"timed", report.timed},
          {"configs", configs}};
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    TuningStore store;
    if (!args.empty() && args[0] == "export") {
      std::string text = store.export_best();
      if (args.size() < 2) {
        std::cout << text << std::flush;
        if (!std::cout)
          fail("cannot write the export to stdout");
        return 0;
      }
      std::ofstream out(args[1], std::ios::trunc);
      out << text;
      out.close();
      if (!out)
        fail("cannot write the export to " + args[1]);
      return 0;
    }
    if (!args.empty() && args[0] == "import") {
      if (args.size() < 2)
        fail("import needs a file");
      std::ifstream in(args[1]);
      if (!in)
        fail("cannot read " + args[1]);
      std::stringstream text;
      text << in.rdbuf();
      store.import_best(text.str(), autotune::config_text_problem);
      std::printf("imported into %s\n", store.path().c_str());
      return 0;
    }

    std::string op, dtypeName, precisionName = "ieee", arch = "sm_90a";
    int64_t rows = 0, cols = 0, m = 0, n = 0, k = 0, groups = 0;
    std::string scales = "tensor";
    int64_t batch = 0, heads = 0, kvHeads = 0, seq = 0, seqK = 0, headDim = 0, pageSize = 0;
    bool bias = false, causal = false;
    std::string activation = "none";
    std::vector<Config> only;
    autotune::Options options;
    bool json = false, dryRun = false;
    for (size_t i = 0; i < args.size(); ++i) {
      auto value = [&](const std::string &flag) {
        if (i + 1 >= args.size())
          fail(flag + " needs a value");
        return args[++i];
      };
      const std::string &a = args[i];
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      }
      if (a == "--version") {
        std::printf("autotune (Kiln %s)\n", kiln::version());
        return 0;
      } else if (a == "--op") op = value(a);
      else if (a == "--rows") rows = number(a, value(a).c_str());
      else if (a == "--cols") cols = number(a, value(a).c_str());
      else if (a == "--m") m = number(a, value(a).c_str());
      else if (a == "--n") n = number(a, value(a).c_str());
      else if (a == "--k") k = number(a, value(a).c_str());
      else if (a == "--groups") groups = number(a, value(a).c_str());
      else if (a == "--scales") scales = value(a);
      else if (a == "--bias") bias = true;
      else if (a == "--batch") batch = number(a, value(a).c_str());
      else if (a == "--heads") heads = number(a, value(a).c_str());
      else if (a == "--kv-heads") kvHeads = number(a, value(a).c_str());
      else if (a == "--seq") seq = number(a, value(a).c_str());
      else if (a == "--seq-k") seqK = number(a, value(a).c_str());
      else if (a == "--head-dim") headDim = number(a, value(a).c_str());
      else if (a == "--causal") causal = true;
      else if (a == "--page-size") pageSize = number(a, value(a).c_str());
      else if (a == "--config") only.push_back(Config::parse(value(a)));
      else if (a == "--activation") activation = value(a);
      else if (a == "--dtype") dtypeName = value(a);
      else if (a == "--precision") precisionName = value(a);
      else if (a == "--arch") arch = value(a);
      else if (a == "--reps") options.reps = static_cast<int>(number(a, value(a).c_str()));
      else if (a == "--budget-s") options.budget_s = static_cast<double>(number(a, value(a).c_str()));
      else if (a == "--strategy") {
        std::string s = value(a);
        if (s == "exhaustive") options.strategy = autotune::Strategy::exhaustive;
        else if (s == "pattern") options.strategy = autotune::Strategy::pattern;
        else fail("unknown strategy '" + s + "' (exhaustive or pattern)");
      } else if (a == "--force") options.force = true;
      else if (a == "--json") json = true;
      else if (a == "--dry-run") dryRun = true;
      else fail("unknown argument '" + a + "' (see --help)");
    }
    std::map<std::string, ops::Normalization> ops{{"softmax", ops::Normalization::softmax},
                                                  {"log_softmax", ops::Normalization::log_softmax},
                                                  {"layer_norm", ops::Normalization::layer_norm},
                                                  {"rms_norm", ops::Normalization::rms_norm}};
    if (op.empty())
      fail("which op? (--op softmax|log_softmax|layer_norm|rms_norm|matmul|grouped_matmul|attention; see --help)");
    const bool isGrouped = op == "grouped_matmul", isMatmul = op == "matmul" || isGrouped,
               isAttention = op == "attention";
    if (!isMatmul && !isAttention && !ops.count(op))
      fail("unknown op '" + op + "' (softmax, log_softmax, layer_norm, rms_norm, matmul, grouped_matmul, attention)");
    if (isMatmul && (!m || !n || !k))
      fail("--m, --n and --k give a matmul's problem");
    if (isGrouped != (groups > 0))
      fail(isGrouped ? "--groups gives a grouped_matmul's number of groups" : "--groups is for grouped_matmul");
    if (isGrouped && bias)
      fail("--bias is for matmul");
    if (isAttention && (!batch || !heads || !seq || !headDim))
      fail("--batch, --heads, --seq and --head-dim give attention's problem");
    if (pageSize && !isAttention)
      fail("--page-size is for attention");
    if (!isMatmul && !isAttention && (!rows || !cols))
      fail("--rows and --cols give the problem");
    if (dtypeName.empty())
      dtypeName = isAttention ? "bf16" : "f32";
    std::map<std::string, ops::Activation> activations{{"none", ops::Activation::none},
                                                       {"relu", ops::Activation::relu},
                                                       {"gelu", ops::Activation::gelu},
                                                       {"silu", ops::Activation::silu}};
    if (!activations.count(activation))
      fail("unknown --activation '" + activation + "' (none, relu, gelu, silu)");
    std::map<std::string, DType> dtypes{{"f32", DType::f32},         {"f16", DType::f16},
                                        {"bf16", DType::bf16},       {"fp8e4m3", DType::f8e4m3},
                                        {"fp8e5m2", DType::f8e5m2}};
    if (!dtypes.count(dtypeName) || (is_float8(dtypes[dtypeName]) && !isMatmul))
      fail("unsupported --dtype '" + dtypeName + "' (f32, f16, bf16; fp8e4m3, fp8e5m2 for matmuls)");
    DType dtype = dtypes[dtypeName];
    if (scales != "tensor" && scales != "rows" && !(scales == "blocks" && !isGrouped))
      fail("unknown --scales '" + scales + "' (tensor, rows" + (isGrouped ? ")" : ", blocks)"));
    if (scales != "tensor" && !is_float8(dtype))
      fail("--scales is for fp8 operands");
    std::map<std::string, Precision> precisions{
        {"ieee", Precision::ieee}, {"tf32", Precision::tf32}, {"tf32x3", Precision::tf32x3}};
    if (!precisions.count(precisionName))
      fail("unknown --precision '" + precisionName + "' (ieee, tf32, tf32x3)");
    if (precisionName != "ieee" && (!isMatmul || dtype != DType::f32))
      fail("--precision is for matmuls of f32 operands");

    bool gpu = Device::cuda_available() && !std::getenv("KILN_INTERPRET");
    if (!gpu && !dryRun)
      fail("no GPU (" + (Device::cuda_unavailable_reason().empty() ? std::string("KILN_INTERPRET is set")
                                                                   : Device::cuda_unavailable_reason()) +
           "); --dry-run compiles the candidates without one");
    Device device = gpu ? Device::cuda(0) : Device::interp();
    Stream stream(device);
    Operands operands(device, dryRun);
    autotune::Task task;
    const std::string target = gpu ? target_for(device) : arch;
    if (isAttention) {
      task = ops::attention_tuning_task(
          attentionArgs(operands, dtype, {batch, heads, kvHeads ? kvHeads : heads, seq, seqK ? seqK : seq, headDim,
                                          pageSize, causal}),
          stream, target);
    } else if (isMatmul) {
      // fp8: bf16 out, f32 scales of the tensors, of a's rows and b's
      // columns (each group's), or blocks.
      const DType outType = is_float8(dtype) ? DType::bf16 : dtype;
      const int64_t kBlocks = cdiv(k, 128), nBlocks = cdiv(n, 128);
      const std::vector<int64_t> scaleA = scales == "rows" ? std::vector<int64_t>{m}
                                          : scales == "blocks" ? std::vector<int64_t>{m, kBlocks}
                                                               : std::vector<int64_t>{1};
      const std::vector<int64_t> scaleB = scales == "rows" ? (isGrouped ? std::vector<int64_t>{groups, n}
                                                                         : std::vector<int64_t>{n})
                                          : scales == "blocks" ? std::vector<int64_t>{kBlocks, nBlocks}
                                                               : std::vector<int64_t>{1};
      ops::MatmulArgs margs;
      margs.a = operands.make(dtype, {m, k}, 1, true);
      margs.b = matmulB(operands, dtype, groups, n, k);
      margs.out = operands.make(outType, {m, n}, 3, false);
      margs.activation = activations[activation];
      margs.precision = precisions[precisionName];
      if (bias)
        margs.bias = operands.make(outType, {n}, 4, true);
      if (is_float8(dtype)) {
        margs.scale_a = operands.make(DType::f32, scaleA, 5, true);
        margs.scale_b = operands.make(DType::f32, scaleB, 6, true);
      }
      if (isGrouped) {
        ops::GroupedMatmulArgs gargs;
        gargs.a = margs.a, gargs.b = margs.b, gargs.out = margs.out;
        gargs.offsets = operands.indices(raggedEnds(groups, m), {groups});
        gargs.activation = margs.activation, gargs.precision = margs.precision;
        gargs.scale_a = margs.scale_a, gargs.scale_b = margs.scale_b;
        task = ops::grouped_matmul_tuning_task(gargs, stream, target);
      } else {
        task = ops::tuning_task(margs, stream, target);
      }
    } else {
      ops::NormalizationArgs nargs;
      nargs.x = operands.make(dtype, {rows, cols}, 1, true);
      nargs.y = operands.make(dtype, {rows, cols}, 2, false);
      nargs.eps = 1e-5;
      if (op == "layer_norm" || op == "rms_norm")
        nargs.weight = operands.make(dtype, {cols}, 3, true);
      if (op == "layer_norm")
        nargs.bias = operands.make(dtype, {cols}, 4, true);
      task = ops::tuning_task(ops[op], nargs, stream, target);
    }
    if (!only.empty()) {
      // Axes a --config leaves out take their first value (SPLIT_K=1, ...);
      // a config that is still no point of the space is a mistake to name,
      // not a silent empty run.
      for (Config &c : only) {
        for (const auto &[axis, values] : task.space.axes())
          if (!c.has(axis))
            c.set(axis, values.front());
        if (std::string why = autotune::space_problem(task.space, c); !why.empty())
          fail("--config " + c.str() + " is not a config " + op + " tunes: " + why);
      }
      task.space.constraint("not among the --config configs", [only](const Config &c) {
        return std::find(only.begin(), only.end(), c) != only.end();
      });
    }
    if (!json)
      options.progress = &std::cerr;

    autotune::Report report = dryRun ? autotune::compile_all(task, options) : autotune::tune(task, stream, options, store);
    std::string failure;
    if (dryRun && compiledCount(report) == 0)
      failure = "no config compiled";
    else if (!dryRun && !report.best)
      failure = "no config ran correctly";
    else if (!dryRun && !report.stored)
      failure = "the tuning store " + store.path() + " was not written (the reason is above)";
    if (json) {
      std::cout << reportJson(task, report).dump(1) << "\n";
    } else {
      std::printf("%s %s (%s) on %s%s\n", op.c_str(), task.key.c_str(), dtypeName.c_str(),
                  gpu ? device.name().c_str() : ("no GPU, compiled for " + arch).c_str(), dryRun ? " (dry run)" : "");
      autotune::print_report(std::cout, task, report);
      if (report.best)
        std::printf("best: %s (%.4f ms)%s\n", report.best->str().c_str(), report.best_ms,
                    report.stored ? (", stored in " + store.path()).c_str() : "");
    }
    if (!failure.empty()) {
      std::fflush(stdout);
      fail(failure);
    }
    return 0;
  } catch (const std::exception &e) {
    fail(e.what());
  }
}
