//===- Normalization.cpp - softmax, log-softmax, layer norm, RMS norm -----===//
//
// Each normalizes rows: the last dimension, with the leading ones (merged
// where every tensor walks them as one) flattened into rows.
//
// * A row that fits on chip (at most ONE_PASS_MAX elements) is read once:
//   a program loads BLOCK_M rows of BLOCK_N >= N, reduces, and writes them.
// * A longer row is walked twice in BLOCK_N chunks: the first walk keeps
//   per-lane partial statistics (online max and sum for softmax, Welford's
//   count/mean/M2 for layer norm or with SHIFTED sums of shifted values, a
//   sum of squares for RMS norm), the second reads the row again (from L2,
//   which the first walk's loads ask to keep it) and writes it.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/GeneratedKernel.h"
#include "ops/lib/NormalizationPlan.h"
#include "ops/lib/ReduceMath.h"
#include "ops/lib/Space.h"

#include <kiln/cache.h>
#include <kiln/ops/library.h>

#include <algorithm>
#include <cmath>

namespace kiln::ops {

namespace {

using Norm = Normalization;

const char *normName(Norm n) { return name(n); }

/// The tensors of a normalization, in a fixed order; absent ones have no
/// address.
enum Slot { X, Y, WEIGHT, BIAS, MEAN, RSTD, SLOTS };

struct Request {
  Norm norm;
  TensorView views[SLOTS];
  double eps = 0;
  bool has(Slot s) const { return views[s].address != 0; }
  Request(Norm n, const NormalizationArgs &a)
      : norm(n), views{a.x, a.y, a.weight, a.bias, a.mean, a.rstd}, eps(a.eps) {}
};

struct Plan {
  std::vector<int64_t> rowSizes;            ///< merged leading dimensions
  int64_t rows = 1, N = 1;
  std::vector<std::vector<int64_t>> rowStrides; ///< per slot (x, y, mean, rstd step along rows)
  int64_t columnStride[SLOTS] = {};         ///< x, y, weight, bias: along N
  bool wide = false;
  bool onePass = true;
  bool shifted = false; ///< layer norm, SHIFTED=1: sums of x - x[row, 0] (one reduction) for mean and variance
  bool ahead = true;    ///< two walks, AHEAD=1: each walk loads chunk k+1 while it works on chunk k
};

struct Params {
  Signature signature;
  int pointers[SLOTS] = {-1, -1, -1, -1, -1, -1};
  int rows = -1, N = -1, eps = -1;
  std::vector<int> rowSizes;                ///< the first: -1
  std::vector<std::vector<int>> rowStrides; ///< per slot, per row dimension (-1: none)
  int columnStrides[SLOTS] = {-1, -1, -1, -1, -1, -1};
};

std::string structureKey(const Request &r, const Plan &p) {
  std::string key = std::string("norm|") + normName(r.norm) + (p.onePass ? "|one" : "|two") +
                    (p.shifted ? "|shifted" : "") + (p.ahead ? "" : "|in-place") + (p.wide ? "|i64" : "|i32") +
                    "|rows" + std::to_string(p.rowSizes.size());
  for (int s = 0; s < SLOTS; ++s) {
    key += "|";
    if (!r.has(static_cast<Slot>(s))) {
      key += "-";
      continue;
    }
    key += std::string(name(r.views[s].dtype)) + ":";
    for (int64_t st : p.rowStrides[s])
      key += st ? 'r' : '.';
    key += p.columnStride[s] == 1 ? 'c' : p.columnStride[s] == 0 ? '.' : 's';
  }
  return key;
}

Params parameters(const Request &r, const Plan &p) {
  Params q;
  DType index = p.wide ? DType::i64 : DType::i32;
  for (int s = 0; s < SLOTS; ++s)
    if (r.has(static_cast<Slot>(s)))
      q.pointers[s] = q.signature.pointer(r.views[s].dtype, s == X || s == WEIGHT || s == BIAS);
  q.rows = q.signature.scalar(index);
  q.N = q.signature.scalar(index);
  if (r.norm == Norm::layer_norm || r.norm == Norm::rms_norm)
    q.eps = q.signature.scalar(DType::f32);
  for (size_t k = 0; k < p.rowSizes.size(); ++k)
    q.rowSizes.push_back(k == 0 ? -1 : q.signature.scalar(index));
  q.rowStrides.resize(SLOTS);
  for (int s = 0; s < SLOTS; ++s) {
    if (!r.has(static_cast<Slot>(s)))
      continue;
    for (int64_t st : p.rowStrides[s])
      q.rowStrides[s].push_back(st ? q.signature.scalar(index) : -1);
    if (p.columnStride[s] != 1) // strided, or 0: broadcast along the row
      q.columnStrides[s] = q.signature.scalar(index);
  }
  return q;
}

/// How a normalization kernel reaches its rows, built in the kernel's body
/// from its arguments: the program's BLOCK_M rows and their mask, tiles of
/// x and y, the per-column weight and bias, the per-row outputs.
class Rows {
public:
  Rows(const Config &cfg, const Plan &p, const Params &q, const std::vector<DType> &dtypes,
       const std::vector<bool> &has, const std::vector<Tensor> &args)
      : BM(cfg["BLOCK_M"]), BN(cfg["BLOCK_N"]), index(p.wide ? DType::i64 : DType::i32), has(has), q_(q),
        dtypes_(dtypes), args_(args) {
    rows_ = program_id(0).to(index) * BM + arange(0, BM).to(index);
    N = args[q.N];
    // Masks of blocks that tile the problem exactly are constant true: the
    // compiler drops them, and with them a compare and a select an element.
    fullColumns_ = cfg.get("FULL_COLUMNS", 0);
    rowMask = cfg.get("FULL_ROWS", 0) ? full({BM}, 1, DType::i1) : rows_ < args[q.rows];
    coords_ = unflatten(rows_, arguments_at(q.rowSizes, args));
    eps = q.eps >= 0 ? args[q.eps] : Tensor();
  }

  const int64_t BM, BN;
  const DType index;
  const std::vector<bool> &has;
  Tensor N, rowMask, eps;

  Tensor columnMask(const Tensor &cols) const { return fullColumns_ ? full({BN}, 1, DType::i1) : cols < N; }

  /// x's [BM, BN] tile at columns `cols`, as f32.
  Tensor loadX(const Tensor &cols, const Tensor &mask, double other,
               EvictionPolicy evict = EvictionPolicy::normal) const {
    return load(broadcastTile(tile(X, cols)), mask, other, LoadOptions{.evict = evict}).to(DType::f32);
  }
  /// Weight or bias at `cols`, [1, BN]: read by every row, so kept in L2.
  Tensor perColumn(int s, const Tensor &cols, const Tensor &colMask) const {
    return expand_dims(load(args_[q_.pointers[s]] + columnOffset(s, cols), colMask, 0.0,
                            LoadOptions{.evict = EvictionPolicy::evict_last})
                           .to(DType::f32),
                       0);
  }
  void storeY(const Tensor &cols, const Tensor &mask, const Tensor &value) const {
    store(broadcastTile(tile(Y, cols)), value.to(dtypes_[Y]), mask);
  }
  /// Mean or rstd: one value a row, where the caller asked for it.
  void storeRow(int s, const Tensor &value) const {
    if (!has[s])
      return;
    Tensor at = rowOffset(s);
    store(args_[q_.pointers[s]] + (at.is_scalar() ? broadcast_to(at, {BM}) : at), value.to(dtypes_[s]), rowMask);
  }
  /// (x - mean) * rstd, times the weight and plus the bias where present.
  Tensor finishNorm(const Tensor &centered, const Tensor &rstd, const Tensor &cols, const Tensor &colMask) const {
    Tensor y = centered * expand_dims(rstd, 1);
    if (has[WEIGHT])
      y = y * perColumn(WEIGHT, cols, colMask);
    if (has[BIAS])
      y = y + perColumn(BIAS, cols, colMask);
    return y;
  }
  /// x[row, 0] of each row: layer norm's shift for sums of squares.
  Tensor rowFirst() const {
    Tensor rowStart = rowOffset(X);
    return load(args_[q_.pointers[X]] + (rowStart.is_scalar() ? broadcast_to(rowStart, {BM}) : rowStart), rowMask, 0.0)
        .to(DType::f32);
  }

private:
  Tensor rowOffset(int s) const { return offset_of(coords_, arguments_at(q_.rowStrides[s], args_), index); }
  Tensor columnOffset(int s, const Tensor &cols) const {
    return q_.columnStrides[s] >= 0 ? cols * args_[q_.columnStrides[s]] : cols;
  }
  /// The pointers of a [BM, BN] tile of slot s at columns `cols`.
  Tensor tile(int s, const Tensor &cols) const {
    Tensor row = rowOffset(s);
    Tensor at = expand_dims(columnOffset(s, cols), 0);
    return args_[q_.pointers[s]] + (row.is_scalar() ? at + row : expand_dims(row, 1) + at);
  }
  Tensor broadcastTile(const Tensor &t) const { return t.shape() == Shape{BM, BN} ? t : broadcast_to(t, {BM, BN}); }

  const Params &q_;
  const std::vector<DType> &dtypes_;
  const std::vector<Tensor> &args_;
  Tensor rows_;
  std::vector<Tensor> coords_;
  bool fullColumns_ = false;
};

/// Mean and rstd of layer norm over `x` (masked-off elements zero) in one
/// pass; `centered` is x - mean, zero where masked off.
struct Moments {
  Tensor mean, centered, rstd;
};
Moments layerNormMoments(const Rows &r, const Tensor &x, const Tensor &mask, bool shifted) {
  Tensor n = r.N.to(DType::f32);
  Moments m;
  if (shifted) {
    // Mean and variance in one reduction of (d, d^2), d = x - x[0] (the
    // shifted-data algorithm): the sums cancel as much as x[0] lies away
    // from the mean, in units of the row's spread.
    Tensor first = r.rowFirst();
    Tensor d = where(mask, x - expand_dims(first, 1), 0.0);
    std::vector<Tensor> sums = kiln::reduce({d, d * d}, 1, [](const std::vector<Tensor> &a,
                                                               const std::vector<Tensor> &b) {
      return std::vector<Tensor>{a[0] + b[0], a[1] + b[1]};
    });
    Tensor meanShift = sums[0] / n;
    m.rstd = rsqrt(maximum(sums[1] / n - meanShift * meanShift, 0.0) + r.eps);
    m.mean = first + meanShift;
    m.centered = where(mask, d - expand_dims(meanShift, 1), 0.0);
  } else { // two reductions: the mean, then the squares about it
    m.mean = sum(x, 1) / n;
    m.centered = where(mask, x - expand_dims(m.mean, 1), 0.0);
    m.rstd = rsqrt(sum(m.centered * m.centered, 1) / n + r.eps);
  }
  return m;
}

/// A row that fits on chip, read once: BLOCK_N >= N. Each kernel reads x
/// with evict_last (faster than no hint; evict_first and streaming stores
/// were slower: docs/ops.md).
void onePass(Norm norm, const Plan &p, const Rows &r) {
  Tensor cols = arange(0, r.BN).to(r.index);
  Tensor colMask = r.columnMask(cols);
  Tensor mask = expand_dims(r.rowMask, 1) & expand_dims(colMask, 0);
  switch (norm) {
  case Norm::softmax:
  case Norm::log_softmax: {
    Tensor x = r.loadX(cols, mask, -INFINITY, EvictionPolicy::evict_last);
    Tensor m = max(x, 1);
    Tensor e = exp(x - expand_dims(m, 1));
    Tensor total = sum(e, 1);
    r.storeY(cols, mask, norm == Norm::softmax ? e * expand_dims(1.0 / total, 1) : x - expand_dims(m + log(total), 1));
    break;
  }
  case Norm::layer_norm: {
    Tensor x = r.loadX(cols, mask, 0.0, EvictionPolicy::evict_last);
    Moments m = layerNormMoments(r, x, mask, p.shifted);
    r.storeY(cols, mask, r.finishNorm(m.centered, m.rstd, cols, colMask));
    r.storeRow(MEAN, m.mean);
    r.storeRow(RSTD, m.rstd);
    break;
  }
  case Norm::rms_norm: {
    Tensor x = r.loadX(cols, mask, 0.0, EvictionPolicy::evict_last);
    Tensor rstd = rsqrt(sum(x * x, 1) / r.N.to(DType::f32) + r.eps);
    r.storeY(cols, mask, r.finishNorm(x, rstd, cols, colMask));
    r.storeRow(RSTD, rstd);
    break;
  }
  }
}

/// One BLOCK_N chunk of the rows a walk visits.
struct Chunk {
  Tensor start, cols, colMask, mask;
};
using Fetch = std::function<std::vector<Tensor>(const Chunk &)>;
using Visit = std::function<void(const Chunk &, const std::vector<Tensor> &)>;

/// A walk over long rows (BM rows at a time, usually one), BLOCK_N columns
/// a step: it loads chunk k+1 before it works on chunk k, so that the loads
/// are in flight during the math (`ahead`), or each chunk where it is used,
/// leaving the overlap to the other programs on the multiprocessor and to
/// fewer registers.
void walk(const Rows &r, bool ahead, const Fetch &fetch, const Visit &visit) {
  // A chunk fetched ahead may start past the row: its mask is real even
  // when the chunks tile the row.
  auto chunkAt = [&](const Tensor &start, bool past = false) {
    Tensor cols = start + arange(0, r.BN).to(r.index);
    Tensor colMask = past ? cols < r.N : r.columnMask(cols);
    return Chunk{start, cols, colMask, expand_dims(r.rowMask, 1) & expand_dims(colMask, 0)};
  };
  if (!ahead) {
    for_range(constant(0, r.index), r.N, r.BN, [&](const Tensor &start) {
      Chunk c = chunkAt(start);
      visit(c, fetch(c));
    });
    return;
  }
  std::vector<std::unique_ptr<Var>> fetched;
  for (const Tensor &t : fetch(chunkAt(constant(0, r.index))))
    fetched.push_back(std::make_unique<Var>(t));
  for_range(constant(0, r.index), r.N, r.BN, [&](const Tensor &start) {
    std::vector<Tensor> current;
    for (auto &v : fetched)
      current.push_back(v->get());
    std::vector<Tensor> next = fetch(chunkAt(start + r.BN, /*past=*/true));
    for (size_t k = 0; k < fetched.size(); ++k)
      *fetched[k] = next[k];
    visit(chunkAt(start), current);
  });
}

// Two walks over long rows. The first walk's reads ask L2 to keep the row
// for the second, whose reads are the row's last use.
constexpr EvictionPolicy kKeep = EvictionPolicy::evict_last, kLastUse = EvictionPolicy::evict_first;

/// Softmax and log-softmax: online, per lane a running max and the sum of
/// exp(x - max); then the row's, and a second walk writes y.
void softmaxWalks(Norm norm, const Plan &p, const Rows &r) {
  Shape lanes{r.BM, r.BN};
  Var m(full(lanes, -INFINITY, DType::f32)), s(zeros(lanes, DType::f32));
  walk(r, p.ahead, [&](const Chunk &c) { return std::vector<Tensor>{r.loadX(c.cols, c.mask, -INFINITY, kKeep)}; },
       [&](const Chunk &, const std::vector<Tensor> &loaded) {
         const Tensor &x = loaded[0];
         Tensor next = maximum(m.get(), x);
         Tensor scale = where(m.get() == next, 1.0, exp(m.get() - next));
         Tensor add = where(x == -INFINITY, 0.0, exp(x - next));
         s = s.get() * scale + add;
         m = next;
       });
  Tensor rowMax = max(m.get(), 1);
  Tensor lanesMax = expand_dims(rowMax, 1);
  Tensor total = sum(where(m.get() == -INFINITY, 0.0, s.get() * exp(m.get() - lanesMax)), 1);
  Tensor inverse = expand_dims(1.0 / total, 1), shift = expand_dims(rowMax + log(total), 1);
  walk(r, p.ahead, [&](const Chunk &c) { return std::vector<Tensor>{r.loadX(c.cols, c.mask, -INFINITY, kLastUse)}; },
       [&](const Chunk &c, const std::vector<Tensor> &loaded) {
         const Tensor &x = loaded[0];
         r.storeY(c.cols, c.mask, norm == Norm::softmax ? exp(x - lanesMax) * inverse : x - shift);
       });
}

/// Layer and RMS norm's first walk: per lane, RMS norm sums squares; layer
/// norm keeps Welford's (count, mean, M2), or with SHIFTED the sums of d
/// and d^2 for d = x - x[row, 0], which merge across lanes without
/// divisions. Then the row's mean (layer norm) and rstd.
struct RowStatistics {
  Tensor mean, rstd;
};
RowStatistics normStatistics(Norm norm, const Plan &p, const Rows &r) {
  Shape lanes{r.BM, r.BN};
  const bool welford = norm == Norm::layer_norm && !p.shifted;
  ReduceMath math(welford ? Reduce::var : Reduce::sum, DType::f32, 0);
  Tensor first = p.shifted ? r.rowFirst() : Tensor();
  std::vector<std::unique_ptr<Var>> state;
  for (const Tensor &t : math.init(lanes))
    state.push_back(std::make_unique<Var>(t));
  if (p.shifted)
    state.push_back(std::make_unique<Var>(zeros(lanes, DType::f32)));
  walk(r, p.ahead, [&](const Chunk &c) { return std::vector<Tensor>{r.loadX(c.cols, c.mask, 0.0, kKeep)}; },
       [&](const Chunk &c, const std::vector<Tensor> &loaded) {
         const Tensor &x = loaded[0];
         if (p.shifted) {
           Tensor d = where(c.mask, x - expand_dims(first, 1), 0.0);
           *state[0] = state[0]->get() + d;
           *state[1] = state[1]->get() + d * d;
           return;
         }
         std::vector<Tensor> now;
         for (auto &v : state)
           now.push_back(v->get());
         std::vector<Tensor> next =
             math.update(now, welford ? x : x * x, constant(0, DType::i64), c.mask, c.start / r.BN);
         for (size_t k = 0; k < state.size(); ++k)
           *state[k] = next[k];
       });
  Tensor n = r.N.to(DType::f32);
  Tensor mean, spread;
  if (p.shifted) {
    std::vector<Tensor> sums = kiln::reduce({state[0]->get(), state[1]->get()}, 1,
                                            [](const std::vector<Tensor> &a, const std::vector<Tensor> &b) {
                                              return std::vector<Tensor>{a[0] + b[0], a[1] + b[1]};
                                            });
    Tensor meanShift = sums[0] / n;
    mean = first + meanShift;
    spread = maximum(sums[1] / n - meanShift * meanShift, 0.0);
  } else {
    std::vector<Tensor> now;
    for (auto &v : state)
      now.push_back(v->get());
    std::vector<Tensor> rowState = math.reduce(now, 1);
    if (welford) {
      mean = rowState[1];
      spread = math.finish(rowState, r.N.to(DType::i64));
    } else {
      spread = rowState[0] / n;
    }
  }
  return {mean, rsqrt(spread + r.eps)};
}

/// Layer and RMS norm over long rows: the row's statistics, then a second
/// walk writes y, fetching weight and bias ahead with the row.
void normWalks(Norm norm, const Plan &p, const Rows &r) {
  auto [mean, rstd] = normStatistics(norm, p, r);
  walk(
      r, p.ahead,
      [&](const Chunk &c) {
        std::vector<Tensor> loaded{r.loadX(c.cols, c.mask, 0.0, kLastUse)};
        for (Slot s : {WEIGHT, BIAS})
          if (r.has[s])
            loaded.push_back(r.perColumn(s, c.cols, c.colMask));
        return loaded;
      },
      [&](const Chunk &c, const std::vector<Tensor> &loaded) {
        Tensor centered = norm == Norm::layer_norm ? loaded[0] - expand_dims(mean, 1) : loaded[0];
        Tensor y = centered * expand_dims(rstd, 1);
        size_t next = 1;
        for (Slot s : {WEIGHT, BIAS})
          if (r.has[s])
            y = s == WEIGHT ? y * loaded[next++] : y + loaded[next++];
        r.storeY(c.cols, c.mask, y);
      });
  if (norm == Norm::layer_norm)
    r.storeRow(MEAN, mean);
  r.storeRow(RSTD, rstd);
}

Kernel makeKernel(const std::string &key, const Request &r, const Plan &p, const Params &q) {
  Norm norm = r.norm;
  std::vector<DType> dtypes;
  std::vector<bool> has;
  for (int s = 0; s < SLOTS; ++s) {
    dtypes.push_back(r.views[s].dtype);
    has.push_back(r.has(static_cast<Slot>(s)));
  }
  auto body = [norm, p, q, dtypes, has](const Config &cfg, const std::vector<Tensor> &args) {
    Rows rows(cfg, p, q, dtypes, has, args);
    if (p.onePass)
      onePass(norm, p, rows);
    else if (norm == Norm::softmax || norm == Norm::log_softmax)
      softmaxWalks(norm, p, rows);
    else
      normWalks(norm, p, rows);
  };
  return Kernel(std::string("kiln_") + normName(norm) + "_" + sha256_hex(key).substr(0, 10), q.signature.types(),
                body)
      .library(normName(norm));
}

/// The longest row read once: 32 values a thread at 32 warps (longer rows
/// take two walks, whose second read mostly misses L2).
constexpr int64_t kOnePassMax = 32768;

/// The most threads a program holds (NVIDIA's block, AMD's workgroup).
constexpr int64_t kMaxThreads = 1024;

} // namespace

int64_t one_pass_values_per_thread(int64_t elements, double bytesPerMultiprocessorCycle) {
  return bytesPerMultiprocessorCycle > 16 && elements >= 32 * 32 * 4 ? 32 : 16;
}

namespace {

/// Checks a call's tensors; false when there is nothing to compute (no
/// rows, or rows of no columns).
bool checkedRequest(const Request &r, const Stream &stream, const std::string &op) {
  const TensorView &x = r.views[X], &y = r.views[Y];
  check_view(x, op, "x");
  check_view(y, op, "y");
  if (x.rank() < 1)
    throw Error(op + ": x must have at least one dimension (a row)");
  auto computable = [](DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; };
  if (!computable(x.dtype) || !computable(y.dtype))
    throw Error(op + ": x and y must be f32, f16 or bf16 (x is " + std::string(name(x.dtype)) + ", y " +
                std::string(name(y.dtype)) + ")");
  if (y.shape != x.shape)
    throw Error(op + ": y " + y.describe() + " must have x's shape " + x.describe());
  std::vector<int64_t> leading(x.shape.begin(), x.shape.end() - 1);
  const int64_t N = x.shape.back();
  std::vector<const TensorView *> present{&x, &y};
  for (Slot s : {WEIGHT, BIAS}) {
    if (!r.has(s))
      continue;
    const TensorView &v = r.views[s];
    check_view(v, op, s == WEIGHT ? "weight" : "bias");
    if (v.shape != std::vector<int64_t>{N})
      throw Error(op + ": " + (s == WEIGHT ? "weight " : "bias ") + v.describe() + " must be 1-D of x's last size " +
                  std::to_string(N));
    if (!computable(v.dtype))
      throw Error(op + ": " + (s == WEIGHT ? "weight" : "bias") + " must be f32, f16 or bf16");
    present.push_back(&v);
  }
  for (Slot s : {MEAN, RSTD}) {
    if (!r.has(s))
      continue;
    const TensorView &v = r.views[s];
    check_view(v, op, s == MEAN ? "mean" : "rstd");
    if (v.shape != leading)
      throw Error(op + ": " + (s == MEAN ? "mean " : "rstd ") + v.describe() + " must have x's leading shape");
    if (v.dtype != DType::f32)
      throw Error(op + ": " + (s == MEAN ? "mean" : "rstd") + " must be f32");
    present.push_back(&v);
  }
  check_devices(present, stream, op);
  check_no_overlap(y, op, "y");
  for (Slot s : {MEAN, RSTD})
    if (r.has(s))
      check_no_overlap(r.views[s], op, s == MEAN ? "mean" : "rstd");
  if (x.numel() == 0) {
    // No rows, or rows of no columns: nothing to write, except a mean or
    // rstd of empty rows, which has no value (PyTorch's is NaN): refused.
    for (Slot s : {MEAN, RSTD})
      if (r.has(s) && r.views[s].numel() > 0)
        throw Error(op + ": rows of length 0 have no " + (s == MEAN ? "mean" : "rstd") + " (x " + x.describe() + ")");
    return false;
  }
  return true;
}

/// How the kernel walks the rows: the leading dimensions merged, one pass
/// or two walks, and the variants `overrides` asks for.
Plan planRows(const Request &r, const Config &overrides) {
  const TensorView &x = r.views[X];
  std::vector<int64_t> leading(x.shape.begin(), x.shape.end() - 1);
  const int64_t N = x.shape.back();
  Plan p;
  p.N = N;
  // Leading dimensions: x, y, mean and rstd step along them.
  std::vector<std::vector<int64_t>> strides(SLOTS, std::vector<int64_t>(leading.size(), 0));
  for (Slot s : {X, Y}) {
    std::vector<int64_t> own = r.views[s].effective_strides();
    std::copy(own.begin(), own.end() - 1, strides[s].begin());
    p.columnStride[s] = N > 1 ? own.back() : 1;
  }
  for (Slot s : {WEIGHT, BIAS})
    if (r.has(s))
      p.columnStride[s] = N > 1 ? r.views[s].effective_strides()[0] : 1;
  for (Slot s : {MEAN, RSTD})
    if (r.has(s))
      strides[s] = r.views[s].effective_strides();
  Collapsed c = collapse(leading.empty() ? std::vector<int64_t>{1} : leading,
                         leading.empty() ? std::vector<std::vector<int64_t>>(SLOTS, {0}) : strides);
  // A single row still has one (size 1) row dimension.
  p.rowSizes = c.sizes;
  p.rowStrides = c.strides;
  for (int64_t d : p.rowSizes)
    p.rows *= d;
  p.onePass = overrides.get("ONE_PASS", next_pow2(N) <= kOnePassMax);
  // Shifted sums are faster on some long rows but lose the variance when
  // x[row, 0] sits far out in the row (an outlier channel): opt-in, and a
  // tuned choice only where they match the default's output.
  p.shifted = r.norm == Norm::layer_norm && overrides.get("SHIFTED", 0);
  p.ahead = p.onePass || overrides.get("AHEAD", 1);
  return p;
}

/// The tile (BLOCK_M rows of BLOCK_N columns) and warps of a plan for
/// target `arch` (whose warps' lanes count the threads); sets whether its
/// offsets need 64 bits.
Config tileFor(const Request &r, Plan &p, const Stream &stream, const Config &overrides, const std::string &op,
               const std::string &arch) {
  const int64_t N = p.N;
  int64_t BN = overrides.get("BLOCK_N", p.onePass ? next_pow2(N) : 8192);
  // Index arithmetic covers the columns two walks fetch ahead (up to 2 BN
  // past the last chunk's start).
  std::vector<int64_t> sizes = p.rowSizes;
  sizes.push_back(p.onePass ? N : N + 2 * BN);
  std::vector<std::vector<int64_t>> all = p.rowStrides;
  for (int s = 0; s < SLOTS; ++s)
    all[s].push_back(p.columnStride[s]);
  p.wide = !fits_i32(sizes, all);
  if (p.onePass && BN < N)
    throw Error(op + ": BLOCK_N " + std::to_string(BN) + " is shorter than the rows (" + std::to_string(N) +
                ") in one pass");
  int64_t BM = overrides.get("BLOCK_M", p.onePass ? std::min<int64_t>(next_pow2(p.rows), std::max<int64_t>(1, 2048 / BN)) : 1);
  // 16 or 32 values a thread (one_pass_values_per_thread; 32 or 64 for the
  // longest rows, which the most warps cap), up to 1024 threads (32 warps,
  // 16 of AMD's 64-lane wavefronts); two walks use a whole 1024-thread
  // program per row, which keeps fewer rows in flight, so that more of the
  // second walk's reads hit L2.
  // Softmax, and layer norm's two reductions on 16-bit rows, run best at
  // 16 warps on rows of 32768 (fewer, fuller warps per row); f32 layer
  // norm would spill at 16.
  const bool sixteenBit = size_in_bytes(r.views[X].dtype) == 2;
  const std::optional<Target> target = parse_target(arch);
  const int64_t lanes = target ? threads_per_warp(*target) : 32, programWarps = kMaxThreads / lanes;
  const int64_t mostWarps = std::min<int64_t>(
      programWarps,
      r.norm == Norm::softmax || r.norm == Norm::log_softmax || (r.norm == Norm::layer_norm && sixteenBit && !p.shifted)
          ? 16
          : 32);
  const int64_t perThread =
      one_pass_values_per_thread(BM * BN, stream.device().memory_bytes_per_multiprocessor_cycle());
  int64_t warps = overrides.get(
      "num_warps", p.onePass ? std::clamp<int64_t>(BM * BN / (lanes * perThread), 1, mostWarps) : programWarps);
  Config config{{"BLOCK_M", BM},
                {"BLOCK_N", BN},
                {"num_warps", warps},
                {"FULL_ROWS", p.rows % BM == 0},
                {"FULL_COLUMNS", N % BN == 0}};
  // Programs a multiprocessor must hold at once (ptxas caps registers to fit).
  if (int64_t blocks = overrides.get("min_blocks_per_sm", 0))
    config.set("min_blocks_per_sm", blocks);
  if (cdiv(p.rows, BM) >= (int64_t(1) << 31))
    throw Error(op + ": too many rows for one grid");
  return config;
}

/// The launch: the plan's kernel and its arguments.
NormalizationLaunch launchOf(const Request &r, const Plan &p, const Config &config) {
  const int64_t N = p.N, BM = config["BLOCK_M"];
  Params q = parameters(r, p);
  std::string key = structureKey(r, p);
  Kernel kernel = cached_kernel(key, [&] { return makeKernel(key, r, p, q); });
  std::vector<Arg> args(q.signature.types().size(), Arg(0));
  TensorSlots tensors;
  for (int s = 0; s < SLOTS; ++s)
    if (q.pointers[s] >= 0) {
      args[q.pointers[s]] = arg_of(r.views[s]);
      tensors.slots.emplace_back(q.pointers[s], s);
    }
  args[q.rows] = Arg(p.rows);
  args[q.N] = Arg(N);
  if (q.eps >= 0)
    args[q.eps] = Arg(static_cast<float>(r.eps));
  for (size_t k = 1; k < p.rowSizes.size(); ++k)
    args[q.rowSizes[k]] = Arg(p.rowSizes[k]);
  for (int s = 0; s < SLOTS; ++s) {
    for (size_t k = 0; k < q.rowStrides[s].size(); ++k)
      if (q.rowStrides[s][k] >= 0)
        args[q.rowStrides[s][k]] = Arg(p.rowStrides[s][k]);
    if (q.columnStrides[s] >= 0)
      args[q.columnStrides[s]] = Arg(p.columnStride[s]);
  }
  return {kernel, config, Grid(static_cast<uint32_t>(cdiv(p.rows, BM))), args, tensors, q.eps};
}

NormalizationLaunch prepare(const Request &r, const Stream &stream, const Config &overrides, const std::string &arch) {
  const std::string op = normName(r.norm);
  if (!checkedRequest(r, stream, op))
    return {};
  Plan p = planRows(r, overrides);
  const Config config = tileFor(r, p, stream, overrides, op, arch.empty() ? target_of(stream) : arch);
  return launchOf(r, p, config);
}

} // namespace

const char *name(Normalization op) {
  switch (op) {
  case Normalization::softmax: return "softmax";
  case Normalization::log_softmax: return "log_softmax";
  case Normalization::layer_norm: return "layer_norm";
  case Normalization::rms_norm: return "rms_norm";
  }
  return "?";
}

NormalizationLaunch prepare_normalization(Normalization op, const NormalizationArgs &args, const Stream &stream,
                                          const Config &config, const std::string &arch) {
  return prepare(Request(op, args), stream, config, arch);
}

void NormalizationLaunch::rebind(const NormalizationArgs &a) {
  static_assert(X == 0 && Y == 1 && WEIGHT == 2 && BIAS == 3 && MEAN == 4 && RSTD == 5,
                "views numbered as NormalizationArgs orders them");
  tensors.rebind(args, {&a.x, &a.y, &a.weight, &a.bias, &a.mean, &a.rstd});
  if (eps >= 0)
    args[eps] = Arg(static_cast<float>(a.eps));
}

void NormalizationLaunch::queue(const Stream &stream) const {
  if (!args.empty())
    kernel.launch_with(grid, config, stream, args);
}

CompiledKernel NormalizationLaunch::compile(const std::string &arch) const {
  return !args.empty() ? kernel.compile(config, kernel.specialize(args), arch) : CompiledKernel{};
}

void normalize(Normalization op, const NormalizationArgs &args, const Stream &stream, const Config &config) {
  thread_local RecentPlans<NormalizationLaunch> recent;
  PlanKey key;
  const bool keyed = key.make({&args.x, &args.y, &args.weight, &args.bias, &args.mean, &args.rstd},
                              static_cast<int32_t>(op), stream);
  if (const NormalizationLaunch *plan = keyed ? recent.find(key, config, args) : nullptr) {
    plan->queue(stream);
    return;
  }
  check_present_views({{&args.x, "x"}, {&args.y, "y"}, {&args.weight, "weight"}, {&args.bias, "bias"},
                       {&args.mean, "mean"}, {&args.rstd, "rstd"}},
                      name(op));
  NormalizationLaunch plan =
      prepare(Request(op, args), stream, config.values().empty() ? chosen_plan(op, args, stream) : config, "");
  plan.queue(stream);
  if (keyed)
    recent.keep(key, config, std::move(plan));
}

void softmax(const TensorView &x, const TensorView &y, const Stream &stream, const Config &config) {
  normalize(Normalization::softmax, {x, y, {}, {}, {}, {}, 0}, stream, config);
}

void log_softmax(const TensorView &x, const TensorView &y, const Stream &stream, const Config &config) {
  normalize(Normalization::log_softmax, {x, y, {}, {}, {}, {}, 0}, stream, config);
}

void layer_norm(const TensorView &x, const TensorView &weight, const TensorView &bias, double eps, const TensorView &y,
                const TensorView &mean, const TensorView &rstd, const Stream &stream, const Config &config) {
  normalize(Normalization::layer_norm, {x, y, weight, bias, mean, rstd, eps}, stream, config);
}

void rms_norm(const TensorView &x, const TensorView &weight, double eps, const TensorView &y, const TensorView &rstd,
              const Stream &stream, const Config &config) {
  normalize(Normalization::rms_norm, {x, y, weight, {}, {}, rstd, eps}, stream, config);
}

} // namespace kiln::ops
