//===- RecentPlans.cpp - a thread's recent plans of an op -----------------===//

#include "ops/lib/RecentPlans.h"

#include <cstring>

namespace kiln::ops {

bool PlanKey::make(std::initializer_list<const TensorView *> views, int32_t choices, const Stream &stream) {
  if (views.size() > kViews)
    return false;
  int v = 0;
  for (const TensorView *view : views) {
    View &k = views_[v++];
    if (!view->address)
      continue; // absent (the planner rejects missing required views)
    const size_t rank = view->shape.size();
    if (rank > kRank || (!view->strides.empty() && view->strides.size() != rank))
      return false;
    k.dtype = static_cast<int32_t>(view->dtype);
    k.device = static_cast<int32_t>(view->device);
    k.rank = static_cast<int32_t>(rank);
    k.aligned16 = view->address % 16 == 0;
    uint64_t rowMajor = 1; // wraps on sizes the planner then refuses
    for (size_t d = rank; d-- > 0;) {
      k.shape[d] = view->shape[d];
      k.strides[d] = view->strides.empty() ? static_cast<int64_t>(rowMajor) : view->strides[d];
      rowMajor *= static_cast<uint64_t>(view->shape[d]);
    }
  }
  choices_ = choices;
  deviceKind_ = static_cast<int32_t>(stream.device().kind());
  ordinal_ = stream.device().ordinal();
  return true;
}

bool PlanKey::operator==(const PlanKey &other) const {
  for (int v = 0; v < kViews; ++v) {
    const View &x = views_[v], &y = other.views_[v];
    if (x.dtype != y.dtype || x.device != y.device || x.rank != y.rank || x.aligned16 != y.aligned16 ||
        std::memcmp(x.shape, y.shape, sizeof x.shape) != 0 || std::memcmp(x.strides, y.strides, sizeof x.strides) != 0)
      return false;
  }
  return choices_ == other.choices_ && deviceKind_ == other.deviceKind_ && ordinal_ == other.ordinal_;
}

void TensorSlots::rebind(std::vector<Arg> &args, std::initializer_list<const TensorView *> views) const {
  for (auto [argument, view] : slots) {
    Arg &arg = args[argument];
    arg = Arg::device_pointer(views.begin()[view]->address, arg.bytes(), arg.device());
  }
}

} // namespace kiln::ops
