//===- Space.cpp - iteration spaces, launch arguments, kernel cache -------===//

#include "ops/lib/Space.h"

#include <algorithm>
#include <map>
#include <mutex>
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

void check_view(const TensorView &view, const std::string &op, const std::string &role) {
  auto fail = [&](const std::string &why) { throw Error(op + ": " + role + " (" + view.describe() + ") " + why); };
  if (view.address == 0)
    fail("has no memory (a null address)");
  if (view.rank() > 8)
    fail("has more than 8 dimensions");
  if (!view.strides.empty() && view.strides.size() != view.shape.size())
    fail("has " + std::to_string(view.strides.size()) + " strides for " + std::to_string(view.rank()) + " dimensions");
  for (int64_t d : view.shape)
    if (d < 0)
      fail("has a negative size");
  for (int64_t s : view.strides)
    if (s < 0)
      fail("has a negative stride (not supported)");
  // Honest extents only (a view that lies about its memory is the caller's
  // bug), but sizes whose arithmetic overflows are refused here, before any
  // planning multiplies them.
  // Sizes of empty views too: their products (zeros aside) size row-major
  // strides and plan keys.
  constexpr int64_t most = int64_t(1) << 62;
  int64_t count = 1, reach = 0;
  bool empty = false;
  for (int64_t d : view.shape) {
    empty = empty || d == 0;
    if (d != 0 && (__builtin_mul_overflow(count, d, &count) || count > most))
      fail("has more than 2^62 elements (or would, but for a size 0)");
  }
  if (empty)
    return;
  std::vector<int64_t> strides = view.effective_strides();
  for (size_t i = 0; i < view.shape.size(); ++i) {
    int64_t step;
    if (__builtin_mul_overflow(view.shape[i] - 1, strides[i], &step) || __builtin_add_overflow(reach, step, &reach) ||
        reach >= most / static_cast<int64_t>(size_in_bytes(view.dtype)))
      fail("spans more than 2^62 bytes");
  }
}

void check_present_views(const std::vector<std::pair<const TensorView *, const char *>> &views,
                         const std::string &op) {
  for (const auto &[view, role] : views)
    if (view->address)
      check_view(*view, op, role);
}

void check_no_overlap(const TensorView &view, const std::string &op, const std::string &role) {
  if (view.numel() == 0)
    return;
  std::vector<int64_t> strides = view.effective_strides();
  std::vector<std::pair<int64_t, int64_t>> steps; // (stride, size) of each dimension that moves
  for (size_t i = 0; i < view.shape.size(); ++i)
    if (view.shape[i] > 1)
      steps.emplace_back(strides[i], view.shape[i]);
  std::sort(steps.begin(), steps.end());
  int64_t reach = 0; // the farthest offset the dimensions so far reach
  for (auto [stride, size] : steps) {
    if (stride <= reach)
      throw Error(op + ": " + role + " (" + view.describe() + ") writes elements more than once (" +
                  (stride == 0 ? "a zero stride" : "its strides overlap") + ")");
    reach += (size - 1) * stride; // check_view bounds it
  }
}

void check_devices(const std::vector<const TensorView *> &views, const Stream &stream, const std::string &op) {
  DeviceKind want = stream.device().kind();
  for (const TensorView *v : views)
    if (v->device != want)
      throw Error(op + ": a tensor (" + v->describe() + ") is in " +
                  (v->device == DeviceKind::interp ? "host memory" : "GPU memory") + " but the stream runs on " +
                  (want == DeviceKind::interp ? "the CPU interpreter" : "a GPU") + "; all must be on one device");
}

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
    for (size_t t = 0; merges && t < strides.size(); ++t)
      merges = strides[t][i] == out.strides[t].front() * out.sizes.front();
    if (merges) {
      out.sizes.front() *= sizes[i];
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

Arg arg_of(const TensorView &view) {
  if (view.numel() == 0) // (its sizes and strides may reach anywhere: nothing is read)
    return Arg::device_pointer(view.address, 0, view.device);
  std::vector<int64_t> strides = view.effective_strides();
  int64_t last = 0;
  for (size_t i = 0; i < view.shape.size(); ++i)
    last += (view.shape[i] - 1) * strides[i];
  return Arg::device_pointer(view.address, static_cast<size_t>(last + 1) * size_in_bytes(view.dtype), view.device);
}

Kernel cached_kernel(const std::string &key, const std::function<Kernel()> &make) {
  static std::mutex mutex;
  static std::map<std::string, Kernel> kernels;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = kernels.find(key); it != kernels.end())
      return it->second;
  }
  Kernel made = make(); // outside the lock: making traces nothing yet, but may be slow
  std::lock_guard<std::mutex> lock(mutex);
  return kernels.emplace(key, made).first->second;
}

std::vector<Tensor> arguments_at(const std::vector<int> &positions, const std::vector<Tensor> &args) {
  std::vector<Tensor> values;
  for (int k : positions)
    values.push_back(k < 0 ? Tensor() : args[k]);
  return values;
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

int64_t next_pow2(int64_t n) {
  constexpr int64_t most = int64_t(1) << 62;
  if (n >= most)
    return most;
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

} // namespace kiln::ops
