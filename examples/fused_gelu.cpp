// gelu(x * w + b) over a ragged f16 matrix, in one fused kernel.
#include "common.h"

using namespace kiln;

int main() {
  return examples::run([] {
    const RegisteredKernel &gelu = *find_kernel("fused_gelu");
    Device device = Device::default_device();
    examples::header("fused_gelu", device);
    const int M = 300, N = 1000;
    std::vector<float> x, w, b;
    std::vector<uint16_t> hx = examples::to_f16(examples::random_floats(M * N, -3, 3, 3), &x);
    std::vector<uint16_t> hw = examples::to_f16(examples::random_floats(N, -1, 1, 4), &w);
    std::vector<uint16_t> hb = examples::to_f16(examples::random_floats(N, -1, 1, 5), &b);
    Buffer bx = examples::upload(device, hx), bw = examples::upload(device, hw), bb = examples::upload(device, hb);
    Buffer out = examples::poisoned<uint16_t>(device, M * N);
    Config config{{"BLOCK_M", 16}, {"BLOCK_N", 128}};
    gelu.kernel.launch(Grid(cdiv(M, 16), cdiv(N, 128)), config, Stream(device), bx, bw, bb, out, M, N);
    std::vector<double> reference(M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double y = double(x[i * N + j]) * w[j] + b[j];
        reference[i * N + j] = 0.5 * y * (1 + std::erf(y / std::sqrt(2.0)));
      }
    return examples::check("gelu(x*w + b), 300x1000 f16", examples::from_f16(out.to_host<uint16_t>()),
                           reference, 2e-3);
  });
}
