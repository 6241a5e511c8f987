// out[i] = x[i] + y[i]: the smallest complete kernel.
#include <kiln/kiln.h>

using namespace kiln;

namespace {

void vector_add(const Config &cfg, ConstPtr<f32> x, ConstPtr<f32> y, Ptr<f32> out, Int n) {
  const int64_t BLOCK = cfg["BLOCK"];
  Tensor offsets = program_id(0) * BLOCK + arange(0, BLOCK);
  Tensor mask = offsets < n;
  store(out + offsets, load(x + offsets, mask) + load(y + offsets, mask), mask);
}

} // namespace

KILN_REGISTER_KERNEL(vector_add, "out = x + y over n f32 elements; grid: cdiv(n, BLOCK)",
                     jit(vector_add, "vector_add").defaults({{"BLOCK", 1024}, {"num_warps", 4}}));
