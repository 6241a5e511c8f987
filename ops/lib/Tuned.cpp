//===- Tuned.cpp - what the ops share with the autotuner ------------------===//

#include "ops/lib/Tuned.h"

#include "ops/lib/Space.h"

#include <kiln/numeric.h>

#include <cstring>
#include <iostream>
#include <map>
#include <mutex>

namespace kiln::ops {

/// Every element of a view as doubles, in row-major order of its shape.
std::vector<double> contents(const TensorView &v, const Device &device) {
  Arg extent = arg_of(v);
  std::vector<uint8_t> raw(extent.bytes());
  copy_to_host(device, v.address, raw.data(), raw.size());
  std::vector<int64_t> strides = v.effective_strides(), at(v.shape.size(), 0);
  std::vector<double> values;
  values.reserve(v.numel());
  const size_t width = size_in_bytes(v.dtype);
  for (int64_t i = 0; i < v.numel(); ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < at.size(); ++d)
      offset += at[d] * strides[d];
    const uint8_t *at_bytes = raw.data() + offset * width;
    if (v.dtype == DType::f32 || v.dtype == DType::bf16) { // the common cases, without the general decoder
      uint32_t bits = 0;
      if (v.dtype == DType::f32)
        std::memcpy(&bits, at_bytes, 4);
      else
        bits = uint32_t(at_bytes[0] | at_bytes[1] << 8) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      values.push_back(f);
    } else {
      uint64_t bits = 0;
      std::memcpy(&bits, at_bytes, width);
      values.push_back(decode_float(v.dtype, bits));
    }
    for (size_t d = at.size(); d-- > 0;) { // the next index, last dimension fastest
      if (++at[d] < v.shape[d])
        break;
      at[d] = 0;
    }
  }
  return values;
}

bool overlaps(const TensorView &a, const TensorView &b) {
  if (!a.address || !b.address)
    return false;
  uint64_t aEnd = a.address + arg_of(a).bytes(), bEnd = b.address + arg_of(b).bytes();
  return a.address < bEnd && b.address < aEnd;
}

Config chosen_config(const std::string &op, const std::string &key, const Stream &stream, bool tunable,
                     const std::function<autotune::Task()> &make_task) {
  static std::mutex mutex;
  static std::map<std::string, Config> chosen; // by op, problem and device: no driver call on a repeat
  autotune::Task probe;
  probe.op = op;
  probe.key = key;
  const Device &device = stream.device();
  const std::string memo = op + "|" + key + "|" + std::to_string(static_cast<int>(device.kind())) + ":" +
                           std::to_string(device.ordinal());
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = chosen.find(memo); it != chosen.end())
      return it->second;
  }
  TuningStore store;
  Config config;
  std::string source = "defaults";
  if (auto entry = store.find(autotune::store_key(probe, device))) {
    config = Config::parse(entry->best);
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
