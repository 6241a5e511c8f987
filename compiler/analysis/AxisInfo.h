//===- AxisInfo.h - contiguity, divisibility, constancy --------*- C++ -*-===//
//
// What the compiler knows about the integer and pointer values of a kernel,
// per dimension of each block, so that memory accesses can become 16-byte
// vectors:
//
//  - contiguity[d]: the values come in aligned runs of this many consecutive
//    integers (pointers: consecutive elements) along d;
//  - divisibility[d]: the first value of every such run is a multiple of
//    this power of two (pointers: of this many bytes);
//  - constancy[d]: the values come in aligned runs of this many equal values
//    along d.
//
// Seeded by constants, tile.range, argument specialization
// (tile.divisibility) and tile.hint; propagated through arithmetic,
// pointer arithmetic, comparisons, broadcasts and loops. Scalars have one
// entry.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace kiln::gpu {

struct AxisInfo {
  llvm::SmallVector<int64_t, 4> contiguity, divisibility, constancy;
  /// Every element is this integer.
  std::optional<int64_t> constant;

  /// Nothing known about a value of `rank` (at least one entry).
  static AxisInfo unknown(unsigned rank);
  unsigned rank() const { return contiguity.size(); }
  /// The largest power of two dividing every element.
  int64_t elementDivisibility() const;
  friend bool operator==(const AxisInfo &a, const AxisInfo &b) {
    return a.contiguity == b.contiguity && a.divisibility == b.divisibility &&
           a.constancy == b.constancy && a.constant == b.constant;
  }
};

/// The cap on divisibility (what is known of zero).
constexpr int64_t kMaxDivisibility = int64_t(1) << 30;

class AxisInfoAnalysis {
public:
  /// Analyzes every value in `root` (a kernel function or a module).
  explicit AxisInfoAnalysis(mlir::Operation *root);

  /// What is known of `value` (nothing, for values it did not see).
  AxisInfo get(mlir::Value value) const;

  /// How many elements of `elementBytes` each can be accessed as one vector
  /// (at most 16 bytes) along `dim` through the pointers `ptr`, given their
  /// contiguity and alignment, and the constancy of `mask` (may be null).
  int64_t vectorWidth(mlir::Value ptr, unsigned dim, int64_t elementBytes,
                      mlir::Value mask = {}) const;

private:
  void visitRegion(mlir::Region &region);
  void visit(mlir::Operation *op);
  void set(mlir::Value value, AxisInfo info);

  /// Loop nests deeper than this are analyzed in one round (see visit).
  static constexpr int kMaxRefinedLoopDepth = 8;

  llvm::DenseMap<mlir::Value, AxisInfo> infos_;
  int loopDepth_ = 0; ///< scf.for loops around the operation visited
};

} // namespace kiln::gpu
