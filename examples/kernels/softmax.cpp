// Row softmax of a row-major M x N f32 matrix: one program per row, the
// whole row in one block (BLOCK >= N).
#include <kiln/kiln.h>

#include <cmath>

using namespace kiln;

namespace {

void softmax(const Config &cfg, ConstPtr<f32> in, Ptr<f32> out, Int n_cols, Int row_stride) {
  const int64_t BLOCK = cfg["BLOCK"];
  Tensor row_start = program_id(0) * row_stride;
  Tensor cols = arange(0, BLOCK);
  Tensor mask = cols < n_cols;
  Tensor x = load(in + row_start + cols, mask, -INFINITY);
  Tensor e = exp(x - max(x, 0));
  store(out + row_start + cols, e / sum(e, 0), mask);
}

} // namespace

KILN_REGISTER_KERNEL(softmax, "row softmax of an M x N f32 matrix (BLOCK >= N); grid: M",
                     jit(softmax, "softmax").defaults({{"BLOCK", 1024}, {"num_warps", 4}}));
