//===- AttentionProblem.h - an attention call's checked sizes ---*- C++ -*-===//

#pragma once

#include <kiln/ops/library.h>

#include <cstdint>
#include <vector>

namespace kiln::ops {

/// The most runs split-KV takes a row's keys in.
constexpr int kMaxSplits = 128;

/// A view's sizes and strides in [batch, seq, heads, D] order (a paged
/// cache's: [page, position in the page, heads, D]).
struct AttentionView {
  int64_t sizes[4] = {};
  int64_t strides[4] = {};
};

/// A call's sizes, its views in [batch, seq, heads, D] order, its scale.
/// A packed batch's seqQ and seqK are its longest sequences, a paged
/// cache's seqK its longest.
struct AttentionProblem {
  int64_t batch = 0, seqQ = 0, seqK = 0, headsQ = 0, headsKV = 0, D = 0;
  AttentionView q, k, v, out;
  std::vector<int64_t> lseStrides; ///< batch, head, sequence
  int64_t pageSize = 0, pages = 0, maxPages = 0; ///< (paged) keys a page holds, the cache's pages, a table row's
  int64_t firstKey = 0, packedKeys = 0; ///< (packed) cu_seqlens_k[0], and the keys from there to cu_seqlens_k[batch]
  std::vector<int64_t> lengthsQ;        ///< (packed) each sequence's queries
  double scale = 1;
};

/// Which keys a call's queries see, as its kernels take it: query i sees
/// keys from i + shift - left (`boundedLeft`) up to i + shift + right
/// (`boundedRight`: a causal mask's diagonal, or a window's edge).
struct KeyBounds {
  bool boundedLeft = false, boundedRight = false;
  /// (packed batches, paged caches) the diagonal goes through each
  /// sequence's last query and key, at shift seq_k - seq_q of its own
  bool shiftPerSequence = false;
  int32_t shift = 0, left = 0, right = 0; ///< (shift: a dense call's)
};
KeyBounds key_bounds(const AttentionArgs &a, const AttentionProblem &p);

/// Checks every argument of `a` (reading a packed batch's cu_seqlens and a
/// paged cache's cache_seqlens and block table to the host) and returns its
/// sizes; throws kiln::Error with the reason otherwise.
AttentionProblem checked_attention(const AttentionArgs &a, const Stream &stream);

/// `view` (of q's shape, or of k's where `keys`: the gradients a backward
/// pass takes and writes) in [batch, seq, heads, D] order as `p` lays out
/// the call's own views (a packed batch's with batch stride 0).
AttentionView attention_view_of(const TensorView &view, const AttentionArgs &a, const AttentionProblem &p, bool keys);

} // namespace kiln::ops
