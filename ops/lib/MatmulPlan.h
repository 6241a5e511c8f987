//===- MatmulPlan.h - a matmul's launch, and its tuning --------*- C++ -*-===//

#pragma once

#include <kiln/kiln.h>
#include <kiln/ops/library.h>

#include "ops/lib/Launches.h"

#include <vector>

namespace kiln::ops {

/// The launches of one matmul (one kernel; with split-K, the partial sums
/// and their combination; padded copies of operands first; a grouped
/// product's tile table first), ready to queue or to compile; no steps
/// when there is nothing to do. Its steps' tensors are numbered in
/// MatmulArgs' order (a, b, out, bias, residual, scale_a, scale_b).
struct MatmulLaunch : Launches {
  /// Points the plan at another call's tensors and alpha (a call planned
  /// the same otherwise: RecentPlans).
  void rebind(const MatmulArgs &args);
};

/// Whether a product of `operands` at `precision` runs on tensor cores.
bool on_tensor_cores(DType operands, Precision precision);
/// Whether b ([.., K, N]) is stored K-major ([N][K], as nn.Linear's weight).
bool stores_b_k_major(const TensorView &b);

/// The tile of products on FMAs (f32 at full precision, fp8 before Hopper).
Config fma_matmul_config();
/// The tile a problem gets without tuning (SPLIT_K only where above 1);
/// `kMajorB`: b's K stride is 1 (b stored [N][K]).
Config default_matmul_config(DType operands, Precision precision, bool kMajorB, int64_t batches, int64_t M,
                             int64_t N, int64_t K);

/// Whether a product of `operands` at `precision` runs on the matrix cores
/// of AMD target `arch`: 16-bit operands on gfx90a and gfx942, f32 at tf32
/// or tf32x3 on gfx942 (xf32).
bool on_amd_matrix_cores(DType operands, Precision precision, std::string_view arch);

/// The tile a problem gets without tuning on an AMD GPU with matrix cores
/// (gfx90a, gfx942): two stages (the K loop's next tiles loaded during
/// this step's products), four 64-lane wavefronts, 128x128x32 tiles of
/// 16-bit operands (each wavefront 2x2 pieces of v_mfma 32x32, 64
/// accumulator registers), 128x128x16 of f32 on xf32 (the same LDS); for
/// products of at most 64 rows as many rows as they have (at least 16:
/// v_mfma 16x16 below 32), and 16-wide K steps where K is at most 16;
/// other f32 products on FMAs with the small tiles they take elsewhere.
Config default_amd_matmul_config(DType operands, Precision precision, std::string_view arch, int64_t M, int64_t K);

/// Whether the call's scales are block scales (MatmulArgs).
bool has_block_scales(const MatmulArgs &args);
/// Whether each K step's sum is promoted into f32 registers (block scales,
/// or fp8 without fast accumulation).
bool promotes_sums(const MatmulArgs &args);
/// A tile for products that promote each K step's sum: at most 64
/// accumulators a thread (a second set holds the step's sum), the 128x256
/// tile as 128x128 on its two warpgroups.
Config with_promoted_sums(Config tile);

/// Whether tiles of `blockM` rows of an M-row product read their operands
/// through the copy engine by default (on Hopper, where it can): tiles of
/// 128 rows or more, and 64-row tiles of products taller than 64 rows.
/// Shorter products stream the weights, where pointer loads measured as
/// fast or faster.
bool copy_engine_tile(int64_t blockM, int64_t M);

/// How the default tile runs where the copy engine feeds it (Hopper, A and
/// B through descriptors): the 128x256 tile, unsplit, as persistent
/// programs with a producer warpgroup (PERSISTENT=1, warp_specialize=1);
/// (the 128x128 tile on two warpgroups of products promoting their sums persistent
/// without one); the 128x64 and 64x64 tiles, unsplit, with a producer
/// warpgroup; unless `tile` says otherwise.
Config with_copy_engine_schedule(Config tile);

/// How the tile runs in a grouped product: one program a tile (unless the
/// config says otherwise).
Config with_grouped_schedule(Config tile);

/// What, besides the views, a matmul's plan depends on (the activation, the
/// precision and whether alpha is 1), for its PlanKey.
int32_t matmul_plan_choices(const MatmulArgs &args);

/// Checks the arguments and plans the launch; `config` overrides the tile.
MatmulLaunch prepare_matmul(const MatmulArgs &args, const Stream &stream, const Config &config);

/// The problem as the tuning store keys it (sizes bucketed).
std::string matmul_problem_key(const MatmulArgs &args);

/// The tile a call without one takes (tuned, or empty for the defaults).
Config chosen_matmul_config(const MatmulArgs &args, const Stream &stream);

/// A grouped product's launches (GroupedMatmul.cpp): the tile table, then
/// the product; `config` overrides the tile.
MatmulLaunch prepare_grouped_matmul(const GroupedMatmulArgs &args, const Stream &stream, const Config &config);
/// What the planner and the tuner read of a grouped product's shape: a,
/// out, group 0's matrix of b, alpha, activation, precision, scale_a.
MatmulArgs grouped_matmul_shape(const GroupedMatmulArgs &args);
/// The grouped problem as the tuning store keys it.
std::string grouped_matmul_problem_key(const GroupedMatmulArgs &args);
/// The tile a grouped call without one takes (tuned, or empty).
Config chosen_grouped_matmul_config(const GroupedMatmulArgs &args, const Stream &stream);

} // namespace kiln::ops
