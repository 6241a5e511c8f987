// Triton's fused-softmax tutorial as a user writes it in Kiln: each program
// walks rows num_programs apart, holding a whole row (BLOCK a power of two
// >= n_cols) in registers. Row-major f32 or bf16 per DTYPE.
#include <kiln/kiln.h>

#include <cmath>

using namespace kiln;

namespace {

template <DType T>
void softmax_rows(const Config &cfg, ConstPtr<T> input, Ptr<T> output, Int n_rows, Int n_cols, Int in_stride,
                  Int out_stride) {
  const int64_t BLOCK = cfg["BLOCK"];
  Tensor cols = arange(0, BLOCK);
  Tensor inside = cols < n_cols;
  for_range(program_id(0), n_rows, num_programs(0), [&](const Tensor &row) {
    Tensor x = load(input + row * in_stride + cols, inside, -INFINITY).to(f32);
    Tensor shifted = x - max(x, 0);
    Tensor numerator = exp(shifted);
    store(output + row * out_stride + cols, (numerator / sum(numerator, 0)).to(T), inside);
  });
}

void tutorial_softmax(const Config &cfg, ConstPtr<f32> input, Ptr<f32> output, Int n_rows, Int n_cols,
                      Int in_stride, Int out_stride) {
  softmax_rows(cfg, input, output, n_rows, n_cols, in_stride, out_stride);
}

void tutorial_softmax_bf16(const Config &cfg, ConstPtr<bf16> input, Ptr<bf16> output, Int n_rows, Int n_cols,
                           Int in_stride, Int out_stride) {
  softmax_rows(cfg, input, output, n_rows, n_cols, in_stride, out_stride);
}

} // namespace

KILN_REGISTER_KERNEL(tutorial_softmax,
                     "Triton's fused-softmax tutorial: softmax of each row, f32; grid: programs walking the rows",
                     jit(tutorial_softmax, "tutorial_softmax").defaults({{"BLOCK", 1024}, {"num_warps", 4}}));
KILN_REGISTER_KERNEL(tutorial_softmax_bf16,
                     "Triton's fused-softmax tutorial: softmax of each row, bf16 (f32 math); grid: programs "
                     "walking the rows",
                     jit(tutorial_softmax_bf16, "tutorial_softmax_bf16").defaults({{"BLOCK", 1024}, {"num_warps", 4}}));
