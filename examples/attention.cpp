// Flash-attention forward (online softmax), full and causal, on a sequence
// length that is not a multiple of the block.
#include "common.h"

using namespace kiln;

namespace {

std::vector<double> reference(const std::vector<float> &q, const std::vector<float> &k,
                              const std::vector<float> &v, int heads, int n, int d, double scale,
                              bool causal) {
  std::vector<double> out(heads * n * d);
  std::vector<double> s(n);
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < n; ++i) {
      const float *qi = &q[(h * n + i) * d];
      double peak = -INFINITY;
      int last = causal ? i : n - 1;
      for (int j = 0; j <= last; ++j) {
        double dotp = 0;
        for (int t = 0; t < d; ++t)
          dotp += double(qi[t]) * k[(h * n + j) * d + t];
        s[j] = dotp * scale;
        peak = std::max(peak, s[j]);
      }
      double total = 0;
      for (int j = 0; j <= last; ++j)
        total += (s[j] = std::exp(s[j] - peak));
      for (int t = 0; t < d; ++t) {
        double acc = 0;
        for (int j = 0; j <= last; ++j)
          acc += s[j] * v[(h * n + j) * d + t];
        out[(h * n + i) * d + t] = acc / total;
      }
    }
  return out;
}

} // namespace

int main() {
  return examples::run([] {
    const RegisteredKernel &attention = *find_kernel("attention");
    Device device = Device::default_device();
    examples::header("attention", device);
    const int heads = 4, n = 200, d = 64;
    const float scale = 1.0f / std::sqrt(float(d));
    std::vector<float> q, k, v;
    std::vector<uint16_t> hq = examples::to_f16(examples::random_floats(heads * n * d, -1, 1, 12), &q);
    std::vector<uint16_t> hk = examples::to_f16(examples::random_floats(heads * n * d, -1, 1, 13), &k);
    std::vector<uint16_t> hv = examples::to_f16(examples::random_floats(heads * n * d, -1, 1, 14), &v);
    Buffer bq = examples::upload(device, hq), bk = examples::upload(device, hk), bv = examples::upload(device, hv);
    bool ok = true;
    for (int causal = 0; causal <= 1; ++causal) {
      Buffer out = examples::poisoned<uint16_t>(device, heads * n * d);
      Config config{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"HEAD_DIM", d}, {"CAUSAL", causal}};
      attention.kernel.launch(Grid(cdiv(n, 64), heads), config, Stream(device), bq, bk, bv, out, n, scale);
      ok &= examples::check(causal ? "causal attention, 4 heads x 200 x 64 f16" : "attention, 4 heads x 200 x 64 f16",
                            examples::from_f16(out.to_host<uint16_t>()),
                            reference(q, k, v, heads, n, d, scale, causal), 1e-2);
    }
    return ok;
  });
}
