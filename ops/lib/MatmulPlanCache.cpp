//===- MatmulPlanCache.cpp - a thread's recent matmul plans ---------------===//

#include "ops/lib/MatmulPlanCache.h"

#include <cstring>

namespace kiln::ops {

bool MatmulPlanCache::Key::operator==(const Key &other) const {
  auto same = [](const View &x, const View &y) {
    return x.dtype == y.dtype && x.device == y.device && x.rank == y.rank && x.aligned16 == y.aligned16 &&
           std::memcmp(x.shape, y.shape, sizeof x.shape) == 0 && std::memcmp(x.strides, y.strides, sizeof x.strides) == 0;
  };
  for (int v = 0; v < 5; ++v)
    if (!same(views[v], other.views[v]))
      return false;
  return activation == other.activation && precision == other.precision && deviceKind == other.deviceKind &&
         ordinal == other.ordinal;
}

bool MatmulPlanCache::keyOf(const MatmulArgs &args, const Stream &stream, Key &key) {
  const TensorView *views[5] = {&args.a, &args.b, &args.out, &args.bias, &args.residual};
  for (int v = 0; v < 5; ++v) {
    const TensorView &view = *views[v];
    Key::View &k = key.views[v];
    if (!view.address)
      continue; // absent (the planner rejects a missing a, b or out)
    const size_t rank = view.shape.size();
    if (rank > 3 || (!view.strides.empty() && view.strides.size() != rank))
      return false;
    k.dtype = static_cast<int32_t>(view.dtype);
    k.device = static_cast<int32_t>(view.device);
    k.rank = static_cast<int32_t>(rank);
    k.aligned16 = view.address % 16 == 0;
    int64_t rowMajor = 1;
    for (size_t d = rank; d-- > 0;) {
      k.shape[d] = view.shape[d];
      k.strides[d] = view.strides.empty() ? rowMajor : view.strides[d];
      rowMajor *= view.shape[d];
    }
  }
  key.activation = static_cast<int32_t>(args.activation);
  key.precision = static_cast<int32_t>(args.precision);
  key.deviceKind = static_cast<int32_t>(stream.device().kind());
  key.ordinal = stream.device().ordinal();
  return true;
}

const MatmulLaunch *MatmulPlanCache::find(const MatmulArgs &args, const Stream &stream, const Config &config) {
  Key key;
  if (!keyOf(args, stream, key))
    return nullptr;
  for (Entry &entry : entries_)
    if (entry.key == key && entry.config == config) {
      entry.plan.rebind(args);
      return &entry.plan;
    }
  return nullptr;
}

void MatmulPlanCache::keep(const MatmulArgs &args, const Stream &stream, const Config &config, MatmulLaunch plan) {
  Key key;
  if (!keyOf(args, stream, key))
    return;
  Entry entry{key, config, std::move(plan)};
  if (entries_.size() < kEntries) {
    entries_.push_back(std::move(entry));
    return;
  }
  entries_[next_] = std::move(entry);
  next_ = (next_ + 1) % kEntries;
}

} // namespace kiln::ops
