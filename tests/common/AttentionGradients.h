// attention's gradients in double precision, for the backward pass's
// tests: dq, dk and dv of L = Σ out ∘ dout for dense calls and packed
// batches (through accessors), from the forward's definition alone.
#pragma once

#include "tests/common/AttentionReference.h"

#include <cmath>
#include <functional>
#include <vector>

namespace kiln::testing {

class AttentionGradients {
public:
  using Element = AttentionReference::Element;
  using Lengths = AttentionReference::Lengths;

  /// `p`'s sizes and variants (its seqQ and seqK the longest sequences),
  /// q, k, v and dout by (sequence, token, head, d).
  AttentionGradients(const DenseAttention &p, Lengths lengths, Element q, Element k, Element v, Element dout)
      : p_(p), dq_(size(p.seqQ, p.headsQ)), dk_(size(p.seqK, p.headsKV)), dv_(size(p.seqK, p.headsKV)) {
    const double scale = p.scale != 0 ? p.scale : 1.0 / std::sqrt(static_cast<double>(p.D));
    const int64_t group = p.headsQ / p.headsKV;
    for (int64_t b = 0; b < p.batch; ++b) {
      const auto [queries, keys] = lengths(b);
      for (int64_t h = 0; h < p.headsQ; ++h) {
        const int64_t hk = h / group;
        for (int64_t i = 0; i < queries; ++i) {
          // The row's scores (capped), probabilities and output.
          std::vector<double> s(keys, 0), t(keys, 0), slope(keys, 1), prob(keys, 0);
          std::vector<bool> seen(keys, false);
          double top = -INFINITY, total = 0;
          for (int64_t j = 0; j < keys; ++j) {
            if (!p.visible(i, j, queries, keys) || (p.maskMod && !p.maskMod(b, h, i, j)))
              continue;
            seen[j] = true;
            double x = 0;
            for (int64_t d = 0; d < p.D; ++d)
              x += q(b, i, h, d) * k(b, j, hk, d);
            x *= scale;
            if (p.softcap > 0) {
              t[j] = std::tanh(x / p.softcap);
              x = p.softcap * t[j];
            }
            if (p.scoreMod) {
              slope[j] = p.scoreModGrad(x, b, h, i, j);
              x = p.scoreMod(x, b, h, i, j);
            }
            s[j] = x;
            top = std::max(top, x);
          }
          for (int64_t j = 0; j < keys; ++j)
            if (seen[j])
              total += (prob[j] = std::exp(s[j] - top));
          if (total == 0)
            continue; // (a row that sees no key: out 0, no gradient)
          std::vector<double> out(p.D, 0);
          for (int64_t j = 0; j < keys; ++j) {
            prob[j] /= total;
            for (int64_t d = 0; d < p.D; ++d)
              out[d] += prob[j] * v(b, j, hk, d);
          }
          double delta = 0;
          for (int64_t d = 0; d < p.D; ++d)
            delta += dout(b, i, h, d) * out[d];
          for (int64_t j = 0; j < keys; ++j) {
            if (prob[j] == 0)
              continue;
            double dp = 0;
            for (int64_t d = 0; d < p.D; ++d)
              dp += dout(b, i, h, d) * v(b, j, hk, d);
            double ds = prob[j] * (dp - delta) * slope[j];
            if (p.softcap > 0)
              ds *= 1 - t[j] * t[j];
            ds *= scale;
            for (int64_t d = 0; d < p.D; ++d) {
              dq_[index(b, i, h, d, p.seqQ, p.headsQ)] += ds * k(b, j, hk, d);
              dk_[index(b, j, hk, d, p.seqK, p.headsKV)] += ds * q(b, i, h, d);
              dv_[index(b, j, hk, d, p.seqK, p.headsKV)] += prob[j] * dout(b, i, h, d);
            }
          }
        }
      }
    }
  }

  /// (sequence, token, head, d)
  double dq(int64_t b, int64_t i, int64_t h, int64_t d) const { return dq_[index(b, i, h, d, p_.seqQ, p_.headsQ)]; }
  double dk(int64_t b, int64_t j, int64_t h, int64_t d) const { return dk_[index(b, j, h, d, p_.seqK, p_.headsKV)]; }
  double dv(int64_t b, int64_t j, int64_t h, int64_t d) const { return dv_[index(b, j, h, d, p_.seqK, p_.headsKV)]; }

private:
  size_t size(int64_t seq, int64_t heads) const { return static_cast<size_t>(p_.batch * seq * heads * p_.D); }
  size_t index(int64_t b, int64_t s, int64_t h, int64_t d, int64_t seq, int64_t heads) const {
    return static_cast<size_t>(((b * seq + s) * heads + h) * p_.D + d);
  }

  DenseAttention p_;
  std::vector<double> dq_, dk_, dv_;
};

} // namespace kiln::testing
