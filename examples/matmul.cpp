// C = A x B for ragged f16 matrices, B stored column-major (the strides say
// so), f32 accumulation.
#include "common.h"

using namespace kiln;

int main() {
  return examples::run([] {
    const RegisteredKernel &matmul = *find_kernel("matmul");
    Device device = Device::default_device();
    examples::header("matmul", device);
    const int M = 257, N = 190, K = 300;
    std::vector<float> a, bt; // bt: B stored column-major, i.e. B^T row-major
    std::vector<uint16_t> ha = examples::to_f16(examples::random_floats(M * K, -1, 1, 10), &a);
    std::vector<uint16_t> hb = examples::to_f16(examples::random_floats(N * K, -1, 1, 11), &bt);
    Buffer ba = examples::upload(device, ha), bb = examples::upload(device, hb);
    Buffer c = examples::poisoned<uint16_t>(device, M * N);
    Config config{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 32}};
    matmul.kernel.launch(Grid(cdiv(M, 64), cdiv(N, 64)), config, Stream(device), ba, bb, c, M, N, K,
                         /*stride_am=*/K, /*stride_ak=*/1, /*stride_bk=*/1, /*stride_bn=*/K,
                         /*stride_cm=*/N, /*stride_cn=*/1);
    std::vector<double> reference(M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int k = 0; k < K; ++k)
          s += double(a[i * K + k]) * bt[j * K + k];
        reference[i * N + j] = s;
      }
    return examples::check("C = A x B, 257x190x300 f16 (B column-major)",
                           examples::from_f16(c.to_host<uint16_t>()), reference, 2e-3);
  });
}
