// Adds two vectors of a ragged length on the default device (the GPU, or the
// interpreter without one) and checks every element.
#include "common.h"

using namespace kiln;

int main() {
  return examples::run([] {
    const RegisteredKernel &add = *find_kernel("vector_add");
    Device device = Device::default_device();
    examples::header("vector_add", device);
    const int n = 1'000'003;
    std::vector<float> x = examples::random_floats(n, -1, 1, 1), y = examples::random_floats(n, -1, 1, 2);
    Buffer bx = examples::upload(device, x), by = examples::upload(device, y);
    Buffer out = examples::poisoned<float>(device, n);
    Config config{{"BLOCK", 1024}};
    add.kernel.launch(Grid(cdiv(n, 1024)), config, Stream(device), bx, by, out, n);
    std::vector<double> reference(n);
    for (int i = 0; i < n; ++i)
      reference[i] = double(x[i]) + double(y[i]);
    return examples::check("out = x + y (n = 1000003, BLOCK = 1024)", out.to_host<float>(), reference, 1e-7);
  });
}
