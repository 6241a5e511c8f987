//===- Attention.cpp - the attention op: planning and launching -----------===//
//
// Picks the kernel's structure (masks, layouts, packed or paged keys), its
// tile and how many runs to split each row's keys in, then launches the
// forward kernel and, split, the merge (ops/lib/AttentionKernel.cpp; the
// checks: ops/lib/AttentionProblem.cpp).
//
//===----------------------------------------------------------------------===//

#include "ops/lib/AttentionKernel.h"
#include "ops/lib/AttentionProblem.h"
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

/// What every workspace region's address is a multiple of.
constexpr uint64_t kWorkspaceAlignment = 256;

Structure structureOf(const AttentionArgs &a, const Problem &p) {
  Structure s;
  s.dtype = a.q.dtype;
  s.blockD = std::max<int64_t>(16, next_pow2(p.D));
  s.evenD = s.blockD == p.D;
  s.boundedLeft = a.window_left >= 0;
  s.boundedRight = a.mask != AttentionMask::none || a.window_right >= 0;
  s.softcap = a.softcap > 0;
  s.lse = a.lse.address != 0;
  s.varlen = a.cu_seqlens_q.address != 0;
  s.paged = a.block_table.address != 0;
  s.shiftPerSequence =
      (s.varlen || s.paged) && (s.boundedLeft || s.boundedRight) && a.mask != AttentionMask::causal_top_left;
  // Few queries a head (decoding) on grouped K/V heads: a program takes
  // the queries of the whole group, which then reads its keys once.
  s.packHeads = !s.varlen && p.seqQ <= kFewQueries && p.headsKV > 0 && p.headsQ > p.headsKV;
  s.rowsOfD = s.evenD && !s.varlen && !s.paged && !s.packHeads;
  for (const Canonical *c : {&p.q, &p.k, &p.v, &p.out})
    s.rowsOfD = s.rowsOfD && c->strides[1] == p.D && c->strides[0] % p.D == 0 && c->strides[2] % p.D == 0;
  return s;
}

/// The rows a (batch, head) program column covers: the queries of a head,
/// or, packed, of every query head sharing a K/V head.
int64_t rowsOf(const Structure &s, const Problem &p) {
  return s.packHeads ? p.seqQ * (p.headsQ / p.headsKV) : p.seqQ;
}

/// The default tile. Long query blocks: the fastest of those measured on
/// Hopper (docs/attention.md), 128 queries on two warpgroups, 64-key steps
/// at D 64, 128 at D 128 (three stages under a mask or a window; Hopper's
/// shared memory: the target compiled for, which KILN_TARGET may make older
/// than the device). A few queries (decoding): as many rows as there are
/// queries, and deep rings of keys, since reading the keys is the work.
Config defaultTile(const Structure &s, const Problem &p, const Stream &stream) {
  const bool bounded = s.boundedLeft || s.boundedRight;
  const bool hopper = compiles_for_hopper(stream);
  if (p.seqQ <= kFewQueries && !s.varlen)
    return Config{{"BLOCK_M", std::clamp<int64_t>(next_pow2(rowsOf(s, p)), 16, 64)},
                  {"BLOCK_N", s.blockD <= 128 ? 64 : 32},
                  {"num_warps", 4},
                  {"num_stages", hopper ? 4 : 2}};
  if (s.blockD <= 64)
    return Config{{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"num_warps", 8}, {"num_stages", 2}};
  if (s.blockD <= 128)
    return Config{{"BLOCK_M", 128},
                  {"BLOCK_N", hopper ? 128 : 64},
                  {"num_warps", 8},
                  {"num_stages", hopper && bounded ? 3 : 2}};
  return Config{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"num_warps", 4}, {"num_stages", 2}};
}

/// How many runs to take each row's keys in: enough programs for about four
/// per multiprocessor, each run at least two blocks of keys.
int64_t splitsFor(const AttentionArgs &a, const Problem &p, int64_t programs, int64_t BN, const Stream &stream) {
  if (a.num_splits > 0)
    return a.num_splits;
  if (a.cu_seqlens_q.address || programs == 0)
    return 1;
  const int64_t target = 4 * static_cast<int64_t>(stream.device().multiprocessors());
  const int64_t runs = std::min(cdiv(target, programs), cdiv(p.seqK, BN) / 2);
  return std::clamp<int64_t>(runs, 1, kMaxSplits);
}

/// The merge of a split pass's runs into out and lse.
void launchMerge(const AttentionArgs &a, const Problem &p, const Structure &s, int64_t splits, const Buffer &space,
                 uint64_t lseOffset, const Stream &stream) {
  const MergeParams q = merge_parameters(s.dtype, s.lse);
  Kernel kernel = cached_kernel(merge_key(s.dtype, s.blockD, s.lse), [&] { return merge_kernel(s.dtype, s.blockD, s.lse, q); });
  std::vector<Arg> args(q.signature.types().size(), Arg(0));
  const uint64_t bytes = space.bytes();
  args[q.partialOut] = Arg::device_pointer(space.address(), lseOffset, space.device().kind());
  args[q.partialLse] = Arg::device_pointer(space.address() + lseOffset, bytes - lseOffset, space.device().kind());
  args[q.out] = arg_of(a.out);
  if (s.lse)
    args[q.lse] = arg_of(a.lse);
  args[q.splits] = Arg(static_cast<int32_t>(splits));
  args[q.seqQ] = Arg(static_cast<int32_t>(p.seqQ));
  args[q.headDim] = Arg(static_cast<int32_t>(p.D));
  for (int d = 0; d < 3; ++d) {
    args[q.outStrides[d]] = Arg(p.out.strides[d]);
    if (s.lse)
      args[q.lseStrides[d]] = Arg(p.lseStrides[d]);
  }
  const int64_t BM = std::min<int64_t>(16, next_pow2(p.seqQ));
  kernel.launch_with(Grid(static_cast<uint32_t>(cdiv(p.seqQ, BM)), static_cast<uint32_t>(p.headsQ),
                          static_cast<uint32_t>(p.batch)),
                     Config{{"BLOCK_M", BM}, {"num_warps", 4}}, stream, args);
}

} // namespace

const char *name(AttentionMask mask) {
  switch (mask) {
  case AttentionMask::none: return "none";
  case AttentionMask::causal_top_left: return "causal_top_left";
  case AttentionMask::causal_bottom_right: return "causal_bottom_right";
  }
  return "?";
}

void attention(const AttentionArgs &a, const Stream &stream, const Config &config) {
  const Problem p = checked_attention(a, stream);
  if (a.out.numel() == 0)
    return;
  const int64_t D = p.D;
  Structure s = structureOf(a, p);
  Config tile = defaultTile(s, p, stream);
  for (const auto &[key, value] : config.values())
    tile.set(key, value);
  const int64_t BM = tile["BLOCK_M"], BN = tile["BLOCK_N"];
  for (auto [what, size] : {std::pair{"BLOCK_M", BM}, {"BLOCK_N", BN}})
    if (size < 16 || (size & (size - 1)))
      throw Error(kOp + ": " + what + " must be a power of two of at least 16, got " + std::to_string(size));
  const int64_t queryBlocks = cdiv(rowsOf(s, p), BM), columns = s.packHeads ? p.headsKV : p.headsQ;
  const int64_t splits = splitsFor(a, p, queryBlocks * columns * p.batch, BN, stream);
  s.split = splits > 1;

  const Params q = parameters(s);
  Kernel kernel = cached_kernel(s.key(), [&] { return forward_kernel(s, q); });
  std::vector<Arg> args(q.signature.types().size(), Arg(0));
  const TensorView *of[TENSORS] = {&a.q, &a.k, &a.v, &a.out, &a.lse};
  const Canonical *canon[TENSORS] = {&p.q, &p.k, &p.v, &p.out, nullptr};
  for (int t = 0; t < TENSORS; ++t) {
    if (q.pointers[t] < 0)
      continue;
    args[q.pointers[t]] = arg_of(*of[t]);
    for (int d = 0; d < 3; ++d)
      if (q.strides[t][d] >= 0)
        args[q.strides[t][d]] =
            Arg(t == LSE ? p.lseStrides[d] : s.rowsOfD ? canon[t]->strides[d] / D : canon[t]->strides[d]);
  }
  if (s.varlen) {
    args[q.cuQ] = arg_of(a.cu_seqlens_q);
    args[q.cuK] = arg_of(a.cu_seqlens_k);
  }
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
  // Bounds relative to the diagonal through the last query and key
  // (top-left: through the first of each).
  if (q.shift >= 0)
    args[q.shift] = Arg(static_cast<int32_t>(a.mask == AttentionMask::causal_top_left ? 0 : p.seqK - p.seqQ));
  if (q.left >= 0)
    args[q.left] = Arg(static_cast<int32_t>(a.window_left));
  if (q.right >= 0)
    args[q.right] = Arg(static_cast<int32_t>(a.mask != AttentionMask::none ? 0 : a.window_right));
  if (s.softcap) {
    args[q.capInput] = Arg(static_cast<float>(p.scale / a.softcap));
    args[q.capOutput] = Arg(static_cast<float>(a.softcap / std::log(2.0)));
  }
  if (q.headDim >= 0)
    args[q.headDim] = Arg(static_cast<int32_t>(D));
  Buffer space;
  uint64_t lseOffset = 0;
  if (s.split) {
    const uint64_t rows = static_cast<uint64_t>(splits * p.batch * p.headsQ * p.seqQ);
    lseOffset = (rows * s.blockD * 4 + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
    space = workspace(stream, lseOffset + rows * 4);
    args[q.partialOut] = Arg::device_pointer(space.address(), lseOffset, space.device().kind());
    args[q.partialLse] = Arg::device_pointer(space.address() + lseOffset, rows * 4, space.device().kind());
    args[q.splits] = Arg(static_cast<int32_t>(splits));
  }
  kernel.launch_with(Grid(static_cast<uint32_t>(queryBlocks * splits), static_cast<uint32_t>(columns),
                          static_cast<uint32_t>(p.batch)),
                     tile, stream, args);
  if (s.split)
    launchMerge(a, p, s, splits, space, lseOffset, stream);
}

} // namespace kiln::ops
