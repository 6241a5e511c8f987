//===- Attention.cpp - the attention op: planning and launching -----------===//
//
// Picks the kernel's structure (masks, layouts, packed or paged keys), its
// tile and how many runs to split each row's keys in, then launches the
// forward kernel and, split, the merge (ops/lib/AttentionKernel.cpp; the
// checks: AttentionProblem.cpp; tuning: AttentionTuning.cpp).
//
//===----------------------------------------------------------------------===//

#include "ops/lib/AttentionPlan.h"
#include "ops/lib/Views.h"
#include "ops/lib/Workspace.h"

#include <kiln/ops/library.h>

#include <algorithm>
#include <cmath>

namespace kiln::ops {

using namespace attention_kernel;

namespace {

const std::string kOp = "attention";

/// At most this many queries a sequence and head count as decoding: a tile
/// of their own, and heads packed by K/V head.
constexpr int64_t kFewQueries = 64;

Structure structureOf(const AttentionArgs &a, const AttentionProblem &p) {
  Structure s;
  s.dtype = a.q.dtype;
  s.blockD = std::max<int64_t>(16, next_pow2(p.D));
  s.evenD = s.blockD == p.D;
  const KeyBounds bounds = key_bounds(a, p);
  s.boundedLeft = bounds.boundedLeft;
  s.boundedRight = bounds.boundedRight;
  s.softcap = a.softcap > 0;
  s.negativeScale = p.scale < 0;
  s.lse = a.lse.address != 0;
  s.varlen = a.cu_seqlens_q.address != 0;
  s.paged = a.block_table.address != 0;
  s.shiftPerSequence = bounds.shiftPerSequence;
  // Few queries a head (decoding) on grouped K/V heads: a program takes
  // the queries of the whole group, which then reads its keys once. (Not
  // with modifiers, which see one head a program.)
  s.modifiers = a.modifiers;
  s.packHeads = !s.varlen && !a.modifiers && p.seqQ <= kFewQueries && p.headsKV > 0 && p.headsQ > p.headsKV;
  s.rowsOfD = s.evenD && !s.varlen && !s.paged && !s.packHeads;
  // (A packed batch's tokens: [tokens, heads, D], no batch stride.)
  s.tokenRows = s.evenD && !s.paged && !s.packHeads;
  for (const AttentionView *c : {&p.q, &p.k, &p.v, &p.out}) {
    s.rowsOfD = s.rowsOfD && c->strides[1] == p.D && c->strides[0] % p.D == 0 && c->strides[2] % p.D == 0;
    s.tokenRows = s.tokenRows && c->strides[2] == p.D && c->strides[1] > 0 && c->strides[0] % c->strides[1] == 0;
  }
  // (A column offset counts in 32 bits: tensors of 2^31 elements or more
  // keep the plain offsets.)
  for (const TensorView *view : {&a.q, &a.k, &a.v, &a.out})
    s.tokenRows = s.tokenRows && arg_of(*view).bytes() / size_in_bytes(view->dtype) < (uint64_t(1) << 31);
  s.tokenRows = s.tokenRows && !s.rowsOfD;
  return s;
}

/// The rows a (batch, head) program column covers: the queries of a head,
/// or, packed, of every query head sharing a K/V head.
int64_t rowsOf(const Structure &s, const AttentionProblem &p) {
  return s.packHeads ? p.seqQ * (p.headsQ / p.headsKV) : p.seqQ;
}

/// How many runs to take each row's keys in: enough programs for about four
/// per multiprocessor, each run at least two blocks of keys.
int64_t splitsFor(const AttentionArgs &a, const AttentionProblem &p, int64_t programs, int64_t BN, const Stream &stream) {
  if (a.num_splits > 0)
    return a.num_splits;
  if (a.cu_seqlens_q.address || programs == 0)
    return 1;
  const int64_t target = 4 * static_cast<int64_t>(stream.device().multiprocessors());
  const int64_t runs = std::min(cdiv(target, programs), cdiv(p.seqK, BN) / 2);
  return std::clamp<int64_t>(runs, 1, kMaxSplits);
}

/// The forward kernel's arguments but the workspace's.
std::vector<Arg> forwardArguments(const AttentionArgs &a, const AttentionProblem &p, const Structure &s, const Params &q,
                                  int64_t splits) {
  std::vector<Arg> args(q.signature.types().size(), Arg(0));
  const TensorView *of[TENSORS] = {&a.q, &a.k, &a.v, &a.out, &a.lse};
  const AttentionView *canon[TENSORS] = {&p.q, &p.k, &p.v, &p.out, nullptr};
  for (int t = 0; t < TENSORS; ++t) {
    if (q.pointers[t] < 0)
      continue;
    args[q.pointers[t]] = arg_of(*of[t]);
    for (int d = 0; d < 3; ++d)
      if (q.strides[t][d] >= 0)
        args[q.strides[t][d]] = Arg(t == LSE                    ? p.lseStrides[d]
                                    : s.rowsOfD                 ? canon[t]->strides[d] / p.D
                                    : s.tokenRows && d == 0     ? canon[t]->strides[0] / canon[t]->strides[1]
                                                                : canon[t]->strides[d]);
  }
  if (s.varlen) {
    args[q.cuQ] = arg_of(a.cu_seqlens_q);
    args[q.cuK] = arg_of(a.cu_seqlens_k);
  }
  if (s.wholeCutBlocks)
    args[q.firstKey] = Arg(static_cast<int32_t>(p.firstKey));
  if (s.paged) {
    args[q.table] = arg_of(a.block_table);
    args[q.cacheSeqlens] = arg_of(a.cache_seqlens);
    args[q.tableStride] = Arg(a.block_table.shape[0] > 1 ? a.block_table.effective_strides()[0] : int64_t(0));
    args[q.pageSize] = Arg(static_cast<int32_t>(p.pageSize));
    args[q.tableKeys] = Arg(static_cast<int32_t>(p.pages > 0 ? p.maxPages * p.pageSize : 0));
    args[q.lastPage] = Arg(static_cast<int32_t>(std::max<int64_t>(p.pages - 1, 0)));
  }
  args[q.seqQ] = Arg(static_cast<int32_t>(p.seqQ));
  if (q.seqK >= 0)
    args[q.seqK] = Arg(static_cast<int32_t>(p.seqK));
  args[q.group] = Arg(static_cast<int32_t>(p.headsQ / std::max<int64_t>(p.headsKV, 1)));
  args[q.scaleLog2] = Arg(static_cast<float>(p.scale / std::log(2.0)));
  const KeyBounds bounds = key_bounds(a, p);
  for (auto [position, value] : {std::pair{q.shift, bounds.shift}, {q.left, bounds.left}, {q.right, bounds.right}})
    if (position >= 0)
      args[position] = Arg(value);
  if (s.softcap) {
    args[q.capInput] = Arg(static_cast<float>(p.scale / a.softcap));
    args[q.capOutput] = Arg(static_cast<float>(a.softcap / std::log(2.0)));
  }
  if (q.headDim >= 0)
    args[q.headDim] = Arg(static_cast<int32_t>(p.D));
  if (q.splits >= 0)
    args[q.splits] = Arg(static_cast<int32_t>(splits));
  if (s.persistent) {
    args[q.heads] = Arg(static_cast<int32_t>(p.headsQ));
    args[q.batches] = Arg(static_cast<int32_t>(p.batch));
  }
  if (s.modifiers)
    for (size_t i = 0; i < s.modifiers->tensors.size(); ++i)
      args[q.captured + static_cast<int>(i)] = arg_of(s.modifiers->tensors[i]);
  return args;
}

/// The merge of a split pass's runs into out and lse.
AttentionLaunch::Step mergeStep(const AttentionArgs &a, const AttentionProblem &p, const Structure &s, int64_t splits) {
  const MergeParams q = merge_parameters(s.dtype, s.lse);
  AttentionLaunch::Step step{cached_kernel(merge_key(s.dtype, s.blockD, s.lse),
                                           [&] { return merge_kernel(s.dtype, s.blockD, s.lse, q); })};
  step.args.assign(q.signature.types().size(), Arg(0));
  step.partialOut = q.partialOut;
  step.partialLse = q.partialLse;
  step.args[q.out] = arg_of(a.out);
  if (s.lse)
    step.args[q.lse] = arg_of(a.lse);
  step.args[q.splits] = Arg(static_cast<int32_t>(splits));
  step.args[q.seqQ] = Arg(static_cast<int32_t>(p.seqQ));
  step.args[q.headDim] = Arg(static_cast<int32_t>(p.D));
  for (int d = 0; d < 3; ++d) {
    step.args[q.outStrides[d]] = Arg(p.out.strides[d]);
    if (s.lse)
      step.args[q.lseStrides[d]] = Arg(p.lseStrides[d]);
  }
  const int64_t BM = std::min<int64_t>(16, next_pow2(p.seqQ));
  step.config = Config{{"BLOCK_M", BM}, {"num_warps", 4}};
  step.grid = Grid(static_cast<uint32_t>(cdiv(p.seqQ, BM)), static_cast<uint32_t>(p.headsQ),
                   static_cast<uint32_t>(p.batch));
  return step;
}

/// The listing of a packed batch's tiles into the workspace's table.
AttentionLaunch::Step tileListStep(const AttentionArgs &a, const AttentionProblem &p, int64_t BM) {
  const TileListParams q = tile_list_parameters();
  AttentionLaunch::Step step{cached_kernel(tile_list_key(), [&] { return tile_list_kernel(q); })};
  step.args.assign(q.signature.types().size(), Arg(0));
  step.tiles = q.table;
  step.args[q.cuQ] = arg_of(a.cu_seqlens_q);
  step.args[q.batch] = Arg(static_cast<int32_t>(p.batch));
  step.config = Config{{"BLOCK_M", BM}, {"num_warps", 4}};
  step.grid = Grid(1);
  return step;
}

/// The workspace's regions as a step's arguments: at `base` (a real
/// address, or for compiling only a placeholder of the same alignment).
void pointAtWorkspace(const AttentionLaunch &launch, const AttentionLaunch::Step &step, std::vector<Arg> &args,
                      uint64_t base, DeviceKind kind) {
  if (step.tiles >= 0)
    args[step.tiles] = Arg::device_pointer(base, launch.tableBytes, kind);
  if (step.partialOut >= 0)
    args[step.partialOut] = Arg::device_pointer(base, launch.lseOffset, kind);
  if (step.partialLse >= 0)
    args[step.partialLse] =
        Arg::device_pointer(base + launch.lseOffset, launch.workspaceBytes - launch.lseOffset, kind);
}

/// Whether the copy engine reads the keys in blocks of `blockN` (what a
/// producer warpgroup feeds): rows of D or token rows, keys the blocks
/// divide, or a packed batch's, whose cut blocks are read whole.
bool keysOnTheCopyEngine(const Structure &s, const AttentionProblem &p, int64_t blockN) {
  return (s.rowsOfD || s.tokenRows) && (s.varlen ? p.packedKeys >= blockN : p.seqK % blockN == 0);
}

/// Whether programs may walk tiles of structure `s` (tiles_can_be_walked).
bool walkable(const Structure &s) { return !s.paged && !s.packHeads && s.blockD <= 128; }

/// The untuned tile of a call of structure `s` on an NVIDIA target (or
/// none: the interpreter).
Config measuredTile(const Structure &s, const AttentionProblem &p, const std::string &arch) {
  const bool bounded = s.boundedLeft || s.boundedRight;
  const bool hopper = !arch.empty() && compute_capability_of(arch) >= 90;
  // A few queries (decoding): as many rows as there are queries (of the
  // packed heads), on few warps, so that many programs share a
  // multiprocessor and keep its loads in flight: reading the keys is the
  // work.
  if (p.seqQ <= kFewQueries && !s.varlen) {
    const int64_t rows = std::clamp<int64_t>(next_pow2(rowsOf(s, p)), 16, 64);
    return Config{{"BLOCK_M", rows},
                  {"BLOCK_N", s.blockD <= 128 ? 64 : 32},
                  {"num_warps", rows <= 32 ? 2 : 4},
                  {"num_stages", hopper ? 3 : 2}};
  }
  // Long query blocks: the fastest tiles `autotune --op attention` found
  // on Hopper (docs/attention.md): 128 queries on two consumer warpgroups
  // (the compiler adds a producer where one program fills a
  // multiprocessor), 128-key steps at D 64 where they divide 2048 keys or
  // more (a producer's; else 64, two programs a multiprocessor, which
  // hide each other's start and end), 128 at D 128; at D 256 64 (the
  // queries then wait in shared memory beside two slots of keys and
  // values, and a producer feeds them, masked or not). Where the keys are
  // one loop (no bounds, blocks dividing them) the compiler runs a
  // warpgroup's softmax under its own P V (overlap_chain). At D 256 under
  // bounds (two loops), the consumer warpgroups take turns instead; at D
  // 64 and 128 under bounds they run as they drift (a walk takes no
  // turns). On mma.sync targets (before
  // Hopper) 64 queries on one warpgroup, three stages deep, 128-key steps
  // at D 64, 64 at D 128, whose registers hold the scores without
  // spilling; at D 256 64 x 64 on 8 warps, two stages.
  // Where a producer feeds 128-key blocks of a dense or packed batch,
  // without a window's left edge, one program a multiprocessor walks the
  // tiles (`persistent`; a packed batch's, those its sequences have): its
  // producer brings a tile's first blocks in under the one before. (At D
  // 64 below 2048 keys, 64-key blocks run two programs a multiprocessor
  // without a producer, which hide each other's start and end: a walk,
  // which asks for a producer, would take that away.)
  const bool walk = hopper && !s.boundedLeft && walkable(s) && keysOnTheCopyEngine(s, p, 128);
  if (s.blockD <= 64 && hopper && keysOnTheCopyEngine(s, p, 128) && p.seqK >= 2048)
    return Config{{"BLOCK_M", 128},
                  {"BLOCK_N", 128},
                  {"num_warps", 8},
                  {"num_stages", 2},
                  {"persistent", walk ? 1 : 0}};
  if (s.blockD <= 64)
    return hopper ? Config{{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"num_warps", 8}, {"num_stages", 2}}
                  : Config{{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"num_warps", 4}, {"num_stages", 3}};
  if (s.blockD <= 128)
    return hopper ? Config{{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"num_warps", 8}, {"num_stages", 2},
                           {"persistent", walk ? 1 : 0}}
                  : Config{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"num_warps", 4}, {"num_stages", 3}};
  if (hopper)
    return Config{
        {"BLOCK_M", 128}, {"BLOCK_N", 64}, {"num_warps", 8}, {"num_stages", 2},
        {"ping_pong", bounded && keysOnTheCopyEngine(s, p, 64) ? 1 : 0}};
  return Config{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"num_warps", 8}, {"num_stages", 2}};
}

/// The untuned tile of a call of structure `s` for target `arch`. AMD's
/// matrix cores, like mma.sync, hold the scores in registers: the tiles
/// of the targets before Hopper, in one stage (AttentionTuning.cpp says
/// why), with 32-key steps at D 256 (64 queries and 64 keys of 256
/// would stage 64 KiB, all of the LDS). None of them has run on an AMD GPU.
Config defaultTile(const Structure &s, const AttentionProblem &p, const std::string &arch) {
  Config tile = measuredTile(s, p, arch);
  // (A modifier's work on every score and its indices take registers that
  // the scores of 128 keys leave none for: ptxas spills there.)
  if (s.modifiers && tile.get("BLOCK_N", 0) > 64)
    tile.set("BLOCK_N", 64);
  if (targets_amd(arch)) {
    tile.set("num_stages", 1);
    if (s.blockD > 128)
      tile.set("BLOCK_N", 32);
  }
  return tile;
}

} // namespace

Config default_attention_tile(const AttentionArgs &a, const AttentionProblem &p, const std::string &arch) {
  return defaultTile(structureOf(a, p), p, arch);
}

bool copy_engine_reads_keys(const AttentionArgs &a, const AttentionProblem &p, int64_t blockN) {
  return keysOnTheCopyEngine(structureOf(a, p), p, blockN);
}

bool tiles_can_be_walked(const AttentionArgs &a, const AttentionProblem &p) {
  return walkable(structureOf(a, p));
}

std::string attention_problem_key(const AttentionArgs &a, const AttentionProblem &p) {
  // (Writing the log-sum-exp or not changes no tile's speed: one key serves
  // both.)
  Structure s = structureOf(a, p);
  s.lse = false;
  return s.key() + ",q=" + std::to_string(autotune::bucket(p.seqQ)) + ",k=" +
         std::to_string(autotune::bucket(p.seqK)) + ",heads=" + std::to_string(autotune::bucket(p.batch * p.headsQ)) +
         ",group=" + std::to_string(p.headsQ / std::max<int64_t>(p.headsKV, 1));
}

AttentionLaunch prepare_attention(const AttentionArgs &a, const AttentionProblem &p, const Stream &stream,
                                  const Config &config) {
  Structure s = structureOf(a, p);
  // (The target compiled for, which KILN_TARGET may make older than the
  // device.)
  Config tile = defaultTile(s, p, target_of(stream));
  for (const auto &[key, value] : config.values())
    tile.set(key, value);
  const int64_t BM = tile["BLOCK_M"], BN = tile["BLOCK_N"];
  for (auto [what, size] : {std::pair{"BLOCK_M", BM}, {"BLOCK_N", BN}})
    if (size < 16 || (size & (size - 1)))
      throw Error(kOp + ": " + what + " must be a power of two of at least 16, got " + std::to_string(size));
  s.evenK = !s.varlen && !s.paged && p.seqK % BN == 0;
  s.wholeCutBlocks = s.varlen && keysOnTheCopyEngine(s, p, BN);
  const int64_t queryBlocks = cdiv(rowsOf(s, p), BM), columns = s.packHeads ? p.headsKV : p.headsQ;
  const int64_t tiles = queryBlocks * columns * p.batch;
  const int64_t splits = splitsFor(a, p, tiles, BN, stream);
  s.split = splits > 1;
  // A mask modifier's tiles visit the blocks a block mask lists (not split
  // runs, paged caches or packed heads, whose programs find their keys
  // otherwise: they mask every block).
  s.blockMask = s.maskMod() && !s.split && !s.paged && !s.packHeads;
  // (Every head sees the same keys, and every sequence of a dense batch:
  // only the mask can tell them apart.)
  s.maskPerHead = s.blockMask && a.modifiers->mask_reads_head;
  s.maskPerBatch = s.blockMask && (a.modifiers->mask_reads_batch || s.varlen);
  // (A paged cache's and split-KV's programs find their work from their
  // ids: they do not walk.)
  const int64_t perMultiprocessor = tile.get("persistent", 0);
  if (perMultiprocessor < 0 || perMultiprocessor > 4)
    throw Error(kOp + ": persistent is the programs a multiprocessor walking the tiles (0: one program a tile), 0 to "
                      "4, got " + std::to_string(perMultiprocessor));
  // (A causal walk takes its tiles two at a time; a packed batch's walks
  // the query blocks its sequences have: walkTiles. A walk counts its
  // steps in 32 bits, with room for the steps past its last tile: more
  // tiles than that are launched a program each.)
  int64_t entries = 0;
  for (int64_t length : p.lengthsQ)
    entries += cdiv(length, BM);
  const int64_t walked = s.varlen                  ? entries * columns
                         : s.keysGrowWithQueries() ? cdiv(queryBlocks, 2) * columns * p.batch
                                                   : tiles;
  s.persistent =
      perMultiprocessor > 0 && !s.split && !s.blockMask && walkable(s) && walked * 2 < (int64_t(1) << 31);
  if (s.persistent)
    tile.set("warp_specialize", 1);
  const Grid grid = s.persistent ? Grid(static_cast<uint32_t>(std::clamp<int64_t>(
                                            perMultiprocessor * stream.device().multiprocessors(), 1,
                                            std::max<int64_t>(walked, 1))))
                                 : Grid(static_cast<uint32_t>(queryBlocks * splits), static_cast<uint32_t>(columns),
                                        static_cast<uint32_t>(p.batch));

  const Params q = parameters(s);
  AttentionLaunch launch;
  if (s.persistent && s.varlen) {
    // The table of the tiles the walk takes, listed on the stream first.
    launch.tableBytes = static_cast<uint64_t>(std::max<int64_t>(entries, 1)) * 8;
    launch.steps.push_back(tileListStep(a, p, BM));
  }
  AttentionLaunch::Step forward{cached_kernel(s.key(), [&] { return forward_kernel(s, q); }), tile, grid,
                                forwardArguments(a, p, s, q, splits), q.partialOut, q.partialLse, q.tiles};
  if (q.tileEntries >= 0)
    forward.args[q.tileEntries] = Arg(static_cast<int32_t>(entries));
  if (s.blockMask) {
    // The block mask first: a row a tile of the table at the workspace's
    // start (two counts, then two lists of the key blocks).
    const int64_t keyBlocks = cdiv(p.seqK, BN);
    forward.args[q.blockColumns] = Arg(static_cast<int32_t>(keyBlocks));
    forward.tiles = q.blockTable;
    launch.tableBytes = static_cast<uint64_t>(std::max<int64_t>(tiles, 1) * (2 * keyBlocks + 2)) * 4;
    const Grid rows(grid.x, s.maskPerHead ? grid.y : 1, s.maskPerBatch ? grid.z : 1);
    launch.steps.push_back({cached_kernel(s.key() + "|blocks", [&] { return block_mask_kernel(s, q); }), tile, rows,
                            forward.args, -1, -1, q.blockTable});
  }
  launch.forwardStep = launch.steps.size();
  launch.steps.push_back(std::move(forward));
  if (s.split) {
    const uint64_t rows = static_cast<uint64_t>(splits * p.batch * p.headsQ * p.seqQ);
    launch.lseOffset = (rows * s.blockD * 4 + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
    launch.workspaceBytes = launch.lseOffset + rows * 4;
    launch.steps.push_back(mergeStep(a, p, s, splits));
  }
  return launch;
}

void AttentionLaunch::queue(const Stream &stream) const {
  const uint64_t bytes = std::max(workspaceBytes, tableBytes);
  Buffer space = bytes ? workspace(stream, bytes) : Buffer();
  for (const Step &step : steps) {
    if (step.partialOut < 0 && step.tiles < 0) {
      step.kernel.launch_with(step.grid, step.config, stream, step.args);
      continue;
    }
    std::vector<Arg> args = step.args;
    pointAtWorkspace(*this, step, args, space.address(), space.device().kind());
    step.kernel.launch_with(step.grid, step.config, stream, args);
  }
}

CompiledKernel AttentionLaunch::compile(const std::string &arch) const {
  CompiledKernel forward;
  for (const Step &step : steps) {
    // Only the workspace's alignment shapes the code.
    std::vector<Arg> args = step.args;
    pointAtWorkspace(*this, step, args, kWorkspaceAlignment, DeviceKind::cuda);
    CompiledKernel compiled = step.kernel.compile(step.config, step.kernel.specialize(args), arch);
    if (&step == &steps[forwardStep])
      forward = std::move(compiled);
  }
  return forward;
}

const char *name(AttentionMask mask) {
  switch (mask) {
  case AttentionMask::none: return "none";
  case AttentionMask::causal_top_left: return "causal_top_left";
  case AttentionMask::causal_bottom_right: return "causal_bottom_right";
  }
  return "?";
}

void attention(const AttentionArgs &a, const Stream &stream, const Config &config) {
  const AttentionProblem p = checked_attention(a, stream);
  if (a.out.numel() == 0)
    return;
  prepare_attention(a, p, stream, config.values().empty() ? chosen_attention_config(a, p, stream) : config)
      .queue(stream);
}

} // namespace kiln::ops
