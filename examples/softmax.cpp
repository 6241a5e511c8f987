// Row softmax of a ragged f32 matrix: one program per row.
#include "common.h"

using namespace kiln;

int main() {
  return examples::run([] {
    const RegisteredKernel &softmax = *find_kernel("softmax");
    Device device = Device::default_device();
    examples::header("softmax", device);
    const int M = 257, N = 1000;
    std::vector<float> x = examples::random_floats(M * N, -5, 5, 6);
    Buffer bx = examples::upload(device, x);
    Buffer out = examples::poisoned<float>(device, M * N);
    softmax.kernel.launch(Grid(M), {{"BLOCK", 1024}}, Stream(device), bx, out, N, N);
    std::vector<double> reference(M * N);
    for (int i = 0; i < M; ++i) {
      double peak = -INFINITY, total = 0;
      for (int j = 0; j < N; ++j)
        peak = std::max(peak, double(x[i * N + j]));
      for (int j = 0; j < N; ++j)
        total += std::exp(double(x[i * N + j]) - peak);
      for (int j = 0; j < N; ++j)
        reference[i * N + j] = std::exp(double(x[i * N + j]) - peak) / total;
    }
    return examples::check("softmax rows, 257x1000 f32", out.to_host<float>(), reference, 1e-5);
  });
}
