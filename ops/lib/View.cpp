//===- View.cpp - TensorView ----------------------------------------------===//

#include <kiln/ops/view.h>

namespace kiln::ops {

TensorView TensorView::of(const Buffer &buffer, DType dtype, std::vector<int64_t> shape) {
  TensorView v;
  v.address = buffer.address();
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.device = buffer.device().kind();
  return v;
}

// Both wrap instead of overflowing on sizes check_view refuses (products
// past 2^62), so that code reaching them before the check stays defined.
int64_t TensorView::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d == 0)
      return 0;
    n *= static_cast<uint64_t>(d);
  }
  return static_cast<int64_t>(n);
}

std::vector<int64_t> TensorView::effective_strides() const {
  if (!strides.empty())
    return strides;
  std::vector<int64_t> s(shape.size());
  uint64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = static_cast<int64_t>(step);
    step *= static_cast<uint64_t>(shape[i]);
  }
  return s;
}

std::string TensorView::describe() const {
  auto list = [](const std::vector<int64_t> &v) {
    std::string text = "[";
    for (size_t i = 0; i < v.size(); ++i)
      text += (i ? ", " : "") + std::to_string(v[i]);
    return text + "]";
  };
  std::string text = std::string(name(dtype)) + list(shape);
  if (!strides.empty())
    text += " strides " + list(strides);
  return text;
}

} // namespace kiln::ops
