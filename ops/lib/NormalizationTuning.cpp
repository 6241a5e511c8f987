//===- NormalizationTuning.cpp - the autotuner's view of normalizations ---===//
//
// A normalization's plan space (one pass or two walks, warps, rows per
// program, chunk, layer norm's reduction), keyed by the bucketed problem;
// each plan is checked against the default plan's output on the device
// (DeviceCheck.h). Calls without a plan take the tuned one from the store
// (chosen_config, Tuned.h) when it is a point of this space.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/DeviceCheck.h"
#include "ops/lib/GeneratedKernel.h"
#include "ops/lib/NormalizationPlan.h"
#include "ops/lib/Tuned.h"

#include <kiln/target.h>

#include <memory>

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

/// The plan space of `op` on these tensors for target `arch`: what the
/// autotuner searches, and what a stored plan must be a point of to be
/// used. Its thread counts follow the target's warps: an AMD wavefront of
/// 64 lanes takes twice a warp's values at once, and a workgroup holds at
/// most 1024 work-items (16 wavefronts).
ConfigSpace planSpace(Normalization op, const NormalizationArgs &args, const std::string &arch) {
  const std::optional<Target> target = parse_target(arch);
  const int64_t lanes = target ? threads_per_warp(*target) : 32;
  const bool amd = targets_amd(arch);
  const int64_t N = args.x.shape.empty() ? 1 : args.x.shape.back();
  const int64_t whole = next_pow2(N);
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < args.x.shape.size(); ++d)
    rows *= args.x.shape[d];
  std::vector<int64_t> chunks{2048, 4096, 8192, 16384};
  if (std::find(chunks.begin(), chunks.end(), whole) == chunks.end())
    chunks.push_back(whole);
  std::sort(chunks.begin(), chunks.end());
  ConfigSpace space;
  space.axis("ONE_PASS", {1, 0})
      .axis("num_warps", {4, 8, 16, 32})
      .constraint("a program holds at most 1024 threads",
                  [=](const Config &c) { return c["num_warps"] * lanes <= 1024; })
      .axis("BLOCK_M", {1, 2, 4, 8, 16, 32})
      .axis("BLOCK_N", chunks)
      .constraint("one pass holds the whole row: BLOCK_N is its power of two",
                  [=](const Config &c) { return !c["ONE_PASS"] || c["BLOCK_N"] == whole; })
      .constraint("one pass holds at most 65536 values of a row", [=](const Config &c) { return !c["ONE_PASS"] || whole <= 65536; })
      .constraint("two walks take one row a program", [](const Config &c) { return c["ONE_PASS"] || c["BLOCK_M"] == 1; })
      .constraint("two walks step through a row in chunks shorter than it",
                  [=](const Config &c) { return c["ONE_PASS"] || c["BLOCK_N"] < whole; })
      .constraint("at most 64 values a thread (registers)",
                  [=](const Config &c) { return c["BLOCK_M"] * c["BLOCK_N"] <= 64 * lanes * c["num_warps"]; })
      .constraint("every thread holds a value",
                  [=](const Config &c) { return c["BLOCK_M"] * c["BLOCK_N"] >= lanes * c["num_warps"]; })
      .constraint("no more rows a program than the problem has",
                  [=](const Config &c) { return c["BLOCK_M"] <= autotune::bucket(rows); })
      .axis("min_blocks_per_sm", {0, 2, 3, 4})
      .constraint("the programs asked to share a multiprocessor fit its 2048 threads",
                  [=](const Config &c) { return c["min_blocks_per_sm"] * c["num_warps"] * lanes <= 2048; })
      .constraint("AMD targets take no occupancy bound (min_blocks_per_sm) yet",
                  [=](const Config &c) { return !amd || c["min_blocks_per_sm"] == 0; });
  if (op == Normalization::layer_norm)
    space.axis("SHIFTED", {0, 1});
  space.axis("AHEAD", {1, 0})
      .constraint("only two walks fetch ahead", [](const Config &c) { return !c["ONE_PASS"] || c["AHEAD"]; });
  return space;
}

} // namespace

autotune::Task tuning_task(Normalization op, const NormalizationArgs &args, const Stream &stream,
                           const std::string &target) {
  autotune::Task task;
  task.op = name(op);
  task.key = problemKey(op, args);
  std::string arch = !target.empty() ? target : target_of(stream);
  task.space = planSpace(op, args, arch);
  if (!arch.empty())
    task.compile = [op, args, stream, arch](const Config &c) {
      return prepare_normalization(op, args, stream, c).compile(arch);
    };
  task.run = [op, args](const Config &c, const Stream &s) { prepare_normalization(op, args, s, c).queue(s); };
  // Each plan's y against the default plan's, compared on the device
  // (DeviceCheck.h): checking a plan costs microseconds, not a copy of y.
  auto defaultInto = [op, args](const TensorView &y, const Stream &s, const std::string &arch) {
    NormalizationArgs defaults = args;
    defaults.y = y;
    return prepare_normalization(op, defaults, s, {}, arch);
  };
  auto queueDefault = [defaultInto](const TensorView &y, const Stream &s) { defaultInto(y, s, "").queue(s); };
  auto compileDefault = [defaultInto](const TensorView &y, const Stream &s, const std::string &arch) {
    defaultInto(y, s, arch).compile(arch);
  };
  auto checker = std::make_shared<DeviceCheck>(args.y, stream, queueDefault, compileDefault);
  const double tolerance = args.y.dtype == DType::f32 ? 1e-4 : args.y.dtype == DType::f16 ? 4e-3 : 3e-2;
  DeviceCheck::attach(checker, task, tolerance, arch, "y differs from the default plan's");
  task.bytes = static_cast<double>(args.x.numel()) * (size_in_bytes(args.x.dtype) + size_in_bytes(args.y.dtype));
  return task;
}

Config chosen_plan(Normalization op, const NormalizationArgs &args, const Stream &stream) {
  return chosen_config(name(op), problemKey(op, args), stream, !overlaps(args.x, args.y),
                       [&] { return planSpace(op, args, target_of(stream)); },
                       [&] { return tuning_task(op, args, stream); });
}

} // namespace kiln::ops
