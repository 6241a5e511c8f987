//===- LinearLayout.cpp ---------------------------------------------------===//

#include "compiler/dialect/gpu/LinearLayout.h"

#include <algorithm>
#include <cassert>
#include <sstream>

namespace kiln::gpu {

namespace {

bool isZero(const Coord &c) {
  return std::all_of(c.begin(), c.end(), [](int32_t x) { return x == 0; });
}

void xorInto(Coord &acc, const Coord &c) {
  for (size_t i = 0; i < acc.size(); ++i)
    acc[i] ^= c[i];
}

int log2Exact(int64_t v) {
  int bits = 0;
  while ((int64_t(1) << bits) < v)
    ++bits;
  return bits;
}

} // namespace

LinearLayout::LinearLayout(std::array<std::vector<Coord>, kHwDims> bases,
                           std::vector<int64_t> shape)
    : bases_(std::move(bases)), shape_(std::move(shape)) {
  auto &regs = bases_[static_cast<int>(HwDim::Register)];
  regs.erase(std::remove_if(regs.begin(), regs.end(), isZero), regs.end());
}

LinearLayout LinearLayout::blocked(const std::vector<int64_t> &shape,
                                   const std::vector<unsigned> &sizePerThread,
                                   const std::vector<unsigned> &threadsPerWarp,
                                   const std::vector<unsigned> &warpsPerCTA,
                                   const std::vector<unsigned> &order) {
  size_t rank = shape.size();
  std::array<std::vector<Coord>, kHwDims> bases;
  auto basis = [&](unsigned dim, int64_t value) {
    Coord c(rank, 0);
    // Beyond the tensor: the layout's tile broadcasts over it.
    c[dim] = value < shape[dim] ? static_cast<int32_t>(value) : 0;
    return c;
  };
  auto &regs = bases[static_cast<int>(HwDim::Register)];
  for (unsigned d : order)
    for (int b = 0; b < log2Exact(sizePerThread[d]); ++b)
      regs.push_back(basis(d, int64_t(1) << b));
  for (unsigned d : order)
    for (int b = 0; b < log2Exact(threadsPerWarp[d]); ++b)
      bases[static_cast<int>(HwDim::Lane)].push_back(basis(d, int64_t(sizePerThread[d]) << b));
  for (unsigned d : order)
    for (int b = 0; b < log2Exact(warpsPerCTA[d]); ++b)
      bases[static_cast<int>(HwDim::Warp)].push_back(
          basis(d, int64_t(sizePerThread[d]) * threadsPerWarp[d] << b));
  // The tile repeats over larger shapes: more registers.
  for (unsigned d : order) {
    int64_t tile = int64_t(sizePerThread[d]) * threadsPerWarp[d] * warpsPerCTA[d];
    for (int64_t step = tile; step < shape[d]; step *= 2)
      regs.push_back(basis(d, step));
  }
  return LinearLayout(std::move(bases), shape);
}

Coord LinearLayout::applyOne(HwDim h, int index) const {
  Coord c(shape_.size(), 0);
  const auto &bs = bases(h);
  for (size_t b = 0; b < bs.size(); ++b)
    if (index >> b & 1)
      xorInto(c, bs[b]);
  return c;
}

Coord LinearLayout::apply(int r, int l, int w) const {
  Coord c = applyOne(HwDim::Register, r);
  xorInto(c, applyOne(HwDim::Lane, l));
  xorInto(c, applyOne(HwDim::Warp, w));
  return c;
}

int LinearLayout::findRegister(const Coord &coord) const {
  for (int r = 0; r < registers(); ++r)
    if (applyOne(HwDim::Register, r) == coord)
      return r;
  return -1;
}

LinearLayout LinearLayout::sliced(int dim) const {
  std::vector<int64_t> shape = shape_;
  shape.erase(shape.begin() + dim);
  return mapped(
      [dim](const Coord &c) {
        Coord out = c;
        out.erase(out.begin() + dim);
        return out;
      },
      std::move(shape));
}

LinearLayout LinearLayout::mapped(const std::function<Coord(const Coord &)> &map,
                                  std::vector<int64_t> shape) const {
  std::array<std::vector<Coord>, kHwDims> bases;
  for (int h = 0; h < kHwDims; ++h)
    for (const Coord &c : bases_[h])
      bases[h].push_back(map(c));
  return LinearLayout(std::move(bases), std::move(shape));
}

bool LinearLayout::sameThreads(const LinearLayout &other) const {
  return shape_ == other.shape_ && bases(HwDim::Lane) == other.bases(HwDim::Lane) &&
         bases(HwDim::Warp) == other.bases(HwDim::Warp);
}

int LinearLayout::contiguousRegisters(int dim) const {
  int v = 1;
  const auto &regs = bases(HwDim::Register);
  for (size_t b = 0; b < regs.size(); ++b) {
    Coord expected(shape_.size(), 0);
    expected[dim] = 1 << b;
    if (regs[b] != expected)
      break;
    v *= 2;
  }
  return v;
}

unsigned LinearLayout::broadcastMask(HwDim h) const {
  unsigned mask = 0;
  const auto &bs = bases(h);
  for (size_t b = 0; b < bs.size(); ++b)
    if (isZero(bs[b]))
      mask |= 1u << b;
  return mask;
}

bool LinearLayout::coversShape() const {
  int64_t elements = 1;
  for (int64_t d : shape_)
    elements *= d;
  // Linear independence of the nonzero bases, by Gaussian elimination over
  // the concatenated coordinate bits.
  std::vector<uint64_t> rows;
  std::vector<int> offsets;
  int total = 0;
  for (int64_t d : shape_) {
    offsets.push_back(total);
    total += log2Exact(d);
  }
  for (int h = 0; h < kHwDims; ++h)
    for (const Coord &c : bases_[h]) {
      uint64_t v = 0;
      for (size_t d = 0; d < c.size(); ++d)
        v |= uint64_t(c[d]) << offsets[d];
      for (uint64_t row : rows)
        v = std::min(v, v ^ row);
      if (v)
        rows.push_back(v);
    }
  return (int64_t(1) << rows.size()) == elements;
}

std::string LinearLayout::str() const {
  std::ostringstream os;
  const char *names[] = {"register", "lane", "warp"};
  for (int h = 0; h < kHwDims; ++h) {
    os << (h ? " " : "") << names[h] << ": [";
    for (size_t b = 0; b < bases_[h].size(); ++b) {
      os << (b ? ", " : "") << "[";
      for (size_t d = 0; d < bases_[h][b].size(); ++d)
        os << (d ? ", " : "") << bases_[h][b][d];
      os << "]";
    }
    os << "]";
  }
  os << " shape: [";
  for (size_t d = 0; d < shape_.size(); ++d)
    os << (d ? ", " : "") << shape_[d];
  os << "]";
  return os.str();
}

int64_t linearIndex(const Coord &coord, const std::vector<int64_t> &shape) {
  int64_t index = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    index = index * shape[d] + coord[d];
  return index;
}

Coord delinearize(int64_t index, const std::vector<int64_t> &shape) {
  Coord coord(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    coord[d] = static_cast<int32_t>(index % shape[d]);
    index /= shape[d];
  }
  return coord;
}

} // namespace kiln::gpu
