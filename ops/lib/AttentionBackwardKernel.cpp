//===- AttentionBackwardKernel.cpp - attention's backward kernels ---------===//
//
// With s = scale · q kᵀ (through cap · tanh(s / cap) where soft-capped), P
// = exp(s - lse) the forward's probabilities (lse its rows' log-sum-exp:
// no second softmax), dP = dO vᵀ and Δ = rowsum(dO ∘ O):
//
//   dv = Pᵀ dO,   dS = P ∘ (dP - Δ) (∘ (1 - tanh²) soft-capped),
//   dk = scale · dSᵀ q,   dq = scale · dS k.
//
// A program over BLOCK_N keys of one K/V head holds its keys, values and
// their gradients' f32 sums in registers and walks every block of BLOCK_M
// queries that sees one of its keys, for every query head of its group;
// keys no query sees and queries past a sequence's end are hidden (P = 0).
// P and dS meet the tensor cores in the operands' dtype, as the forward's
// P does.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/AttentionBackwardKernel.h"

#include "ops/lib/AttentionModifiers.h"

#include <kiln/cache.h>

#include <optional>
#include <tuple>

namespace kiln::ops::attention_backward_kernel {

namespace {

const char *name(Pass p) {
  switch (p) {
  case Pass::rows: return "rows";
  case Pass::keys: return "keys";
  case Pass::queries: return "queries";
  case Pass::convert: return "convert";
  case Pass::blocks: return "blocks";
  }
  return "?";
}

constexpr double kLog2e = 1.4426950408889634;

/// What every pass's program shares: its batch's sequences, the pointers
/// to rows of each tensor, the visible keys.
class Program {
public:
  Program(const Structure &s, const Params &q, const Config &cfg, const std::vector<Tensor> &args)
      : s(s), q(q), args(args), BM(cfg["BLOCK_M"]), BN(cfg["BLOCK_N"]), batch(program_id(2)) {
    columns = arange(0, s.blockD);
    if (s.varlen) {
      startQ = load(args[q.cuQ] + batch), seqQ = load(args[q.cuQ] + (batch + 1)) - startQ;
      if (q.cuK >= 0)
        startK = load(args[q.cuK] + batch), seqK = load(args[q.cuK] + (batch + 1)) - startK;
    } else {
      startQ = startK = constant(0, DType::i32);
      seqQ = args[q.seqQ];
      if (q.seqK >= 0)
        seqK = args[q.seqK];
    }
    // (The passes over keys or queries: the others see no bounds.)
    if (q.shift >= 0)
      shift = args[q.shift];
    else if (s.shiftPerSequence && q.cuK >= 0)
      shift = seqK - seqQ;
  }

  void run() const {
    switch (s.pass) {
    case Pass::rows: rowsPass(); break;
    case Pass::keys: keysPass(); break;
    case Pass::queries: queriesPass(); break;
    case Pass::convert: convertPass(); break;
    case Pass::blocks: blocksPass(); break;
    }
  }

private:
  const Structure &s;
  const Params &q;
  const std::vector<Tensor> &args;
  const int64_t BM, BN;
  const Tensor batch;
  Tensor columns, startQ, startK, seqQ, seqK, shift;

  Tensor stride(int t, int d) const { return args[q.strides[t][d]]; }
  bool keyTensor(int t) const { return t == K || t == V || t == DK || t == DV; }

  /// The address of position `positions` (of the sequence) of head `head`
  /// in tensor `t`; a row of it for the head dimension's tensors.
  Tensor at(int t, const Tensor &head, const Tensor &positions) const {
    Tensor first = (keyTensor(t) ? startK : startQ).to(DType::i64);
    Tensor offset = (first + positions.to(DType::i64)) * stride(t, 1) + head.to(DType::i64) * stride(t, 2);
    if (!s.varlen)
      offset = offset + batch.to(DType::i64) * stride(t, 0);
    return args[q.pointers[t]] + offset;
  }
  Tensor rowsOf(int t, const Tensor &head, const Tensor &positions) const {
    return expand_dims(at(t, head, positions), 1) + expand_dims(columns, 0);
  }
  /// Rows `inside` (and the head dimension's columns) of a [n, blockD] tile.
  Tensor tileMask(const Tensor &inside) const {
    Tensor mask = expand_dims(inside, 1);
    return s.evenD ? mask : mask & expand_dims(columns < args[q.headDim], 0);
  }
  Tensor loadRows(int t, const Tensor &head, const Tensor &positions, const Tensor &inside) const {
    return load(rowsOf(t, head, positions), tileMask(inside), 0.0);
  }

  /// Which of `rows` x `keys` a query sees (`at`: where modifiers are
  /// evaluated, if any).
  Tensor visible(const Tensor &rows, const Tensor &keys, const ModifierIndices *at) const {
    Tensor r = expand_dims(rows, 1), k = expand_dims(keys, 0);
    Tensor v = (r < seqQ) & (k < seqK);
    if (s.boundedLeft)
      v = v & (k >= r + shift - args[q.left]);
    if (s.boundedRight)
      v = v & (k <= r + shift + args[q.right]);
    if (s.modifiers && s.modifiers->mask_mod)
      v = v & s.modifiers->mask_mod(*at);
    return v;
  }

  /// One block's probabilities P and dS · scale ([BM, BN], f32), hidden
  /// scores 0.
  struct Block {
    Tensor p, ds;
  };
  Block gradients(const Tensor &head, const Tensor &qi, const Tensor &doi, const Tensor &lse, const Tensor &delta,
                  const Tensor &kj, const Tensor &vj, const Tensor &rows, const Tensor &keys) const {
    const Tensor &scale = args[q.scale];
    Tensor scores = dot(qi, kj.trans(), zeros({BM, BN}, DType::f32)) * scale, capped, modified;
    if (s.softcap) {
      capped = tanh(scores * (1.0 / args[q.cap]));
      scores = capped * args[q.cap];
    }
    std::optional<ModifierIndices> at;
    if (s.modifiers)
      at = modifier_indices(batch, head, rows, keys, seqQ, seqK, *s.modifiers, args, q.captured);
    // (The score modifier's derivative at the scores it took.)
    Tensor slope;
    if (s.modifiers && s.modifiers->score_mod) {
      slope = s.modifiers->score_mod_grad(scores, *at).to(DType::f32);
      scores = s.modifiers->score_mod(scores, *at).to(DType::f32);
    }
    Tensor p = where(visible(rows, keys, at ? &*at : nullptr), exp2((scores - expand_dims(lse, 1)) * kLog2e), 0.0);
    Tensor dp = dot(doi, vj.trans(), zeros({BM, BN}, DType::f32));
    Tensor ds = p * (dp - expand_dims(delta, 1));
    if (slope.valid())
      ds = where(p > 0.0, ds * slope, 0.0);
    if (s.softcap)
      ds = ds * (1.0 - capped * capped);
    return {p, ds * scale};
  }

  /// The query rows' dO·O, f32; zeros for dq's atomic sums.
  void rowsPass() const {
    Tensor head = program_id(1), rows = program_id(0) * BM + arange(0, BM), inside = rows < seqQ;
    Tensor o = loadRows(OUT, head, rows, inside).to(DType::f32);
    Tensor d = loadRows(DOUT, head, rows, inside).to(DType::f32);
    store(at(DELTA, head, rows), sum(o * d, 1), inside);
    if (s.atomic)
      store(rowsOf(DQ_SUM, head, rows), zeros({BM, s.blockD}, DType::f32), tileMask(inside));
  }

  /// The blocks of queries [lo, hi) that may see a key of [first, first +
  /// BN) (from the block of the first, with a right bound, to the last, with
  /// a left bound).
  std::pair<Tensor, Tensor> queryRange(const Tensor &first) const {
    Tensor lo = constant(0, DType::i32), hi = seqQ;
    if (s.boundedRight)
      lo = maximum(first - shift - args[q.right], 0) / BM * BM;
    if (s.boundedLeft)
      hi = minimum(first + (BN - 1) - shift + args[q.left] + 1, seqQ);
    return {lo, where(first < seqK, maximum(hi, lo), lo)};
  }

  /// (block mask) The table row of block of keys `keyBlock` of query head
  /// `head`.
  Tensor blockRow(const Tensor &head, const Tensor &keyBlock) const {
    // (Rows shared by every head or sequence are head 0's, batch 0's; the
    // blocks pass's grid has one head or sequence where they are.)
    Tensor heads = s.maskPerHead
                       ? num_programs(1) * (s.pass == Pass::keys ? args[q.group] : constant(1, DType::i32))
                       : constant(1, DType::i32);
    Tensor rowHead = s.maskPerHead ? head : constant(0, DType::i32);
    Tensor rowBatch = s.maskPerBatch ? batch : constant(0, DType::i32);
    Tensor row = (rowBatch * heads + rowHead) * num_programs(0) + keyBlock;
    return args[q.blockTable] + row.to(DType::i64) * (2 * args[q.blockColumns] + 2).to(DType::i64);
  }

  /// (block mask) For BLOCK_N keys of one query head, the blocks of
  /// queries some of which see some of them (partly) and all of which see
  /// all of them (wholly), listed; the others are not.
  void blocksPass() const {
    Tensor head = program_id(1), first = program_id(0) * BN, keys = first + arange(0, BN);
    Tensor row = blockRow(head, program_id(0));
    auto [lo, hi] = queryRange(first);
    auto [partial, whole] = for_range(
        lo, hi, BM, carry(constant(0, DType::i32), constant(0, DType::i32)),
        [&](const Tensor &start, const Tensor &partial, const Tensor &whole) {
          Tensor rows = start + arange(0, BM);
          ModifierIndices at = modifier_indices(batch, head, rows, keys, seqQ, seqK, *s.modifiers, args, q.captured);
          Tensor count = sum(sum(visible(rows, keys, &at).to(DType::i32), 1), 0);
          Tensor all = count == BM * BN, some = (count > 0) & !all;
          Tensor block = start / BM;
          store(row + (2 + partial).to(DType::i64), block, some);
          store(row + (2 + args[q.blockColumns] + whole).to(DType::i64), block, all);
          return std::tuple{partial + some.to(DType::i32), whole + all.to(DType::i32)};
        });
    store(row, partial);
    store(row + 1, whole);
  }

  /// BLOCK_N keys of one K/V head: dk and dv over every query that sees
  /// them, of every query head of the group (with a block mask, the blocks
  /// of queries it lists).
  void keysPass() const {
    Tensor kvHead = program_id(1), first = program_id(0) * BN, keys = first + arange(0, BN), inside = keys < seqK;
    Tensor kj = loadRows(K, kvHead, keys, inside), vj = loadRows(V, kvHead, keys, inside);
    auto [lo, hi] = queryRange(first);
    Tensor zero = zeros({BN, s.blockD}, DType::f32);
    auto [dk, dv] = for_range(
        constant(0, DType::i32), args[q.group], 1, carry(zero, zero),
        [&](const Tensor &member, const Tensor &dk0, const Tensor &dv0) {
          Tensor head = kvHead * args[q.group] + member;
          auto queryBlock = [&](const Tensor &start, const Tensor &dk, const Tensor &dv) {
            Tensor rows = start + arange(0, BM), rowsIn = rows < seqQ;
            Tensor qi = loadRows(Q, head, rows, rowsIn), doi = loadRows(DOUT, head, rows, rowsIn);
            Tensor lse = load(at(LSE, head, rows), rowsIn, 0.0), delta = load(at(DELTA, head, rows), rowsIn, 0.0);
            Block g = gradients(head, qi, doi, lse, delta, kj, vj, rows, keys);
            Tensor ds = g.ds.to(s.dtype);
            // (Relaxed: only the convert pass, a later kernel, reads the sums;
            // the updates then need no fences, and lower to reductions.)
            if (s.atomic)
              atomic_add(rowsOf(DQ_SUM, head, rows), dot(ds, kj, zeros({BM, s.blockD}, DType::f32)), tileMask(rowsIn),
                         AtomicOptions{MemSemantic::relaxed});
            return std::tuple{dot(ds.trans(), qi, dk), dot(g.p.to(s.dtype).trans(), doi, dv)};
          };
          if (!s.blockMask) {
            auto [dk1, dv1] = for_range(lo, hi, BM, carry(dk0, dv0), queryBlock);
            return std::tuple{dk1, dv1};
          }
          // (The listed blocks, partly then wholly visible ones.)
          Tensor row = blockRow(head, program_id(0));
          Tensor wholeList = row + 2 + args[q.blockColumns].to(DType::i64);
          auto listed = [&](const Tensor &list, const Tensor &count, const Tensor &dk, const Tensor &dv) {
            return for_range(constant(0, DType::i32), count, 1, carry(dk, dv),
                             [&](const Tensor &n, const Tensor &dkn, const Tensor &dvn) {
                               return queryBlock(load(list + n.to(DType::i64)) * BM, dkn, dvn);
                             });
          };
          auto [dk1, dv1] = listed(row + 2, load(row), dk0, dv0);
          auto [dk2, dv2] = listed(wholeList, load(row + 1), dk1, dv1);
          return std::tuple{dk2, dv2};
        });
    store(rowsOf(DK, kvHead, keys), dk.to(s.dtype), tileMask(inside));
    store(rowsOf(DV, kvHead, keys), dv.to(s.dtype), tileMask(inside));
  }

  /// BLOCK_M queries of one head: dq over every key they see.
  void queriesPass() const {
    Tensor head = program_id(1), kvHead = head / args[q.group];
    Tensor first = program_id(0) * BM, rows = first + arange(0, BM), rowsIn = rows < seqQ;
    Tensor qi = loadRows(Q, head, rows, rowsIn), doi = loadRows(DOUT, head, rows, rowsIn);
    Tensor lse = load(at(LSE, head, rows), rowsIn, 0.0), delta = load(at(DELTA, head, rows), rowsIn, 0.0);
    // The keys a query of [first, first + BM) sees.
    Tensor lo = constant(0, DType::i32), hi = seqK;
    if (s.boundedLeft)
      lo = maximum(first + shift - args[q.left], 0) / BN * BN;
    if (s.boundedRight)
      hi = minimum(first + (BM - 1) + shift + args[q.right] + 1, seqK);
    hi = where(first < seqQ, maximum(hi, lo), lo);
    Tensor dq = for_range(lo, hi, BN, carry(zeros({BM, s.blockD}, DType::f32)), [&](const Tensor &start, const Tensor &dq) {
      Tensor keys = start + arange(0, BN), inside = keys < seqK;
      Tensor kj = loadRows(K, kvHead, keys, inside), vj = loadRows(V, kvHead, keys, inside);
      Block g = gradients(head, qi, doi, lse, delta, kj, vj, rows, keys);
      return dot(g.ds.to(s.dtype), kj, dq);
    });
    store(rowsOf(DQ, head, rows), dq.to(s.dtype), tileMask(rowsIn));
  }

  /// dq from its f32 sums.
  void convertPass() const {
    Tensor head = program_id(1), rows = program_id(0) * BM + arange(0, BM), inside = rows < seqQ;
    store(rowsOf(DQ, head, rows), loadRows(DQ_SUM, head, rows, inside).to(s.dtype), tileMask(inside));
  }
};

} // namespace

bool Structure::uses(int role) const {
  switch (pass) {
  case Pass::rows: return role == OUT || role == DOUT || role == DELTA || (atomic && role == DQ_SUM);
  case Pass::keys:
    return role == Q || role == K || role == V || role == DOUT || role == LSE || role == DELTA || role == DK ||
           role == DV || (atomic && role == DQ_SUM);
  case Pass::queries:
    return role == Q || role == K || role == V || role == DOUT || role == LSE || role == DELTA || role == DQ;
  case Pass::convert: return role == DQ_SUM || role == DQ;
  case Pass::blocks: return false;
  }
  return false;
}

std::string Structure::key() const {
  return std::string("attention-backward|") + name(pass) + "|" + std::string(kiln::name(dtype)) + "|d" + std::to_string(blockD) +
         (evenD ? "" : "-masked") + (boundedLeft ? "|left" : "") + (boundedRight ? "|right" : "") +
         (softcap ? "|softcap" : "") + (varlen ? "|varlen" : "") + (shiftPerSequence ? "|own-shift" : "") +
         (atomic ? "|atomic" : "") + (blockMask ? "|block-mask" : "") +
         (blockMask && !maskPerHead ? "|mask-shared-heads" : "") + (blockMask && !maskPerBatch ? "|mask-shared-batch" : "") +
         modifier_key(modifiers.get());
}

Params parameters(const Structure &s) {
  Params q;
  for (int t = 0; t < TENSORS; ++t) {
    const bool written = t == DELTA ? s.pass == Pass::rows
                         : t == DQ_SUM ? s.pass != Pass::convert
                                       : t == DQ || t == DK || t == DV;
    const DType dtype = t == LSE || t == DELTA || t == DQ_SUM ? DType::f32 : s.dtype;
    q.pointers[t] = s.uses(t) ? q.signature.pointer(dtype, !written) : -1;
  }
  const bool keys = s.pass == Pass::keys || s.pass == Pass::queries || s.pass == Pass::blocks;
  if (s.varlen) {
    q.cuQ = q.signature.pointer(DType::i32, true);
    if (keys)
      q.cuK = q.signature.pointer(DType::i32, true);
  } else {
    q.seqQ = q.signature.scalar(DType::i32);
    if (keys)
      q.seqK = q.signature.scalar(DType::i32);
  }
  if (keys) {
    q.group = q.signature.scalar(DType::i32);
    q.scale = q.signature.scalar(DType::f32);
    if ((s.boundedLeft || s.boundedRight) && !s.shiftPerSequence)
      q.shift = q.signature.scalar(DType::i32);
    if (s.boundedLeft)
      q.left = q.signature.scalar(DType::i32);
    if (s.boundedRight)
      q.right = q.signature.scalar(DType::i32);
    if (s.softcap)
      q.cap = q.signature.scalar(DType::f32);
  }
  if (!s.evenD)
    q.headDim = q.signature.scalar(DType::i32);
  if (keys && s.modifiers)
    for (size_t i = 0; i < s.modifiers->tensors.size(); ++i) {
      const int position = q.signature.pointer(s.modifiers->tensors[i].dtype, true);
      if (i == 0)
        q.captured = position;
    }
  if (s.blockMask && (s.pass == Pass::keys || s.pass == Pass::blocks)) {
    q.blockTable = q.signature.pointer(DType::i32, s.pass == Pass::keys);
    q.blockColumns = q.signature.scalar(DType::i32);
  }
  // (A packed batch's sequences start where cu_seqlens says: no batch stride.)
  for (int t = 0; t < TENSORS; ++t)
    for (int d = 0; d < 3; ++d)
      q.strides[t][d] = q.pointers[t] >= 0 && !(s.varlen && d == 0) ? q.signature.scalar(DType::i64) : -1;
  return q;
}

Kernel make_kernel(const Structure &s, const Params &q) {
  auto body = [s, q](const Config &cfg, const std::vector<Tensor> &args) { Program(s, q, cfg, args).run(); };
  return Kernel("kiln_attention_backward_" + sha256_hex(s.key()).substr(0, 10), q.signature.types(), body)
      .library("attention");
}

} // namespace kiln::ops::attention_backward_kernel
