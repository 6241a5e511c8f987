// out = gelu(x * w + b) for a row-major M x N f16 matrix x, with w and b
// broadcast along the rows: one fused pass, computed in f32.
#include <kiln/kiln.h>

using namespace kiln;

namespace {

void fused_gelu(const Config &cfg, ConstPtr<f16> x, ConstPtr<f16> w, ConstPtr<f16> b,
                Ptr<f16> out, Int M, Int N) {
  const int64_t BLOCK_M = cfg["BLOCK_M"], BLOCK_N = cfg["BLOCK_N"];
  Tensor rows = program_id(0) * BLOCK_M + arange(0, BLOCK_M);
  Tensor cols = program_id(1) * BLOCK_N + arange(0, BLOCK_N);
  Tensor col_mask = cols < N;
  Tensor mask = expand_dims(rows < M, 1) & expand_dims(col_mask, 0);
  Tensor offsets = expand_dims(rows, 1) * N + expand_dims(cols, 0);

  Tensor xv = load(x + offsets, mask, 0.0).to(f32);
  Tensor wv = expand_dims(load(w + cols, col_mask, 0.0).to(f32), 0);
  Tensor bv = expand_dims(load(b + cols, col_mask, 0.0).to(f32), 0);
  Tensor y = xv * wv + bv;
  Tensor gelu = 0.5 * y * (1.0 + erf(y * 0.7071067811865476));
  store(out + offsets, gelu.to(f16), mask);
}

} // namespace

KILN_REGISTER_KERNEL(
    fused_gelu, "out = gelu(x * w + b), x: M x N f16, w and b: N; grid: (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N))",
    jit(fused_gelu, "fused_gelu").defaults({{"BLOCK_M", 16}, {"BLOCK_N", 128}, {"num_warps", 4}}));
