//===- AttentionProblem.cpp - checking an attention call's arguments ------===//
//
// Everything about a call is checked before anything runs: ranks, dtypes,
// sizes that must agree, and the index tensors a packed batch or a paged
// cache brings (read to the host), so that a bad argument is an error with
// its reason, never a wrong answer or a read out of bounds.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/AttentionProblem.h"

#include "ops/lib/AttentionModifiers.h"

#include "ops/lib/Views.h"

#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace kiln::ops {

namespace {

const std::string kOp = "attention";

AttentionView canonical(const TensorView &view, AttentionLayout layout) {
  AttentionView c;
  const std::vector<int64_t> st = view.effective_strides();
  const int order[4] = {0, layout == AttentionLayout::bshd ? 1 : 2, layout == AttentionLayout::bshd ? 2 : 1, 3};
  for (int d = 0; d < 4; ++d) {
    c.sizes[d] = view.shape[order[d]];
    c.strides[d] = st[order[d]];
  }
  return c;
}

/// A packed batch's [tokens, heads, D] view as [batch, longest sequence,
/// heads, D]: programs add their sequence's first token to the pointers
/// (no batch stride).
AttentionView packedView(const TensorView &view, int64_t batch, int64_t seq) {
  const std::vector<int64_t> st = view.effective_strides();
  AttentionView c;
  const int64_t sizes[4] = {batch, seq, view.shape[1], view.shape[2]}, strides[4] = {0, st[0], st[1], st[2]};
  std::copy(sizes, sizes + 4, c.sizes);
  std::copy(strides, strides + 4, c.strides);
  return c;
}

/// Checks q, k, v and out: ranks, dtypes, a contiguous head dimension.
void checkOperand(const TensorView &view, const char *role, DType dtype, int rank) {
  check_view(view, kOp, role);
  if (view.rank() != rank)
    throw Error(kOp + ": " + role + " " + view.describe() + " must have " + std::to_string(rank) + " dimensions (" +
                (rank == 4 ? "batch, seq, heads, head_dim or batch, heads, seq, head_dim"
                           : "tokens, heads, head_dim: a packed batch") +
                ")");
  if (view.dtype != dtype)
    throw Error(kOp + ": " + role + " is " + std::string(name(view.dtype)) + " but q is " + std::string(name(dtype)) +
                ": q, k, v and out share one dtype");
  if (view.shape[rank - 1] > 1 && view.effective_strides()[rank - 1] != 1)
    throw Error(kOp + ": " + role + " " + view.describe() + " must be contiguous along head_dim (stride 1)");
}

void checkOperands(const AttentionArgs &a, int rank) {
  const DType dtype = a.q.dtype;
  if (dtype != DType::bf16 && dtype != DType::f16)
    throw Error(kOp + ": q, k, v and out must be bf16 or f16, not " + std::string(name(dtype)));
  checkOperand(a.q, "q", dtype, rank);
  checkOperand(a.k, "k", dtype, rank);
  checkOperand(a.v, "v", dtype, rank);
  checkOperand(a.out, "out", dtype, rank);
}

void checkSame(int64_t a, int64_t b, const std::string &what) {
  if (a != b)
    throw Error(kOp + ": " + what + " differ (" + std::to_string(a) + " and " + std::to_string(b) + ")");
}

/// The checks dense and packed calls share once their sizes are known;
/// `lseShape` is what the lse view must be.
void checkShared(const AttentionArgs &a, AttentionProblem &p, const std::vector<int64_t> &lseShape, const Stream &stream) {
  const AttentionView &k = p.k, &v = p.v;
  checkSame(v.sizes[1], k.sizes[1], "the sequence lengths of k and v");
  checkSame(v.sizes[2], p.headsKV, "the head counts of k and v");
  for (const AttentionView *c : {&k, &v})
    checkSame(c->sizes[3], p.D, "the head dimensions of q, k and v");
  if (a.out.shape != a.q.shape)
    throw Error(kOp + ": out " + a.out.describe() + " must have q's shape " + a.q.describe());
  if (p.D > 256)
    throw Error(kOp + ": head_dim " + std::to_string(p.D) + " is more than 256");
  if (p.headsKV == 0 ? p.headsQ != 0 : p.headsQ % p.headsKV != 0)
    throw Error(kOp + ": q's " + std::to_string(p.headsQ) + " heads are not a multiple of k and v's " +
                std::to_string(p.headsKV) + " (grouped-query attention shares each K/V head among a whole number)");
  for (int64_t size : {p.seqQ, p.seqK})
    if (size >= (int64_t(1) << 31))
      throw Error(kOp + ": sequences of 2^31 tokens or more are not supported");
  if (p.headsQ > 65535 || p.batch > 65535)
    throw Error(kOp + ": at most 65535 heads and 65535 batches (a grid's y and z)");
  std::vector<const TensorView *> views{&a.q, &a.k, &a.v, &a.out};
  if (a.lse.address) {
    check_view(a.lse, kOp, "lse");
    if (a.lse.dtype != DType::f32 || a.lse.shape != lseShape) {
      std::string want;
      for (int64_t d : lseShape)
        want += (want.empty() ? "" : ", ") + std::to_string(d);
      throw Error(kOp + ": lse " + a.lse.describe() + " must be f32 " +
                  (lseShape.size() == 3 ? "[batch, heads_q, seq_q]" : "[heads_q, tokens_q]") + " = [" + want + "]");
    }
    check_no_overlap(a.lse, kOp, "lse");
    views.push_back(&a.lse);
  }
  for (const TensorView *index : {&a.cu_seqlens_q, &a.cu_seqlens_k, &a.block_table, &a.cache_seqlens})
    if (index->address)
      views.push_back(index);
  if (a.modifiers)
    for (const TensorView *captured : checked_modifier_tensors(*a.modifiers, kOp))
      views.push_back(captured);
  check_devices(views, stream, kOp);
  check_no_overlap(a.out, kOp, "out");
  p.scale = a.scale != 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(p.D, 1)));
  if (!std::isfinite(p.scale))
    throw Error(kOp + ": the scale must be finite");
  for (int64_t bound : {a.window_left, a.window_right})
    if (bound < -1 || bound >= (int64_t(1) << 31))
      throw Error(kOp + ": a window bound is -1 (none) or a number of keys below 2^31, got " + std::to_string(bound));
  if (!(a.softcap >= 0) || !std::isfinite(a.softcap))
    throw Error(kOp + ": softcap must be 0 (none) or a finite positive cap");
}

/// The four-dimensional views of a dense call or a paged cache in
/// [batch, seq, heads, D] order (a cache's: [page, position, heads, D]),
/// and the sizes q and k give.
AttentionProblem laidOut(const AttentionArgs &a) {
  checkOperands(a, 4);
  AttentionProblem p;
  p.q = canonical(a.q, a.layout);
  p.k = canonical(a.k, a.layout);
  p.v = canonical(a.v, a.layout);
  p.out = canonical(a.out, a.layout);
  p.batch = p.q.sizes[0], p.seqQ = p.q.sizes[1], p.headsQ = p.q.sizes[2], p.D = p.q.sizes[3];
  p.headsKV = p.k.sizes[2];
  return p;
}

/// A dense call: [batch, seq, heads, D] views in `layout`'s order.
AttentionProblem checkedDense(const AttentionArgs &a, const Stream &stream) {
  AttentionProblem p = laidOut(a);
  p.seqK = p.k.sizes[1];
  for (const AttentionView *c : {&p.k, &p.v})
    checkSame(c->sizes[0], p.batch, "the batch sizes of q, k and v");
  checkShared(a, p, {p.batch, p.headsQ, p.seqQ}, stream);
  if (a.lse.address)
    p.lseStrides = a.lse.effective_strides();
  return p;
}

/// An int32 index tensor of `rank` dimensions, read to the host in
/// row-major order (after the work queued before on the default stream: a
/// caller's own stream must have finished writing it). `what` names its
/// expected shape in errors.
std::vector<int32_t> readIndices(const TensorView &view, const char *role, int rank, const char *what,
                                 const Stream &stream) {
  check_view(view, kOp, role);
  if (view.dtype != DType::i32 || view.rank() != rank)
    throw Error(kOp + ": " + role + " " + view.describe() + " must be int32 " + what);
  check_devices({&view}, stream, kOp);
  std::vector<int32_t> values(static_cast<size_t>(view.numel()));
  const std::vector<int64_t> strides = view.effective_strides();
  const int64_t columns = rank == 2 ? view.shape[1] : view.shape[0], rows = rank == 2 ? view.shape[0] : 1;
  const int64_t columnStride = columns > 1 ? strides[rank - 1] : 1, rowStride = rank == 2 ? strides[0] : 0;
  if (columnStride == 1 && (rows == 1 || rowStride == columns)) { // one copy when contiguous
    copy_to_host(stream.device(), view.address, values.data(), values.size() * 4);
    return values;
  }
  for (int64_t r = 0; r < rows && columns > 0; ++r) {
    int32_t *row = values.data() + r * columns;
    const uint64_t address = view.address + static_cast<uint64_t>(r * rowStride) * 4;
    if (columnStride == 1)
      copy_to_host(stream.device(), address, row, static_cast<size_t>(columns) * 4);
    else
      for (int64_t c = 0; c < columns; ++c)
        copy_to_host(stream.device(), address + static_cast<uint64_t>(c * columnStride) * 4, &row[c], 4);
  }
  return values;
}

/// One cu_seqlens: int32 [batch + 1], checked: each sequence starts at or
/// after the one before and ends within `tokens`.
std::vector<int32_t> sequenceStarts(const TensorView &view, const char *role, int64_t tokens, const Stream &stream) {
  std::vector<int32_t> starts = readIndices(view, role, 1, "[batch + 1]", stream);
  if (starts.empty())
    throw Error(kOp + ": " + role + " " + view.describe() + " must be int32 [batch + 1]");
  for (size_t i = 0; i < starts.size(); ++i)
    if (starts[i] < 0 || starts[i] > tokens || (i > 0 && starts[i] < starts[i - 1]))
      throw Error(kOp + ": " + role + "[" + std::to_string(i) + "] = " + std::to_string(starts[i]) +
                  (starts[i] < 0 || starts[i] > tokens ? " is outside the " + std::to_string(tokens) + " tokens"
                                                       : " is before the sequence start before it"));
  return starts;
}

/// A packed batch: [tokens, heads, D] views and each sequence's start in
/// cu_seqlens_q and cu_seqlens_k.
AttentionProblem checkedPacked(const AttentionArgs &a, const Stream &stream) {
  checkOperands(a, 3);
  if (!a.cu_seqlens_k.address)
    throw Error(kOp + ": a packed batch needs cu_seqlens_k beside cu_seqlens_q");
  const std::vector<int32_t> startsQ = sequenceStarts(a.cu_seqlens_q, "cu_seqlens_q", a.q.shape[0], stream);
  const std::vector<int32_t> startsK = sequenceStarts(a.cu_seqlens_k, "cu_seqlens_k", a.k.shape[0], stream);
  checkSame(static_cast<int64_t>(startsQ.size()), static_cast<int64_t>(startsK.size()),
            "the lengths of cu_seqlens_q and cu_seqlens_k");
  AttentionProblem p;
  p.batch = static_cast<int64_t>(startsQ.size()) - 1;
  p.firstKey = startsK.front();
  p.packedKeys = startsK.back() - startsK.front();
  for (int64_t b = 0; b < p.batch; ++b) {
    p.lengthsQ.push_back(startsQ[b + 1] - startsQ[b]);
    p.seqQ = std::max<int64_t>(p.seqQ, startsQ[b + 1] - startsQ[b]);
    p.seqK = std::max<int64_t>(p.seqK, startsK[b + 1] - startsK[b]);
  }
  p.q = packedView(a.q, p.batch, p.seqQ), p.out = packedView(a.out, p.batch, p.seqQ);
  p.k = packedView(a.k, p.batch, p.seqK), p.v = packedView(a.v, p.batch, p.seqK);
  p.headsQ = a.q.shape[1], p.D = a.q.shape[2], p.headsKV = a.k.shape[1];
  checkSame(a.v.shape[0], a.k.shape[0], "the token counts of k and v");
  checkShared(a, p, {p.headsQ, a.q.shape[0]}, stream);
  if (a.lse.address) {
    const std::vector<int64_t> st = a.lse.effective_strides();
    p.lseStrides = {0, st[0], st[1]};
  }
  return p;
}

/// A paged KV cache: q and out dense, k and v [pages, page_size, heads_kv,
/// D] (in `layout`'s order), each sequence's keys and pages in
/// cache_seqlens [batch] and block_table [batch, max_pages]: every page a
/// sequence's keys reach must be one of the cache's.
AttentionProblem checkedPaged(const AttentionArgs &a, const Stream &stream) {
  if (a.cu_seqlens_q.address || a.cu_seqlens_k.address)
    throw Error(kOp + ": a paged cache (block_table) takes a dense q, not a packed batch (cu_seqlens)");
  if (!a.cache_seqlens.address)
    throw Error(kOp + ": a paged cache (block_table) needs cache_seqlens, each sequence's number of keys");
  AttentionProblem p = laidOut(a);
  p.pageSize = p.k.sizes[1];
  const int64_t pages = p.pages = p.k.sizes[0];
  checkSame(p.v.sizes[0], pages, "the page counts of k and v");
  for (auto [view, role, rank, shape] : {std::tuple{&a.block_table, "block_table", 2, "[batch, max_pages]"},
                                         {&a.cache_seqlens, "cache_seqlens", 1, "[batch]"}}) {
    check_view(*view, kOp, role);
    if (view->dtype != DType::i32 || view->rank() != rank)
      throw Error(kOp + ": " + role + " " + view->describe() + " must be int32 " + shape);
  }
  checkSame(a.block_table.shape[0], p.batch, "the batch sizes of q and block_table");
  checkSame(a.cache_seqlens.shape[0], p.batch, "the batch sizes of q and cache_seqlens");
  if (a.block_table.shape[1] > 1 && a.block_table.effective_strides()[1] != 1)
    throw Error(kOp + ": block_table " + a.block_table.describe() + " must be contiguous along its pages (stride 1)");
  p.maxPages = a.block_table.shape[1];
  if (p.maxPages * p.pageSize >= (int64_t(1) << 31) || pages >= (int64_t(1) << 31))
    throw Error(kOp + ": a paged cache of 2^31 pages, or a table reaching 2^31 keys, is not supported");
  // Unchecked (the caller vouches), the longest sequence is as long as the
  // table reaches.
  p.seqK = a.check_indices ? 0 : p.maxPages * p.pageSize;
  if (a.check_indices) {
    const std::vector<int32_t> table = readIndices(a.block_table, "block_table", 2, "[batch, max_pages]", stream);
    const std::vector<int32_t> lengths = readIndices(a.cache_seqlens, "cache_seqlens", 1, "[batch]", stream);
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t keys = lengths[b];
      if (keys < 0 || keys > p.maxPages * p.pageSize)
        throw Error(kOp + ": cache_seqlens[" + std::to_string(b) + "] = " + std::to_string(keys) + " is outside 0.." +
                    std::to_string(p.maxPages * p.pageSize) + " (block_table's max_pages x the page size)");
      for (int64_t j = 0; j < cdiv(keys, std::max<int64_t>(p.pageSize, 1)); ++j) {
        const int32_t page = table[b * p.maxPages + j];
        if (page < 0 || page >= pages)
          throw Error(kOp + ": block_table[" + std::to_string(b) + "][" + std::to_string(j) + "] = " +
                      std::to_string(page) + " is not one of the cache's " + std::to_string(pages) + " pages");
      }
      p.seqK = std::max(p.seqK, keys);
    }
  }
  checkShared(a, p, {p.batch, p.headsQ, p.seqQ}, stream);
  if (a.lse.address)
    p.lseStrides = a.lse.effective_strides();
  return p;
}

} // namespace

KeyBounds key_bounds(const AttentionArgs &a, const AttentionProblem &p) {
  KeyBounds b;
  b.boundedLeft = a.window_left >= 0;
  b.boundedRight = a.mask != AttentionMask::none || a.window_right >= 0;
  b.shiftPerSequence = (a.cu_seqlens_q.address || a.block_table.address) && (b.boundedLeft || b.boundedRight) &&
                       a.mask != AttentionMask::causal_top_left;
  // (Relative to the diagonal through the last query and key; top-left:
  // through the first of each. A causal mask bounds the right side at 0.)
  b.shift = static_cast<int32_t>(a.mask == AttentionMask::causal_top_left ? 0 : p.seqK - p.seqQ);
  b.left = static_cast<int32_t>(a.window_left);
  b.right = static_cast<int32_t>(a.mask != AttentionMask::none ? 0 : a.window_right);
  return b;
}

AttentionView attention_view_of(const TensorView &view, const AttentionArgs &a, const AttentionProblem &p, bool keys) {
  return a.cu_seqlens_q.address ? packedView(view, p.batch, keys ? p.seqK : p.seqQ) : canonical(view, a.layout);
}

AttentionProblem checked_attention(const AttentionArgs &a, const Stream &stream) {
  AttentionProblem p = a.block_table.address ? checkedPaged(a, stream)
              : a.cu_seqlens_q.address ? checkedPacked(a, stream)
                                       : checkedDense(a, stream);
  if (a.cache_seqlens.address && !a.block_table.address)
    throw Error(kOp + ": cache_seqlens goes with a paged cache's block_table");
  if (a.num_splits < 0 || a.num_splits > kMaxSplits)
    throw Error(kOp + ": num_splits is 0 (chosen) or 1.." + std::to_string(kMaxSplits) + ", got " +
                std::to_string(a.num_splits));
  if (a.num_splits > 1 && a.cu_seqlens_q.address)
    throw Error(kOp + ": split-KV (num_splits > 1) runs on dense batches and paged caches, not packed ones");
  return p;
}

} // namespace kiln::ops
