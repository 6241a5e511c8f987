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

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> TensorView::effective_strides() const {
  if (!strides.empty())
    return strides;
  std::vector<int64_t> s(shape.size());
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = step;
    step *= shape[i];
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
