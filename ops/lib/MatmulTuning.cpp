//===- MatmulTuning.cpp - the autotuner's view of matmul ------------------===//
//
// The tile space (BLOCK_M/N/K, warps, pipeline depth, split-K, one program a
// tile or one a multiprocessor walking them), pruned before
// compiling by what cannot fit (the rings in shared memory, the
// accumulator in registers, a warp's 16x16 share of the tile), keyed by the
// bucketed problem; each config is checked against the default tile's
// output. Calls without a config take the tuned one (Tuned.h) when it is a
// point of this space: a stored config is not trusted to fit.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/DeviceCheck.h"
#include "ops/lib/GeneratedKernel.h"
#include "ops/lib/MatmulPlan.h"
#include "ops/lib/Tuned.h"

#include <kiln/target.h>

#include <cmath>
#include <memory>

namespace kiln::ops {

namespace {

struct Sizes {
  int64_t batches = 1, M = 0, N = 0, K = 0;
};

Sizes sizesOf(const MatmulArgs &m) {
  int rank = m.out.rank();
  Sizes s;
  if (rank < 2 || m.a.rank() != rank)
    return s;
  s.batches = rank == 3 ? m.out.shape[0] : 1;
  s.M = m.out.shape[rank - 2];
  s.N = m.out.shape[rank - 1];
  s.K = m.a.shape[rank - 1];
  return s;
}

/// The target configs are compiled for: `target`, else the stream's GPU's,
/// else none (the interpreter).
std::string archFor(const Stream &stream, const std::string &target) {
  if (!target.empty())
    return target;
  return target_of(stream);
}

/// The tile space of these tensors on `arch`: what the autotuner searches,
/// and what a stored config must be a point of to be used.
ConfigSpace matmulSpace(const MatmulArgs &args, const std::string &arch) {
  const Sizes sz = sizesOf(args);
  const int64_t bytes = size_in_bytes(args.a.dtype);
  const bool tensorCores = on_tensor_cores(args.a.dtype, args.precision);
  const int64_t rowsAtMost = std::max<int64_t>(16, next_pow2(sz.M));
  const bool hopper = compute_capability_of(arch) >= 90;
  const bool amd = targets_amd(arch);
  const std::optional<Target> target = parse_target(arch);
  const int64_t lanes = target ? threads_per_warp(*target) : 32;
  ConfigSpace space;
  space.axis("BLOCK_M", {16, 32, 64, 128, 256})
      .axis("BLOCK_N", {32, 64, 128, 256})
      .axis("BLOCK_K", {16, 32, 64, 128})
      .axis("num_warps", {4, 8})
      .axis("num_stages", {1, 2, 3, 4, 5, 6, 8})
      .axis("GROUP_M", {4, 8, 16})
      .axis("SPLIT_K", {1, 2, 4, 8})
      .axis("PERSISTENT", {0, 1})
      .axis("warp_specialize", {0, 1})
      .axis("cluster_size", {1, 2})
      .constraint("the rings of A and B tiles fit in 192 KB of shared memory",
                  [=](const Config &c) {
                    return c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * bytes <= 192 * 1024;
                  })
      .constraint("at most 128 accumulator values a thread (registers)",
                  [=](const Config &c) { return c["BLOCK_M"] * c["BLOCK_N"] <= 128 * lanes * c["num_warps"]; })
      .constraint("every warp owns at least a 16x16 piece of the tile",
                  [](const Config &c) { return c["BLOCK_M"] * c["BLOCK_N"] >= 256 * c["num_warps"]; })
      .constraint("no taller tile than the problem's rows (rounded up to a power of two)",
                  [=](const Config &c) { return c["BLOCK_M"] <= rowsAtMost; })
      .constraint("BLOCK_K at most K (rounded up to a power of two, at least 16)",
                  [=](const Config &c) { return c["BLOCK_K"] <= std::max<int64_t>(16, next_pow2(sz.K)); })
      .constraint("split-K only while the programs stay under two per multiprocessor, each chunk at least 4 K steps",
                  [=](const Config &c) {
                    const int64_t tiles = sz.batches * cdiv(sz.M, c["BLOCK_M"]) * cdiv(sz.N, c["BLOCK_N"]);
                    return c["SPLIT_K"] == 1 ||
                           (tiles * c["SPLIT_K"] <= 264 && cdiv(sz.K, c["BLOCK_K"]) / c["SPLIT_K"] >= 4);
                  })
      .constraint("persistent programs compute whole tiles (SPLIT_K=1)",
                  [](const Config &c) { return c["PERSISTENT"] == 0 || c["SPLIT_K"] == 1; })
      .constraint("a producer warpgroup only where the copy engine feeds the tensor cores (tiles of 128+ rows, or 64 "
                  "rows of a taller product; unsplit)",
                  [=](const Config &c) {
                    return c["warp_specialize"] == 0 ||
                           (tensorCores && copy_engine_tile(c["BLOCK_M"], sz.M) && c["SPLIT_K"] == 1);
                  })
      .constraint("clusters of 2 programs share B's copies: persistent programs with a producer warpgroup (Hopper)",
                  [=](const Config &c) {
                    return c["cluster_size"] == 1 || (hopper && c["PERSISTENT"] > 0 && c["warp_specialize"] == 1);
                  });
  if (amd) {
    space.constraint("AMD: one or two stages (two: the next K step loaded during this one's products, no "
                     "asynchronous copies), no producer warps, persistent programs or clusters",
                     [](const Config &c) {
                       return c["num_stages"] <= 2 && c["PERSISTENT"] == 0 && c["warp_specialize"] == 0 &&
                              c["cluster_size"] == 1;
                     });
    space.constraint("AMD: the A and B tiles of every stage take at most half of the 64 KB of LDS (the rest: padding, the "
                     "epilogue, a second workgroup)",
                     [=](const Config &c) {
                       return c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * bytes <= 32 * 1024;
                     });
  }
  if (promotes_sums(args))
    space.constraint("promoted sums (block scales, accurate fp8): at most 64 accumulator values a thread (each K "
                     "step's sum takes as many more), BLOCK_K at most the 128 K elements of a scale, no producer "
                     "warpgroup (no dot stays in flight)",
                     [=](const Config &c) {
                       return c["BLOCK_M"] * c["BLOCK_N"] <= 64 * lanes * c["num_warps"] && c["BLOCK_K"] <= 128 &&
                              c["warp_specialize"] == 0;
                     });
  // (AMD's matrix cores take 16-bit operands, and on gfx942 f32 at tf32
  // precision, in any K step of 16 or more; other f32 runs on FMAs there.)
  const bool matrixCores = amd ? on_amd_matrix_cores(args.a.dtype, args.precision, arch) : tensorCores;
  if (matrixCores && !amd)
    space.constraint("tensor cores: at least 32-wide K steps, at least 2 stages (pipelined copies)",
                     [](const Config &c) { return c["BLOCK_K"] >= 32 && c["num_stages"] >= 2; });
  else if (!matrixCores)
    space.constraint("f32 (FMA): tiles of at most 64x64x16, unpipelined", [](const Config &c) {
      return c["BLOCK_M"] <= 64 && c["BLOCK_N"] <= 64 && c["BLOCK_K"] == 16 && c["num_stages"] == 1;
    });
  return space;
}

} // namespace

std::string matmul_problem_key(const MatmulArgs &m) {
  Sizes s = sizesOf(m);
  std::string key = "m=" + std::to_string(autotune::bucket(s.M)) + ",n=" + std::to_string(autotune::bucket(s.N)) +
                    ",k=" + std::to_string(autotune::bucket(s.K)) + ",dtype=" + std::string(name(m.a.dtype)) +
                    ",out=" + std::string(name(m.out.dtype));
  if (m.a.dtype == DType::f32 && m.precision != Precision::ieee)
    key += std::string(",") + name(m.precision);
  if (s.batches > 1)
    key += ",batch=" + std::to_string(autotune::bucket(s.batches));
  // Operands stored transposed (columns not contiguous) load and lower
  // differently, so they tune apart: aT for a stored [K][M], bT for b [N][K].
  for (auto [view, tag] : {std::pair{&m.a, ",aT"}, {&m.b, ",bT"}})
    if (view->rank() >= 2 && view->effective_strides().back() != 1)
      key += tag;
  if (m.bias.address)
    key += ",bias";
  if (m.residual.address)
    key += ",residual";
  if (m.activation != Activation::none)
    key += std::string(",") + name(m.activation);
  // (Block scales take other tiles; a row's or column's scales another epilogue.)
  if (has_block_scales(m))
    key += ",block-scales";
  else if (promotes_sums(m))
    key += ",promoted";
  else if (m.scale_a.rank() == 1 && m.scale_a.numel() > 1)
    key += ",scale-rows";
  if (!has_block_scales(m) && m.scale_b.rank() == 1 && m.scale_b.numel() > 1)
    key += ",scale-columns";
  return key;
}

namespace {

/// A launch of the product with its output in `out` (out's shape and
/// dtype: the call's own, or the reference's), tile `config`.
using Planner = std::function<MatmulLaunch(const TensorView &out, const Stream &, const Config &)>;

/// The tuning task of a product whose tiles are `shape`'s (a and out as
/// called, b one matrix of it): `space`, each config's output checked
/// against the default tile's, seeded with the default tile.
autotune::Task productTask(const std::string &op, const std::string &key, const MatmulArgs &shape,
                           ConfigSpace space, const Stream &stream, const std::string &target, Planner plan) {
  autotune::Task task;
  task.op = op;
  task.key = key;
  const Sizes sz = sizesOf(shape);
  const int64_t bytes = size_in_bytes(shape.a.dtype);
  const bool tensorCores = on_tensor_cores(shape.a.dtype, shape.precision);
  const std::string arch = archFor(stream, target);
  const bool hopper = compute_capability_of(arch) >= 90;
  task.space = std::move(space);
  const TensorView out = shape.out;
  if (!arch.empty())
    task.compile = [plan, out, stream, arch](const Config &c) { return plan(out, stream, c).compile(arch); };
  task.run = [plan, out](const Config &c, const Stream &s) { plan(out, s, c).queue(s); };
  // Each config's out against the default tile's, compared where they are
  // (a reduction of the ops library: the largest relative difference), so
  // that checking a config costs microseconds, not a copy of out.
  auto checker = std::make_shared<DeviceCheck>(
      out, stream, [plan](const TensorView &ref, const Stream &s) { plan(ref, s, {}).queue(s); },
      [plan](const TensorView &ref, const Stream &s, const std::string &arch) { plan(ref, s, {}).compile(arch); });
  // tf32 tiles differ in how their operands become tf32 (wgmma truncates,
  // mma.sync rounds): 2^-11 of each product, random in sign, adding up as
  // sqrt(K).
  const bool tf32 = shape.a.dtype == DType::f32 && shape.precision == Precision::tf32;
  const double tolerance = tf32 ? 2e-3 * std::sqrt(static_cast<double>(std::max<int64_t>(sz.K, 1)))
                           : out.dtype == DType::f32 ? 1e-3
                           : out.dtype == DType::f16 ? 4e-3
                                                     : 3e-2;
  DeviceCheck::attach(checker, task, tolerance, arch, "out differs from the default tile's");
  // Pattern search starts from the default tile (what the measurements
  // behind it found best), run as the op runs it on that target, when it is
  // in the space. (A seed missing an axis is no point of the space: the
  // search would not start there.)
  const bool amd = targets_amd(arch);
  Config seed = amd ? default_amd_matmul_config(shape.a.dtype, shape.precision, arch, sz.M, sz.K)
                    : default_matmul_config(shape.a.dtype, shape.precision, stores_b_k_major(shape.b), sz.batches,
                                            sz.M, sz.N, sz.K);
  if (promotes_sums(shape))
    seed = with_promoted_sums(seed);
  if (!seed.has("SPLIT_K"))
    seed.set("SPLIT_K", 1);
  if (hopper && tensorCores)
    seed = with_copy_engine_schedule(seed);
  for (const char *axis : {"PERSISTENT", "warp_specialize"})
    if (!seed.has(axis))
      seed.set(axis, 0);
  if (!seed.has("cluster_size"))
    seed.set("cluster_size", 1);
  task.seeds.push_back(seed);
  task.flops = 2.0 * sz.batches * sz.M * sz.N * sz.K;
  task.bytes = static_cast<double>(shape.a.numel()) * bytes + static_cast<double>(shape.b.numel()) * bytes +
               static_cast<double>(out.numel()) * size_in_bytes(out.dtype);
  return task;
}

/// A grouped product's tile space: the matmul space of its shape, unsplit,
/// without clusters.
ConfigSpace groupedSpace(const GroupedMatmulArgs &args, const std::string &arch) {
  ConfigSpace space = matmulSpace(grouped_matmul_shape(args), arch);
  space.constraint("grouped products run unsplit (SPLIT_K=1), without clusters",
                   [](const Config &c) { return c["SPLIT_K"] == 1 && c["cluster_size"] == 1; });
  return space;
}

} // namespace

autotune::Task tuning_task(const MatmulArgs &args, const Stream &stream, const std::string &target) {
  if (overlaps(args.out, args.a) || overlaps(args.out, args.b) || overlaps(args.out, args.residual))
    throw Error("matmul: tuning runs every config on the same tensors, so out must not overlap a, b or residual");
  return productTask("matmul", matmul_problem_key(args), args, matmulSpace(args, archFor(stream, target)), stream,
                     target, [args](const TensorView &out, const Stream &s, const Config &c) {
                       MatmulArgs m = args;
                       m.out = out;
                       return prepare_matmul(m, s, c);
                     });
}

std::string grouped_matmul_problem_key(const GroupedMatmulArgs &args) {
  std::string key = "groups=" + std::to_string(autotune::bucket(args.b.rank() == 3 ? args.b.shape[0] : 0)) + "," +
                    matmul_problem_key(grouped_matmul_shape(args));
  return args.scale_b.numel() > 1 ? key + ",scale-columns" : key;
}

autotune::Task grouped_matmul_tuning_task(const GroupedMatmulArgs &args, const Stream &stream, const std::string &target) {
  if (overlaps(args.out, args.a) || overlaps(args.out, args.b))
    throw Error("grouped_matmul: tuning runs every config on the same tensors, so out must not overlap a or b");
  autotune::Task task = productTask("grouped_matmul", grouped_matmul_problem_key(args), grouped_matmul_shape(args),
                                    groupedSpace(args, archFor(stream, target)), stream, target,
                                    [args](const TensorView &out, const Stream &s, const Config &c) {
                                      GroupedMatmulArgs g = args;
                                      g.out = out;
                                      return prepare_grouped_matmul(g, s, c);
                                    });
  for (Config &seed : task.seeds)
    seed = with_grouped_schedule(seed);
  return task;
}

Config chosen_grouped_matmul_config(const GroupedMatmulArgs &args, const Stream &stream) {
  bool tunable = !overlaps(args.out, args.a) && !overlaps(args.out, args.b);
  return chosen_config(
      "grouped_matmul", grouped_matmul_problem_key(args), stream, tunable,
      [&] { return groupedSpace(args, archFor(stream, "")); }, [&] { return grouped_matmul_tuning_task(args, stream); });
}

Config chosen_matmul_config(const MatmulArgs &args, const Stream &stream) {
  bool tunable = !overlaps(args.out, args.a) && !overlaps(args.out, args.b) && !overlaps(args.out, args.residual);
  return chosen_config(
      "matmul", matmul_problem_key(args), stream, tunable, [&] { return matmulSpace(args, archFor(stream, "")); },
      [&] { return tuning_task(args, stream); });
}

} // namespace kiln::ops
