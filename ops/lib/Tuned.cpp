//===- Tuned.cpp - what the ops share with the autotuner ------------------===//

#include "ops/lib/Tuned.h"

#include "ops/lib/Views.h"

#include <iostream>
#include <map>
#include <mutex>
#include <optional>

namespace kiln::ops {

bool overlaps(const TensorView &a, const TensorView &b) {
  if (!a.address || !b.address)
    return false;
  uint64_t aEnd = a.address + arg_of(a).bytes(), bEnd = b.address + arg_of(b).bytes();
  return a.address < bEnd && b.address < aEnd;
}

Config chosen_config(const std::string &op, const std::string &key, const Stream &stream, bool tunable,
                     const std::function<ConfigSpace()> &space, const std::function<autotune::Task()> &make_task) {
  static std::mutex mutex;
  static std::map<std::string, Config> chosen; // by op, problem and device: no driver call on a repeat
  const Device &device = stream.device();
  const std::string memo = op + "|" + key + "|" + std::to_string(static_cast<int>(device.kind())) + ":" +
                           std::to_string(device.ordinal());
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = chosen.find(memo); it != chosen.end())
      return it->second;
  }
  TuningStore store;
  autotune::Task probe;
  probe.op = op;
  probe.key = key;
  probe.space = space();
  Config config;
  std::string source = "defaults";
  if (std::optional<Config> stored = autotune::tuned(probe, device, store)) {
    config = *stored;
    source = "tuned earlier";
  } else if (autotune::Mode mode = autotune::mode_from_environment();
             mode != autotune::Mode::off && device.kind() == DeviceKind::cuda && tunable) {
    autotune::Options options;
    options.strategy = mode == autotune::Mode::quick ? autotune::Strategy::pattern : autotune::Strategy::exhaustive;
    options.budget_s = mode == autotune::Mode::quick ? 2 : 0;
    autotune::Task task = make_task();
    autotune::Report report = autotune::tune(task, stream, options, store);
    if (autotune::print_from_environment())
      autotune::print_report(std::cerr, task, report);
    if (report.best) {
      config = *report.best;
      source = "tuned now";
    }
  }
  if (autotune::print_from_environment())
    std::cerr << "kiln: " << op << " " << key << ": config " << (config.values().empty() ? "default" : config.str())
              << " (" << source << ")\n";
  std::lock_guard<std::mutex> lock(mutex);
  chosen.emplace(memo, config);
  return config;
}

} // namespace kiln::ops
