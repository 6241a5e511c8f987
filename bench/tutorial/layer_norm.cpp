// Triton's layer-norm tutorial as a user writes it in Kiln: the forward
// (one program per row, walking it in BLOCK chunks, writing mean and 1/std)
// and the backward: dx per row with each program's partial dw and db over
// the rows num_programs apart kept in registers and stored as one row of
// partials (instead of the tutorial's locked group buffers: no atomics, the
// same arithmetic), then a column-wise sum of the partials. bf16 data, f32
// math and statistics.
#include <kiln/kiln.h>

using namespace kiln;

namespace {

void tutorial_layer_norm_fwd(const Config &cfg, ConstPtr<bf16> x, Ptr<bf16> y, ConstPtr<bf16> w, ConstPtr<bf16> b,
                             Ptr<f32> mean_out, Ptr<f32> rstd_out, Int stride, Int N, Float eps) {
  const int64_t BLOCK = cfg["BLOCK"];
  Tensor row = program_id(0);
  Tensor x_row = x + row * stride, y_row = y + row * stride;
  Tensor lanes = arange(0, BLOCK);

  Var partial(zeros({BLOCK}, f32));
  for_range(0, N, BLOCK, [&](const Tensor &start) {
    Tensor cols = start + lanes;
    partial += load(x_row + cols, cols < N, 0.0).to(f32);
  });
  Tensor mean = sum(partial.get()) / N;

  Var squares(zeros({BLOCK}, f32));
  for_range(0, N, BLOCK, [&](const Tensor &start) {
    Tensor cols = start + lanes;
    Tensor d = where(cols < N, load(x_row + cols, cols < N, 0.0).to(f32) - mean, 0.0f);
    squares += d * d;
  });
  Tensor rstd = rsqrt(sum(squares.get()) / N + eps);
  store(mean_out + row, mean);
  store(rstd_out + row, rstd);

  for_range(0, N, BLOCK, [&](const Tensor &start) {
    Tensor cols = start + lanes;
    Tensor mask = cols < N;
    Tensor xhat = (load(x_row + cols, mask, 0.0).to(f32) - mean) * rstd;
    Tensor out = xhat * load(w + cols, mask).to(f32) + load(b + cols, mask).to(f32);
    store(y_row + cols, out.to(bf16), mask);
  });
}

void tutorial_layer_norm_bwd_dx(const Config &cfg, Ptr<bf16> dx, ConstPtr<bf16> dy, Ptr<f32> partial_dw,
                                Ptr<f32> partial_db, ConstPtr<bf16> x, ConstPtr<bf16> w, ConstPtr<f32> mean,
                                ConstPtr<f32> rstd, Int M, Int stride, Int N) {
  const int64_t BLOCK = cfg["BLOCK"];
  Tensor cols = arange(0, BLOCK);
  Tensor mask = cols < N;
  Tensor wv = load(w + cols, mask, 0.0).to(f32);
  auto [dw, db] = for_range(
      program_id(0), M, num_programs(0), carry(zeros({BLOCK}, f32), zeros({BLOCK}, f32)),
      [&](const Tensor &row, const Tensor &dw, const Tensor &db) {
        Tensor xv = load(x + row * stride + cols, mask, 0.0).to(f32);
        Tensor dyv = load(dy + row * stride + cols, mask, 0.0).to(f32);
        Tensor xhat = where(mask, (xv - load(mean + row)) * load(rstd + row), 0.0f);
        Tensor wdy = where(mask, wv * dyv, 0.0f);
        Tensor c1 = sum(xhat * wdy) / N;
        Tensor c2 = sum(wdy) / N;
        store(dx + row * stride + cols, ((wdy - (xhat * c1 + c2)) * load(rstd + row)).to(bf16), mask);
        return std::array{dw + dyv * xhat, db + dyv};
      });
  store(partial_dw + program_id(0) * N + cols, dw, mask);
  store(partial_db + program_id(0) * N + cols, db, mask);
}

void tutorial_layer_norm_bwd_dwdb(const Config &cfg, ConstPtr<f32> partial_dw, ConstPtr<f32> partial_db,
                                  Ptr<bf16> dw_out, Ptr<bf16> db_out, Int rows, Int N) {
  const int64_t BM = cfg["BLOCK_M"], BN = cfg["BLOCK_N"];
  Tensor cols = program_id(0) * BN + arange(0, BN);
  Tensor col_ok = expand_dims(cols < N, 0);
  Tensor rows_in_block = arange(0, BM);
  auto [dw, db] = for_range(0, rows, BM, carry(zeros({BM, BN}, f32), zeros({BM, BN}, f32)),
                            [&](const Tensor &start, const Tensor &dw, const Tensor &db) {
                              Tensor r = expand_dims(start + rows_in_block, 1);
                              Tensor mask = (r < rows) & col_ok;
                              Tensor at = r * N + expand_dims(cols, 0);
                              return std::array{dw + load(partial_dw + at, mask, 0.0),
                                                db + load(partial_db + at, mask, 0.0)};
                            });
  store(dw_out + cols, sum(dw, 0).to(bf16), cols < N);
  store(db_out + cols, sum(db, 0).to(bf16), cols < N);
}

} // namespace

KILN_REGISTER_KERNEL(tutorial_layer_norm_fwd,
                     "Triton's layer-norm tutorial, forward: y = (x - mean) * rstd * w + b per row, bf16, "
                     "writes mean and rstd (f32); grid: M",
                     jit(tutorial_layer_norm_fwd, "tutorial_layer_norm_fwd").defaults({{"BLOCK", 8192}, {"num_warps", 8}}));
KILN_REGISTER_KERNEL(tutorial_layer_norm_bwd_dx,
                     "Triton's layer-norm tutorial, backward: dx per row and each program's partial dw, db "
                     "(rows num_programs apart; BLOCK >= N); grid: programs",
                     jit(tutorial_layer_norm_bwd_dx, "tutorial_layer_norm_bwd_dx")
                         .defaults({{"BLOCK", 8192}, {"num_warps", 8}}));
KILN_REGISTER_KERNEL(tutorial_layer_norm_bwd_dwdb,
                     "Triton's layer-norm tutorial, backward: dw and db as column sums of the partials; "
                     "grid: cdiv(N, BLOCK_N)",
                     jit(tutorial_layer_norm_bwd_dwdb, "tutorial_layer_norm_bwd_dwdb")
                         .defaults({{"BLOCK_M", 32}, {"BLOCK_N", 128}, {"num_warps", 4}}));
