//===- RecentPlans.h - a thread's recent plans of an op -------*- C++ -*-===//
//
// Planning a call (checking the views, choosing the tile or plan, finding
// the kernels, filling their arguments) costs microseconds of host work
// that a single launch waits for. A thread keeps its recent plans of each
// op by everything a plan depends on except the tensors' addresses and the
// scalars (alpha, eps); a call like a recent one reuses its plan, rebound
// to its own tensors and scalars.
//
//===----------------------------------------------------------------------===//

#pragma once

#include <kiln/config.h>
#include <kiln/ops/view.h>
#include <kiln/runtime.h>

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace kiln::ops {

/// What a plan depends on, as plain numbers compared without allocating:
/// per view, whether present, its dtype, device, rank, 16-byte alignment,
/// sizes and strides; the op's own choices; the stream's device.
class PlanKey {
public:
  /// False (no key: such calls are planned every time) for more than
  /// kViews views, or a view of more than kRank dimensions or with a
  /// stride per dimension missing.
  bool make(std::initializer_list<const TensorView *> views, int32_t choices, const Stream &stream);
  bool operator==(const PlanKey &other) const;

private:
  static constexpr int kViews = 6, kRank = 4;
  struct View {
    int64_t shape[kRank] = {}, strides[kRank] = {};
    int32_t dtype = -1, device = -1, rank = -1; ///< rank -1: absent (a null address)
    bool aligned16 = false;
  };
  View views_[kViews];
  int32_t choices_ = 0, deviceKind_ = 0, ordinal_ = 0;
};

/// The last few plans of one op made on this thread, with the configs
/// they were asked for. `Launch` has rebind(args), pointing a plan at
/// another call's tensors and scalars.
template <class Launch> class RecentPlans {
public:
  /// The plan of a recent call with this key and config, rebound to
  /// `args`; null when there is none.
  template <class Args> const Launch *find(const PlanKey &key, const Config &config, const Args &args) {
    for (Entry &entry : entries_)
      if (entry.key == key && entry.config == config) {
        entry.plan.rebind(args);
        return &entry.plan;
      }
    return nullptr;
  }
  /// Keeps `plan` (in place of the oldest, when full).
  void keep(const PlanKey &key, const Config &config, Launch plan) {
    Entry entry{key, config, std::move(plan)};
    if (entries_.size() < kEntries) {
      entries_.push_back(std::move(entry));
      return;
    }
    entries_[next_] = std::move(entry);
    next_ = (next_ + 1) % kEntries;
  }

private:
  struct Entry {
    PlanKey key;
    Config config;
    Launch plan;
  };
  static constexpr size_t kEntries = 8; // the shapes a model's layers cycle through
  std::vector<Entry> entries_;
  size_t next_ = 0;
};

/// Where a plan's launch arguments hold the call's tensors, and rebinding
/// them: (argument, view) pairs, views numbered in the op's argument order.
struct TensorSlots {
  std::vector<std::pair<int, int>> slots;
  /// Points each slot's memory argument at views[view]'s address (same
  /// extent: the plan's key fixes sizes, strides and dtypes).
  void rebind(std::vector<Arg> &args, std::initializer_list<const TensorView *> views) const;
};

} // namespace kiln::ops
