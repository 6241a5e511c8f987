//===- AttentionKernel.cpp - attention's forward and merge kernels --------===//
//
// out = softmax(scale * q kᵀ + mask) v, one program a block of BLOCK_M
// queries of one (batch, head): it walks the keys BLOCK_N at a time with
// an online softmax in base 2 (the scale and log2(e) folded into one
// factor), keeping the running maximum m, the running sum l and the f32
// accumulator in registers, then writes out = acc / l and, when asked, the
// row's log-sum-exp ln(2) * (m + log2 l). Where no score is hidden, a row's
// maximum is taken of the products and scaled once, so that each score's
// scale and shift are one fma in its exponential: the softmax is what one
// warpgroup must finish under the other's products.
//
// The keys a program's queries see, [lo, end), split into three loops: the
// blocks a window's left edge cuts, the blocks every query of the program
// sees whole (no mask: most of them), then the blocks the causal diagonal,
// a window's right edge or the end of the keys cut, whose hidden scores are
// -inf; blocks no query sees are never visited. A row that has seen only
// hidden keys keeps m = -inf, and its exponentials are taken against 0
// instead, so that it adds nothing rather than NaN. Soft-capping bends the
// scores through tanh first. Grouped-query attention reads K/V head
// h / (heads_q / heads_kv) in place; a packed batch reads each sequence's
// first token and lengths from cu_seqlens; a paged cache finds each key's
// page in the block table. Split-KV programs take one run of [lo, end)
// each and leave partial results that the merge kernel weighs by their
// log-sum-exp. Where a query block's keys grow with it (a causal diagonal,
// a right edge alone), the last blocks are launched first, so that the
// GPU's last programs are short ones. Persistent programs walk tiles one
// after another instead (walkTiles).
//
//===----------------------------------------------------------------------===//

#include "ops/lib/AttentionKernel.h"

#include "ops/lib/AttentionModifiers.h"

#include <kiln/cache.h>

#include <array>
#include <cmath>
#include <optional>

namespace kiln::ops::attention_kernel {

std::string Structure::key() const {
  return "attention|" + std::string(name(dtype)) + "|d" + std::to_string(blockD) + (evenD ? "" : "-masked") +
         (boundedLeft ? "|left" : "") + (boundedRight ? "|right" : "") + (softcap ? "|softcap" : "") +
         (negativeScale ? "|negative-scale" : "") +
         (lse ? "|lse" : "") + (rowsOfD ? "|rows-of-d" : "") + (tokenRows ? "|token-rows" : "") + (varlen ? "|varlen" : "") + (paged ? "|paged" : "") +
         (shiftPerSequence ? "|own-shift" : "") + (packHeads ? "|pack-heads" : "") + (evenK ? "|even-k" : "") +
         (wholeCutBlocks ? "|whole-cut-blocks" : "") + (split ? "|split" : "") + (persistent ? "|persistent" : "") +
         (blockMask ? "|block-mask" : "") + (blockMask && !maskPerHead ? "|mask-shared-heads" : "") +
         (blockMask && !maskPerBatch ? "|mask-shared-batch" : "") + modifier_key(modifiers.get());
}

Params parameters(const Structure &s) {
  Params q;
  for (int t : {Q, K, V})
    q.pointers[t] = q.signature.pointer(s.dtype, true);
  if (s.split) {
    q.partialOut = q.signature.pointer(DType::f32, false);
    q.partialLse = q.signature.pointer(DType::f32, false);
    q.splits = q.signature.scalar(DType::i32);
  } else {
    q.pointers[OUT] = q.signature.pointer(s.dtype, false);
    if (s.lse)
      q.pointers[LSE] = q.signature.pointer(DType::f32, false);
  }
  if (s.varlen) {
    q.cuQ = q.signature.pointer(DType::i32, true);
    q.cuK = q.signature.pointer(DType::i32, true);
  }
  if (s.wholeCutBlocks)
    q.firstKey = q.signature.scalar(DType::i32);
  if (s.paged) {
    q.table = q.signature.pointer(DType::i32, true);
    q.cacheSeqlens = q.signature.pointer(DType::i32, true);
    q.tableStride = q.signature.scalar(DType::i64);
    q.pageSize = q.signature.scalar(DType::i32);
    q.tableKeys = q.signature.scalar(DType::i32);
    q.lastPage = q.signature.scalar(DType::i32);
  }
  q.seqQ = q.signature.scalar(DType::i32);
  if (!s.paged)
    q.seqK = q.signature.scalar(DType::i32);
  q.group = q.signature.scalar(DType::i32);
  q.scaleLog2 = q.signature.scalar(DType::f32);
  if ((s.boundedLeft || s.boundedRight) && !s.shiftPerSequence)
    q.shift = q.signature.scalar(DType::i32);
  if (s.boundedLeft)
    q.left = q.signature.scalar(DType::i32);
  if (s.boundedRight)
    q.right = q.signature.scalar(DType::i32);
  if (s.softcap) {
    q.capInput = q.signature.scalar(DType::f32);
    q.capOutput = q.signature.scalar(DType::f32);
  }
  if (!s.evenD)
    q.headDim = q.signature.scalar(DType::i32);
  if (s.persistent) {
    q.heads = q.signature.scalar(DType::i32);
    q.batches = q.signature.scalar(DType::i32);
    if (s.varlen) {
      q.tiles = q.signature.pointer(DType::i64, true);
      q.tileEntries = q.signature.scalar(DType::i32);
    }
  }
  if (s.modifiers)
    for (size_t i = 0; i < s.modifiers->tensors.size(); ++i) {
      const int position = q.signature.pointer(s.modifiers->tensors[i].dtype, true);
      if (i == 0)
        q.captured = position;
    }
  if (s.blockMask) {
    q.blockTable = q.signature.pointer(DType::i32, false);
    q.blockColumns = q.signature.scalar(DType::i32);
  }
  // (A packed batch has no batch stride: its sequences start where
  // cu_seqlens says.)
  for (int t = 0; t < TENSORS; ++t)
    for (int d = 0; d < 3; ++d)
      q.strides[t][d] = q.pointers[t] >= 0 && !(s.rowsOfD && t != LSE && d == 1) && !(s.varlen && d == 0) &&
                                !(s.tokenRows && t != LSE && d == 2)
                            ? q.signature.scalar(DType::i64)
                            : -1;
  return q;
}

namespace {

/// The online softmax's state for the program's rows.
struct Running {
  Tensor m, l, acc;
};

/// A tile: which block of queries (`order`, of `blocks` in all, counted
/// from the last where `reversed`: the last are launched first), of which
/// head and batch; `live` false for a walk's step that computes nothing.
struct TileIndex {
  Tensor order, blocks, head, batch;
  bool reversed = true;
  Tensor live;
};

/// A program's one tile: the program ids.
TileIndex launchedTile() { return {program_id(0), num_programs(0), program_id(1), program_id(2)}; }

/// One tile: BLOCK_M queries of one head of one batch (and, split, one run
/// of their keys).
class QueryBlock {
public:
  QueryBlock(const Structure &s, const Params &q, const Config &cfg, const std::vector<Tensor> &args,
             const TileIndex &tile)
      : s(s), q(q), args(args), BM(cfg["BLOCK_M"]), BN(cfg["BLOCK_N"]), batchId(tile.batch) {
    Tensor batch = tile.batch.to(DType::i64), head = tile.head;
    Tensor kvHead = s.packHeads ? head.to(DType::i64) : (head / args[q.group]).to(DType::i64);
    seqQ = args[q.seqQ];
    // A packed batch: the sequence's tokens start at cu_seqlens[batch].
    Tensor firstToken[TENSORS];
    if (s.varlen) {
      Tensor startQ = load(args[q.cuQ] + tile.batch), startK = load(args[q.cuK] + tile.batch);
      seqQ = load(args[q.cuQ] + (tile.batch + 1)) - startQ;
      seqK = load(args[q.cuK] + (tile.batch + 1)) - startK;
      firstToken[Q] = firstToken[OUT] = firstToken[LSE] = startQ.to(DType::i64);
      firstToken[K] = firstToken[V] = startK.to(DType::i64);
      if (s.wholeCutBlocks)
        keyFloor = args[q.firstKey] - startK;
    } else if (s.paged) {
      seqK = minimum(maximum(load(args[q.cacheSeqlens] + tile.batch), 0), args[q.tableKeys]);
      tableRow = args[q.table] + batch * args[q.tableStride];
    } else {
      seqK = args[q.seqK];
    }
    // (Packed heads: the query head is each row's, added per row.)
    for (int t : {Q, OUT, K, V}) {
      if (q.pointers[t] < 0)
        continue;
      const bool keys = t == K || t == V;
      const Tensor h = keys ? kvHead : head.to(DType::i64);
      // (Token rows: the batch's tokens times the token stride, then the
      // head's columns, as the copy engine's analysis takes them apart.)
      auto headOffset = [&] { return s.tokenRows ? h * s.blockD : h * stride(t, 2); };
      Tensor offset = s.varlen               ? firstToken[t] * stride(t, 1) + headOffset()
                      : s.paged && keys      ? h * stride(t, 2)
                      : s.packHeads && !keys ? batch * stride(t, 0)
                      : s.tokenRows          ? batch * stride(t, 0) * stride(t, 1) + headOffset()
                                             : batch * stride(t, 0) + headOffset();
      base[t] = s.rowsOfD ? args[q.pointers[t]] + offset * s.blockD : args[q.pointers[t]] + offset;
    }
    if (q.pointers[LSE] >= 0) {
      Tensor offset = s.varlen      ? firstToken[LSE] * stride(LSE, 2) + head.to(DType::i64) * stride(LSE, 1)
                      : s.packHeads ? batch * stride(LSE, 0)
                                    : batch * stride(LSE, 0) + head.to(DType::i64) * stride(LSE, 1);
      base[LSE] = args[q.pointers[LSE]] + offset;
    }
    if (s.shiftPerSequence)
      shift = seqK - seqQ;
    else if (q.shift >= 0)
      shift = args[q.shift];
    Tensor order = s.keysGrowWithQueries() && tile.reversed ? tile.blocks - 1 - tile.order : tile.order;
    Tensor queryBlock = order;
    if (s.split) {
      queryBlock = order / args[q.splits];
      split = order % args[q.splits];
    }
    Tensor rows = queryBlock * BM + arange(0, BM);
    if (s.packHeads) {
      Tensor packedRows = seqQ * args[q.group];
      positions = rows % seqQ;
      rowHeads = (kvHead * args[q.group] + rows / seqQ).to(DType::i64);
      rowsIn = rows < packedRows;
      // The block's queries: one head's run of them, or (crossing heads)
      // possibly all; what bounds the loops over keys.
      Tensor first = queryBlock * BM, last = minimum(first + BM, packedRows) - 1;
      Tensor oneHead = first / seqQ == last / seqQ;
      firstQuery = where(oneHead, first % seqQ, 0);
      lastQuery = where(oneHead, last % seqQ, seqQ - 1);
    } else {
      positions = rows;
      rowHeads = head.to(DType::i64);
      rowsIn = rows < seqQ;
      firstQuery = queryBlock * BM;
      lastQuery = firstQuery + (BM - 1);
    }
    if (tile.live.valid()) {
      live = tile.live;
      rowsIn = rowsIn & live;
    }
    keyOffsets = arange(0, BN);
    columns = arange(0, s.blockD);
    if (s.blockMask) {
      // (The tile's row of the block table: batch, head, block of queries;
      // rows shared by every head or sequence are head 0's, batch 0's. The
      // block-mask pass's grid has one head or sequence where they are.)
      Tensor heads = s.maskPerHead ? num_programs(1) : constant(1, DType::i32);
      Tensor rowHead = s.maskPerHead ? tile.head : constant(0, DType::i32);
      Tensor rowBatch = s.maskPerBatch ? tile.batch : constant(0, DType::i32);
      Tensor row = (rowBatch * heads + rowHead) * num_programs(0) + queryBlock;
      blockRow = args[q.blockTable] + row.to(DType::i64) * (2 * args[q.blockColumns] + 2).to(DType::i64);
    }
  }

  /// (block mask) Lists the blocks of keys the tile's queries may see in
  /// the tile's row of the block table: those some of whose scores are
  /// hidden (the end of the keys, the bounds, the mask modifier) and those
  /// whose scores all count; blocks whose scores are all hidden are not
  /// listed.
  void classifyBlocks() const {
    auto [lo, end] = keyRange();
    const Tensor columnsA = args[q.blockColumns];
    auto [partial, whole] = for_range(
        lo, end, BN, carry(constant(0, DType::i32), constant(0, DType::i32)),
        [&](const Tensor &start, const Tensor &partial, const Tensor &whole) {
          Tensor keys = start + keyOffsets;
          ModifierIndices at = modifier_indices(batchId, rowHeads, positions, keys, seqQ, seqK, *s.modifiers, args,
                                                q.captured);
          Tensor seen = visibleBounds(keys) & expand_dims(rowsIn, 1) & expand_dims(keys < seqK, 0) & s.modifiers->mask_mod(at);
          Tensor count = sum(sum(seen.to(DType::i32), 1), 0);
          Tensor all = count == BM * BN, some = (count > 0) & !all;
          Tensor block = start / BN;
          store(blockRow + (2 + partial).to(DType::i64), block, some);
          store(blockRow + (2 + columnsA + whole).to(DType::i64), block, all);
          return std::tuple{partial + some.to(DType::i32), whole + all.to(DType::i32)};
        });
    store(blockRow, partial);
    store(blockRow + 1, whole);
  }

  /// The tile's queries (zeros past the sequence's end).
  Tensor loadQueries() const { return load(rowTile(Q), queryMask(), 0.0); }

  /// The keys [lo, end) holding every key a query of the tile sees (by the
  /// bounds and the end of the keys).
  std::pair<Tensor, Tensor> keyRange() const {
    Tensor lo = constant(0, DType::i32), end = seqK;
    if (s.boundedLeft)
      lo = maximum(firstQuery + (shift - args[q.left]), 0) / BN * BN;
    if (s.boundedRight)
      end = maximum(minimum(seqK, lastQuery + (shift + args[q.right]) + 1), 0);
    if (s.varlen)
      end = where(firstQuery < seqQ, end, 0);
    return {lo, end};
  }

  /// Which of the tile's queries the bounds let see `keys` ([BM, BN]).
  Tensor visibleBounds(const Tensor &keys) const {
    Tensor visible = full({BM, BN}, 1, DType::i1);
    if (s.boundedLeft)
      visible = visible & (expand_dims(keys, 0) >= expand_dims(positions + (shift - args[q.left]), 1));
    if (s.boundedRight)
      visible = visible & (expand_dims(keys, 0) <= expand_dims(positions + (shift + args[q.right]), 1));
    return visible;
  }

  /// Every block of the tile's keys, from `queries`, into a running state.
  Running attendAll(const Tensor &queries) const {
    Running state{full({BM}, -INFINITY, DType::f32), zeros({BM}, DType::f32), zeros({BM, s.blockD}, DType::f32)};
    if (s.blockMask) {
      // The blocks the block mask lists: partly visible ones masked, wholly
      // visible ones not.
      state = attendListed(state, queries, blockRow + 2, load(blockRow), true);
      return attendListed(state, queries, blockRow + 2 + args[q.blockColumns].to(DType::i64), load(blockRow + 1),
                          false);
    }
    // Keys [lo, end) hold every key a query of the program sees (keyRange:
    // a packed batch's program past its sequence's end walks none); the
    // whole blocks of [wholeStart, wholeEnd) every query sees, the others
    // are cut by the bounds or the end of the keys.
    auto [lo, end] = keyRange();
    Tensor wholeStart = lo, wholeEnd = seqK / BN * BN;
    if (s.boundedLeft)
      wholeStart = (maximum(lastQuery + (shift - args[q.left]), 0) + (BN - 1)) / BN * BN;
    if (s.boundedRight)
      wholeEnd = minimum(maximum(firstQuery + (shift + args[q.right]) + 1, 0) / BN * BN, wholeEnd);
    // (A walk's step that computes nothing walks no keys and stores nothing.)
    if (live.valid())
      end = where(live, end, 0);
    Tensor a = minimum(maximum(wholeStart, lo), end), b = maximum(minimum(wholeEnd, end), a);
    if (s.split) {
      // This program's run: an equal share of [lo, end)'s blocks. The
      // bounds stay ordered and the runs' edges on whole blocks, so each
      // loop keeps its meaning within the run.
      Tensor blocks = (maximum(end - lo, 0) + (BN - 1)) / BN;
      Tensor runLength = (blocks + (args[q.splits] - 1)) / args[q.splits] * BN;
      Tensor runStart = lo + split * runLength, runEnd = minimum(runStart + runLength, end);
      auto clip = [&](const Tensor &x) { return minimum(maximum(x, runStart), runEnd); };
      lo = clip(lo), a = clip(a), b = clip(b), end = clip(end);
    }
    if (s.boundedLeft)
      state = attend(state, queries, lo, a, true);
    state = attend(state, queries, a, b, false);
    if (!s.evenK || s.boundedRight) // (evenly divided keys without bounds: b = end)
      state = attend(state, queries, b, end, true);
    return state;
  }

  /// Stores the tile's result: its output and log-sum-exp, or its run's.
  void finish(const Running &state) const {
    if (s.split)
      finishRun(state);
    else
      finishRows(state);
  }

  void run() { finish(attendAll(loadQueries())); }

private:
  const Structure &s;
  const Params &q;
  const std::vector<Tensor> &args;
  const int64_t BM, BN;
  const Tensor batchId; ///< the tile's batch
  Tensor base[TENSORS];
  Tensor seqQ, seqK;  ///< the tile's sequence lengths
  Tensor keyFloor;    ///< (whole cut blocks) the packed batch's first key, counted from the sequence's
  Tensor shift;       ///< the bounds' diagonal: key i + shift is query i's (with bounds)
  Tensor tableRow;    ///< (paged) the sequence's row of the block table
  Tensor blockRow;    ///< (block mask) the tile's row of the block-mask table
  Tensor split;       ///< (split) which run of the keys
  Tensor live;        ///< (a walk's step) whether it computes its tile
  /// Each row's query (its position in the sequence) and head, whether it
  /// is one; the first and last query of the block.
  Tensor positions, rowHeads, rowsIn, firstQuery, lastQuery;
  Tensor keyOffsets, columns;

  Tensor stride(int t, int d) const { return args[q.strides[t][d]]; }
  Tensor columnsIn() const { return columns < args[q.headDim]; }

  /// Pointers to `positions` (along the sequence) x the head dimension of
  /// tensor `t`, positions along `axis` (0: a column of positions, 1: a row).
  Tensor tile(int t, const Tensor &positions, int axis) const {
    // (The positions' block expanded, then multiplied by the stride: the
    // form the copy engine's analysis takes apart.)
    const Operand rowStride = s.rowsOfD ? Operand(s.blockD) : Operand(stride(t, 1));
    return axis == 1 ? base[t] + expand_dims(positions.to(DType::i64), 1) * rowStride + expand_dims(columns, 0)
                     : base[t] + expand_dims(positions.to(DType::i64), 0) * rowStride + expand_dims(columns, 1);
  }

  /// Pointers to the program's rows of q or out.
  Tensor rowTile(int t) const {
    if (!s.packHeads)
      return tile(t, positions, 1);
    Tensor offsets = positions.to(DType::i64) * stride(t, 1) + rowHeads * stride(t, 2);
    return base[t] + expand_dims(offsets, 1) + expand_dims(columns, 0);
  }

  /// (paged) Pointers to keys `keys` of the cache `t`, whose pages are
  /// `pages`; laid out as tile's.
  Tensor pagedTile(int t, const Tensor &keys, const Tensor &pages, int axis) const {
    Tensor offsets = pages.to(DType::i64) * stride(t, 0) + (keys % args[q.pageSize]).to(DType::i64) * stride(t, 1);
    return axis == 1 ? base[t] + expand_dims(offsets, 1) + expand_dims(columns, 0)
                     : base[t] + expand_dims(offsets, 0) + expand_dims(columns, 1);
  }

  /// Keys [lo, hi) into the running state; `cut`: some are hidden (past
  /// the keys' end, or by the mask).
  /// Keys [lo, hi) into the running state; `cut`: some are hidden (past
  /// the keys' end, or by the bounds or a mask modifier).
  Running attend(const Running &state, const Tensor &queries, const Tensor &lo, const Tensor &hi, bool cut) const {
    auto [m, l, acc] = for_range(lo, hi, BN, carry(state.m, state.l, state.acc),
                                 [&](const Tensor &start, const Tensor &m_i, const Tensor &l_i, const Tensor &acc_i) {
                                   return block(queries, start, m_i, l_i, acc_i, cut, cut || s.maskMod());
                                 });
    return {m, l, acc};
  }

  /// (block mask) The `count` blocks listed from `list` on into the
  /// running state; `cut`: partly visible blocks (masked), else wholly
  /// visible ones.
  Running attendListed(const Running &state, const Tensor &queries, const Tensor &list, const Tensor &count,
                       bool cut) const {
    auto [m, l, acc] = for_range(constant(0, DType::i32), count, 1, carry(state.m, state.l, state.acc),
                                 [&](const Tensor &n, const Tensor &m_i, const Tensor &l_i, const Tensor &acc_i) {
                                   Tensor start = load(list + n.to(DType::i64)) * BN;
                                   return block(queries, start, m_i, l_i, acc_i, cut, cut);
                                 });
    return {m, l, acc};
  }

  /// One block of keys from `start` into the running state (m, l, acc);
  /// `cut`: some keys may lie past the end or the bounds; `masked`: the
  /// mask modifier applies.
  std::array<Tensor, 3> block(const Tensor &queries, Tensor start, const Tensor &m_i, const Tensor &l_i,
                              const Tensor &acc_i, bool cut, bool masked) const {
    const Tensor &scaleLog2 = args[q.scaleLog2];
    Tensor keys = start + keyOffsets;
    // (Evenly divided keys: every visited block lies within them.)
    Tensor keysIn, keyMask, valueMask;
    if (cut && s.wholeCutBlocks) {
      // The block is read whole, moved back to end at the sequence's
      // last key (or, in a sequence shorter than a block, to start at
      // the batch's first): its keys before `start` were seen, those
      // past the end are the next sequence's; the scores hide both.
      keys = maximum(minimum(start, seqK - BN), keyFloor) + keyOffsets;
      keysIn = (keys >= start) & (keys < seqK);
    } else if (cut && !s.evenK) {
      keysIn = keys < seqK;
      keyMask = expand_dims(keysIn, 0);
      valueMask = expand_dims(keysIn, 1);
    }
    if (!s.evenD) {
      keyMask = keyMask.valid() ? keyMask & expand_dims(columnsIn(), 1) : expand_dims(columnsIn(), 1);
      valueMask = valueMask.valid() ? valueMask & expand_dims(columnsIn(), 0) : expand_dims(columnsIn(), 0);
    }
    // A paged cache's keys past its end read no table entry: their
    // page is taken as 0 and their loads are masked.
    Tensor pages;
    if (s.paged) {
      pages = cut ? load(tableRow + keys / args[q.pageSize], keysIn, 0) : load(tableRow + keys / args[q.pageSize]);
      pages = minimum(maximum(pages, 0), args[q.lastPage]);
    }
    Tensor keyPointers = s.paged ? pagedTile(K, keys, pages, 0) : tile(K, keys, 0);
    Tensor keysT = keyMask.valid() ? load(keyPointers, keyMask, 0.0) : load(keyPointers); // D x BN
    Tensor products = dot(queries, keysT);
    Tensor scores = s.softcap ? tanh(products * args[q.capInput]) * args[q.capOutput] : products * scaleLog2;
    // Modifiers see natural scores (scale · q·k, capped): the score
    // modifier's result goes back to base 2; the mask modifier's
    // hides keys as the bounds do, in every block.
    std::optional<ModifierIndices> at;
    if (s.modifiers)
      at = modifier_indices(batchId, rowHeads, positions, keys, seqQ, seqK, *s.modifiers, args, q.captured);
    if (s.scoreMod())
      scores = s.modifiers->score_mod(scores * std::log(2.0), *at).to(DType::f32) * (1.0 / std::log(2.0));
    if (cut || masked) {
      Tensor visible = keysIn.valid() ? expand_dims(keysIn, 0) : Tensor();
      auto both = [&](const Tensor &hidden) { visible = visible.valid() ? visible & hidden : hidden; };
      if (s.boundedLeft)
        both(expand_dims(keys, 0) >= expand_dims(positions + (shift - args[q.left]), 1));
      if (s.boundedRight)
        both(expand_dims(keys, 0) <= expand_dims(positions + (shift + args[q.right]), 1));
      if (masked && s.maskMod())
        both(s.modifiers->mask_mod(*at));
      scores = where(visible, scores, -INFINITY);
    }
    // (A score modifier may hide keys too, with -inf.)
    const bool hides = cut || masked || s.scoreMod();
    // Unmasked, a row's maximum is taken of the products (a positive
    // factor keeps it where it is) and scaled once: the scores' only
    // use is then their exponential, one fma with the shift.
    const bool maxOfProducts = !hides && !s.softcap && !s.negativeScale;
    Tensor m_ij = maximum(m_i, maxOfProducts ? max(products, 1) * scaleLog2 : max(scores, 1));
    // A row that has seen no visible key keeps m = -inf: its
    // exponentials are taken against 0, giving 0 instead of NaN.
    Tensor pivot = hides ? where(m_ij == -INFINITY, 0.0, m_ij) : m_ij;
    Tensor p = exp2(scores - expand_dims(pivot, 1));
    Tensor alpha = exp2(m_i - pivot);
    Tensor valuePointers = s.paged ? pagedTile(V, keys, pages, 1) : tile(V, keys, 1);
    Tensor values = valueMask.valid() ? load(valuePointers, valueMask, 0.0) : load(valuePointers); // BN x D
    Tensor next = dot(p.to(s.dtype), values, acc_i * expand_dims(alpha, 1));
    return std::array{m_ij, l_i * alpha + sum(p, 1), next};
  }

  /// Each row's output (zeros where no key was seen) and natural
  /// log-sum-exp (-inf there).
  std::pair<Tensor, Tensor> normalized(const Running &state) const {
    Tensor seen = state.l > 0.0;
    // (One reciprocal a row, then a multiply an element, instead of a
    // division an element: 64 of them a thread at D 128, between a tile's
    // last product and its store.)
    Tensor out = where(expand_dims(seen, 1), state.acc * expand_dims(1.0 / where(seen, state.l, 1.0), 1), 0.0);
    Tensor lse = where(seen, (state.m + log2(where(seen, state.l, 1.0))) * std::log(2.0), -INFINITY);
    return {out, lse};
  }

  Tensor queryMask() const {
    Tensor mask = expand_dims(rowsIn, 1);
    return s.evenD ? mask : mask & expand_dims(columnsIn(), 0);
  }

  void finishRows(const Running &state) const {
    auto [out, lse] = normalized(state);
    store(rowTile(OUT), out.to(s.dtype), queryMask());
    if (s.lse) {
      Tensor offsets = positions.to(DType::i64) * stride(LSE, 2);
      store(base[LSE] + (s.packHeads ? offsets + rowHeads * stride(LSE, 1) : offsets), lse, rowsIn);
    }
  }

  /// (split) The run's f32 output and log-sum-exp, at row ((split * batch
  /// + batch) * heads + head) * seq_q + query of the partial results.
  void finishRun(const Running &state) const {
    auto [out, lse] = normalized(state);
    Tensor heads = num_programs(1).to(DType::i64), batches = num_programs(2).to(DType::i64);
    if (s.packHeads)
      heads = heads * args[q.group].to(DType::i64);
    Tensor sequence = (split.to(DType::i64) * batches + batchId.to(DType::i64)) * heads + rowHeads;
    Tensor row = sequence * seqQ.to(DType::i64) + positions.to(DType::i64);
    store(args[q.partialOut] + expand_dims(row * s.blockD, 1) + expand_dims(columns, 0), out,
          expand_dims(rowsIn, 1));
    store(args[q.partialLse] + row, lse, rowsIn);
  }
};

/// One merge program: BLOCK_M query rows of head program_id(1) of batch
/// program_id(2), their runs' partial results weighed in one pass with a
/// running maximum (as the forward kernel weighs blocks of keys).
void mergeRuns(DType dtype, int64_t blockD, bool withLse, const MergeParams &q, const Config &cfg,
               const std::vector<Tensor> &args) {
  const int64_t BM = cfg["BLOCK_M"];
  Tensor seqQ = args[q.seqQ];
  Tensor rows = program_id(0) * BM + arange(0, BM), columns = arange(0, blockD);
  Tensor rowsIn = rows < seqQ;
  Tensor heads = num_programs(1).to(DType::i64), batches = num_programs(2).to(DType::i64);
  Tensor sequence = program_id(2).to(DType::i64) * heads + program_id(1);
  Tensor firstRow = sequence * seqQ.to(DType::i64) + rows.to(DType::i64);
  Tensor runStride = batches * heads * seqQ.to(DType::i64);
  auto [m, l, acc] = for_range(
      0, args[q.splits], 1, carry(full({BM}, -INFINITY, DType::f32), zeros({BM}, DType::f32), zeros({BM, blockD}, DType::f32)),
      [&](const Tensor &run, const Tensor &m_i, const Tensor &l_i, const Tensor &acc_i) {
        Tensor row = firstRow + run.to(DType::i64) * runStride;
        Tensor lse = load(args[q.partialLse] + row, rowsIn, -INFINITY);
        Tensor out = load(args[q.partialOut] + expand_dims(row * blockD, 1) + expand_dims(columns, 0),
                          expand_dims(rowsIn, 1), 0.0);
        Tensor m_ij = maximum(m_i, lse);
        Tensor pivot = where(m_ij == -INFINITY, 0.0, m_ij);
        Tensor weight = exp(lse - pivot), alpha = exp(m_i - pivot);
        return std::array{m_ij, l_i * alpha + weight,
                          acc_i * expand_dims(alpha, 1) + out * expand_dims(weight, 1)};
      });
  Tensor seen = l > 0.0;
  Tensor out = where(expand_dims(seen, 1), acc / expand_dims(where(seen, l, 1.0), 1), 0.0);
  auto stride = [&](const int(&strides)[3], int d) { return args[strides[d]]; };
  Tensor outBase = args[q.out] + program_id(2).to(DType::i64) * stride(q.outStrides, 0) +
                   program_id(1).to(DType::i64) * stride(q.outStrides, 2);
  Tensor outMask = expand_dims(rowsIn, 1) & expand_dims(columns < args[q.headDim], 0);
  store(outBase + expand_dims(rows.to(DType::i64) * stride(q.outStrides, 1), 1) + expand_dims(columns, 0),
        out.to(dtype), outMask);
  if (withLse) {
    Tensor lse = where(seen, m + log(where(seen, l, 1.0)), -INFINITY);
    Tensor lseBase = args[q.lse] + program_id(2).to(DType::i64) * stride(q.lseStrides, 0) +
                     program_id(1).to(DType::i64) * stride(q.lseStrides, 1);
    store(lseBase + rows.to(DType::i64) * stride(q.lseStrides, 2), lse, rowsIn);
  }
}

/// A walk over steps first, first + stride, ... < end, computing tile
/// `at(step)` each (`at` marks a step at or past `end` not live). A tile's
/// queries are loaded under the tile before's last `P V` and store, so
/// that a tile starts at its first `Q Kᵀ` (its first keys the producer
/// brought in meanwhile): loaded at the tile's start, they were what its
/// warps waited for there.
template <class At>
void walk(const Structure &s, const Params &q, const Config &cfg, const std::vector<Tensor> &args,
          const Tensor &first, const Tensor &end, const Tensor &stride, At at) {
  Tensor queries = QueryBlock(s, q, cfg, args, at(first)).loadQueries();
  for_range(first, end, stride, carry(queries), [&](const Tensor &step, const Tensor &these) {
    QueryBlock tile(s, q, cfg, args, at(step));
    Running state = tile.attendAll(these);
    Tensor next = QueryBlock(s, q, cfg, args, at(step + stride)).loadQueries();
    tile.finish(state);
    return next;
  });
}

/// Persistent programs: program pid walks the tiles pid, pid + programs,
/// ..., query blocks first (as a launch orders programs, so that the tiles
/// in flight share their heads' keys in L2). Where a query block's keys
/// grow with it (a causal diagonal, a right edge alone), tiles cost as
/// much as their block's number, and a static walk would give some
/// programs the long ones only: the walk takes units of two, a block and
/// its mirror (the last with the first, ...), which cost the same, the
/// long one first. (An odd count's middle block is its own mirror: its
/// second step computes nothing.)
void walkTiles(const Structure &s, const Params &q, const Config &cfg, const std::vector<Tensor> &args) {
  const Tensor &heads = args[q.heads];
  Tensor blocks = cdiv(args[q.seqQ], cfg["BLOCK_M"]).to(DType::i32);
  // (Divisors at least 1: with no queries the walk takes no step, but the
  // first step's tile is still computed, its loads masked.)
  Tensor someBlocks = maximum(blocks, 1);
  Tensor pid = program_id(0), programs = num_programs(0);
  if (s.varlen) {
    // A packed batch: the tiles its sequences have, read from the table
    // (tile_list_kernel), heads outermost, so that the tiles in flight are
    // a sequence's query blocks sharing its keys in L2. (Those of a
    // causal diagonal are not paired: the table mixes the sequences'
    // lengths anyway.)
    const Tensor &entries = args[q.tileEntries];
    Tensor someEntries = maximum(entries, 1), tiles = entries * heads;
    walk(s, q, cfg, args, pid, tiles, programs, [&](const Tensor &t) {
      Tensor entry = load(args[q.tiles] + (t % someEntries));
      Tensor sequence = (entry >> 32).to(DType::i32), block = (entry & int64_t(0xffffffff)).to(DType::i32);
      // (Not reversed: the tile's block count is never asked for.)
      return TileIndex{block, entries, t / someEntries, sequence, /*reversed=*/false, t < tiles};
    });
    return;
  }
  if (!s.keysGrowWithQueries()) {
    Tensor tiles = blocks * heads * args[q.batches];
    walk(s, q, cfg, args, pid, tiles, programs, [&](const Tensor &t) {
      Tensor rest = t / someBlocks;
      return TileIndex{t % someBlocks, blocks, rest % heads, rest / heads, /*reversed=*/true, t < tiles};
    });
    return;
  }
  Tensor pairs = (blocks + 1) / 2, units = pairs * heads * args[q.batches], somePairs = maximum(pairs, 1);
  Tensor steps = 2 * maximum(cdiv(units - pid, programs), 0);
  walk(s, q, cfg, args, constant(0, DType::i32), steps, constant(1, DType::i32), [&](const Tensor &step) {
    Tensor unit = pid + step / 2 * programs, second = step % 2 == 1;
    Tensor pair = unit % somePairs, rest = unit / somePairs, mirror = blocks - 1 - pair;
    return TileIndex{where(second, pair, mirror), blocks, rest % heads, rest / heads, /*reversed=*/false,
                     (step < steps) & !(second & (pair == mirror))};
  });
}

} // namespace

Kernel forward_kernel(const Structure &s, const Params &q) {
  const std::string key = s.key();
  auto body = [s, q](const Config &cfg, const std::vector<Tensor> &args) {
    if (s.persistent)
      walkTiles(s, q, cfg, args);
    else
      QueryBlock(s, q, cfg, args, launchedTile()).run();
  };
  return Kernel("kiln_attention_" + sha256_hex(key).substr(0, 10), q.signature.types(), body).library("attention");
}

Kernel block_mask_kernel(const Structure &s, const Params &q) {
  auto body = [s, q](const Config &cfg, const std::vector<Tensor> &args) {
    QueryBlock(s, q, cfg, args, launchedTile()).classifyBlocks();
  };
  return Kernel("kiln_attention_blocks_" + sha256_hex(s.key()).substr(0, 10), q.signature.types(), body)
      .library("attention");
}

TileListParams tile_list_parameters() {
  TileListParams q;
  q.cuQ = q.signature.pointer(DType::i32, true);
  q.table = q.signature.pointer(DType::i64, false);
  q.batch = q.signature.scalar(DType::i32);
  return q;
}

std::string tile_list_key() { return "attention-tiles"; }

/// One program lists every tile: a chunk of sequences at a time, each
/// sequence's first entry the entries listed before plus the blocks of the
/// chunk's sequences before it, then the chunk's blocks one column a step.
Kernel tile_list_kernel(const TileListParams &q) {
  auto body = [q](const Config &cfg, const std::vector<Tensor> &args) {
    const int64_t BM = cfg["BLOCK_M"], CHUNK = 32 * cfg.num_warps();
    const Tensor &batch = args[q.batch];
    for_range(0, batch, CHUNK, carry(constant(0, DType::i32)), [&](const Tensor &start, const Tensor &listed) {
      Tensor sequences = start + arange(0, CHUNK), in = sequences < batch;
      Tensor first = load(args[q.cuQ] + sequences, in, 0), next = load(args[q.cuQ] + (sequences + 1), in, 0);
      Tensor blocks = where(in, (next - first + (BM - 1)) / BM, 0);
      Tensor firstEntry = listed + cumsum(blocks, 0) - blocks, tag = sequences.to(DType::i64) << 32;
      for_range(0, max(blocks, 0), 1, [&](const Tensor &i) {
        store(args[q.table] + (firstEntry + i).to(DType::i64), tag + i.to(DType::i64), i < blocks);
      });
      return listed + sum(blocks, 0);
    });
  };
  return Kernel("kiln_attention_tiles", q.signature.types(), body).library("attention");
}

MergeParams merge_parameters(DType dtype, bool lse) {
  MergeParams q;
  q.partialOut = q.signature.pointer(DType::f32, true);
  q.partialLse = q.signature.pointer(DType::f32, true);
  q.out = q.signature.pointer(dtype, false);
  if (lse)
    q.lse = q.signature.pointer(DType::f32, false);
  q.splits = q.signature.scalar(DType::i32);
  q.seqQ = q.signature.scalar(DType::i32);
  q.headDim = q.signature.scalar(DType::i32);
  for (int d = 0; d < 3; ++d)
    q.outStrides[d] = q.signature.scalar(DType::i64);
  if (lse)
    for (int d = 0; d < 3; ++d)
      q.lseStrides[d] = q.signature.scalar(DType::i64);
  return q;
}

std::string merge_key(DType dtype, int64_t blockD, bool lse) {
  return "attention-merge|" + std::string(name(dtype)) + "|d" + std::to_string(blockD) + (lse ? "|lse" : "");
}

Kernel merge_kernel(DType dtype, int64_t blockD, bool lse, const MergeParams &q) {
  const std::string key = merge_key(dtype, blockD, lse);
  auto body = [dtype, blockD, lse, q](const Config &cfg, const std::vector<Tensor> &args) {
    mergeRuns(dtype, blockD, lse, q, cfg, args);
  };
  return Kernel("kiln_attention_merge_" + sha256_hex(key).substr(0, 10), q.signature.types(), body)
      .library("attention");
}

} // namespace kiln::ops::attention_kernel
