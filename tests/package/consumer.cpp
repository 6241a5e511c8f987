// A user's program against an installed Kiln: a kernel of its own (a
// scaled sum, out = alpha * x + y) traced, compiled or interpreted and
// launched on the default device, then an op of the ops library (softmax)
// through its C++ API; each checked against double precision. Exits 0 only
// if both are right.
#include <kiln/kiln.h>
#include <kiln/ops/library.h>
#include <kiln/version.h>

#include <cmath>
#include <cstdio>
#include <vector>

using namespace kiln;

namespace {

void scaled_sum(const Config &cfg, ConstPtr<f32> x, ConstPtr<f32> y, Ptr<f32> out, Float alpha, Int n) {
  const int64_t BLOCK = cfg["BLOCK"];
  Tensor offsets = program_id(0) * BLOCK + arange(0, BLOCK);
  Tensor mask = offsets < n;
  store(out + offsets, alpha * load(x + offsets, mask) + load(y + offsets, mask), mask);
}

double worst_error(const std::vector<float> &got, const std::vector<double> &want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(got[i] - want[i]);
    if (!(error <= worst))
      worst = error; // (NaN counts as the worst)
  }
  return worst;
}

} // namespace

int main() {
  try {
    Device device = Device::default_device();
    Stream stream(device);
    const int n = 1000;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i)
      x[i] = std::sin(0.1f * i), y[i] = std::cos(0.3f * i);
    Buffer bx = Buffer::allocate(device, n * sizeof(float)), by = Buffer::allocate(device, n * sizeof(float));
    Buffer out = Buffer::allocate(device, n * sizeof(float));
    bx.copy_from_host(x.data(), n * sizeof(float));
    by.copy_from_host(y.data(), n * sizeof(float));
    auto kernel = jit(scaled_sum, "consumer_scaled_sum");
    kernel.launch(Grid(cdiv(n, 256)), Config{{"BLOCK", 256}}, stream, bx, by, out, 2.5f, n);
    std::vector<float> sum = out.to_host<float>();
    std::vector<double> want(n);
    for (int i = 0; i < n; ++i)
      want[i] = 2.5 * x[i] + y[i];
    const double sumError = worst_error(sum, want);
    std::printf("Kiln %s on %s: out = 2.5 x + y, max error %.1e\n", version(), device.name().c_str(), sumError);

    // softmax over rows of 50 on the interpreter (host memory).
    const int rows = 4, cols = 50;
    std::vector<float> in(rows * cols), soft(rows * cols, NAN);
    for (int i = 0; i < rows * cols; ++i)
      in[i] = std::sin(0.7f * i) * 3;
    ops::softmax(ops::TensorView::of_host(in.data(), {rows, cols}), ops::TensorView::of_host(soft.data(), {rows, cols}),
                 Stream(Device::interp()));
    std::vector<double> expected(rows * cols);
    for (int r = 0; r < rows; ++r) {
      double total = 0;
      for (int c = 0; c < cols; ++c)
        total += std::exp(double(in[r * cols + c]));
      for (int c = 0; c < cols; ++c)
        expected[r * cols + c] = std::exp(double(in[r * cols + c])) / total;
    }
    const double softError = worst_error(soft, expected);
    std::printf("ops::softmax on the interpreter: max error %.1e\n", softError);
    return sumError <= 1e-6 && softError <= 1e-6 ? 0 : 1;
  } catch (const Error &e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
