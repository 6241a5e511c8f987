// Block operations: making and reshaping blocks, casts, reductions, scans
// and dot.

#include "runtime/interp/Compiler.h"

#include "compiler/dialect/tile/Tile.h"

#include <kiln/numeric.h>

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <numeric>

namespace kiln::interp {

namespace {

std::vector<int64_t> shape_of(mlir::Type type) {
  if (auto t = mlir::dyn_cast<mlir::RankedTensorType>(type))
    return {t.getShape().begin(), t.getShape().end()};
  return {};
}

int64_t count(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
}

/// Row-major strides of a shape.
std::vector<int64_t> strides_of(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// An instruction gathering result[i] = source[index[i]].
Instr gather(unsigned src, unsigned r, std::vector<uint32_t> index) {
  return [=](Exec &e) {
    const auto &S = e.slots[src].words;
    std::vector<Word> R(index.size());
    for (size_t i = 0; i < index.size(); ++i)
      R[i] = S[index[i]];
    e.slots[r].words = std::move(R);
  };
}

Instr copy(unsigned src, unsigned r) {
  return [=](Exec &e) { e.slots[r] = e.slots[src]; };
}

/// [outer, length, inner] around `axis`.
struct AxisSplit {
  int64_t outer, length, inner;
};
AxisSplit split_at(const std::vector<int64_t> &shape, int axis) {
  AxisSplit s{1, shape[axis], 1};
  for (int i = 0; i < axis; ++i)
    s.outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i)
    s.inner *= shape[i];
  return s;
}

/// Reduces `values` (one vector per operand, laid out [outer, length, inner])
/// along `length` with the combine function.
std::vector<Data> reduce_values(const CompiledRegion &combine, Exec &e, std::vector<Data> values,
                                AxisSplit s) {
  size_t n = values.size();
  int64_t length = s.length;
  if (combine.elementwise) {
    // A tree: combine the first half with the second, on whole vectors.
    while (length > 1) {
      int64_t half = length / 2, rest = length - 2 * half;
      std::vector<Data> left(n), right(n);
      for (size_t k = 0; k < n; ++k) {
        left[k].words.reserve(s.outer * half * s.inner);
        right[k].words.reserve(s.outer * half * s.inner);
        for (int64_t o = 0; o < s.outer; ++o)
          for (int64_t j = 0; j < half; ++j)
            for (int64_t i = 0; i < s.inner; ++i) {
              left[k].words.push_back(values[k].words[(o * length + j) * s.inner + i]);
              right[k].words.push_back(values[k].words[(o * length + j + half) * s.inner + i]);
            }
      }
      std::vector<Data> args = left;
      args.insert(args.end(), right.begin(), right.end());
      std::vector<Data> combined = combine.run(e, std::move(args));
      int64_t next = half + rest;
      for (size_t k = 0; k < n; ++k) {
        std::vector<Word> words(s.outer * next * s.inner);
        for (int64_t o = 0; o < s.outer; ++o) {
          for (int64_t j = 0; j < half; ++j)
            for (int64_t i = 0; i < s.inner; ++i)
              words[(o * next + j) * s.inner + i] = combined[k].words[(o * half + j) * s.inner + i];
          if (rest)
            for (int64_t i = 0; i < s.inner; ++i)
              words[(o * next + half) * s.inner + i] =
                  values[k].words[(o * length + 2 * half) * s.inner + i];
        }
        values[k].words = std::move(words);
      }
      length = next;
    }
    return values;
  }
  // Any other combine function: one pair of scalars at a time, in order.
  std::vector<Data> results(n);
  for (size_t k = 0; k < n; ++k)
    results[k].words.resize(s.outer * s.inner);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      std::vector<Data> acc(n);
      for (size_t k = 0; k < n; ++k)
        acc[k].words = {values[k].words[(o * length) * s.inner + i]};
      for (int64_t j = 1; j < length; ++j) {
        std::vector<Data> args = acc;
        for (size_t k = 0; k < n; ++k)
          args.push_back(Data{{values[k].words[(o * length + j) * s.inner + i]}});
        acc = combine.run(e, std::move(args));
      }
      for (size_t k = 0; k < n; ++k)
        results[k].words[o * s.inner + i] = acc[k].words[0];
    }
  return results;
}

/// Inclusive scan of `values` along `length`: result[j] = combine(result[j-1],
/// x[j]) (from the end when reversed).
std::vector<Data> scan_values(const CompiledRegion &combine, Exec &e, std::vector<Data> values,
                              AxisSplit s, bool reverse) {
  size_t n = values.size();
  auto at = [&](int64_t o, int64_t j, int64_t i) { return (o * s.length + j) * s.inner + i; };
  if (combine.elementwise) {
    // Hillis-Steele: log2(length) rounds over whole vectors.
    for (int64_t d = 1; d < s.length; d *= 2) {
      std::vector<size_t> later, earlier; // positions updated, and their partners
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t j = 0; j < s.length; ++j) {
          int64_t partner = reverse ? j + d : j - d;
          if (partner < 0 || partner >= s.length)
            continue;
          for (int64_t i = 0; i < s.inner; ++i) {
            later.push_back(at(o, j, i));
            earlier.push_back(at(o, partner, i));
          }
        }
      std::vector<Data> args(2 * n);
      for (size_t k = 0; k < n; ++k)
        for (size_t q = 0; q < later.size(); ++q) {
          args[k].words.push_back(values[k].words[earlier[q]]);
          args[n + k].words.push_back(values[k].words[later[q]]);
        }
      std::vector<Data> combined = combine.run(e, std::move(args));
      for (size_t k = 0; k < n; ++k)
        for (size_t q = 0; q < later.size(); ++q)
          values[k].words[later[q]] = combined[k].words[q];
    }
    return values;
  }
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i)
      for (int64_t step = 1; step < s.length; ++step) {
        int64_t j = reverse ? s.length - 1 - step : step, previous = reverse ? j + 1 : j - 1;
        std::vector<Data> args;
        for (size_t k = 0; k < n; ++k)
          args.push_back(Data{{values[k].words[at(o, previous, i)]}});
        for (size_t k = 0; k < n; ++k)
          args.push_back(Data{{values[k].words[at(o, j, i)]}});
        std::vector<Data> combined = combine.run(e, std::move(args));
        for (size_t k = 0; k < n; ++k)
          values[k].words[at(o, j, i)] = combined[k].words[0];
      }
  return values;
}

/// Operands of a dot as floats (or doubles / integers), prepared as the
/// tensor cores see them.
Instr compile_dot(Compiler &c, tile::DotOp dot) {
  auto a_shape = shape_of(dot.getA().getType()), b_shape = shape_of(dot.getB().getType());
  int r = static_cast<int>(a_shape.size());
  int64_t batch = r == 3 ? a_shape[0] : 1, M = a_shape[r - 2], K = a_shape[r - 1], N = b_shape[r - 1];
  Element ea = element_of(dot.getA().getType()), ec = element_of(dot.getC().getType());
  tile::InputPrecision precision = dot.getPrecision();
  unsigned a = c.slot(dot.getA()), b = c.slot(dot.getB()), acc = c.slot(dot.getC()), out = c.slot(dot);
  return [=](Exec &e) {
    const auto &A = e.slots[a].words, &B = e.slots[b].words, &C = e.slots[acc].words;
    std::vector<Word> R(batch * M * N);
    for (int64_t bi = 0; bi < batch; ++bi) {
      const Word *pa = A.data() + bi * M * K, *pb = B.data() + bi * K * N;
      const Word *pc = C.data() + bi * M * N;
      Word *pr = R.data() + bi * M * N;
      if (ea.kind == Element::integer) { // i8 x i8 -> i32, wrapping
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            uint32_t s = static_cast<uint32_t>(pc[m * N + n]);
            for (int64_t k = 0; k < K; ++k)
              s += static_cast<uint32_t>(sign_extend(pa[m * K + k], 8) * sign_extend(pb[k * N + n], 8));
            pr[m * N + n] = s;
          }
        continue;
      }
      if (ec.float_type == DType::f64) {
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double s = as_double(pc[m * N + n]);
            for (int64_t k = 0; k < K; ++k)
              s = std::fma(as_double(pa[m * K + k]), as_double(pb[k * N + n]), s);
            pr[m * N + n] = from_double(s);
          }
        continue;
      }
      // f32 accumulation (f16 accumulators round once at the end). Operands
      // of f16/bf16/fp8 multiply exactly in f32; f32 operands are first
      // rounded to tf32 (or split in two tf32 parts) unless ieee.
      std::vector<float> at(M * K), ahi(M * K), alo(M * K), bt(N * K), bhi(N * K), blo(N * K);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k)
          at[m * K + k] = static_cast<float>(as_double(pa[m * K + k]));
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
          bt[n * K + k] = static_cast<float>(as_double(pb[k * N + n]));
      bool f32 = ea.float_type == DType::f32;
      if (f32 && precision != tile::InputPrecision::ieee) {
        for (size_t i = 0; i < at.size(); ++i) {
          ahi[i] = round_to_tf32(at[i]);
          alo[i] = round_to_tf32(at[i] - ahi[i]);
        }
        for (size_t i = 0; i < bt.size(); ++i) {
          bhi[i] = round_to_tf32(bt[i]);
          blo[i] = round_to_tf32(bt[i] - bhi[i]);
        }
      }
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          float s = static_cast<float>(as_double(pc[m * N + n]));
          const float *x = &at[m * K], *y = &bt[n * K];
          if (f32 && precision == tile::InputPrecision::tf32) {
            x = &ahi[m * K];
            y = &bhi[n * K];
          }
          if (f32 && precision == tile::InputPrecision::tf32x3) {
            const float *xh = &ahi[m * K], *xl = &alo[m * K], *yh = &bhi[n * K], *yl = &blo[n * K];
            for (int64_t k = 0; k < K; ++k)
              s += xh[k] * yl[k] + xl[k] * yh[k] + xh[k] * yh[k];
          } else if (f32 && precision == tile::InputPrecision::ieee) {
            for (int64_t k = 0; k < K; ++k)
              s = std::fma(x[k], y[k], s);
          } else {
            for (int64_t k = 0; k < K; ++k)
              s += x[k] * y[k];
          }
          pr[m * N + n] = from_double(round_float(ec.float_type, s));
        }
    }
    e.slots[out].words = std::move(R);
  };
}

} // namespace

Instr compile_block_op(Compiler &c, mlir::Operation *op) {
  return llvm::TypeSwitch<mlir::Operation *, Instr>(op)
      .Case([&](tile::RangeOp range) -> Instr {
        int64_t start = static_cast<int32_t>(range.getStart()), end = static_cast<int32_t>(range.getEnd());
        unsigned r = c.slot(range);
        return [=](Exec &e) {
          std::vector<Word> R(end - start);
          for (int64_t i = start; i < end; ++i)
            R[i - start] = static_cast<Word>(i) & width_mask(32);
          e.slots[r].words = std::move(R);
        };
      })
      .Case([&](tile::SplatOp splat) -> Instr {
        int64_t n = count(shape_of(splat.getType()));
        unsigned s = c.slot(splat.getSrc()), r = c.slot(splat);
        return [=](Exec &e) { e.slots[r].words.assign(n, e.slots[s].words[0]); };
      })
      .Case([&](tile::BroadcastOp b) -> Instr {
        auto from = shape_of(b.getSrc().getType()), to = shape_of(b.getType());
        auto from_strides = strides_of(from);
        std::vector<uint32_t> index(count(to));
        for (int64_t i = 0; i < static_cast<int64_t>(index.size()); ++i) {
          int64_t rem = i, source = 0;
          for (int d = static_cast<int>(to.size()) - 1; d >= 0; --d) {
            int64_t coordinate = rem % to[d];
            rem /= to[d];
            if (from[d] != 1)
              source += coordinate * from_strides[d];
          }
          index[i] = static_cast<uint32_t>(source);
        }
        return gather(c.slot(b.getSrc()), c.slot(b), std::move(index));
      })
      .Case<tile::ExpandDimsOp, tile::ReshapeOp>([&](mlir::Operation *o) {
        return copy(c.slot(o->getOperand(0)), c.slot(o->getResult(0)));
      })
      .Case([&](tile::TransOp t) -> Instr {
        auto from = shape_of(t.getSrc().getType()), to = shape_of(t.getType());
        auto from_strides = strides_of(from);
        auto order = t.getOrder();
        std::vector<uint32_t> index(count(to));
        for (int64_t i = 0; i < static_cast<int64_t>(index.size()); ++i) {
          int64_t rem = i, source = 0;
          for (int d = static_cast<int>(to.size()) - 1; d >= 0; --d) {
            source += (rem % to[d]) * from_strides[order[d]];
            rem /= to[d];
          }
          index[i] = static_cast<uint32_t>(source);
        }
        return gather(c.slot(t.getSrc()), c.slot(t), std::move(index));
      })
      .Case([&](tile::JoinOp j) -> Instr {
        unsigned lhs = c.slot(j.getLhs()), rhs = c.slot(j.getRhs()), r = c.slot(j);
        return [=](Exec &e) {
          const auto &L = e.slots[lhs].words, &R = e.slots[rhs].words;
          std::vector<Word> out(2 * L.size());
          for (size_t i = 0; i < L.size(); ++i) {
            out[2 * i] = L[i];
            out[2 * i + 1] = R[i];
          }
          e.slots[r].words = std::move(out);
        };
      })
      .Case([&](tile::SplitOp s) -> Instr {
        unsigned src = c.slot(s.getSrc()), lhs = c.slot(s.getLhs()), rhs = c.slot(s.getRhs());
        return [=](Exec &e) {
          const auto &S = e.slots[src].words;
          std::vector<Word> L(S.size() / 2), R(S.size() / 2);
          for (size_t i = 0; i < L.size(); ++i) {
            L[i] = S[2 * i];
            R[i] = S[2 * i + 1];
          }
          e.slots[lhs].words = std::move(L);
          e.slots[rhs].words = std::move(R);
        };
      })
      .Case([&](tile::BitcastOp b) -> Instr {
        Element from = element_of(b.getSrc().getType()), to = element_of(b.getType());
        unsigned s = c.slot(b.getSrc()), r = c.slot(b);
        return [=](Exec &e) {
          std::vector<Word> R = e.slots[s].words;
          for (Word &w : R) {
            Word bits = from.kind == Element::floating ? encode_float(from.float_type, as_double(w)) : w;
            w = to.kind == Element::floating ? from_double(decode_float(to.float_type, bits)) : bits;
          }
          e.slots[r].words = std::move(R);
        };
      })
      .Case([&](tile::FpToFpOp f) -> Instr {
        DType to = element_of(f.getType()).float_type;
        Rounding rounding = f.getRounding() && *f.getRounding() == tile::RoundingMode::rtz
                                ? Rounding::toward_zero
                                : Rounding::nearest_even;
        bool narrowing = is_float8(to); // to fp8: rounds and saturates; from fp8: exact (infinities stay)
        unsigned s = c.slot(f.getSrc()), r = c.slot(f);
        return [=](Exec &e) {
          std::vector<Word> R = e.slots[s].words;
          for (Word &w : R)
            w = from_double(round_to(to, as_double(w), rounding, /*saturate=*/narrowing));
          e.slots[r].words = std::move(R);
        };
      })
      .Case([&](tile::ReduceOp reduce) -> Instr {
        auto shape = shape_of(reduce.getSrcs().front().getType());
        AxisSplit s = split_at(shape, static_cast<int32_t>(reduce.getAxis()));
        auto combine = std::make_shared<CompiledRegion>(compile_region(c, reduce.getCombineOp()));
        std::vector<unsigned> srcs, results;
        for (mlir::Value v : reduce.getSrcs())
          srcs.push_back(c.slot(v));
        for (mlir::Value v : reduce.getResults())
          results.push_back(c.slot(v));
        return [=](Exec &e) {
          std::vector<Data> values;
          for (unsigned src : srcs)
            values.push_back(e.slots[src]);
          std::vector<Data> reduced = reduce_values(*combine, e, std::move(values), s);
          for (size_t k = 0; k < results.size(); ++k)
            e.slots[results[k]] = std::move(reduced[k]);
        };
      })
      .Case([&](tile::ScanOp scan) -> Instr {
        auto shape = shape_of(scan.getSrcs().front().getType());
        AxisSplit s = split_at(shape, static_cast<int32_t>(scan.getAxis()));
        bool reverse = scan.getReverse();
        auto combine = std::make_shared<CompiledRegion>(compile_region(c, scan.getCombineOp()));
        std::vector<unsigned> srcs, results;
        for (mlir::Value v : scan.getSrcs())
          srcs.push_back(c.slot(v));
        for (mlir::Value v : scan.getResults())
          results.push_back(c.slot(v));
        return [=](Exec &e) {
          std::vector<Data> values;
          for (unsigned src : srcs)
            values.push_back(e.slots[src]);
          std::vector<Data> scanned = scan_values(*combine, e, std::move(values), s, reverse);
          for (size_t k = 0; k < results.size(); ++k)
            e.slots[results[k]] = std::move(scanned[k]);
        };
      })
      .Case([&](tile::DotOp dot) { return compile_dot(c, dot); })
      .Default([](mlir::Operation *) { return Instr(); });
}

} // namespace kiln::interp
