// C = A x B for ragged f16 matrices, B stored column-major (the strides say
// so), f32 accumulation; then the same through tensor descriptors.
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
    bool ok = examples::check("C = A x B, 257x190x300 f16 (B column-major)",
                                 examples::from_f16(c.to_host<uint16_t>()), reference, 2e-3);

    // Through tensor descriptors (the copy engine on Hopper: rows of 16-byte
    // multiples), B row-major, M ragged.
    const RegisteredKernel &described = *find_kernel("matmul_descriptors");
    const int DM = 257, DN = 192, DK = 320;
    std::vector<float> da, db;
    std::vector<uint16_t> hda = examples::to_f16(examples::random_floats(DM * DK, -1, 1, 12), &da);
    std::vector<uint16_t> hdb = examples::to_f16(examples::random_floats(DK * DN, -1, 1, 13), &db);
    Buffer bda = examples::upload(device, hda), bdb = examples::upload(device, hdb);
    Buffer dc = examples::poisoned<uint16_t>(device, DM * DN);
    described.kernel.launch(Grid(cdiv(DM, 128), cdiv(DN, 128)), {}, Stream(device), TensorArg(bda, {DM, DK}),
                            TensorArg(bdb, {DK, DN}), dc, DM, DN, DK);
    std::vector<double> described_reference(DM * DN);
    for (int i = 0; i < DM; ++i)
      for (int j = 0; j < DN; ++j) {
        double s = 0;
        for (int k = 0; k < DK; ++k)
          s += double(da[i * DK + k]) * db[k * DN + j];
        described_reference[i * DN + j] = s;
      }
    return examples::check("C = A x B through descriptors, 257x192x320 f16",
                                    examples::from_f16(dc.to_host<uint16_t>()), described_reference, 2e-3) && ok;
  });
}
