//===- AttentionTuning.cpp - the autotuner's view of attention ------------===//
//
// The tile space of an attention call (queries and keys a step, warps,
// stages, a producer warpgroup), pruned by shared memory and registers, keyed by the call's
// structure and bucketed sizes; each tile is checked against the default
// tile's output on the device (DeviceCheck.h). Calls without a config take
// the tuned one from the store (chosen_config, Tuned.h).
//
//===----------------------------------------------------------------------===//

#include "ops/lib/AttentionPlan.h"
#include "ops/lib/DeviceCheck.h"
#include "ops/lib/GeneratedKernel.h"
#include "ops/lib/Tuned.h"

#include <kiln/ops/library.h>
#include <kiln/target.h>

#include <memory>

namespace kiln::ops {

namespace {

/// The rows a program column has at most: a head's queries, or a group's.
int64_t rowsOfProblem(const AttentionProblem &p) {
  return p.seqQ * std::max<int64_t>(p.headsQ / std::max<int64_t>(p.headsKV, 1), 1);
}

bool tunable(const AttentionArgs &a) {
  for (const TensorView *input : {&a.q, &a.k, &a.v})
    if (overlaps(a.out, *input) || (a.lse.address && overlaps(a.lse, *input)))
      return false;
  return true;
}

} // namespace

ConfigSpace attention_space(const AttentionArgs &a, const AttentionProblem &p, const std::string &arch) {
  const int64_t blockD = std::max<int64_t>(16, next_pow2(p.D));
  const int64_t elementBytes = size_in_bytes(a.q.dtype);
  // Hopper's 227 KiB of shared memory a block, Ampere's 163 KiB.
  const bool hopper = !arch.empty() && compute_capability_of(arch) >= 90;
  const bool amd = targets_amd(arch);
  const std::optional<Target> target = parse_target(arch);
  const int64_t lanes = target ? threads_per_warp(*target) : 32;
  const int64_t sharedBytes = (hopper ? 227 : 163) * 1024;
  const int64_t rows = std::max<int64_t>(16, next_pow2(rowsOfProblem(p)));
  // (A producer warpgroup: beside whole consumer warpgroups, where the copy
  // engine reads the keys.)
  auto producerFeeds = [=](const Config &c) {
    return hopper && c["num_warps"] % 4 == 0 && copy_engine_reads_keys(a, p, c["BLOCK_N"]);
  };
  ConfigSpace space;
  space.axis("BLOCK_M", {16, 32, 64, 128})
      .axis("BLOCK_N", {32, 64, 128})
      .axis("num_warps", {2, 4, 8})
      // (AMD: one stage. Two would prefetch keys and values through two LDS
      // slots each, which beside the staged queries leaves room for at most
      // one of them.)
      .axis("num_stages", amd ? std::vector<int64_t>{1} : std::vector<int64_t>{2, 3, 4})
      .constraint("no more rows a program than the problem has", [=](const Config &c) { return c["BLOCK_M"] <= rows; })
      .constraint(amd ? "the operands each product stages take at most 48 KiB of the 64 KiB of LDS (the rest: "
                        "their rows' padding, the softmax's exchanges)"
                      : "the rings of keys and values and the queries fit in shared memory",
                  [=](const Config &c) {
                    const int64_t BM = c["BLOCK_M"], BN = c["BLOCK_N"];
                    if (amd) // (Q and K, then P and V, staged for the matrix cores)
                      return std::max((BM + BN) * blockD, BM * BN + BN * blockD) * elementBytes <= 48 * 1024;
                    return (2 * c["num_stages"] * BN + BM) * blockD * elementBytes <= sharedBytes;
                  })
      .constraint("the accumulator and the scores take at most 192 registers a thread",
                  [=](const Config &c) {
                    return c["BLOCK_M"] * (blockD + c["BLOCK_N"]) <= 192 * lanes * c["num_warps"];
                  })
      .constraint("every warp has 16 rows or a share of the keys",
                  [](const Config &c) { return c["BLOCK_M"] * c["BLOCK_N"] >= 16 * 16 * c["num_warps"]; })
      // (The compiler adds a producer by itself where one program fills a
      // multiprocessor; asking for one matters where two would fit.)
      .axis("warp_specialize", {0, 1})
      .constraint("a producer warpgroup only on Hopper, beside whole consumer warpgroups, where the copy engine "
                  "reads the keys",
                  [=](const Config &c) { return !c["warp_specialize"] || producerFeeds(c); })
      // (Consumer warpgroups taking turns: only a producer's, two or more.)
      .axis("ping_pong", {0, 1})
      .constraint("consumer warpgroups take turns only beside a producer, two of them or more",
                  [=](const Config &c) {
                    return !c["ping_pong"] || (c["num_warps"] >= 8 && producerFeeds(c));
                  })
      // (A warpgroup's softmax under its own P V: where a producer feeds
      // warpgroups that do not take turns; elsewhere the key changes nothing.)
      .axis("overlap_chain", {1, 0})
      .constraint("the softmax is left out from under its own P V only beside a producer, without turns",
                  [=](const Config &c) { return c["overlap_chain"] || (producerFeeds(c) && !c["ping_pong"]); })
      // (Programs walking the tiles, one a multiprocessor: beside a
      // producer, which brings a tile's first blocks in under the one
      // before; not taking turns. A producer's program takes a
      // multiprocessor's registers, so a second one would only wait.)
      .axis("persistent", {0, 1})
      .constraint("programs walk the tiles only of a dense or packed batch up to D 128, beside a producer, without turns",
                  [=, walkable = tiles_can_be_walked(a, p)](const Config &c) {
                    return !c["persistent"] ||
                           (walkable && producerFeeds(c) && c["warp_specialize"] && !c["ping_pong"]);
                  });
  return space;
}

autotune::Task attention_tuning_task(const AttentionArgs &args, const Stream &stream, const std::string &target) {
  if (!tunable(args))
    throw Error("attention: tuning runs every tile on the same tensors, so out and lse must not overlap q, k or v");
  const AttentionProblem p = checked_attention(args, stream);
  const std::string arch = !target.empty() ? target : target_of(stream);
  autotune::Task task;
  task.op = "attention";
  task.key = attention_problem_key(args, p);
  task.space = attention_space(args, p, arch);
  if (!arch.empty())
    task.compile = [args, p, stream, arch](const Config &c) {
      return prepare_attention(args, p, stream, c).compile(arch);
    };
  task.run = [args, p](const Config &c, const Stream &s) { prepare_attention(args, p, s, c).queue(s); };
  // Each tile's out against the default tile's, compared on the device.
  auto withOut = [args](const TensorView &out) {
    AttentionArgs defaults = args;
    defaults.out = out;
    defaults.lse = {};
    return defaults;
  };
  auto checker = std::make_shared<DeviceCheck>(
      args.out, stream,
      [withOut, p](const TensorView &ref, const Stream &s) { prepare_attention(withOut(ref), p, s, {}).queue(s); },
      [withOut, p](const TensorView &ref, const Stream &s, const std::string &arch) {
        prepare_attention(withOut(ref), p, s, {}).compile(arch);
      });
  DeviceCheck::attach(checker, task, args.out.dtype == DType::f16 ? 4e-3 : 3e-2, arch,
                      "out differs from the default tile's");
  // (A seed missing an axis is no point of the space.)
  Config seed = default_attention_tile(args, p, arch);
  seed.set("warp_specialize", seed.get("persistent", 0) ? 1 : 0); // (a walk's producer)
  if (!seed.has("ping_pong"))
    seed.set("ping_pong", 0);
  if (!seed.has("overlap_chain"))
    seed.set("overlap_chain", 1);
  if (!seed.has("persistent"))
    seed.set("persistent", 0);
  task.seeds.push_back(seed);
  // FlashAttention's count: four multiply-adds a query, key and head
  // dimension; half of them under a causal mask.
  task.flops = 4.0 * p.batch * p.headsQ * p.seqQ * p.seqK * p.D / (args.mask != AttentionMask::none ? 2 : 1);
  task.bytes = static_cast<double>(args.q.numel() + args.k.numel() + args.v.numel() + args.out.numel()) *
               size_in_bytes(args.q.dtype);
  return task;
}

Config chosen_attention_config(const AttentionArgs &a, const AttentionProblem &p, const Stream &stream) {
  return chosen_config(
      "attention", attention_problem_key(a, p), stream, tunable(a),
      [&] { return attention_space(a, p, target_of(stream)); }, [&] { return attention_tuning_task(a, stream); });
}

} // namespace kiln::ops
