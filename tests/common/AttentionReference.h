// An attention call's output and log-sum-exp in double precision, for the
// interpreter's and the GPU's tests of the attention op: dense calls, and
// (through accessors) packed batches and paged caches.
#pragma once

#include "tests/common/OpsTestSupport.h"

#include <kiln/ops/library.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace kiln::testing {

/// A call's sizes and variants; for a dense call, q, k and v laid out in
/// `layout` with seqQ and seqK tokens.
struct DenseAttention {
  ops::AttentionLayout layout = ops::AttentionLayout::bshd;
  ops::AttentionMask mask = ops::AttentionMask::none;
  int64_t batch = 1, seqQ = 1, seqK = 1, headsQ = 1, headsKV = 1, D = 16;
  double scale = 0; ///< 0: 1 / sqrt(D)
  int64_t windowLeft = -1, windowRight = -1;
  double softcap = 0;
  /// Modifiers (empty: none): a score's replacement (after the cap), its
  /// derivative in the score, and whether query i of head h sees key j.
  std::function<double(double score, int64_t b, int64_t h, int64_t i, int64_t j)> scoreMod, scoreModGrad;
  std::function<bool(int64_t b, int64_t h, int64_t i, int64_t j)> maskMod;

  /// The shape in the layout's order of a tensor of `seq` tokens and `heads` heads.
  std::vector<int64_t> shape(int64_t seq, int64_t heads) const {
    return layout == ops::AttentionLayout::bshd ? std::vector<int64_t>{batch, seq, heads, D}
                                                : std::vector<int64_t>{batch, heads, seq, D};
  }
  /// The index in the layout's order of (b, s, h, d).
  std::vector<int64_t> at(int64_t b, int64_t s, int64_t h, int64_t d) const {
    return layout == ops::AttentionLayout::bshd ? std::vector<int64_t>{b, s, h, d} : std::vector<int64_t>{b, h, s, d};
  }
  /// Whether query i sees key j in a sequence of `queries` queries and `keys` keys.
  bool visible(int64_t i, int64_t j, int64_t queries, int64_t keys) const {
    const int64_t diagonal = i + (mask == ops::AttentionMask::causal_top_left ? 0 : keys - queries);
    if (mask != ops::AttentionMask::none && j > diagonal)
      return false;
    if (windowLeft >= 0 && j < diagonal - windowLeft)
      return false;
    return windowRight < 0 || j <= diagonal + windowRight;
  }
};

/// out and lse row by row (each row's weights kept).
class AttentionReference {
public:
  /// An element of q, k or v: (sequence, token in it, head, d).
  using Element = std::function<double(int64_t, int64_t, int64_t, int64_t)>;
  /// A sequence's numbers of queries and keys.
  using Lengths = std::function<std::pair<int64_t, int64_t>(int64_t)>;

  AttentionReference(const DenseAttention &p, Lengths lengths, Element q, Element k, Element v)
      : p_(p), lengths_(std::move(lengths)), q_(std::move(q)), k_(std::move(k)), v_(std::move(v)) {}
  /// A dense call on q, k and v laid out as `p` says.
  AttentionReference(const DenseAttention &p, const HostTensor &q, const HostTensor &k, const HostTensor &v)
      : AttentionReference(
            p, [p](int64_t) { return std::pair{p.seqQ, p.seqK}; },
            [p, &q](int64_t b, int64_t s, int64_t h, int64_t d) { return q.at(p.at(b, s, h, d)); },
            [p, &k](int64_t b, int64_t s, int64_t h, int64_t d) { return k.at(p.at(b, s, h, d)); },
            [p, &v](int64_t b, int64_t s, int64_t h, int64_t d) { return v.at(p.at(b, s, h, d)); }) {}

  /// Query i of head h of sequence b, element d.
  double out(int64_t b, int64_t i, int64_t h, int64_t d) {
    const Row &r = row(b, i, h);
    if (r.total == 0)
      return 0;
    double o = 0;
    for (size_t j = 0; j < r.weights.size(); ++j)
      o += r.weights[j] * v_(b, static_cast<int64_t>(j), h / group(), d);
    return o / r.total;
  }
  /// -inf for a row that sees no key.
  double lse(int64_t b, int64_t h, int64_t i) {
    const Row &r = row(b, i, h);
    return r.total == 0 ? -std::numeric_limits<double>::infinity() : r.top + std::log(r.total);
  }
  /// A dense call's out at an index in the layout's order, and lse at [batch, head, query].
  double out(const std::vector<int64_t> &x) {
    const bool bshd = p_.layout == ops::AttentionLayout::bshd;
    return out(x[0], bshd ? x[1] : x[2], bshd ? x[2] : x[1], x[3]);
  }
  double lse(const std::vector<int64_t> &x) { return lse(x[0], x[1], x[2]); }

private:
  struct Row {
    std::vector<double> weights; ///< exp(score - top), 0 where hidden
    double top = -std::numeric_limits<double>::infinity(), total = 0;
  };

  int64_t group() const { return p_.headsQ / p_.headsKV; }

  const Row &row(int64_t b, int64_t i, int64_t h) {
    auto [it, added] = rows_.try_emplace({b, i, h});
    Row &r = it->second;
    if (!added)
      return r;
    const auto [queries, keys] = lengths_(b);
    const double scale = p_.scale != 0 ? p_.scale : 1.0 / std::sqrt(static_cast<double>(p_.D));
    r.weights.assign(keys, -std::numeric_limits<double>::infinity());
    for (int64_t j = 0; j < keys; ++j) {
      if (!p_.visible(i, j, queries, keys) || (p_.maskMod && !p_.maskMod(b, h, i, j)))
        continue;
      double s = 0;
      for (int64_t d = 0; d < p_.D; ++d)
        s += q_(b, i, h, d) * k_(b, j, h / group(), d);
      r.weights[j] = p_.softcap > 0 ? p_.softcap * std::tanh(s * scale / p_.softcap) : s * scale;
      if (p_.scoreMod)
        r.weights[j] = p_.scoreMod(r.weights[j], b, h, i, j);
      r.top = std::max(r.top, r.weights[j]);
    }
    for (double &w : r.weights) {
      w = std::isinf(w) ? 0 : std::exp(w - r.top);
      r.total += w;
    }
    return r;
  }

  DenseAttention p_;
  Lengths lengths_;
  Element q_, k_, v_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Row> rows_;
};

} // namespace kiln::testing
