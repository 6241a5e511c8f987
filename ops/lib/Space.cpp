//===- Space.cpp - iteration spaces ---------------------------------------===//

#include "ops/lib/Space.h"

#include <algorithm>
#include <utility>

namespace kiln::ops {

namespace {
std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}
} // namespace

std::vector<int64_t> broadcast_shape(const std::vector<const TensorView *> &views, const std::string &op) {
  std::vector<int64_t> shape;
  for (const TensorView *v : views) {
    if (v->shape.size() > shape.size())
      shape.insert(shape.begin(), v->shape.size() - shape.size(), 1);
    for (size_t i = 0; i < v->shape.size(); ++i) {
      int64_t &d = shape[shape.size() - v->shape.size() + i];
      int64_t e = v->shape[i];
      if (d == 1)
        d = e;
      else if (e != 1 && e != d)
        throw Error(op + ": shapes do not broadcast: " + v->describe() + " against " + shapeText(shape));
    }
  }
  return shape;
}

std::vector<int64_t> broadcast_strides(const TensorView &view, const std::vector<int64_t> &shape,
                                       const std::string &op, const std::string &role) {
  if (view.shape.size() > shape.size())
    throw Error(op + ": " + role + " (" + view.describe() + ") has more dimensions than " + shapeText(shape));
  std::vector<int64_t> own = view.effective_strides(), strides(shape.size(), 0);
  size_t lead = shape.size() - view.shape.size();
  for (size_t i = 0; i < view.shape.size(); ++i) {
    int64_t d = view.shape[i], want = shape[lead + i];
    if (d == want)
      strides[lead + i] = d == 1 ? 0 : own[i];
    else if (d != 1)
      throw Error(op + ": " + role + " (" + view.describe() + ") does not broadcast to " + shapeText(shape));
  }
  return strides;
}

Collapsed collapse(const std::vector<int64_t> &sizes, const std::vector<std::vector<int64_t>> &strides) {
  Collapsed out;
  out.strides.resize(strides.size());
  // Right to left: each dimension merges into the one after it when every
  // tensor steps over it as over the merged run.
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1)
      continue;
    bool merges = !out.sizes.empty();
    for (size_t t = 0; merges && t < strides.size(); ++t) {
      // (A run's extent past int64 is no stride a tensor steps by.)
      int64_t run = 0;
      merges = !__builtin_mul_overflow(out.strides[t].front(), out.sizes.front(), &run) && strides[t][i] == run;
    }
    int64_t merged = 0;
    if (merges && !__builtin_mul_overflow(out.sizes.front(), sizes[i], &merged)) {
      out.sizes.front() = merged;
      continue;
    }
    out.sizes.insert(out.sizes.begin(), sizes[i]);
    for (size_t t = 0; t < strides.size(); ++t)
      out.strides[t].insert(out.strides[t].begin(), strides[t][i]);
  }
  if (out.sizes.empty()) { // every dimension has size 1 (or a scalar)
    out.sizes = {1};
    for (auto &s : out.strides)
      s = {0};
  }
  return out;
}

bool fits_i32(const std::vector<int64_t> &sizes, const std::vector<std::vector<int64_t>> &strides) {
  constexpr int64_t limit = int64_t(1) << 31;
  int64_t count = 1;
  for (int64_t d : sizes)
    count *= d;
  if (count >= limit)
    return false;
  for (const auto &s : strides) {
    int64_t reach = 0;
    for (size_t i = 0; i < sizes.size(); ++i)
      reach += (sizes[i] - 1) * s[i];
    if (reach >= limit)
      return false;
  }
  return true;
}

std::vector<Tensor> unflatten(const Tensor &flat, const std::vector<Tensor> &sizes) {
  std::vector<Tensor> coords(sizes.size());
  if (sizes.empty())
    return coords;
  Tensor rest = flat;
  for (size_t k = sizes.size(); k-- > 1;) {
    coords[k] = rest % sizes[k];
    rest = rest / sizes[k];
  }
  coords[0] = rest;
  return coords;
}

Tensor offset_of(const std::vector<Tensor> &coords, const std::vector<Tensor> &strides, DType index) {
  Tensor total;
  for (size_t k = 0; k < coords.size(); ++k) {
    if (!strides[k].valid())
      continue; // a dimension this tensor does not step along
    Tensor term = coords[k] * strides[k];
    total = total.valid() ? total + term : term;
  }
  return total.valid() ? total : constant(0, index);
}

} // namespace kiln::ops
