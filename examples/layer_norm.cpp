// Layer norm of rows longer than one block (walked in chunks), with weight
// and bias; checks the output and the saved mean and 1/std.
#include "common.h"

using namespace kiln;

int main() {
  return examples::run([] {
    const RegisteredKernel &norm = *find_kernel("layer_norm");
    Device device = Device::default_device();
    examples::header("layer_norm", device);
    const int M = 129, N = 3000;
    const float eps = 1e-5f;
    std::vector<float> x = examples::random_floats(M * N, -2, 3, 7);
    std::vector<float> w = examples::random_floats(N, 0.5, 1.5, 8), b = examples::random_floats(N, -1, 1, 9);
    Buffer bx = examples::upload(device, x), bw = examples::upload(device, w), bb = examples::upload(device, b);
    Buffer y = examples::poisoned<float>(device, M * N), mean = examples::poisoned<float>(device, M),
           rstd = examples::poisoned<float>(device, M);
    norm.kernel.launch(Grid(M), {{"BLOCK", 1024}}, Stream(device), bx, bw, bb, y, mean, rstd, N, eps);
    std::vector<double> ry(M * N), rmean(M), rrstd(M);
    for (int i = 0; i < M; ++i) {
      double s = 0, v = 0;
      for (int j = 0; j < N; ++j)
        s += x[i * N + j];
      rmean[i] = s / N;
      for (int j = 0; j < N; ++j)
        v += (x[i * N + j] - rmean[i]) * (x[i * N + j] - rmean[i]);
      rrstd[i] = 1 / std::sqrt(v / N + eps);
      for (int j = 0; j < N; ++j)
        ry[i * N + j] = (x[i * N + j] - rmean[i]) * rrstd[i] * w[j] + b[j];
    }
    bool ok = examples::check("layer norm y, 129x3000 f32 (BLOCK = 1024)", y.to_host<float>(), ry, 1e-5);
    ok &= examples::check("layer norm mean", mean.to_host<float>(), rmean, 1e-5);
    ok &= examples::check("layer norm 1/std", rstd.to_host<float>(), rrstd, 1e-5);
    return ok;
  });
}
