// Layer norm of each row of a row-major M x N f32 matrix, with weight and
// bias; also writes each row's mean and 1/std. One program per row; rows of
// any length are walked in BLOCK-wide chunks.
#include <kiln/kiln.h>

using namespace kiln;

namespace {

void layer_norm(const Config &cfg, ConstPtr<f32> x, ConstPtr<f32> weight, ConstPtr<f32> bias,
                Ptr<f32> y, Ptr<f32> mean_out, Ptr<f32> rstd_out, Int N, Float eps) {
  const int64_t BLOCK = cfg["BLOCK"];
  Tensor row = program_id(0);
  Tensor x_row = x + row * N, y_row = y + row * N;
  Tensor lanes = arange(0, BLOCK);

  Var partial(zeros({BLOCK}, f32));
  for_range(0, N, BLOCK, [&](const Tensor &start) {
    Tensor cols = start + lanes;
    partial += load(x_row + cols, cols < N, 0.0);
  });
  Tensor mean = sum(partial.get()) / N;

  Var squares(zeros({BLOCK}, f32));
  for_range(0, N, BLOCK, [&](const Tensor &start) {
    Tensor cols = start + lanes;
    Tensor mask = cols < N;
    Tensor d = where(mask, load(x_row + cols, mask, 0.0) - mean, 0.0);
    squares += d * d;
  });
  Tensor rstd = rsqrt(sum(squares.get()) / N + eps);
  store(mean_out + row, mean);
  store(rstd_out + row, rstd);

  for_range(0, N, BLOCK, [&](const Tensor &start) {
    Tensor cols = start + lanes;
    Tensor mask = cols < N;
    Tensor normalized = (load(x_row + cols, mask, 0.0) - mean) * rstd;
    store(y_row + cols, normalized * load(weight + cols, mask) + load(bias + cols, mask), mask);
  });
}

} // namespace

KILN_REGISTER_KERNEL(layer_norm,
                     "y = (x - mean) / sqrt(var + eps) * weight + bias per row of M x N f32; grid: M",
                     jit(layer_norm, "layer_norm").defaults({{"BLOCK", 1024}, {"num_warps", 4}}));
