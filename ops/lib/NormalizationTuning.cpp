//===- NormalizationTuning.cpp - the autotuner's view of normalizations ---===//
//
// A normalization's plan space (one pass or two walks, warps, rows per
// program, chunk, layer norm's reduction), keyed by the bucketed problem;
// each plan is checked against the default plan's output. Calls without a
// plan take the tuned one from the store, remembered per process.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/NormalizationPlan.h"
#include "ops/lib/Space.h"

#include <kiln/numeric.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>

namespace kiln::ops {

namespace {

std::string problemKey(Normalization op, const NormalizationArgs &a) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < a.x.shape.size(); ++d)
    rows *= a.x.shape[d];
  int64_t cols = a.x.shape.empty() ? 1 : a.x.shape.back();
  std::string key = "rows=" + std::to_string(autotune::bucket(rows)) + ",cols=" + std::to_string(autotune::bucket(cols)) +
                    ",x=" + std::string(name(a.x.dtype)) + ",y=" + std::string(name(a.y.dtype));
  if (a.weight.address)
    key += ",weight=" + std::string(name(a.weight.dtype));
  if (a.bias.address)
    key += ",bias=" + std::string(name(a.bias.dtype));
  if (a.mean.address || a.rstd.address)
    key += ",stats";
  return key;
}

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

} // namespace

autotune::Task tuning_task(Normalization op, const NormalizationArgs &args, const Stream &stream,
                           const std::string &target) {
  autotune::Task task;
  task.op = name(op);
  task.key = problemKey(op, args);
  const int64_t N = args.x.shape.empty() ? 1 : args.x.shape.back();
  const int64_t whole = next_pow2(N);
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < args.x.shape.size(); ++d)
    rows *= args.x.shape[d];
  std::vector<int64_t> chunks{2048, 4096, 8192, 16384};
  if (std::find(chunks.begin(), chunks.end(), whole) == chunks.end())
    chunks.push_back(whole);
  std::sort(chunks.begin(), chunks.end());
  task.space.axis("ONE_PASS", {1, 0})
      .axis("num_warps", {4, 8, 16, 32})
      .axis("BLOCK_M", {1, 2, 4, 8, 16, 32})
      .axis("BLOCK_N", chunks)
      .constraint("one pass holds the whole row: BLOCK_N is its power of two",
                  [=](const Config &c) { return !c["ONE_PASS"] || c["BLOCK_N"] == whole; })
      .constraint("one pass holds at most 65536 values of a row", [=](const Config &c) { return !c["ONE_PASS"] || whole <= 65536; })
      .constraint("two walks take one row a program", [](const Config &c) { return c["ONE_PASS"] || c["BLOCK_M"] == 1; })
      .constraint("two walks step through a row in chunks shorter than it",
                  [=](const Config &c) { return c["ONE_PASS"] || c["BLOCK_N"] < whole; })
      .constraint("at most 64 values a thread (registers)",
                  [](const Config &c) { return c["BLOCK_M"] * c["BLOCK_N"] <= 64 * 32 * c["num_warps"]; })
      .constraint("every thread holds a value", [](const Config &c) { return c["BLOCK_M"] * c["BLOCK_N"] >= 32 * c["num_warps"]; })
      .constraint("no more rows a program than the problem has",
                  [=](const Config &c) { return c["BLOCK_M"] <= autotune::bucket(rows); });
  if (op == Normalization::layer_norm)
    task.space.axis("SHIFTED", {0, 1}).constraint("shifted sums are a one-pass choice", [](const Config &c) {
      return c["ONE_PASS"] || !c["SHIFTED"];
    });

  std::string arch = !target.empty() ? target
                     : stream.device().kind() == DeviceKind::cuda ? target_for(stream.device())
                                                                   : std::string();
  if (!arch.empty())
    task.compile = [op, args, stream, arch](const Config &c) {
      NormalizationLaunch launch = prepare_normalization(op, args, stream, c);
      return launch.kernel.compile(launch.config, launch.kernel.specialize(launch.args), arch);
    };
  task.run = [op, args](const Config &c, const Stream &s) {
    NormalizationLaunch launch = prepare_normalization(op, args, s, c);
    if (launch.kernel.signature().size())
      launch.kernel.launch_with(launch.grid, launch.config, s, launch.args);
  };
  // Each plan's y against the default plan's (run once, on demand).
  auto reference = std::make_shared<std::vector<double>>();
  const double tolerance = args.y.dtype == DType::f32 ? 1e-4 : args.y.dtype == DType::f16 ? 4e-3 : 3e-2;
  task.check = [op, args, stream, reference, tolerance](const Config &) -> std::string {
    std::vector<double> got = contents(args.y, stream.device());
    if (reference->empty()) {
      NormalizationLaunch launch = prepare_normalization(op, args, stream, {});
      launch.kernel.launch_with(launch.grid, launch.config, stream, launch.args);
      stream.synchronize();
      *reference = contents(args.y, stream.device());
    }
    for (size_t i = 0; i < got.size(); ++i) {
      double want = (*reference)[i];
      if (!(std::fabs(got[i] - want) <= tolerance * std::max(1.0, std::fabs(want))) &&
          !(std::isnan(got[i]) && std::isnan(want)))
        return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", the default plan gives " +
               std::to_string(want);
    }
    return "";
  };
  task.bytes = static_cast<double>(args.x.numel()) * (size_in_bytes(args.x.dtype) + size_in_bytes(args.y.dtype));
  return task;
}

Config chosen_plan(Normalization op, const NormalizationArgs &args, const Stream &stream) {
  static std::mutex mutex;
  static std::map<std::string, Config> chosen; // by op, problem and device: no driver call on a repeat
  autotune::Task probe;
  probe.op = name(op);
  probe.key = problemKey(op, args);
  const Device &device = stream.device();
  const std::string memo = probe.op + "|" + probe.key + "|" + std::to_string(static_cast<int>(device.kind())) + ":" +
                           std::to_string(device.ordinal());
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = chosen.find(memo); it != chosen.end())
      return it->second;
  }
  const std::string key = autotune::store_key(probe, device);
  TuningStore store;
  Config plan;
  std::string source = "defaults";
  if (auto entry = store.find(key)) {
    plan = Config::parse(entry->best);
    source = "tuned earlier";
  } else if (autotune::Mode mode = autotune::mode_from_environment();
             mode != autotune::Mode::off && stream.device().kind() == DeviceKind::cuda &&
             !overlaps(args.x, args.y)) {
    autotune::Options options;
    options.strategy = mode == autotune::Mode::quick ? autotune::Strategy::pattern : autotune::Strategy::exhaustive;
    options.budget_s = mode == autotune::Mode::quick ? 2 : 0;
    autotune::Task task = tuning_task(op, args, stream);
    autotune::Report report = autotune::tune(task, stream, options, store);
    if (autotune::print_from_environment())
      autotune::print_report(std::cerr, task, report);
    if (report.best) {
      plan = *report.best;
      source = "tuned now";
    }
  }
  if (autotune::print_from_environment())
    std::cerr << "kiln: " << name(op) << " " << probe.key << ": plan " << (plan.values().empty() ? "default" : plan.str())
              << " (" << source << ")\n";
  std::lock_guard<std::mutex> lock(mutex);
  chosen.emplace(memo, plan);
  return plan;
}

} // namespace kiln::ops
