// The memory-bound kernels the benchmarks time, written in the DSL. Each
// reads its inputs once and writes its outputs once; reductions hold a whole
// row on chip (BLOCK >= the row length).
#pragma once

#include <kiln/kiln.h>

#include <cmath>

namespace kiln::bench {

inline void copy_kernel(const Config &cfg, ConstPtr<f32> x, Ptr<f32> y, Long n) {
  const int64_t B = cfg["BLOCK"];
  Tensor o = program_id(0).to(i64) * B + arange(0, B);
  store(y + o, load(x + o, o < n), o < n);
}

inline void add_kernel(const Config &cfg, ConstPtr<f32> x, ConstPtr<f32> y, Ptr<f32> z, Long n) {
  const int64_t B = cfg["BLOCK"];
  Tensor o = program_id(0).to(i64) * B + arange(0, B);
  Tensor m = o < n;
  store(z + o, load(x + o, m) + load(y + o, m), m);
}

/// out = gelu(x * w + b) over rows of N, w and b broadcast along the rows;
/// computed in f32.
template <DType T>
void gelu_kernel(const Config &cfg, ConstPtr<T> x, ConstPtr<T> w, ConstPtr<T> b, Ptr<T> out, Int M, Int N) {
  const int64_t BM = cfg["BLOCK_M"], BN = cfg["BLOCK_N"];
  Tensor rows = program_id(0) * BM + arange(0, BM);
  Tensor cols = program_id(1) * BN + arange(0, BN);
  Tensor col_mask = cols < N;
  Tensor mask = expand_dims(rows < M, 1) & expand_dims(col_mask, 0);
  Tensor offsets = expand_dims(rows.to(i64) * N, 1) + expand_dims(cols, 0);
  Tensor y = load(x + offsets, mask, 0.0).to(f32) * expand_dims(load(w + cols, col_mask, 0.0).to(f32), 0) +
             expand_dims(load(b + cols, col_mask, 0.0).to(f32), 0);
  Tensor half = 0.5 * y; // gelu(y) = y/2 + y/2 erf(y/sqrt 2): one FMA
  store(out + offsets, fma(half, erf(y * 0.7071067811865476), half).to(T), mask);
}

template <DType T> void softmax_kernel(const Config &cfg, ConstPtr<T> x, Ptr<T> y, Int n_cols) {
  const int64_t B = cfg["BLOCK"];
  Tensor row = program_id(0).to(i64) * n_cols;
  Tensor cols = arange(0, B);
  Tensor m = cols < n_cols;
  Tensor v = load(x + row + cols, m, -INFINITY).to(f32);
  Tensor e = exp(v - max(v, 0));
  store(y + row + cols, (e * (1.0 / sum(e, 0))).to(T), m); // one division per row
}

/// y = (x - mean) / sqrt(var + eps) * w + b per row, in one pass.
template <DType T>
void layer_norm_kernel(const Config &cfg, ConstPtr<T> x, ConstPtr<T> w, ConstPtr<T> b, Ptr<T> y, Int n_cols,
                       Float eps) {
  const int64_t B = cfg["BLOCK"];
  Tensor row = program_id(0).to(i64) * n_cols;
  Tensor cols = arange(0, B);
  Tensor m = cols < n_cols;
  Tensor v = load(x + row + cols, m, 0.0).to(f32);
  Tensor mean = sum(v, 0) / n_cols;
  Tensor d = where(m, v - mean, 0.0);
  Tensor rstd = rsqrt(sum(d * d, 0) / n_cols + eps);
  Tensor out = d * rstd * load(w + cols, m, 0.0).to(f32) + load(b + cols, m, 0.0).to(f32);
  store(y + row + cols, out.to(T), m);
}

} // namespace kiln::bench
