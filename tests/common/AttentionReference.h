// A dense attention call's output and log-sum-exp in double precision, for
// the interpreter's and the GPU's tests of the attention op.
#pragma once

#include "tests/common/OpsTestSupport.h"

#include <kiln/ops/library.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

namespace kiln::testing {

/// A dense call's sizes and variants, q, k and v laid out in `layout`.
struct DenseAttention {
  ops::AttentionLayout layout = ops::AttentionLayout::bshd;
  ops::AttentionMask mask = ops::AttentionMask::none;
  int64_t batch = 1, seqQ = 1, seqK = 1, headsQ = 1, headsKV = 1, D = 16;
  double scale = 0; ///< 0: 1 / sqrt(D)
  int64_t windowLeft = -1, windowRight = -1;
  double softcap = 0;

  /// The shape in the layout's order of a tensor of `seq` tokens and `heads` heads.
  std::vector<int64_t> shape(int64_t seq, int64_t heads) const {
    return layout == ops::AttentionLayout::bshd ? std::vector<int64_t>{batch, seq, heads, D}
                                                : std::vector<int64_t>{batch, heads, seq, D};
  }
  /// The index in the layout's order of (b, s, h, d).
  std::vector<int64_t> at(int64_t b, int64_t s, int64_t h, int64_t d) const {
    return layout == ops::AttentionLayout::bshd ? std::vector<int64_t>{b, s, h, d} : std::vector<int64_t>{b, h, s, d};
  }
  /// Whether query i sees key j.
  bool visible(int64_t i, int64_t j) const {
    const int64_t diagonal = i + (mask == ops::AttentionMask::causal_top_left ? 0 : seqK - seqQ);
    if (mask != ops::AttentionMask::none && j > diagonal)
      return false;
    if (windowLeft >= 0 && j < diagonal - windowLeft)
      return false;
    return windowRight < 0 || j <= diagonal + windowRight;
  }
};

/// out and lse of `p` on q, k and v, row by row (each row's weights kept).
class AttentionReference {
public:
  AttentionReference(const DenseAttention &p, const HostTensor &q, const HostTensor &k, const HostTensor &v)
      : p_(p), q_(q), k_(k), v_(v) {}

  /// out at an index of out (the layout's order).
  double out(const std::vector<int64_t> &x) {
    const bool bshd = p_.layout == ops::AttentionLayout::bshd;
    const int64_t b = x[0], i = bshd ? x[1] : x[2], h = bshd ? x[2] : x[1], d = x[3];
    const Row &r = row(b, i, h);
    if (r.total == 0)
      return 0;
    double o = 0;
    for (int64_t j = 0; j < p_.seqK; ++j)
      o += r.weights[j] * v_.at(p_.at(b, j, h / group(), d));
    return o / r.total;
  }
  /// lse at an index [batch, head, query]: -inf for a row that sees no key.
  double lse(const std::vector<int64_t> &x) {
    const Row &r = row(x[0], x[2], x[1]);
    return r.total == 0 ? -std::numeric_limits<double>::infinity() : r.top + std::log(r.total);
  }

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
    const double scale = p_.scale != 0 ? p_.scale : 1.0 / std::sqrt(static_cast<double>(p_.D));
    r.weights.assign(p_.seqK, -std::numeric_limits<double>::infinity());
    for (int64_t j = 0; j < p_.seqK; ++j) {
      if (!p_.visible(i, j))
        continue;
      double s = 0;
      for (int64_t d = 0; d < p_.D; ++d)
        s += q_.at(p_.at(b, i, h, d)) * k_.at(p_.at(b, j, h / group(), d));
      r.weights[j] = p_.softcap > 0 ? p_.softcap * std::tanh(s * scale / p_.softcap) : s * scale;
      r.top = std::max(r.top, r.weights[j]);
    }
    for (double &w : r.weights) {
      w = std::isinf(w) ? 0 : std::exp(w - r.top);
      r.total += w;
    }
    return r;
  }

  DenseAttention p_;
  const HostTensor &q_, &k_, &v_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Row> rows_;
};

} // namespace kiln::testing
