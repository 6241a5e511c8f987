// The attention op on the interpreter: both layouts, bf16 and f16, every
// mask (causal aligned top-left and bottom-right, with more or fewer
// queries than keys, rows that see no key), grouped-query attention, head
// dimensions that are not powers of two, strided views, sequences of 0 and
// 1 and lengths that no block divides, the log-sum-exp; against
// double-precision references. Then bad arguments.
#include "tests/common/AttentionReference.h"
#include "tests/common/OpsTestSupport.h"

#include <kiln/ops/library.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::HostTensor;

namespace {

Stream cpu() { return Stream(Device::interp()); }

/// Small blocks, so that the interpreter's tests stay quick and the
/// sequences cross several blocks and end inside one.
Config small() { return {{"BLOCK_M", 16}, {"BLOCK_N", 16}, {"num_warps", 4}, {"num_stages", 2}}; }

/// A dense call on the interpreter: sizes and variants, the dtype, splits.
struct Problem : kiln::testing::DenseAttention {
  DType dtype = DType::bf16;
  int numSplits = 0;
  Problem() {
    batch = 2;
    seqQ = seqK = 37;
    headsQ = headsKV = 2;
    D = 32;
  }
};

/// Runs the op on random q, k, v and checks out and lse against sums in
/// double precision (out within the dtype's rounding of p and of out).
void expectAttention(const Problem &p, const Config &config = small()) {
  HostTensor q = HostTensor::random(p.dtype, p.shape(p.seqQ, p.headsQ), 21);
  HostTensor k = HostTensor::random(p.dtype, p.shape(p.seqK, p.headsKV), 22);
  HostTensor v = HostTensor::random(p.dtype, p.shape(p.seqK, p.headsKV), 23);
  HostTensor out = HostTensor::poisoned(p.dtype, p.shape(p.seqQ, p.headsQ));
  HostTensor lse = HostTensor::poisoned(DType::f32, {p.batch, p.headsQ, p.seqQ});
  AttentionArgs args{q.view(), k.view(), v.view(), out.view(), lse.view(), p.layout, p.mask, p.scale};
  args.window_left = p.windowLeft;
  args.window_right = p.windowRight;
  args.softcap = p.softcap;
  args.num_splits = p.numSplits;
  attention(args, cpu(), config);
  kiln::testing::AttentionReference reference(p, q, k, v);
  out.expect_near([&](const std::vector<int64_t> &x) { return reference.out(x); },
                  p.dtype == DType::bf16 ? 2e-2 : 4e-3);
  lse.expect_near([&](const std::vector<int64_t> &x) { return reference.lse(x); }, 1e-4);
}

TEST(OpsAttention, FullAttentionInBothLayoutsAndDtypes) {
  for (DType dtype : {DType::bf16, DType::f16})
    for (AttentionLayout layout : {AttentionLayout::bshd, AttentionLayout::bhsd}) {
      SCOPED_TRACE(std::string(name(dtype)) + (layout == AttentionLayout::bshd ? " bshd" : " bhsd"));
      Problem p;
      p.dtype = dtype;
      p.layout = layout;
      expectAttention(p);
    }
}

TEST(OpsAttention, CausalMasksAlignedTopLeftAndBottomRight) {
  // Fewer queries than keys, more (the first rows then see no key under
  // bottom-right alignment), and as many.
  for (auto [seqQ, seqK] : {std::pair<int64_t, int64_t>{20, 45}, {45, 20}, {33, 33}})
    for (AttentionMask mask : {AttentionMask::causal_top_left, AttentionMask::causal_bottom_right}) {
      SCOPED_TRACE(std::string(name(mask)) + " " + std::to_string(seqQ) + "x" + std::to_string(seqK));
      Problem p;
      p.mask = mask;
      p.seqQ = seqQ;
      p.seqK = seqK;
      p.batch = 1;
      expectAttention(p);
    }
}

TEST(OpsAttention, GroupedQueryAttentionReadsSharedHeadsInPlace) {
  for (int64_t headsKV : {8, 2, 1}) { // ratios 1, 4 and 8
    SCOPED_TRACE(headsKV);
    Problem p;
    p.headsQ = 8;
    p.headsKV = headsKV;
    p.batch = 1;
    p.seqQ = p.seqK = 19;
    p.mask = AttentionMask::causal_bottom_right;
    expectAttention(p); // few queries: a program takes the whole group's
    p.seqQ = 70;
    p.seqK = 50;
    p.headsQ = 4;
    p.headsKV = std::min<int64_t>(headsKV, 4);
    expectAttention(p); // a program a query head
  }
  // Decoding-like: one query and three, the group's rows crossing blocks,
  // split into runs.
  Problem p;
  p.headsQ = 24;
  p.headsKV = 4;
  p.seqK = 45;
  p.numSplits = 2;
  for (int64_t seqQ : {1, 3}) {
    p.seqQ = seqQ;
    p.mask = seqQ > 1 ? AttentionMask::causal_bottom_right : AttentionMask::none;
    expectAttention(p);
  }
}

TEST(OpsAttention, HeadDimensionsThatAreNotPowersOfTwo) {
  for (int64_t D : {8, 40, 80}) {
    SCOPED_TRACE(D);
    Problem p;
    p.D = D;
    p.batch = 1;
    p.seqQ = 17;
    p.seqK = 23;
    p.scale = 0.3;
    expectAttention(p);
  }
}

TEST(OpsAttention, NegativeScales) {
  // A row's largest score is then its smallest product: with and without
  // masked blocks, soft-capped too.
  Problem p;
  p.scale = -0.2;
  expectAttention(p);
  p.seqK = 48;
  expectAttention(p);
  p.mask = AttentionMask::causal_bottom_right;
  expectAttention(p);
  p.softcap = 5;
  expectAttention(p);
}

TEST(OpsAttention, SlidingWindowsOnEitherSideAndWithCausalMasks) {
  struct Case {
    int64_t left, right;
    AttentionMask mask;
    int64_t seqQ, seqK;
  };
  for (const Case &c : {Case{5, 3, AttentionMask::none, 40, 40}, Case{20, -1, AttentionMask::none, 30, 50},
                        Case{-1, 2, AttentionMask::none, 50, 30}, Case{7, -1, AttentionMask::causal_bottom_right, 45, 45},
                        Case{0, 0, AttentionMask::none, 33, 20}, Case{16, -1, AttentionMask::causal_top_left, 20, 60}}) {
    SCOPED_TRACE("window (" + std::to_string(c.left) + ", " + std::to_string(c.right) + ") " + name(c.mask) + " " +
                 std::to_string(c.seqQ) + "x" + std::to_string(c.seqK));
    Problem p;
    p.batch = 1;
    p.windowLeft = c.left;
    p.windowRight = c.right;
    p.mask = c.mask;
    p.seqQ = c.seqQ;
    p.seqK = c.seqK;
    expectAttention(p);
  }
}

TEST(OpsAttention, LogitSoftCapping) {
  for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_bottom_right}) {
    Problem p;
    p.batch = 1;
    p.softcap = 2.5; // scores of up to ~10 here: the cap bends them
    p.mask = mask;
    p.seqQ = 29;
    p.seqK = 41;
    expectAttention(p);
  }
}

TEST(OpsAttention, LargerBlocksAndTheDefaultTile) {
  Problem p;
  p.batch = 1;
  p.headsQ = p.headsKV = 1;
  p.seqQ = 130;
  p.seqK = 70;
  p.D = 64;
  p.mask = AttentionMask::causal_top_left;
  expectAttention(p, {}); // the default tile: 128 queries, 64 keys a step
}

TEST(OpsAttention, ShortAndEmptySequences) {
  for (auto [seqQ, seqK] : {std::pair<int64_t, int64_t>{1, 1}, {1, 50}, {5, 0}}) {
    SCOPED_TRACE(std::to_string(seqQ) + "x" + std::to_string(seqK));
    Problem p;
    p.seqQ = seqQ;
    p.seqK = seqK;
    expectAttention(p); // no keys: zeros and a log-sum-exp of -inf
  }
  // No queries, or no batch: nothing to do, nothing read.
  HostTensor q = HostTensor::random(DType::bf16, {2, 0, 2, 32}, 1), kv = HostTensor::random(DType::bf16, {2, 4, 2, 32}, 2);
  HostTensor out = HostTensor::poisoned(DType::bf16, {2, 0, 2, 32});
  attention({q.view(), kv.view(), kv.view(), out.view(), {}}, cpu(), small());
}

TEST(OpsAttention, StridedViewsOfAPackedProjection) {
  // q, k and v as slices of one [batch, seq, 3, heads, D] tensor (a fused
  // QKV projection's output), out strided too.
  const int64_t B = 2, S = 21, H = 2, D = 32;
  HostTensor qkv = HostTensor::random(DType::bf16, {B, S, 3, H, D}, 31);
  HostTensor out = HostTensor::poisoned(DType::bf16, {B, S, H, 2 * D});
  auto slice = [&](int which) {
    TensorView view = qkv.view();
    view.address += static_cast<uint64_t>(which * H * D) * 2;
    view.shape = {B, S, H, D};
    view.strides = {S * 3 * H * D, 3 * H * D, D, 1};
    return view;
  };
  TensorView o = out.view();
  o.shape = {B, S, H, D};
  o.strides = {S * H * 2 * D, H * 2 * D, 2 * D, 1};
  attention({slice(0), slice(1), slice(2), o, {}, AttentionLayout::bshd, AttentionMask::causal_top_left}, cpu(),
            small());
  const double scale = 1 / std::sqrt(double(D));
  out.expect_near(
      [&](const std::vector<int64_t> &x) {
        if (x[3] >= D)
          return std::nan(""); // the half out's view never writes: still poisoned
        const int64_t b = x[0], i = x[1], h = x[2], d = x[3];
        std::vector<double> w(i + 1);
        double top = -INFINITY, total = 0, o = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double s = 0;
          for (int64_t e = 0; e < D; ++e)
            s += qkv.at({b, i, 0, h, e}) * qkv.at({b, j, 1, h, e});
          w[j] = s * scale;
          top = std::max(top, w[j]);
        }
        for (int64_t j = 0; j <= i; ++j) {
          total += std::exp(w[j] - top);
          o += std::exp(w[j] - top) * qkv.at({b, j, 2, h, d});
        }
        return o / total;
      },
      2e-2);
}

/// A packed batch of sequences of lengths `lengthsQ` and `lengthsK` (FlashAttention's varlen), checked
/// sequence by sequence against float64; `keyMargin` NaN tokens of k and v before and after the batch's keys,
/// which no output may see.
void expectPacked(const std::vector<int32_t> &lengthsQ, const std::vector<int32_t> &lengthsK, AttentionMask mask,
                  int64_t windowLeft = -1, int32_t keyMargin = 0, const Config &config = small()) {
  const int64_t HQ = 4, HKV = 2, D = 32;
  std::vector<int32_t> cuQ{0}, cuK{keyMargin};
  for (size_t b = 0; b < lengthsQ.size(); ++b) {
    cuQ.push_back(cuQ.back() + lengthsQ[b]);
    cuK.push_back(cuK.back() + lengthsK[b]);
  }
  const int64_t tokensQ = cuQ.back(), tokensK = cuK.back() + keyMargin;
  HostTensor q = HostTensor::random(DType::bf16, {tokensQ, HQ, D}, 51), k = HostTensor::random(DType::bf16, {tokensK, HKV, D}, 52);
  HostTensor v = HostTensor::random(DType::bf16, {tokensK, HKV, D}, 53), out = HostTensor::poisoned(DType::bf16, {tokensQ, HQ, D});
  for (int64_t token = 0; token < tokensK; ++token)
    if (token < cuK.front() || token >= cuK.back())
      for (int64_t i = 0; i < HKV * D; ++i) {
        k.set_flat(token * HKV * D + i, NAN);
        v.set_flat(token * HKV * D + i, NAN);
      }
  HostTensor lse = HostTensor::poisoned(DType::f32, {HQ, tokensQ});
  AttentionArgs args{q.view(), k.view(), v.view(), out.view(), lse.view()};
  args.mask = mask;
  args.window_left = windowLeft;
  args.cu_seqlens_q = TensorView::of_host(cuQ.data(), {static_cast<int64_t>(cuQ.size())});
  args.cu_seqlens_k = TensorView::of_host(cuK.data(), {static_cast<int64_t>(cuK.size())});
  attention(args, cpu(), config);
  kiln::testing::DenseAttention variants;
  variants.mask = mask, variants.windowLeft = windowLeft, variants.headsQ = HQ, variants.headsKV = HKV, variants.D = D;
  kiln::testing::AttentionReference reference(
      variants, [&](int64_t b) { return std::pair<int64_t, int64_t>{lengthsQ[b], lengthsK[b]}; },
      [&](int64_t b, int64_t i, int64_t h, int64_t d) { return q.at({cuQ[b] + i, h, d}); },
      [&](int64_t b, int64_t j, int64_t h, int64_t d) { return k.at({cuK[b] + j, h, d}); },
      [&](int64_t b, int64_t j, int64_t h, int64_t d) { return v.at({cuK[b] + j, h, d}); });
  // A token's sequence and place in it.
  auto place = [&](int64_t token) {
    const int64_t b = std::upper_bound(cuQ.begin(), cuQ.end(), static_cast<int32_t>(token)) - cuQ.begin() - 1;
    return std::pair<int64_t, int64_t>{b, token - cuQ[b]};
  };
  out.expect_near(
      [&](const std::vector<int64_t> &x) {
        auto [b, i] = place(x[0]);
        return reference.out(b, i, x[1], x[2]);
      },
      2e-2);
  lse.expect_near(
      [&](const std::vector<int64_t> &x) {
        auto [b, i] = place(x[1]);
        return reference.lse(b, x[0], i);
      },
      1e-4);
}

TEST(OpsAttention, PackedBatchesOfTheirOwnLengths) {
  // Lengths 1, not a multiple of the block, 0 (an empty sequence), longer
  // keys than queries and fewer: no padding between them.
  const std::vector<int32_t> lengthsQ{1, 17, 0, 40, 9}, lengthsK{5, 17, 3, 40, 2};
  for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_top_left, AttentionMask::causal_bottom_right}) {
    SCOPED_TRACE(name(mask));
    expectPacked(lengthsQ, lengthsK, mask);
  }
  SCOPED_TRACE("a window of 6 keys, bottom-right in each sequence");
  expectPacked(lengthsQ, lengthsK, AttentionMask::causal_bottom_right, 6);
}

TEST(OpsAttention, PackedBatchesReadNoKeyOutsideTheirs) {
  // A block the end of a sequence cuts is read whole, moved back into the
  // batch's keys (short sequences at either end of the batch included); a
  // batch of fewer keys than a block masks its loads instead. NaN keys and
  // values around the batch's must reach no output.
  const std::vector<int32_t> lengthsQ{1, 17, 0, 40, 9}, lengthsK{5, 17, 3, 40, 2};
  for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_bottom_right}) {
    SCOPED_TRACE(name(mask));
    expectPacked(lengthsQ, lengthsK, mask, -1, 5);
    expectPacked({3, 5}, {4, 6}, mask, -1, 3);
  }
  SCOPED_TRACE("a window");
  expectPacked(lengthsQ, lengthsK, AttentionMask::causal_bottom_right, 6, 7);
}

TEST(OpsAttention, PackedBatchesWalkedByPersistentPrograms) {
  // One program walks the tiles the sequences have, listed in a table on
  // the stream first: empty sequences and sequences of one query list no
  // tile and one; every mask, a window, keys outside the batch's.
  Config walking = small();
  walking.set("persistent", 1);
  const std::vector<int32_t> lengthsQ{1, 17, 0, 40, 9}, lengthsK{5, 17, 3, 40, 2};
  for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_top_left, AttentionMask::causal_bottom_right}) {
    SCOPED_TRACE(name(mask));
    expectPacked(lengthsQ, lengthsK, mask, -1, 0, walking);
    expectPacked(lengthsQ, lengthsK, mask, -1, 5, walking);
  }
  SCOPED_TRACE("a window, and sequences that are all empty but one");
  expectPacked(lengthsQ, lengthsK, AttentionMask::causal_bottom_right, 6, 7, walking);
  expectPacked({0, 0, 33, 0}, {4, 0, 50, 0}, AttentionMask::none, -1, 0, walking);
}

TEST(OpsAttention, PackedBatchesRefuseBadSequenceStarts) {
  HostTensor q = HostTensor::random(DType::bf16, {10, 2, 16}, 1), out = HostTensor::poisoned(DType::bf16, {10, 2, 16});
  auto refused = [&](std::vector<int32_t> cuQ, std::vector<int32_t> cuK, const std::string &reason) {
    AttentionArgs args{q.view(), q.view(), q.view(), out.view(), {}};
    args.cu_seqlens_q = TensorView::of_host(cuQ.data(), {static_cast<int64_t>(cuQ.size())});
    if (!cuK.empty())
      args.cu_seqlens_k = TensorView::of_host(cuK.data(), {static_cast<int64_t>(cuK.size())});
    try {
      attention(args, cpu(), small());
      ADD_FAILURE() << "accepted; wanted: " << reason;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  refused({0, 6, 4, 10}, {0, 3, 6, 10}, "cu_seqlens_q[2] = 4 is before the sequence start before it");
  refused({0, 6, 11}, {0, 5, 10}, "cu_seqlens_q[2] = 11 is outside the 10 tokens");
  refused({0, 6, 10}, {0, 5, 10, 10}, "the lengths of cu_seqlens_q and cu_seqlens_k differ");
  refused({0, 6, 10}, {}, "needs cu_seqlens_k");
  HostTensor q4 = HostTensor::random(DType::bf16, {1, 10, 2, 16}, 2);
  std::vector<int32_t> cu{0, 10};
  AttentionArgs args{q4.view(), q4.view(), q4.view(), q4.view(), {}};
  args.cu_seqlens_q = args.cu_seqlens_k = TensorView::of_host(cu.data(), {2});
  EXPECT_THROW(attention(args, cpu(), small()), Error); // a packed batch's tensors are [tokens, heads, D]
}

TEST(OpsAttention, KeysThatBlocksDivideAreReadWithoutMasks) {
  // seq_k a multiple of BLOCK_N: no load is masked, the bounds hide scores
  // only; every mask and window, more and fewer queries than keys, split.
  Problem p;
  p.seqK = 48;
  for (int64_t seqQ : {48, 20, 70}) {
    p.seqQ = seqQ;
    for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_top_left, AttentionMask::causal_bottom_right}) {
      SCOPED_TRACE(std::string(name(mask)) + ", " + std::to_string(seqQ) + " queries");
      p.mask = mask;
      p.windowLeft = -1;
      expectAttention(p);
      p.windowLeft = 7;
      expectAttention(p);
    }
  }
  p.mask = AttentionMask::none;
  p.windowLeft = 5;
  p.windowRight = 3;
  p.numSplits = 3;
  expectAttention(p);
}

TEST(OpsAttention, ProgramsWalkingTheTiles) {
  // Persistent programs (one, on the interpreter, walking every tile):
  // both layouts, every mask and window, grouped heads, a masked head
  // dimension, keys that blocks divide and that they do not, no queries.
  Config walking = small();
  walking.set("persistent", 1);
  Problem p;
  for (AttentionLayout layout : {AttentionLayout::bshd, AttentionLayout::bhsd}) {
    p.layout = layout;
    expectAttention(p, walking);
  }
  for (int64_t seqK : {48, 45}) {
    p.seqK = seqK;
    for (AttentionMask mask : {AttentionMask::causal_top_left, AttentionMask::causal_bottom_right}) {
      SCOPED_TRACE(std::string(name(mask)) + ", " + std::to_string(seqK) + " keys");
      p.mask = mask;
      expectAttention(p, walking);
      p.windowLeft = 7;
      expectAttention(p, walking);
      p.windowLeft = -1;
    }
  }
  p.mask = AttentionMask::none;
  p.headsQ = 4;
  p.D = 40;
  p.softcap = 20;
  expectAttention(p, walking);
  p.seqQ = 0;
  expectAttention(p, walking);
}

TEST(OpsAttention, SplitKeysAreMergedByTheirLogSumExp) {
  // Runs of one block and of several; more runs than blocks (some runs see
  // no key at all); rows that see no key; with every bound and variant.
  Problem p;
  p.seqQ = 5;
  p.seqK = 70;
  for (int splits : {2, 3, 9}) {
    SCOPED_TRACE("splits " + std::to_string(splits));
    p.numSplits = splits;
    expectAttention(p);
  }
  p.numSplits = 3;
  p.mask = AttentionMask::causal_top_left;
  p.seqQ = 40;
  p.seqK = 37;
  p.layout = AttentionLayout::bhsd;
  expectAttention(p);
  p.mask = AttentionMask::causal_bottom_right;
  p.windowLeft = 9;
  p.headsQ = 4;
  p.headsKV = 1;
  p.D = 40;
  p.softcap = 3;
  p.dtype = DType::f16;
  expectAttention(p);
}

/// A paged KV cache: sequences of `lengths` keys in pages of `pageSize`
/// scattered over the cache (the table's unused entries -1), `seqQ` new
/// queries each, checked against float64 on the keys gathered page by page.
void expectPaged(const std::vector<int32_t> &lengths, int64_t pageSize, int64_t seqQ, AttentionMask mask,
                 int numSplits, int64_t windowLeft = -1, const Config &config = small()) {
  const int64_t B = static_cast<int64_t>(lengths.size()), HQ = 4, HKV = 2, D = 32;
  int64_t maxPages = 1, pages = 0;
  for (int32_t n : lengths) {
    maxPages = std::max(maxPages, cdiv(n, pageSize) + 1);
    pages += cdiv(n, pageSize);
  }
  pages += 3; // pages no sequence uses
  std::vector<int32_t> order(pages);
  for (int64_t i = 0; i < pages; ++i)
    order[i] = static_cast<int32_t>((i * 7 + 3) % pages);
  if (std::gcd<int64_t>(7, pages) != 1)
    std::reverse(order.begin(), order.end());
  std::vector<int32_t> table(B * maxPages, -1);
  int64_t next = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < cdiv(lengths[b], pageSize); ++j)
      table[b * maxPages + j] = order[next++];
  HostTensor q = HostTensor::random(DType::bf16, {B, seqQ, HQ, D}, 61);
  HostTensor k = HostTensor::random(DType::bf16, {pages, pageSize, HKV, D}, 62);
  HostTensor v = HostTensor::random(DType::bf16, {pages, pageSize, HKV, D}, 63);
  HostTensor out = HostTensor::poisoned(DType::bf16, {B, seqQ, HQ, D});
  HostTensor lse = HostTensor::poisoned(DType::f32, {B, HQ, seqQ});
  std::vector<int32_t> seqlens = lengths;
  AttentionArgs args{q.view(), k.view(), v.view(), out.view(), lse.view()};
  args.mask = mask;
  args.window_left = windowLeft;
  args.block_table = TensorView::of_host(table.data(), {B, maxPages});
  args.cache_seqlens = TensorView::of_host(seqlens.data(), {B});
  args.num_splits = numSplits;
  attention(args, cpu(), config);
  // Key j of sequence b: its page and place in the page.
  auto key = [&](int64_t b, int64_t j) {
    return std::pair<int64_t, int64_t>{table[b * maxPages + j / pageSize], j % pageSize};
  };
  kiln::testing::DenseAttention variants;
  variants.mask = mask, variants.windowLeft = windowLeft, variants.headsQ = HQ, variants.headsKV = HKV, variants.D = D;
  kiln::testing::AttentionReference reference(
      variants, [&](int64_t b) { return std::pair<int64_t, int64_t>{seqQ, lengths[b]}; },
      [&](int64_t b, int64_t i, int64_t h, int64_t d) { return q.at({b, i, h, d}); },
      [&](int64_t b, int64_t j, int64_t h, int64_t d) {
        auto [page, slot] = key(b, j);
        return k.at({page, slot, h, d});
      },
      [&](int64_t b, int64_t j, int64_t h, int64_t d) {
        auto [page, slot] = key(b, j);
        return v.at({page, slot, h, d});
      });
  out.expect_near([&](const std::vector<int64_t> &x) { return reference.out(x[0], x[1], x[2], x[3]); }, 2e-2);
  lse.expect_near([&](const std::vector<int64_t> &x) { return reference.lse(x[0], x[1], x[2]); }, 1e-4);
}

TEST(OpsAttention, PagedCachesFromTheirBlockTables) {
  // Pages as long as a block of keys and pages a block crosses (5 keys);
  // caches of 0 and 1 keys and pages partly filled; one query (decoding)
  // and a few (chunked prefill, causal from the cache's end); split or not.
  const std::vector<int32_t> lengths{37, 1, 0, 16, 50};
  for (int64_t pageSize : {16, 5})
    for (int splits : {1, 3}) {
      SCOPED_TRACE("pages of " + std::to_string(pageSize) + ", splits " + std::to_string(splits));
      expectPaged(lengths, pageSize, 1, AttentionMask::none, splits);
      expectPaged(lengths, pageSize, 3, AttentionMask::causal_bottom_right, splits);
    }
  SCOPED_TRACE("a window of 7 keys; the default tile and splits");
  expectPaged(lengths, 8, 2, AttentionMask::causal_bottom_right, 2, 7);
  expectPaged(lengths, 8, 2, AttentionMask::none, 0, -1, {});
}

TEST(OpsAttention, PagedCachesRefuseTablesOutsideTheCache) {
  HostTensor q = HostTensor::random(DType::bf16, {2, 1, 2, 16}, 1), out = HostTensor::poisoned(DType::bf16, {2, 1, 2, 16});
  HostTensor cache = HostTensor::random(DType::bf16, {4, 8, 2, 16}, 2); // 4 pages of 8 keys
  auto refused = [&](std::vector<int32_t> table, std::vector<int32_t> lengths, const std::string &reason,
                     int splits = 0) {
    AttentionArgs args{q.view(), cache.view(), cache.view(), out.view(), {}};
    args.block_table = TensorView::of_host(table.data(), {2, static_cast<int64_t>(table.size() / 2)});
    if (!lengths.empty())
      args.cache_seqlens = TensorView::of_host(lengths.data(), {static_cast<int64_t>(lengths.size())});
    args.num_splits = splits;
    try {
      attention(args, cpu(), small());
      ADD_FAILURE() << "accepted; wanted: " << reason;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  refused({0, 1, 2, 4}, {16, 9}, "block_table[1][1] = 4 is not one of the cache's 4 pages");
  refused({0, -1, 2, 3}, {9, 16}, "block_table[0][1] = -1 is not one of the cache's 4 pages");
  refused({0, 1, 2, 3}, {17, 3}, "cache_seqlens[0] = 17 is outside 0..16");
  refused({0, 1, 2, 3}, {-1, 3}, "cache_seqlens[0] = -1 is outside 0..16");
  refused({0, 1, 2, 3}, {}, "needs cache_seqlens");
  refused({0, 1, 2, 3}, {3}, "the batch sizes of q and cache_seqlens differ");
  refused({0, 1, 2, 3}, {3, 3}, "num_splits is 0 (chosen) or 1..128, got 129", 129);
  std::vector<int32_t> lengths{3, 3};
  AttentionArgs args{q.view(), cache.view(), cache.view(), out.view(), {}};
  args.cache_seqlens = TensorView::of_host(lengths.data(), {2});
  EXPECT_THROW(attention(args, cpu(), small()), Error); // cache_seqlens without a block table
  // Unchecked indices the caller got wrong: pages outside the cache and a
  // length past the table give wrong numbers but read nothing outside the
  // cache or the table (the interpreter refuses any access outside them).
  std::vector<int32_t> table{7, -3, 2, 3}, wrongLengths{40, -5};
  args.block_table = TensorView::of_host(table.data(), {2, 2});
  args.cache_seqlens = TensorView::of_host(wrongLengths.data(), {2});
  args.check_indices = false;
  for (int splits : {1, 2}) {
    args.num_splits = splits;
    EXPECT_NO_THROW(attention(args, cpu(), small()));
  }
}

TEST(OpsAttention, AmdTilesRunOnMatrixCoresWithoutSpills) {
  // For gfx942 and gfx90a: the tiles of the targets before Hopper in one
  // stage, in the AMD space (its LDS, no producer, no walk); each head
  // dimension's default, causal or not, grouped heads and decoding, on
  // v_mfma without scratch or spills. Nothing of it has run on an AMD GPU.
  if (!has_amd_back_end())
    GTEST_SKIP() << "built without the AMD back end";
  struct Case {
    int64_t headsQ, headsKV, seqQ, seqK, D;
    AttentionMask mask;
  };
  for (Case c : {Case{4, 4, 1024, 1024, 64, AttentionMask::none}, Case{4, 4, 1024, 1024, 128, AttentionMask::causal_top_left},
                 Case{2, 2, 512, 512, 256, AttentionMask::none}, Case{8, 2, 1, 2048, 128, AttentionMask::none}})
    for (const char *arch : {"gfx942", "gfx90a"}) {
      SCOPED_TRACE("D " + std::to_string(c.D) + ", " + std::to_string(c.seqQ) + " queries, " + arch);
      HostTensor q = HostTensor::random(DType::bf16, {1, c.headsQ, c.seqQ, c.D}, 1);
      HostTensor k = HostTensor::random(DType::bf16, {1, c.headsKV, c.seqK, c.D}, 2);
      HostTensor out = HostTensor::poisoned(DType::bf16, {1, c.headsQ, c.seqQ, c.D});
      AttentionArgs args{q.view(), k.view(), k.view(), out.view(), {}, AttentionLayout::bhsd, c.mask};
      autotune::Task task = attention_tuning_task(args, cpu(), arch);
      const Config &seed = task.seeds.at(0);
      EXPECT_EQ(task.space.check(seed), "") << seed.str();
      EXPECT_EQ(seed["num_stages"], 1);
      for (const Config &config : task.space.valid({}))
        EXPECT_TRUE(config["warp_specialize"] == 0 && config["persistent"] == 0) << config.str();
      const CompiledKernel kernel = task.compile(seed);
      EXPECT_NE(kernel.amdgcn.find("v_mfma_f32_"), std::string::npos);
      EXPECT_EQ(kernel.stack_frame, 0) << kernel.resources;
      EXPECT_EQ(kernel.spill_stores, 0) << kernel.resources;
    }
}

TEST(OpsAttention, TheTuningSpaceHoldsTheDefaultTile) {
  // Long and short sequences, decoding on grouped heads, each head
  // dimension: the autotuner's search starts from the default tile, and
  // every tile it times is one the op runs.
  struct Case {
    int64_t batch, headsQ, headsKV, seqQ, seqK, D;
  };
  for (Case c : {Case{1, 4, 4, 300, 300, 64}, Case{1, 4, 4, 256, 2048, 64}, Case{1, 4, 4, 300, 300, 128},
                 Case{1, 2, 2, 100, 100, 256}, Case{2, 8, 2, 1, 500, 128}, Case{2, 8, 8, 3, 500, 64}}) {
    HostTensor q = HostTensor::random(DType::bf16, {c.batch, c.headsQ, c.seqQ, c.D}, 1);
    HostTensor k = HostTensor::random(DType::bf16, {c.batch, c.headsKV, c.seqK, c.D}, 2);
    HostTensor out = HostTensor::poisoned(DType::bf16, {c.batch, c.headsQ, c.seqQ, c.D});
    AttentionArgs args{q.view(), k.view(), k.view(), out.view(), {}, AttentionLayout::bhsd};
    for (const char *arch : {"sm_90a", "sm_80"}) {
      SCOPED_TRACE(std::to_string(c.seqQ) + " queries, D " + std::to_string(c.D) + ", " + arch);
      autotune::Task task = attention_tuning_task(args, cpu(), arch);
      ASSERT_EQ(task.seeds.size(), 1u);
      EXPECT_EQ(task.space.check(task.seeds[0]), "") << task.seeds[0].str();
      // (At D 64 over 2048 keys or more that 128-key blocks divide, one
      // loop: Hopper's warpgroups run their softmax under their own P V,
      // not taking turns.)
      EXPECT_EQ(task.seeds[0]["ping_pong"], 0);
      EXPECT_EQ(task.seeds[0]["overlap_chain"], 1);
      EXPECT_GT(task.space.valid({}).size(), 4u);
    }
  }
  // At D 256 under a causal mask (two loops of keys, which the compiler
  // does not rotate), Hopper's consumer warpgroups take turns (beside the
  // producer that blocks dividing the keys get).
  HostTensor q256 = HostTensor::random(DType::bf16, {1, 2, 512, 256}, 1);
  HostTensor out256 = HostTensor::poisoned(DType::bf16, {1, 2, 512, 256});
  AttentionArgs causal{q256.view(), q256.view(), q256.view(), out256.view(), {}, AttentionLayout::bhsd};
  causal.mask = AttentionMask::causal_top_left;
  for (const char *arch : {"sm_90a", "sm_80"}) {
    autotune::Task task = attention_tuning_task(causal, cpu(), arch);
    EXPECT_EQ(task.space.check(task.seeds[0]), "") << task.seeds[0].str();
    EXPECT_EQ(task.seeds[0]["ping_pong"], std::string(arch) == "sm_90a" ? 1 : 0) << arch;
  }
  // On Hopper, where a producer feeds 128-key blocks of a dense batch
  // without a window's left edge, one program a multiprocessor walks the
  // tiles; not at D 64 below 2048 keys (64-key blocks, two programs a
  // multiprocessor), nor on sm_80.
  struct Walk {
    int64_t seq, D;
    AttentionMask mask;
    int64_t windowLeft, persistent;
  };
  for (Walk w : {Walk{1024, 128, AttentionMask::none, -1, 1}, Walk{1024, 128, AttentionMask::causal_top_left, -1, 1},
                 Walk{2048, 64, AttentionMask::none, -1, 1}, Walk{1024, 64, AttentionMask::none, -1, 0},
                 Walk{1024, 128, AttentionMask::none, 100, 0}, Walk{1000, 128, AttentionMask::none, -1, 0}}) {
    SCOPED_TRACE("N " + std::to_string(w.seq) + ", D " + std::to_string(w.D) + ", " + name(w.mask) +
                 (w.windowLeft >= 0 ? ", window" : ""));
    HostTensor x = HostTensor::random(DType::bf16, {1, 2, w.seq, w.D}, 1);
    HostTensor y = HostTensor::poisoned(DType::bf16, {1, 2, w.seq, w.D});
    AttentionArgs args{x.view(), x.view(), x.view(), y.view(), {}, AttentionLayout::bhsd, w.mask};
    args.window_left = w.windowLeft;
    autotune::Task hopper = attention_tuning_task(args, cpu(), "sm_90a");
    EXPECT_EQ(hopper.seeds[0]["persistent"], w.persistent);
    EXPECT_EQ(hopper.space.check(hopper.seeds[0]), "") << hopper.seeds[0].str();
    EXPECT_EQ(attention_tuning_task(args, cpu(), "sm_80").seeds[0]["persistent"], 0);
  }
  // A packed batch whose keys the copy engine reads walks its tiles too
  // (D 64 and 128, with and without a causal mask), not taking turns;
  // not with a window's left edge.
  std::vector<int32_t> starts{0, 3000, 4100};
  for (int64_t D : {64, 128})
    for (int64_t windowLeft : {-1, 100})
      for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_bottom_right}) {
        SCOPED_TRACE("packed, D " + std::to_string(D) + ", " + name(mask) + (windowLeft >= 0 ? ", window" : ""));
        HostTensor x = HostTensor::random(DType::bf16, {4100, 2, D}, 1);
        HostTensor y = HostTensor::poisoned(DType::bf16, {4100, 2, D});
        AttentionArgs packed{x.view(), x.view(), x.view(), y.view(), {}, AttentionLayout::bshd, mask};
        packed.window_left = windowLeft;
        packed.cu_seqlens_q = packed.cu_seqlens_k = TensorView::of_host(starts.data(), {3});
        autotune::Task hopper = attention_tuning_task(packed, cpu(), "sm_90a");
        EXPECT_EQ(hopper.seeds[0]["persistent"], windowLeft < 0 ? 1 : 0);
        EXPECT_EQ(hopper.seeds[0]["ping_pong"], 0);
        EXPECT_EQ(hopper.space.check(hopper.seeds[0]), "") << hopper.seeds[0].str();
      }
  HostTensor q = HostTensor::random(DType::bf16, {1, 2, 8, 16}, 1);
  AttentionArgs inPlace{q.view(), q.view(), q.view(), q.view(), {}};
  EXPECT_THROW(attention_tuning_task(inPlace, cpu(), "sm_90a"), Error); // the tuner would destroy q
}

TEST(OpsAttention, TheHopperDefaultTilesCompileWithoutSpilling) {
  // The default tile of a long call on sm_90a, each head dimension, with
  // and without a causal mask, and of a packed batch, through the whole
  // compiler and ptxas: a
  // producer warpgroup beside two consumer warpgroups (12 warps), no
  // spills, within a program's shared memory. At D 256 the queries wait in
  // a shared-memory buffer, stored once (kgpu.local_store: 16-byte
  // st.shared, then fence.proxy.async), and the first product reads them
  // through a descriptor.
  for (int64_t D : {64, 128, 256})
    for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_bottom_right}) {
      SCOPED_TRACE("D " + std::to_string(D) + ", " + name(mask));
      HostTensor q = HostTensor::random(DType::bf16, {1, 2, 4096, D}, 1);
      HostTensor k = HostTensor::random(DType::bf16, {1, 2, 4096, D}, 2);
      HostTensor v = HostTensor::random(DType::bf16, {1, 2, 4096, D}, 3);
      HostTensor out = HostTensor::poisoned(DType::bf16, {1, 2, 4096, D});
      AttentionArgs args{q.view(), k.view(), v.view(), out.view(), {}, AttentionLayout::bhsd, mask};
      autotune::Task task = attention_tuning_task(args, cpu(), "sm_90a");
      CompiledKernel kernel = task.compile(task.seeds[0]);
      EXPECT_EQ(kernel.num_warps, 12);
      EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
      EXPECT_LE(kernel.shared_memory, 227 * 1024);
      const bool held = kernel.ptx.find("fence.proxy.async.shared::cta;") != std::string::npos;
      EXPECT_EQ(held, D == 256);
    }
  // Programs walking the tiles (D 64 and 128, with and without a causal
  // mask): the same producer, walking them too.
  for (int64_t D : {64, 128})
    for (AttentionMask mask : {AttentionMask::none, AttentionMask::causal_bottom_right}) {
      SCOPED_TRACE("walking, D " + std::to_string(D) + ", " + name(mask));
      HostTensor q = HostTensor::random(DType::bf16, {1, 2, 1024, D}, 1);
      HostTensor out = HostTensor::poisoned(DType::bf16, {1, 2, 1024, D});
      AttentionArgs args{q.view(), q.view(), q.view(), out.view(), {}, AttentionLayout::bhsd, mask};
      autotune::Task task = attention_tuning_task(args, cpu(), "sm_90a");
      Config walking = task.seeds[0];
      walking.set("persistent", 1);
      walking.set("warp_specialize", 1);
      walking.set("ping_pong", 0);
      EXPECT_EQ(task.space.check(walking), "") << walking.str();
      CompiledKernel kernel = task.compile(walking);
      EXPECT_EQ(kernel.num_warps, 12);
      EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
    }
  // A packed batch (its cut blocks read whole): the same producer.
  std::vector<int32_t> starts{0, 3000, 4100};
  HostTensor q = HostTensor::random(DType::bf16, {4100, 2, 128}, 4);
  HostTensor out = HostTensor::poisoned(DType::bf16, {4100, 2, 128});
  AttentionArgs packed{q.view(), q.view(), q.view(), out.view(), {}};
  packed.cu_seqlens_q = packed.cu_seqlens_k = TensorView::of_host(starts.data(), {3});
  autotune::Task task = attention_tuning_task(packed, cpu(), "sm_90a");
  // Launched a program a tile, and (the default) walked, reading its
  // tiles and sequence starts in every step: the producer reads them
  // again. (A walked tile's sequence starts and lengths are loaded, not
  // computed from the arguments as a dense tile's offsets are: ptxas parks
  // three registers in local memory around the block the sequence's end
  // cuts, stored and loaded once a tile.)
  EXPECT_EQ(task.seeds[0]["persistent"], 1);
  for (int64_t persistent : {0, 1}) {
    Config tile = task.seeds[0];
    tile.set("persistent", persistent);
    tile.set("warp_specialize", persistent);
    CompiledKernel kernel = task.compile(tile);
    EXPECT_EQ(kernel.num_warps, 12);
    EXPECT_LE(kernel.spill_stores, persistent ? 16 : 0) << kernel.ptxas_log;
  }
}

TEST(OpsAttention, BadArgumentsAreRefusedWithTheirReason) {
  HostTensor q = HostTensor::random(DType::bf16, {1, 8, 6, 32}, 1), k = HostTensor::random(DType::bf16, {1, 8, 4, 32}, 2);
  HostTensor out = HostTensor::poisoned(DType::bf16, {1, 8, 6, 32});
  auto refused = [&](const AttentionArgs &args, const std::string &reason, const Config &config = small()) {
    try {
      attention(args, cpu(), config);
      ADD_FAILURE() << "accepted; wanted: " << reason;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  refused({q.view(), k.view(), k.view(), out.view(), {}}, "not a multiple of k and v's 4");
  HostTensor f32 = HostTensor::random(DType::f32, {1, 8, 6, 32}, 3);
  refused({f32.view(), f32.view(), f32.view(), f32.view(), {}}, "must be bf16 or f16");
  HostTensor k6 = HostTensor::random(DType::bf16, {1, 8, 6, 32}, 4);
  TensorView columns = k6.view();
  columns.strides = {8 * 6 * 32, 1, 8, 48}; // head_dim strided
  refused({q.view(), columns, k6.view(), out.view(), {}}, "contiguous along head_dim");
  HostTensor wide = HostTensor::random(DType::bf16, {1, 2, 1, 320}, 5);
  refused({wide.view(), wide.view(), wide.view(), wide.view(), {}}, "more than 256");
  HostTensor lse = HostTensor::poisoned(DType::f32, {1, 8, 6});
  refused({q.view(), k6.view(), k6.view(), out.view(), lse.view()}, "must be f32 [batch, heads_q, seq_q] = [1, 6, 8]");
  HostTensor k3 = HostTensor::random(DType::bf16, {1, 8, 6}, 6);
  refused({q.view(), k3.view(), k6.view(), out.view(), {}}, "must have 4 dimensions");
  refused({q.view(), k6.view(), k6.view(), out.view(), {}, AttentionLayout::bshd, AttentionMask::none, 0, -2},
          "a window bound is -1 (none)");
  refused({q.view(), k6.view(), k6.view(), out.view(), {}, AttentionLayout::bshd, AttentionMask::none, 0, -1, -1, -1},
          "softcap must be 0 (none)");
  HostTensor shortV = HostTensor::random(DType::bf16, {1, 7, 6, 32}, 7);
  refused({q.view(), k6.view(), shortV.view(), out.view(), {}}, "sequence lengths of k and v differ");
  Config walking = small();
  walking.set("persistent", 5);
  refused({q.view(), k6.view(), k6.view(), out.view(), {}}, "persistent is the programs a multiprocessor", walking);
}

} // namespace
