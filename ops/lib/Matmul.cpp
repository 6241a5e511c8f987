//===- Matmul.cpp - matrix products with fused epilogues ------------------===//
//
// Planning a call: its arguments checked, its tile chosen (the defaults,
// a tuned or given config, the copy engine's schedule on Hopper), its
// kernels' structures (MatmulKernel.h) and launches built.
//
// Persistent (PERSISTENT=p > 0): p programs a multiprocessor walk the
// tiles (MatmulKernel.cpp). Clusters of them (cluster_size) share B's
// copies.
//
// Split-K (SPLIT_K > 1), for products with too few tiles to fill the GPU:
// the K range is cut into SPLIT_K chunks of whole BLOCK_K steps; one kernel
// writes each chunk's f32 partial tile to the stream's workspace (a third
// grid dimension over the chunks), a second sums the chunks in order and
// applies the epilogue. Deterministic: no atomics.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/GeneratedKernel.h"
#include "ops/lib/MatmulProblem.h"
#include "ops/lib/Views.h"

#include <algorithm>

namespace kiln::ops {

using namespace matmul_kernel;

namespace {

/// The most K chunks split-K makes (each adds an f32 plane of out's size).
constexpr int64_t kMaxSplits = 64;

/// Whether the epilogue multiplies by alpha: a kernel for alpha 1 has no
/// alpha (a structure, and a plan, of its own).
bool scales(const MatmulArgs &m) { return m.alpha != 1.0; }

bool isMatmulFloat(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

const std::string kOp = "matmul";

using Problem = MatmulProblem;

/// An epilogue input (bias, residual) when the call passes it.
void addEpilogueInput(Problem &p, Role role, const TensorView &view, bool fits, const std::string &what,
                      std::vector<const TensorView *> &views) {
  if (!view.address)
    return;
  check_view(view, kOp, role == BIAS ? "bias" : "residual");
  if (!fits || !isMatmulFloat(view.dtype))
    throw Error(kOp + ": " + (role == BIAS ? "bias " : "residual ") + view.describe() + what);
  p.s.present[role] = true;
  p.s.dtypes[role] = view.dtype;
  views.push_back(&view);
}

/// How a scale covers its operand.
enum class ScaleKind { none, tensor, lines, blocks };

/// A scale (scale_a, scale_b) when the call passes it: f32, one element
/// (the tensor's), `size` (a row's of A, a column's of B), or `blocks`
/// (block scales). `names` says what these sizes are.
ScaleKind addScale(Problem &p, Role role, const TensorView &view, const std::string &what, int64_t size,
                   const std::vector<int64_t> &blocks, const std::string &names,
                   std::vector<const TensorView *> &views) {
  if (!view.address)
    return ScaleKind::none;
  check_view(view, kOp, what);
  const bool one = view.numel() == 1 && view.rank() <= 1;
  const bool each = view.rank() == 1 && view.shape[0] == size, blocked = view.shape == blocks;
  if (view.dtype != DType::f32 || !(one || each || blocked))
    throw Error(kOp + ": " + what + " " + view.describe() + " must be f32 of one element, " + names + " ([" +
                std::to_string(size) + "], [" + std::to_string(blocks[0]) + ", " + std::to_string(blocks[1]) + "])");
  p.s.present[role] = true;
  p.s.dtypes[role] = DType::f32;
  views.push_back(&view);
  return one ? ScaleKind::tensor : each ? ScaleKind::lines : ScaleKind::blocks;
}

/// The call's scales, checked: block scales come in pairs, of 2-D products.
void addScales(Problem &p, const MatmulArgs &m, std::vector<const TensorView *> &views) {
  const int64_t kBlocks = cdiv(p.K, kScaleBlock), nBlocks = cdiv(p.N, kScaleBlock);
  const ScaleKind a = addScale(p, SCALE_A, m.scale_a, "scale_a", p.M, {p.M, kBlocks},
                               "of M elements or of [M, ceil(K / 128)] block scales", views);
  const ScaleKind b = addScale(p, SCALE_B, m.scale_b, "scale_b", p.N, {kBlocks, nBlocks},
                               "of N elements or of [ceil(K / 128), ceil(N / 128)] block scales", views);
  p.s.scaleRows = a == ScaleKind::lines;
  p.s.scaleColumns = b == ScaleKind::lines;
  p.s.blockScales = a == ScaleKind::blocks || b == ScaleKind::blocks;
  if (p.s.blockScales && (a != b || p.rank != 2))
    throw Error(kOp + ": block scales (scale_a " + m.scale_a.describe() + ", scale_b " + m.scale_b.describe() +
                ") need both scales blockwise and a 2-D product (out " + m.out.describe() + ")");
}

/// The call's problem; throws kiln::Error naming what does not fit.
Problem checkedProblem(const MatmulArgs &m, const Stream &stream) {
  check_view(m.a, kOp, "a");
  check_view(m.b, kOp, "b");
  check_view(m.out, kOp, "out");
  Problem p;
  const int rank = p.rank = m.out.rank();
  if (rank != 2 && rank != 3)
    throw Error(kOp + ": out " + m.out.describe() + " must be [M, N] or [batch, M, N]");
  if (m.a.rank() != rank || m.b.rank() != rank)
    throw Error(kOp + ": a " + m.a.describe() + " and b " + m.b.describe() + " must have out's rank (" +
                std::to_string(rank) + ")");
  const bool fp8 = is_float8(m.a.dtype) && is_float8(m.b.dtype);
  if (!fp8 && (!isMatmulFloat(m.a.dtype) || m.b.dtype != m.a.dtype))
    throw Error(kOp + ": a and b must both be f16, bf16 or f32, or both fp8 (f8e4m3, f8e5m2); a is " +
                std::string(name(m.a.dtype)) + ", b " + std::string(name(m.b.dtype)));
  if (!isMatmulFloat(m.out.dtype))
    throw Error(kOp + ": out must be f32, f16 or bf16, not " + std::string(name(m.out.dtype)));
  p.M = m.out.shape[rank - 2], p.N = m.out.shape[rank - 1], p.K = m.a.shape[rank - 1];
  if (m.a.shape[rank - 2] != p.M || m.b.shape[rank - 2] != p.K || m.b.shape[rank - 1] != p.N)
    throw Error(kOp + ": shapes do not multiply: a " + m.a.describe() + " x b " + m.b.describe() + " -> out " +
                m.out.describe());
  p.batches = rank == 3 ? m.out.shape[0] : 1;
  // (Tensor cores read fp8 with K contiguous on both sides, as cuBLASLt
  // and torch._scaled_mm take them.)
  if (fp8 && p.K > 1 &&
      (m.a.effective_strides()[rank - 1] != 1 || (p.N > 1 && m.b.effective_strides()[rank - 2] != 1)))
    throw Error(kOp + ": fp8 operands must be K-major: a " + m.a.describe() + " with contiguous rows, b " +
                m.b.describe() + " with contiguous columns (the transpose of an [N, K] tensor)");
  for (const TensorView *v : {&m.a, &m.b})
    if (rank == 3 && v->shape[0] != p.batches && v->shape[0] != 1)
      throw Error(kOp + ": batch of " + v->describe() + " must be out's (" + std::to_string(p.batches) + ") or 1");
  std::vector<const TensorView *> views{&m.a, &m.b, &m.out};
  p.s.dtypes[A] = m.a.dtype;
  p.s.dtypes[B] = m.b.dtype;
  p.s.dtypes[OUT] = m.out.dtype;
  addEpilogueInput(p, BIAS, m.bias, m.bias.shape == std::vector<int64_t>{p.N},
                   " must be 1-D f32, f16 or bf16 of out's last size " + std::to_string(p.N), views);
  addEpilogueInput(p, RESIDUAL, m.residual, m.residual.shape == m.out.shape,
                   " must be f32, f16 or bf16 of out's shape " + m.out.describe(), views);
  addScales(p, m, views);
  check_devices(views, stream, kOp);
  check_no_overlap(m.out, kOp, "out");
  if (p.batches > 65535)
    throw Error(kOp + ": at most 65535 batches, got " + std::to_string(p.batches));
  const TensorView *of[OPERANDS] = {&m.a, &m.b, &m.out, &m.bias, &m.residual, &m.scale_a, &m.scale_b};
  std::copy(of, of + OPERANDS, p.views);
  for (int o = 0; o < OPERANDS; ++o) {
    if (!p.s.present[o])
      continue;
    std::vector<int64_t> st = of[o]->effective_strides();
    if (o == BIAS || ((o == SCALE_A || o == SCALE_B) && !p.s.blockScales)) {
      p.strides[o][2] = st.empty() ? 0 : st.back();
      continue;
    }
    p.strides[o][0] = rank == 3 && of[o]->shape[0] > 1 ? st[0] : 0;
    p.strides[o][1] = st[rank - 2];
    p.strides[o][2] = st[rank - 1];
  }
  // Precision says how f32 operands multiply; 16-bit ones are exact.
  p.s.precision = m.a.dtype == DType::f32 ? m.precision : Precision::ieee;
  p.s.promote = fp8 && !m.fast_accumulation && !p.s.blockScales;
  p.s.activation = m.activation;
  p.s.scaled = scales(m);
  p.s.batched = rank == 3 && p.batches > 1;
  return p;
}

/// The config a call runs, and whether the copy engine serves it.
struct TileChoice {
  Config config;
  bool givesTile = false;         ///< the call (or the tuner) named the tile
  bool describable = false;       ///< the copy engine can read A and B (padded where `pad*`)
  bool padA = false, padB = false; ///< copied first with padded rows (PAD_OPERANDS)
  bool hopper = false;            ///< compiled for sm_90 or newer
  bool defaultDescriptors = false;
};

TileChoice chooseTile(const Problem &p, const MatmulArgs &m, const Stream &stream, const Config &overrides) {
  TileChoice c;
  const std::string target = target_of(stream);
  c.config = targets_amd(target)
                 ? default_amd_matmul_config(m.a.dtype, p.s.precision, target, p.M, p.K)
                 : default_matmul_config(m.a.dtype, p.s.precision, stores_b_k_major(m.b), p.batches, p.M, p.N, p.K);
  // (fp8 is on the tensor cores of Hopper only.)
  if (is_float8(m.a.dtype) && !targets_amd(target) && compute_capability_of(target) < 90)
    c.config = fma_matmul_config();
  if (p.s.blockScales || p.s.promote)
    c.config = with_promoted_sums(c.config);
  if (p.s.grouped) // (no default split: grouped products run unsplit)
    c.config.set("SPLIT_K", 1);
  // A given tile (a user's, a tuned one) runs unsplit unless it says
  // otherwise: the default split belongs to the default tile. So do
  // persistent programs, which compute whole tiles.
  c.givesTile = std::any_of(overrides.values().begin(), overrides.values().end(), [](const auto &entry) {
    return entry.first != "DESCRIPTORS" && entry.first != "OUT_DESCRIPTOR" && entry.first != "PERSISTENT" &&
           entry.first != "warp_specialize" && entry.first != "cluster_size" && entry.first != "PAD_OPERANDS";
  });
  if ((c.givesTile || overrides.get("PERSISTENT", 0) > 0) && !overrides.has("SPLIT_K"))
    c.config.set("SPLIT_K", 1);
  for (const auto &[k, v] : overrides.values())
    c.config.set(k, v);
  // Descriptors by default where the copy engine can serve them (Hopper,
  // tensor cores, pipelined loops, 2-D operands it can read) and where it
  // measured faster (copy_engine_tile).
  // (Sizes below 2^31: the copy engine's coordinates are 32-bit.)
  // A grouped product's B is described as its groups' matrices one below
  // the other, stored [K][N] only where BLOCK_K divides K (a K step must
  // not reach into the next group's rows, which the copy engine would not
  // zero).
  const bool tiles2D = p.rank == 2 && on_tensor_cores(m.a.dtype, p.s.precision) && p.K > 0 &&
                       std::max({p.M, p.N, p.K}) < (int64_t(1) << 31);
  c.describable = tiles2D && copy_engine_reads(m.a) && copy_engine_reads(m.b);
  if (p.s.grouped)
    c.describable = c.describable && p.groupsStacked && p.groups * std::max(p.N, p.K) < (int64_t(1) << 31) &&
                    (stores_b_k_major(m.b) || p.K % c.config["BLOCK_K"] == 0);
  // The target compiled for (KILN_TARGET may name an older one than the
  // device's, e.g. sm_80 on a Hopper GPU), not the device itself.
  c.hopper = compute_capability_of(target) >= 90;
  // Operands the copy engine cannot read as stored (odd K, ...) are copied
  // first with padded rows where the copy engine would serve them
  // otherwise (PaddedOperands; not grouped products).
  const bool paddable = tiles2D && !p.s.grouped && !c.describable &&
                        std::max({p.M, p.N, p.K}) <= PaddedOperands::kMaxColumns;
  const bool wouldDescribe = c.config.num_stages() >= 2 && copy_engine_tile(c.config["BLOCK_M"], p.M);
  // (Not where the config asks for pointer loads anyway.)
  const int64_t pad =
      c.config.get("PAD_OPERANDS", c.hopper && paddable && wouldDescribe && c.config.get("DESCRIPTORS", 1) != 0);
  if (pad != 0 && pad != 1)
    throw Error(kOp + ": PAD_OPERANDS must be 0 or 1, got " + std::to_string(pad));
  if (pad && !paddable && !c.describable)
    throw Error(kOp + ": PAD_OPERANDS=1 copies 2-D tensor-core operands (f16, bf16, fp8, tf32; not grouped; sizes up "
                      "to " + std::to_string(PaddedOperands::kMaxColumns) + ") that the copy engine cannot read");
  if (pad && paddable) {
    c.padA = !copy_engine_reads(m.a);
    c.padB = !copy_engine_reads(m.b);
    c.describable = true;
  }
  c.defaultDescriptors = c.hopper && c.describable && wouldDescribe;
  if (!c.givesTile && c.config.get("DESCRIPTORS", c.defaultDescriptors) == 1 && c.defaultDescriptors)
    c.config = with_copy_engine_schedule(c.config);
  if (p.s.grouped && !overrides.has("PERSISTENT"))
    c.config = with_grouped_schedule(c.config);
  return c;
}

/// How the launches cut the product: tiles, K chunks, persistent programs,
/// clusters; and the structure of the kernel that computes the tiles.
struct Plan {
  Config tile; ///< what the kernels see (SPLIT_K, DESCRIPTORS, OUT_DESCRIPTOR and PERSISTENT change launches and structures)
  int64_t BM = 0, BN = 0, BK = 0;
  int64_t chunk = 0, splits = 1; ///< K elements a chunk; chunks
  int64_t persistent = 0;        ///< programs a multiprocessor (0: one a tile)
  int64_t cluster = 1;
  Structure s;
  Grid tiles, programs;
  int64_t clusterTiles = 0;
};

/// The tile sizes and K chunks `config` asks for, checked.
void planChunks(Plan &plan, const Problem &p, const Config &config) {
  plan.BM = config["BLOCK_M"], plan.BN = config["BLOCK_N"], plan.BK = config["BLOCK_K"];
  for (auto [what, size] : {std::pair{"BLOCK_M", plan.BM}, {"BLOCK_N", plan.BN}, {"BLOCK_K", plan.BK}})
    if (size < 16 || (size & (size - 1)))
      throw Error(kOp + ": " + what + " must be a power of two of at least 16, got " + std::to_string(size));
  if (config["GROUP_M"] < 1)
    throw Error(kOp + ": GROUP_M must be at least 1");
  const int64_t requestedSplits = config.get("SPLIT_K", 1);
  if (requestedSplits < 1 || requestedSplits > kMaxSplits)
    throw Error(kOp + ": SPLIT_K must be between 1 and " + std::to_string(kMaxSplits) + ", got " +
                std::to_string(requestedSplits));
  // K chunks of whole BLOCK_K steps; chunks that would start past K are not made.
  plan.chunk = std::max<int64_t>(1, cdiv(cdiv(p.K, plan.BK), requestedSplits)) * plan.BK;
  plan.splits = std::max<int64_t>(1, cdiv(p.K, plan.chunk));
  for (const auto &[k, v] : config.values())
    if (k != "SPLIT_K" && k != "DESCRIPTORS" && k != "OUT_DESCRIPTOR" && k != "PERSISTENT")
      plan.tile.set(k, v);
  plan.persistent = config.get("PERSISTENT", 0);
  if (plan.persistent < 0 || plan.persistent > 32)
    throw Error(kOp + ": PERSISTENT must be between 0 (off) and 32 programs a multiprocessor, got " +
                std::to_string(plan.persistent));
  if (p.s.blockScales && plan.BK > kScaleBlock)
    throw Error(kOp + ": block scales cover 128 K elements: BLOCK_K must be at most 128, got " +
                std::to_string(plan.BK));
  if (plan.persistent > 0 && plan.splits > 1)
    throw Error(kOp + ": PERSISTENT programs compute whole tiles; it needs SPLIT_K=1, got " +
                std::to_string(plan.splits) + " chunks");
  if (p.s.grouped && plan.splits > 1)
    throw Error(kOp + ": grouped products run unsplit (SPLIT_K=1), got " + std::to_string(plan.splits) + " chunks");
}

/// Which operands the copy engine reads and writes, checked against what
/// the config asks for.
void planDescriptors(Plan &plan, const Problem &p, const MatmulArgs &m, const TileChoice &choice) {
  const int64_t wantDescriptors = choice.config.get("DESCRIPTORS", choice.defaultDescriptors);
  if (wantDescriptors != 0 && wantDescriptors != 1)
    throw Error(kOp + ": DESCRIPTORS must be 0 or 1, got " + std::to_string(wantDescriptors));
  if (wantDescriptors && !choice.describable)
    throw Error(kOp + ": DESCRIPTORS=1 needs 2-D f16/bf16 (or tf32) operands with one dimension contiguous, the "
                      "other's stride a multiple of 16 bytes, 16-byte aligned addresses (or PAD_OPERANDS=1), and 0 "
                      "< M, N, K < 2^31 " +
                (p.s.grouped ? "(grouped: b's groups stored one after the other, BLOCK_K dividing K where b is [G, K, "
                               "N] with N contiguous)"
                             : ""));
  plan.s.descriptors = wantDescriptors == 1;
  // The output through a descriptor where A and B are read through them
  // and out is a row-major matrix the copy engine can write.
  // (A grouped tile's rows past its group's belong to the next group's:
  // stored by the threads, masked.)
  const bool outDescribable = p.rank == 2 && !p.s.grouped && copy_engine_reads(m.out) && m.out.effective_strides()[1] == 1 &&
                              std::max(p.M, p.N) < (int64_t(1) << 31);
  const int64_t wantOutDescriptor =
      choice.config.get("OUT_DESCRIPTOR", plan.s.descriptors && outDescribable && plan.splits == 1);
  if (wantOutDescriptor != 0 && wantOutDescriptor != 1)
    throw Error(kOp + ": OUT_DESCRIPTOR must be 0 or 1, got " + std::to_string(wantOutDescriptor));
  if (wantOutDescriptor && !(outDescribable && plan.splits == 1))
    throw Error(kOp + ": OUT_DESCRIPTOR=1 needs an unsplit product (SPLIT_K=1) and a 2-D out with contiguous rows, "
                      "its row stride a multiple of 16 bytes, a 16-byte aligned address, and M, N < 2^31");
  plan.s.outDescriptor = wantOutDescriptor == 1;
  plan.s.aKContiguous = m.a.effective_strides()[1] == 1;
  plan.s.bNContiguous = m.b.effective_strides()[1] == 1;
}

/// 64-bit offsets when an offset a program forms (rows and columns up to
/// the edge tiles' ends) or a coordinate could pass 2^31.
bool needsWideOffsets(const Plan &plan, const Problem &p) {
  // (A grouped tile starts at its group's first row: its rows end up to a
  // tile past the last.)
  const int64_t rowsEnd = (cdiv(p.M, plan.BM) + (p.s.grouped ? 1 : 0)) * plan.BM,
                colsEnd = cdiv(p.N, plan.BN) * plan.BN, kEnd = cdiv(p.K, plan.BK) * plan.BK;
  auto reach = [&](int o, int64_t rows, int64_t cols) {
    return (std::max(p.batches, p.groups) - 1) * std::abs(p.strides[o][0]) + rows * std::abs(p.strides[o][1]) +
           cols * std::abs(p.strides[o][2]);
  };
  const int64_t kBlocks = cdiv(kEnd, kScaleBlock), nBlocks = cdiv(colsEnd, kScaleBlock);
  const int64_t scaleReach = p.s.blockScales ? std::max(reach(SCALE_A, rowsEnd, kBlocks), reach(SCALE_B, kBlocks, nBlocks))
                                         : std::max(rowsEnd * std::abs(p.strides[SCALE_A][2]),
                                                    reach(SCALE_B, 0, colsEnd));
  const int64_t farthest = std::max({reach(A, rowsEnd, kEnd), reach(B, kEnd, colsEnd), reach(OUT, rowsEnd, colsEnd),
                                     reach(RESIDUAL, rowsEnd, colsEnd), colsEnd * std::abs(p.strides[BIAS][2]),
                                     scaleReach, rowsEnd, colsEnd, kEnd});
  const int64_t workReach = (plan.splits * p.batches - 1) * p.M * p.N + rowsEnd * p.N + colsEnd;
  // (The last chunk's loop bound, first + chunk, may pass K.)
  return std::max({farthest, plan.splits > 1 ? workReach : 0, plan.splits * plan.chunk}) >= (int64_t(1) << 31);
}

/// The grids: one program a tile, or persistent programs (`persistent` a
/// multiprocessor, never more than tiles), each computing every
/// num_programs-th tile in grouped order, alone or in clusters.
void planPrograms(Plan &plan, const Problem &p, const TileChoice &choice, const Stream &stream) {
  // (A grouped product's tile rows: at most one more a group than M's.)
  const int64_t tilesM = cdiv(p.M, plan.BM) + (p.s.grouped ? p.groups : 0), tilesN = cdiv(p.N, plan.BN);
  plan.tiles = Grid(static_cast<uint32_t>(tilesM * tilesN), static_cast<uint32_t>(plan.s.batched ? p.batches : 1));
  // (With K = 0 there are no K steps to carry the tiles: one program a tile
  // stores the epilogue of zero. The loop's tile arithmetic is exact below
  // 2^20 tiles; more run one program a tile too.)
  // With pointer loads, rows and columns past the edges wrap by one
  // subtraction, which needs tiles no larger than the product.
  // (Grouped rows are clamped, not wrapped.)
  plan.s.persistent = plan.persistent > 0 && p.K > 0 && tilesM * tilesN < (int64_t(1) << 20) &&
                      (plan.s.descriptors || ((p.s.grouped || p.M >= plan.BM) && p.N >= plan.BN));
  // (On Hopper, pointer loads into wgmma keep forming their pointers every
  // step, the form measured with the dot left in flight.)
  // (Block scales need the tile every step: its pointers are formed there.)
  plan.s.carriedPointers = plan.s.persistent && !plan.s.descriptors && !choice.hopper && !plan.s.blockScales;
  // Clusters of persistent programs sharing B's copies (cluster_size).
  plan.cluster = choice.config.get("cluster_size", 1);
  if (plan.cluster > 1 && p.s.grouped)
    throw Error(kOp + ": grouped products take no clusters (cluster_size 1), got " + std::to_string(plan.cluster));
  if (plan.cluster > 1 && (plan.persistent == 0 || !plan.s.descriptors))
    throw Error(kOp + ": cluster_size " + std::to_string(plan.cluster) +
                " shares B's copies among persistent programs: it needs PERSISTENT > 0 and DESCRIPTORS=1");
  if (plan.cluster > 1 && !plan.s.persistent) // (2^20 tiles or more run one program a tile: no copies to share)
    plan.tile.set("cluster_size", 1);
  plan.clusterTiles = cdiv(tilesM, plan.cluster) * tilesN;
  plan.programs = Grid(static_cast<uint32_t>(std::min<int64_t>(
                           plan.tiles.x, std::max<int64_t>(1, plan.persistent * stream.device().multiprocessors()))),
                       plan.tiles.y);
}

Plan planOf(const Problem &p, const MatmulArgs &m, const TileChoice &choice, const Stream &stream) {
  Plan plan;
  planChunks(plan, p, choice.config);
  plan.s = p.s;
  plan.s.evenK = p.K % plan.BK == 0;
  planDescriptors(plan, p, m, choice);
  plan.s.wide = needsWideOffsets(plan, p);
  planPrograms(plan, p, choice, stream);
  return plan;
}

/// The launch of one kernel of the plan: its arguments. (Its workspace:
/// split-K's partial tiles, or a grouped product's tile table.)
MatmulLaunch::Step stepOf(const Problem &p, const Plan &plan, const MatmulArgs &m, const Structure &st,
                          const Config &cfg, Grid grid, size_t workOffset = 0) {
  Params q = parameters(st);
  std::string key = st.key();
  MatmulLaunch::Step step{cached_kernel(key, [&] { return make_kernel(key, st, q); }),
                          cfg,
                          grid,
                          std::vector<Arg>(q.signature.types().size(), Arg(0)),
                          {},
                          {},
                          -1};
  for (int o : {WORK, TILES})
    if (q.pointers[o] >= 0)
      step.workspace.push_back({q.pointers[o], o == WORK ? workOffset : 0});
  std::vector<Arg> &args = step.args;
  for (int o = 0; o < WORK; ++o)
    if (q.pointers[o] >= 0) {
      args[q.pointers[o]] = arg_of(*p.views[o]);
      step.tensors.slots.emplace_back(q.pointers[o], o);
    }
  for (int o : {A, B, OUT}) // as stored: [rows][contiguous columns]
    if (int first = q.descriptors[o]; first >= 0) {
      bool asLaid = o == A ? st.aKContiguous : o == B ? st.bNContiguous : true;
      int64_t rows = o == A ? (asLaid ? p.M : p.K) : o == B ? (asLaid ? p.K : p.N) * p.groups : p.M;
      int64_t cols = o == A ? (asLaid ? p.K : p.M) : o == B ? (asLaid ? p.N : p.K) : p.N;
      int64_t rowStride = asLaid ? p.strides[o][1] : p.strides[o][2];
      std::vector<Arg> parts;
      TensorArg(arg_of(*p.views[o]), {rows, cols}, {rowStride, 1}).append_to(parts);
      std::copy(parts.begin(), parts.end(), args.begin() + first);
      step.tensors.slots.emplace_back(first + 1, o); // (after the tensor map's placeholder)
    }
  args[q.M] = Arg(p.M);
  args[q.N] = Arg(p.N);
  if (q.K >= 0)
    args[q.K] = Arg(p.K);
  if (q.alpha >= 0)
    args[q.alpha] = Arg(static_cast<float>(m.alpha));
  step.alpha = q.alpha;
  if (q.chunk >= 0)
    args[q.chunk] = Arg(plan.chunk);
  if (q.splits >= 0)
    args[q.splits] = Arg(static_cast<int32_t>(plan.splits));
  for (int o = 0; o < OPERANDS; ++o)
    for (int d = 0; d < 3; ++d)
      if (q.strides[o][d] >= 0)
        args[q.strides[o][d]] = Arg(o == WORK ? (d == 0 ? p.M * p.N : d == 1 ? p.N : 1) : p.strides[o][d]);
  return step;
}

/// Persistent clusters: as many as run at once (clusters need
/// multiprocessors of one GPC, so fewer than multiprocessors / size may
/// fit), each taking every so many cluster tiles.
void fitClusters(MatmulLaunch::Step &step, const Plan &plan, const Stream &stream) {
  const int64_t resident = step.kernel.resident_clusters(step.config, stream, step.args);
  const int64_t clusters =
      std::min({plan.clusterTiles, std::max<int64_t>(1, resident),
                std::max<int64_t>(1, plan.persistent * stream.device().multiprocessors() / plan.cluster)});
  step.grid = Grid(static_cast<uint32_t>(clusters * plan.cluster), step.grid.y);
}

/// Split-K's two launches: partial sums of each K chunk, then their sum
/// and the epilogue, over tiles no larger than the product's (so the
/// offsets planned bound them).
void addSplitK(MatmulLaunch &launch, const Problem &p, const Plan &plan, const MatmulArgs &m, size_t workOffset) {
  Structure partial = plan.s, combine = plan.s;
  partial.phase = Phase::partial;
  partial.present[OUT] = partial.present[BIAS] = partial.present[RESIDUAL] = false;
  // (Block scales scale each K step, so the chunks; the others the sum.)
  partial.present[SCALE_A] = partial.present[SCALE_B] = plan.s.blockScales;
  partial.present[WORK] = combine.present[WORK] = true;
  partial.dtypes[WORK] = combine.dtypes[WORK] = DType::f32;
  partial.activation = Activation::none;
  partial.scaled = false;
  combine.phase = Phase::combine;
  combine.present[A] = combine.present[B] = false;
  combine.evenK = true;
  if (plan.s.blockScales)
    combine.present[SCALE_A] = combine.present[SCALE_B] = combine.blockScales = false;
  combine.descriptors = false; // (it reads no operands)
  combine.outDescriptor = false;
  launch.steps.push_back(stepOf(p, plan, m, partial, plan.tile,
                                Grid(plan.tiles.x, plan.tiles.y, static_cast<uint32_t>(plan.splits)), workOffset));
  const int64_t CBM = std::min<int64_t>(plan.BM, 32), CBN = std::min<int64_t>(plan.BN, 128);
  launch.steps.push_back(stepOf(
      p, plan, m, combine, Config{{"BLOCK_M", CBM}, {"BLOCK_N", CBN}, {"GROUP_M", 1}, {"num_warps", 4}, {"num_stages", 1}},
      Grid(static_cast<uint32_t>(cdiv(p.M, CBM) * cdiv(p.N, CBN)), plan.tiles.y), workOffset));
  launch.workspace_bytes = workOffset + static_cast<size_t>(plan.splits * p.batches * p.M * p.N) * sizeof(float);
}

} // namespace

MatmulLaunch prepare_matmul(const MatmulArgs &m, const Stream &stream, const Config &overrides) {
  const Problem p = checkedProblem(m, stream);
  if (m.out.numel() == 0)
    return {};
  return plan_matmul(p, m, stream, overrides);
}

bool copy_engine_reads(const TensorView &v) {
  if (v.rank() != 2 || v.address % 16 != 0)
    return false;
  std::vector<int64_t> st = v.effective_strides();
  int64_t bytes = static_cast<int64_t>(size_in_bytes(v.dtype));
  return (st[1] == 1 && st[0] * bytes % 16 == 0) || (st[0] == 1 && st[1] * bytes % 16 == 0);
}

MatmulLaunch plan_matmul(const MatmulProblem &given, const MatmulArgs &givenShape, const Stream &stream,
                         const Config &overrides) {
  const TileChoice choice = chooseTile(given, givenShape, stream, overrides);
  // (Padded operands: their copies first, the product reading them.)
  const PaddedOperands padded(given, givenShape, choice.padA, choice.padB, stream);
  const Problem &p = padded.problem();
  const MatmulArgs &m = padded.shape();
  const Plan plan = planOf(p, m, choice, stream);
  MatmulLaunch launch;
  launch.steps = padded.steps;
  launch.workspace_bytes = padded.bytes;
  if (plan.splits > 1)
    addSplitK(launch, p, plan, m, padded.bytes);
  else
    launch.steps.push_back(stepOf(p, plan, m, plan.s, plan.tile, plan.s.persistent ? plan.programs : plan.tiles));
  for (size_t i = padded.steps.size(); i < launch.steps.size(); ++i)
    padded.redirect(launch.steps[i]);
  if (plan.splits == 1 && plan.s.persistent && plan.tile.cluster_size() > 1)
    fitClusters(launch.steps.back(), plan, stream);
  return launch;
}

int32_t matmul_plan_choices(const MatmulArgs &args) {
  return (args.fast_accumulation ? 0 : 512) + (scales(args) ? 256 : 0) + static_cast<int32_t>(args.activation) * 16 +
         static_cast<int32_t>(args.precision);
}

void MatmulLaunch::rebind(const MatmulArgs &m) {
  static_assert(A == 0 && B == 1 && OUT == 2 && BIAS == 3 && RESIDUAL == 4 && SCALE_A == 5 && SCALE_B == 6,
                "views numbered as MatmulArgs orders them");
  for (Step &step : steps) {
    step.tensors.rebind(step.args, {&m.a, &m.b, &m.out, &m.bias, &m.residual, &m.scale_a, &m.scale_b});
    if (step.alpha >= 0)
      step.args[step.alpha] = Arg(static_cast<float>(m.alpha));
  }
}

void matmul(const MatmulArgs &args, const Stream &stream, const Config &config) {
  thread_local RecentPlans<MatmulLaunch> recent;
  PlanKey key;
  const bool keyed = key.make({&args.a, &args.b, &args.out, &args.bias, &args.residual, &args.scale_a, &args.scale_b},
                              matmul_plan_choices(args), stream);
  if (const MatmulLaunch *plan = keyed ? recent.find(key, config, args) : nullptr) {
    plan->queue(stream);
    return;
  }
  check_present_views({{&args.a, "a"}, {&args.b, "b"}, {&args.out, "out"}, {&args.bias, "bias"},
                       {&args.residual, "residual"}, {&args.scale_a, "scale_a"}, {&args.scale_b, "scale_b"}},
                      "matmul");
  MatmulLaunch plan =
      prepare_matmul(args, stream, config.values().empty() ? chosen_matmul_config(args, stream) : config);
  plan.queue(stream);
  if (keyed)
    recent.keep(key, config, std::move(plan));
}

} // namespace kiln::ops
