//===- Tuner.cpp - search, parallel compiles, timing, the store ------------===//

#include <kiln/autotune.h>
#include <kiln/cache.h>
#include <kiln/error.h>
#include <kiln/version.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <thread>

namespace kiln::autotune {

int64_t bucket(int64_t n) {
  if (n > (int64_t(1) << 62)) // no larger power of two fits: doubling would overflow
    return n;
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

std::string config_text_problem(const std::string &text) {
  try {
    return Config::parse(text).values().empty() ? "it names no value" : "";
  } catch (const std::exception &e) {
    return e.what();
  }
}

std::string space_problem(const ConfigSpace &space, const Config &config) {
  const auto &axes = space.axes();
  for (const auto &[name, value] : config.values())
    if (std::none_of(axes.begin(), axes.end(), [&](const auto &axis) { return axis.first == name; }))
      return "'" + name + "' is not one of the axes tuned";
  for (const auto &[name, values] : axes) {
    if (!config.has(name))
      return "it gives no value for " + name;
    const int64_t value = config.get(name, 0);
    if (std::find(values.begin(), values.end(), value) == values.end()) {
      std::string listed;
      for (int64_t v : values)
        listed += (listed.empty() ? "" : ", ") + std::to_string(v);
      return name + "=" + std::to_string(value) + " is not among the values tuned (" + listed + ")";
    }
  }
  return space.check(config);
}

std::string store_key(const Task &task, const Device &device) {
  std::string where = device.kind() == DeviceKind::interp
                          ? std::string("interpreter")
                          : device.name() + "|sm_" + std::to_string(device.compute_capability()) + "|driver " +
                                std::to_string(Device::cuda_driver_version());
  return task.op + "|" + task.key + "|" + where + "|kiln " + version();
}

std::optional<Config> tuned(const Task &task, const Device &device, const TuningStore &store) {
  auto entry = store.find(store_key(task, device));
  if (!entry)
    return std::nullopt;
  std::string why = config_text_problem(entry->best);
  Config config;
  if (why.empty()) {
    config = Config::parse(entry->best);
    why = space_problem(task.space, config);
  }
  if (!why.empty()) {
    warn_once("ignoring the tuned config '" + entry->best + "' of " + task.op + " " + task.key +
              " in the tuning store " + store.path() + ": " + why);
    return std::nullopt;
  }
  return config;
}

Mode mode_from_environment() {
  const char *value = std::getenv("KILN_AUTOTUNE");
  std::string v = value ? value : "";
  if (v == "quick")
    return Mode::quick;
  if (v == "full")
    return Mode::full;
  return Mode::off;
}

bool print_from_environment() {
  const char *value = std::getenv("KILN_PRINT_AUTOTUNING");
  return value && *value && std::string(value) != "0";
}

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Compiles configs on a pool of threads. A compile that outlives its
/// timeout is given up on (its thread finishes in the background, holding
/// only this shared state and its own copy of the compile function).
class Compiler {
public:
  Compiler(std::function<CompiledKernel(const Config &)> compile, int threads, double timeout_s)
      : state_(std::make_shared<State>()), timeout_s_(timeout_s) {
    state_->compile = std::move(compile);
    threads_ = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  }

  /// Queues configs not queued before.
  void submit(const std::vector<Config> &configs) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (const Config &c : configs) {
      std::string key = c.str();
      if (state_->jobs.count(key))
        continue;
      Job job;
      job.config = c;
      state_->jobs[key] = std::move(job);
      state_->queue.push_back(key);
    }
    while (started_ < threads_ && !state_->queue.empty()) {
      ++started_;
      std::thread([state = state_] { work(state); }).detach();
    }
    state_->ready.notify_all();
  }

  /// Waits for a config's compile: its result, or the error text.
  std::pair<CompiledKernel, std::string> result(const Config &config) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    Job &job = state_->jobs.at(config.str());
    while (!job.done) {
      if (job.started && since(job.start) > timeout_s_)
        return {CompiledKernel{}, "compile timed out after " + std::to_string(static_cast<int>(timeout_s_)) + " s"};
      state_->finished.wait_for(lock, std::chrono::milliseconds(50));
    }
    return {job.compiled, job.error};
  }

  /// Seconds from the first compile's start to the last one's end.
  double seconds() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->anyDone ? std::chrono::duration<double>(state_->lastEnd - state_->firstStart).count() : 0;
  }

  ~Compiler() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->queue.clear(); // idle workers stop; running ones finish alone
    state_->closing = true;
    state_->ready.notify_all();
  }

private:
  struct Job {
    Config config;
    bool started = false, done = false;
    Clock::time_point start;
    CompiledKernel compiled;
    std::string error;
  };
  struct State {
    mutable std::mutex mutex;
    std::condition_variable ready, finished;
    std::map<std::string, Job> jobs;
    std::vector<std::string> queue;
    bool closing = false;
    bool anyStarted = false, anyDone = false;
    Clock::time_point firstStart, lastEnd;
    std::function<CompiledKernel(const Config &)> compile;
  };

  static void work(std::shared_ptr<State> state) {
    for (;;) {
      std::string key;
      Config config;
      {
        std::unique_lock<std::mutex> lock(state->mutex);
        state->ready.wait_for(lock, std::chrono::seconds(1), [&] { return state->closing || !state->queue.empty(); });
        if (state->queue.empty())
          return; // nothing left (more work starts new workers)
        key = state->queue.front();
        state->queue.erase(state->queue.begin());
        Job &job = state->jobs[key];
        job.started = true;
        job.start = Clock::now();
        if (!state->anyStarted)
          state->firstStart = job.start;
        state->anyStarted = true;
        config = job.config;
      }
      CompiledKernel compiled;
      std::string error;
      try {
        compiled = state->compile(config);
      } catch (const std::exception &e) {
        error = e.what();
      }
      std::lock_guard<std::mutex> lock(state->mutex);
      Job &job = state->jobs[key];
      job.compiled = std::move(compiled);
      job.error = std::move(error);
      job.done = true;
      state->anyDone = true;
      state->lastEnd = Clock::now();
      state->finished.notify_all();
    }
  }

  std::shared_ptr<State> state_; ///< (its mutex guards the rest: seconds() locks it)
  double timeout_s_;
  int threads_ = 1, started_ = 0;
};

/// Times configs on the GPU (or through options.measure).
class Timer {
public:
  Timer(const Task &task, const Stream &stream, const Options &options) : task_(task), stream_(stream), options_(options) {
    if (!options.measure && options.flush_l2 && stream.device().kind() == DeviceKind::cuda)
      flush_ = Buffer::allocate(stream.device(), size_t(256) << 20); // above any L2
  }

  /// Starts the task's `prepare`, once, alongside the compiles. Its errors
  /// are left for `check` to meet and report.
  void prepare() {
    if (task_.prepare && !options_.measure && !prepared_.valid())
      prepared_ = std::async(std::launch::async, [prepare = task_.prepare] {
        try {
          prepare();
        } catch (const std::exception &) {
        }
      });
  }

  /// Fills `m` with the config's times, or its rejection.
  void time(Measured &m) {
    if (options_.measure) {
      m.ms = m.ms_min = m.ms_max = options_.measure(m.config);
      return;
    }
    if (prepared_.valid())
      prepared_.wait();
    try {
      for (int i = 0; i < std::max(1, options_.warmup); ++i) {
        if (task_.restore)
          task_.restore(stream_);
        task_.run(m.config, stream_);
      }
      stream_.synchronize();
      if (task_.check) {
        std::string wrong = task_.check(m.config);
        if (!wrong.empty()) {
          m.rejected = "wrong results: " + wrong;
          return;
        }
      }
      std::vector<double> times;
      Event start(stream_.device()), stop(stream_.device());
      for (int i = 0; i < std::max(1, options_.reps); ++i) {
        if (task_.restore)
          task_.restore(stream_);
        if (flush_.valid()) {
          flush_.fill_bytes(static_cast<uint8_t>(i));
          Stream(stream_.device()).synchronize();
        }
        start.record(stream_);
        task_.run(m.config, stream_);
        stop.record(stream_);
        stop.synchronize();
        times.push_back(stop.elapsed_ms(start));
      }
      std::sort(times.begin(), times.end());
      m.ms = times[times.size() / 2];
      m.ms_min = times.front();
      m.ms_max = times.back();
      m.outliers = static_cast<int>(std::count_if(times.begin(), times.end(), [&](double t) { return t > 2 * m.ms; }));
    } catch (const Error &e) {
      m.rejected = std::string("failed to run: ") + e.what();
    }
  }

private:
  const Task &task_;
  Stream stream_;
  const Options &options_;
  Buffer flush_;
  std::future<void> prepared_;
};

/// The search: evaluates configs (compile in parallel, time in turn),
/// remembering every result.
class Search {
public:
  Search(const Task &task, const Stream &stream, const Options &options, const std::map<std::string, double> &known,
         Report &report)
      : options_(options), known_(known), report_(report), timer_(task, stream, options),
        compiler_(task.compile ? task.compile : [](const Config &) { return CompiledKernel{}; },
                  options.compile_threads, options.compile_timeout_s),
        start_(Clock::now()) {}

  bool outOfTime() const { return options_.budget_s > 0 && since(start_) > options_.budget_s; }

  /// Results of `configs` (valid ones), compiled together first.
  std::vector<const Measured *> evaluate(const std::vector<Config> &configs) {
    std::vector<Config> fresh;
    for (const Config &c : configs)
      if (!done_.count(c.str()) && !(known_.count(c.str()) && !options_.force))
        fresh.push_back(c);
    compiler_.submit(fresh);
    if (!fresh.empty())
      timer_.prepare();
    std::vector<size_t> indices;
    for (const Config &c : configs) {
      std::string key = c.str();
      if (!done_.count(key)) {
        if (outOfTime())
          break;
        Measured m;
        m.config = c;
        if (auto it = known_.find(key); it != known_.end() && !options_.force) {
          m.ms = m.ms_min = m.ms_max = it->second;
          m.from_store = true;
        } else {
          auto [compiled, error] = compiler_.result(c);
          m.compiled = compiled;
          ++report_.compiled;
          if (!error.empty())
            m.rejected = error.rfind("compile timed out", 0) == 0 ? error : "compile failed: " + error;
          if (m.rejected.empty()) {
            timer_.time(m);
            if (m.rejected.empty())
              ++report_.timed;
          }
        }
        report_.configs.push_back(m);
        done_[key] = report_.configs.size() - 1;
        if (options_.progress)
          *options_.progress << "\r  " << ++evaluated_ << " configs evaluated" << std::flush;
      }
      indices.push_back(done_[key]);
    }
    report_.compile_seconds = compiler_.seconds();
    std::vector<const Measured *> out; // pointers only now: the vector grew above
    for (size_t i : indices)
      out.push_back(&report_.configs[i]);
    return out;
  }

private:
  const Options &options_;
  const std::map<std::string, double> &known_;
  Report &report_;
  Timer timer_;
  Compiler compiler_;
  Clock::time_point start_;
  std::map<std::string, size_t> done_;
  int evaluated_ = 0;
};

double timeOf(const Measured *m) { return m && m->rejected.empty() ? m->ms : 1e300; }

/// Pattern search over the axes' value indices: from the fastest of the
/// task's seeds and the middle of each axis, try neighbours a step away
/// along every axis; move to the best improvement, else halve the steps;
/// stop at step 1 without improvement.
void patternSearch(const Task &task, Search &search) {
  const auto &axes = task.space.axes();
  std::vector<int> point(axes.size()), step(axes.size());
  for (size_t a = 0; a < axes.size(); ++a) {
    point[a] = static_cast<int>(axes[a].second.size() / 2);
    step[a] = std::max<int>(1, static_cast<int>(axes[a].second.size() / 4));
  }
  auto configOf = [&](const std::vector<int> &p) {
    Config c;
    for (size_t a = 0; a < axes.size(); ++a)
      c.set(axes[a].first, axes[a].second[p[a]]);
    return c;
  };
  // The point of a config whose values all lie on the axes.
  auto pointOf = [&](const Config &c) -> std::optional<std::vector<int>> {
    std::vector<int> p(axes.size());
    for (size_t a = 0; a < axes.size(); ++a) {
      if (!c.has(axes[a].first))
        return std::nullopt;
      auto it = std::find(axes[a].second.begin(), axes[a].second.end(), c[axes[a].first]);
      if (it == axes[a].second.end())
        return std::nullopt;
      p[a] = static_cast<int>(it - axes[a].second.begin());
    }
    return p;
  };
  // Starting points: the valid seeds and the middle point (else the first
  // valid config), timed together; the search starts from the fastest.
  std::vector<std::vector<int>> starts;
  for (const Config &c : task.seeds)
    if (auto p = pointOf(c); p && task.space.check(c).empty() && std::find(starts.begin(), starts.end(), *p) == starts.end())
      starts.push_back(*p);
  if (task.space.check(configOf(point)).empty())
    starts.push_back(point);
  if (starts.empty()) {
    std::vector<Config> valid = task.space.valid();
    if (valid.empty())
      return;
    starts.push_back(*pointOf(valid.front()));
  }
  std::vector<Config> startConfigs;
  for (const auto &p : starts)
    startConfigs.push_back(configOf(p));
  std::vector<const Measured *> startTimes = search.evaluate(startConfigs);
  double best = 1e300;
  for (size_t i = 0; i < startTimes.size(); ++i)
    if (i == 0 || timeOf(startTimes[i]) < best) {
      best = timeOf(startTimes[i]);
      point = starts[i];
    }
  for (;;) {
    if (search.outOfTime())
      return;
    std::vector<std::vector<int>> neighbours;
    for (size_t a = 0; a < axes.size(); ++a)
      for (int dir : {-1, 1}) {
        std::vector<int> n = point;
        n[a] += dir * step[a];
        if (n[a] >= 0 && n[a] < static_cast<int>(axes[a].second.size()) && task.space.check(configOf(n)).empty())
          neighbours.push_back(n);
      }
    std::vector<Config> configs;
    for (const auto &n : neighbours)
      configs.push_back(configOf(n));
    std::vector<const Measured *> results = search.evaluate(configs);
    int winner = -1;
    for (size_t i = 0; i < results.size(); ++i)
      if (timeOf(results[i]) < best) {
        best = timeOf(results[i]);
        winner = static_cast<int>(i);
      }
    if (winner >= 0) {
      point = neighbours[winner];
      continue;
    }
    bool smaller = false;
    for (int &s : step)
      if (s > 1) {
        s /= 2;
        smaller = true;
      }
    if (!smaller)
      return;
  }
}

/// The space's valid configs; the pruned ones go into the report with
/// their reasons.
std::vector<Config> prune(const Task &task, Report &report) {
  std::vector<ConfigSpace::Rejected> rejected;
  std::vector<Config> valid = task.space.valid({}, &rejected);
  report.space = static_cast<int>(valid.size() + rejected.size());
  report.pruned = static_cast<int>(rejected.size());
  for (const auto &r : rejected)
    report.configs.push_back(Measured{r.config, "pruned: " + r.reason});
  return valid;
}

} // namespace

Report tune(const Task &task, const Stream &stream, const Options &options, const TuningStore &store) {
  auto t0 = Clock::now();
  Report report;
  report.store_key = store_key(task, stream.device());
  std::vector<Config> valid = prune(task, report);
  std::map<std::string, double> known;
  if (auto entry = store.find(report.store_key))
    known = entry->measured;

  {
    Search search(task, stream, options, known, report);
    if (options.strategy == Strategy::exhaustive)
      search.evaluate(valid);
    else
      patternSearch(task, search);
  }
  if (options.progress)
    *options.progress << "\n";

  TuningStore::Entry entry;
  for (const Measured &m : report.configs) {
    if (!m.rejected.empty())
      continue;
    entry.measured[m.config.str()] = m.ms;
    if (!report.best || m.ms < report.best_ms) {
      report.best = m.config;
      report.best_ms = m.ms;
    }
  }
  if (report.best) {
    entry.best = report.best->str();
    entry.best_ms = report.best_ms;
    report.stored = store.record(report.store_key, entry);
  }
  report.seconds = since(t0);
  return report;
}

Report compile_all(const Task &task, const Options &options) {
  auto t0 = Clock::now();
  Report report;
  if (!task.compile)
    throw Error("the task '" + task.op + "' has nothing to compile (no GPU target)");
  std::vector<Config> valid = prune(task, report);
  Compiler compiler(task.compile, options.compile_threads, options.compile_timeout_s);
  compiler.submit(valid);
  for (const Config &c : valid) {
    auto [compiled, error] = compiler.result(c);
    Measured m{c};
    m.compiled = compiled;
    if (!error.empty())
      m.rejected = error.rfind("compile timed out", 0) == 0 ? error : "compile failed: " + error;
    else
      m.rejected = "not timed (dry run)";
    ++report.compiled;
    report.configs.push_back(m);
    if (options.progress)
      *options.progress << "\r  " << report.compiled << "/" << valid.size() << " compiled" << std::flush;
  }
  if (options.progress)
    *options.progress << "\n";
  report.compile_seconds = compiler.seconds();
  report.seconds = since(t0);
  return report;
}

void print_report(std::ostream &out, const Task &task, const Report &report) {
  std::vector<const Measured *> rows;
  std::map<std::string, int> pruned; // reason -> configs
  for (const Measured &m : report.configs) {
    if (m.rejected.rfind("pruned: ", 0) == 0)
      ++pruned[m.rejected.substr(8)];
    else
      rows.push_back(&m);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Measured *a, const Measured *b) {
    if (a->rejected.empty() != b->rejected.empty())
      return a->rejected.empty();
    return a->rejected.empty() && a->ms < b->ms;
  });
  char line[512];
  std::snprintf(line, sizeof line, "%-60s %10s %12s %5s %7s %7s  %s\n", "config", "ms", task.flops > 0 ? "TFLOP/s" : "TB/s",
                "regs", "spills", "smem", "");
  out << line;
  for (const Measured *m : rows) {
    std::string config = m->config.str();
    if (!m->rejected.empty()) {
      bool compiled = m->compiled.registers > 0; // a dry run's candidates: ptxas's numbers, no time
      std::snprintf(line, sizeof line, "%-60s %10s %12s %5s %7s %7s  %s\n", config.c_str(), "-", "-",
                    compiled ? std::to_string(m->compiled.registers).c_str() : "-",
                    compiled ? std::to_string(m->compiled.spill_stores).c_str() : "-",
                    compiled ? std::to_string(m->compiled.shared_memory).c_str() : "-", m->rejected.c_str());
    } else {
      double rate = task.flops > 0 ? task.flops / (m->ms * 1e-3) / 1e12 : task.bytes / (m->ms * 1e-3) / 1e12;
      std::string note = m->from_store ? "(stored)" : m->outliers ? std::to_string(m->outliers) + " outlier runs" : "";
      if (report.best && m->config == *report.best)
        note = "best " + note;
      std::snprintf(line, sizeof line, "%-60s %10.4f %12.3f %5d %7d %7d  %s\n", config.c_str(), m->ms, rate,
                    m->compiled.registers, m->compiled.spill_stores, m->compiled.shared_memory, note.c_str());
    }
    out << line;
  }
  for (const auto &[reason, count] : pruned)
    out << "pruned " << count << ": " << reason << "\n";
  std::snprintf(line, sizeof line,
                "%d configs in the space, %d pruned, %d compiled (%.2f s), %d timed; %.2f s in all\n", report.space,
                report.pruned, report.compiled, report.compile_seconds, report.timed, report.seconds);
  out << line;
}

} // namespace kiln::autotune
