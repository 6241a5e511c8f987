// The autotuner: searches a kernel's config space on the GPU, keeps every
// measurement in the tuning store (KILN_CACHE_DIR/autotune.json), and gives
// back the best config for later runs and processes. Public header: no MLIR.
//
// A tuning run prunes the space by its constraints (each rejection keeps its
// reason), compiles the candidates in parallel (a thread pool, a timeout per
// config), then times them one after another on the GPU: warm-up runs, the
// L2 flushed before each timed run, in-place outputs restored, CUDA events,
// the median of many runs, outliers counted. Each candidate's result is
// checked before it is timed; a wrong one is rejected.
#pragma once

#include <kiln/compiler.h>
#include <kiln/config.h>
#include <kiln/runtime.h>
#include <kiln/tuning_store.h>

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace kiln::autotune {

/// Sizes in (2^(k-1), 2^k] share a tuned entry: the power of two at or
/// above n (so a new sequence length reuses its neighbours' tuning); 1 for
/// n <= 1, and n itself above 2^62, where no larger power of two fits.
int64_t bucket(int64_t n);

/// Why `text` is not a config (it does not parse as one, or names no
/// value), or "".
std::string config_text_problem(const std::string &text);
/// Why `config` is not a point of `space`: it names something that is not
/// an axis, gives an axis no value or one not on it, or breaks a constraint
/// (that constraint's reason); "" when it is a point.
std::string space_problem(const ConfigSpace &space, const Config &config);

/// What is tuned, and how to run it.
struct Task {
  std::string op;  ///< "softmax", "matmul", ...
  std::string key; ///< the problem, bucketed: "rows=16384,cols=8192,dtype=bf16"
  ConfigSpace space;
  /// Compiles what a config runs, returning what ptxas reported (one kernel:
  /// the largest of several); throws kiln::Error to reject the config. It
  /// runs on worker threads, and a compile past its timeout finishes after
  /// tune() returns: capture by value.
  std::function<CompiledKernel(const Config &)> compile;
  /// Queues one run with a config on the stream.
  std::function<void(const Config &, const Stream &)> run;
  /// Before every run: restores what the op updates in place (optional).
  std::function<void(const Stream &)> restore;
  /// After a config's first run: "" when its outputs are right, else why
  /// not (optional).
  std::function<std::string(const Config &)> check;
  /// Gets `check` ready (optional): compiles and runs what it compares
  /// against. Runs on its own thread while the first configs compile, and
  /// finishes before any config runs; only when something is timed.
  std::function<void()> prepare;
  /// Configs expected to be good (the op's heuristic choice, a cost
  /// model's): pattern search starts from the fastest of them and the
  /// space's middle point.
  std::vector<Config> seeds;
  double bytes = 0, flops = 0; ///< moved and computed per run (throughput)
};

enum class Strategy {
  exhaustive, ///< every valid config
  pattern     ///< pattern search from the best seed: neighbours along each axis, then smaller steps; a fraction of the space
};

struct Options {
  Strategy strategy = Strategy::exhaustive;
  double budget_s = 0;        ///< stop timing new configs after this long (0: no limit)
  int warmup = 2, reps = 20;
  bool flush_l2 = true;
  int compile_threads = 0;    ///< 0: one per core
  double compile_timeout_s = 120;
  bool force = false;         ///< time configs the store already measured again
  std::ostream *progress = nullptr; ///< a progress line while running
  /// Instead of timing on a GPU (tests): a config's time in ms.
  std::function<double(const Config &)> measure;
};

struct Measured {
  Config config;
  std::string rejected;       ///< why it was not timed, or ""
  double ms = 0, ms_min = 0, ms_max = 0;
  int outliers = 0;           ///< runs slower than twice the median
  bool from_store = false;    ///< timed by an earlier run
  CompiledKernel compiled;    ///< registers, spills, shared memory
};

struct Report {
  std::vector<Measured> configs;
  std::optional<Config> best;
  double best_ms = 0;
  double seconds = 0;         ///< the whole run
  double compile_seconds = 0;
  int space = 0, pruned = 0, compiled = 0, timed = 0;
  std::string store_key;
  bool stored = false;        ///< the timings reached the store
};

/// The store key of a task on a device: op, key, the GPU's name, compute
/// capability and driver, and Kiln's version.
std::string store_key(const Task &task, const Device &device);

/// Tunes `task` on the stream's device (or with `options.measure`), records
/// every timing in `store`, and reports.
Report tune(const Task &task, const Stream &stream, const Options &options, const TuningStore &store);

/// Compiles every candidate (in parallel) and reports what ptxas said of
/// each, timing nothing and storing nothing: `autotune --dry-run`.
Report compile_all(const Task &task, const Options &options);

/// The stored best config of `task` on `device`, if it was tuned and is a
/// point of the task's space. A stored config that does not parse or lies
/// outside the space (a store edited by hand or planted: BLOCK_M=1048576)
/// is ignored, with a warning once a process.
std::optional<Config> tuned(const Task &task, const Device &device, const TuningStore &store);

/// KILN_AUTOTUNE: off (use stored results, tune nothing; the default),
/// quick (tune a missing entry with pattern search within 2 s), full (tune a
/// missing entry exhaustively).
enum class Mode { off, quick, full };
Mode mode_from_environment();
/// KILN_PRINT_AUTOTUNING=1: say what library calls tuned and chose.
bool print_from_environment();

/// A table of the report (config, time, throughput, registers, spills,
/// shared memory, why rejected), best first.
void print_report(std::ostream &out, const Task &task, const Report &report);

} // namespace kiln::autotune
