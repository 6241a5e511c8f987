//===- MatmulPlanCache.h - a thread's recent matmul plans -----*- C++ -*-===//
//
// Planning a matmul (checking the views, choosing the tile, finding the
// kernels, filling their arguments) costs microseconds of host work that a
// single launch waits for. A thread keeps its recent plans by everything a
// plan depends on except the tensors' addresses and alpha; a call like a
// recent one reuses its plan with the new addresses.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ops/lib/MatmulPlan.h"

#include <cstdint>
#include <vector>

namespace kiln::ops {

class MatmulPlanCache {
public:
  /// The plan of a recent call with the same shapes, strides, dtypes,
  /// 16-byte alignments, epilogue, precision, device and `config`, rebound
  /// to `args`; null when there is none.
  const MatmulLaunch *find(const MatmulArgs &args, const Stream &stream, const Config &config);
  /// Keeps `plan`, made for these arguments (it replaces the oldest of a
  /// few).
  void keep(const MatmulArgs &args, const Stream &stream, const Config &config, MatmulLaunch plan);

private:
  /// What a plan depends on, as plain numbers (compared without
  /// allocating): per view, whether present, its dtype, device, rank,
  /// alignment, sizes and strides.
  struct Key {
    struct View {
      int64_t shape[3] = {}, strides[3] = {};
      int32_t dtype = -1, device = -1, rank = -1;
      bool aligned16 = false;
    };
    View views[5];
    int32_t activation = 0, precision = 0, deviceKind = 0, ordinal = 0;
    bool operator==(const Key &other) const;
  };
  struct Entry {
    Key key;
    Config config;
    MatmulLaunch plan;
  };
  /// False for views the planner rejects anyway (rank above 3).
  static bool keyOf(const MatmulArgs &args, const Stream &stream, Key &key);

  static constexpr size_t kEntries = 8; // the shapes a model's layers cycle through
  std::vector<Entry> entries_;
  size_t next_ = 0;
};

} // namespace kiln::ops
