//===- LinearLayout.h - layouts as linear maps over GF(2) ------*- C++ -*-===//
//
// Every distributed layout of Kiln's GPU dialect (blocked, slice, linear,
// and later the MMA layouts) is, underneath, a LinearLayout: a map from the
// bits of a hardware index -- (register, lane, warp) -- to the bits of a
// tensor coordinate that is linear over GF(2). Each input bit has a *basis*,
// the coordinate it maps to; an index maps to the XOR of the bases of its set
// bits. With power-of-two shapes, XOR of disjoint bits is addition, so the
// element held by register r of lane l of warp w is
//
//     coord(r, l, w) = R(r) ^ L(l) ^ W(w)
//
// Conversions, broadcasts, reductions and vectorization all reduce to
// questions about these bases (which bits map into a dimension, whether two
// layouts agree on lanes and warps). A zero lane or warp basis means several
// threads hold the same element (broadcast); register bases are never zero:
// a thread holds each of its elements once.
//
//===----------------------------------------------------------------------===//

#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::gpu {

enum class HwDim { Register = 0, Lane = 1, Warp = 2 };
constexpr int kHwDims = 3;

/// A tensor coordinate, one entry per dimension.
using Coord = std::vector<int32_t>;

class LinearLayout {
public:
  LinearLayout() = default;
  /// `bases[h][b]`: the coordinate bit `b` of hardware dimension `h` maps
  /// to. Zero register bases are dropped (see the file comment).
  LinearLayout(std::array<std::vector<Coord>, kHwDims> bases, std::vector<int64_t> shape);

  /// Triton's blocked layout: each thread holds `sizePerThread` contiguous
  /// elements, a warp's lanes tile `threadsPerWarp` of those, the warps tile
  /// `warpsPerCTA`, dimensions fastest first in `order`; the resulting tile
  /// repeats over larger shapes and is broadcast over smaller ones.
  static LinearLayout blocked(const std::vector<int64_t> &shape,
                              const std::vector<unsigned> &sizePerThread,
                              const std::vector<unsigned> &threadsPerWarp,
                              const std::vector<unsigned> &warpsPerCTA,
                              const std::vector<unsigned> &order);

  const std::vector<int64_t> &shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int bits(HwDim h) const { return static_cast<int>(bases_[static_cast<int>(h)].size()); }
  int size(HwDim h) const { return 1 << bits(h); }
  int registers() const { return size(HwDim::Register); }
  const std::vector<Coord> &bases(HwDim h) const { return bases_[static_cast<int>(h)]; }
  const Coord &basis(HwDim h, int bit) const { return bases_[static_cast<int>(h)][bit]; }

  /// The coordinate held by register `r` of lane `l` of warp `w`.
  Coord apply(int r, int l, int w) const;
  /// The part of coordinates that depends on the index in `h` alone.
  Coord applyOne(HwDim h, int index) const;

  /// The first register whose static coordinate (its part of `apply` with
  /// lane 0, warp 0) is `coord`, or -1.
  int findRegister(const Coord &coord) const;

  /// The layout with dimension `dim` removed (a slice: elements differing
  /// only in `dim` collapse).
  LinearLayout sliced(int dim) const;

  /// The layout whose bases are `map` applied to ours, over `shape`. `map`
  /// must be linear on coordinate bits (permutations, insertions, dropping
  /// dimensions, row-major re-linearization).
  LinearLayout mapped(const std::function<Coord(const Coord &)> &map,
                      std::vector<int64_t> shape) const;

  /// Whether lanes and warps hold the same coordinates in both layouts:
  /// then converting between them only permutes registers.
  bool sameThreads(const LinearLayout &other) const;

  /// The number of elements each thread holds consecutively along `dim` in
  /// consecutive registers: the largest power of two v such that register
  /// bits 0..log2(v)-1 map to coordinates 1, 2, 4, ... of `dim` alone.
  int contiguousRegisters(int dim) const;

  /// Bits of `h` whose basis is zero: threads differing only in them hold
  /// the same elements.
  unsigned broadcastMask(HwDim h) const;

  /// Whether every element of the shape is held by some thread.
  bool coversShape() const;

  friend bool operator==(const LinearLayout &a, const LinearLayout &b) {
    return a.shape_ == b.shape_ && a.bases_ == b.bases_;
  }
  friend bool operator!=(const LinearLayout &a, const LinearLayout &b) { return !(a == b); }

  /// "register: [[1,0],[2,0]] lane: [...] warp: [...] shape: [4,8]".
  std::string str() const;

private:
  std::array<std::vector<Coord>, kHwDims> bases_;
  std::vector<int64_t> shape_;
};

/// Row-major linear index of `coord` in `shape`, and back.
int64_t linearIndex(const Coord &coord, const std::vector<int64_t> &shape);
Coord delinearize(int64_t index, const std::vector<int64_t> &shape);

} // namespace kiln::gpu
