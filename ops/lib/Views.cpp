//===- Views.cpp - checking the tensors an op is called with --------------===//

#include "ops/lib/Views.h"

#include <algorithm>
#include <utility>

namespace kiln::ops {

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

Arg arg_of(const TensorView &view) {
  if (view.numel() == 0) // (its sizes and strides may reach anywhere: nothing is read)
    return Arg::device_pointer(view.address, 0, view.device);
  std::vector<int64_t> strides = view.effective_strides();
  int64_t last = 0;
  for (size_t i = 0; i < view.shape.size(); ++i)
    last += (view.shape[i] - 1) * strides[i];
  return Arg::device_pointer(view.address, static_cast<size_t>(last + 1) * size_in_bytes(view.dtype), view.device);
}

} // namespace kiln::ops
