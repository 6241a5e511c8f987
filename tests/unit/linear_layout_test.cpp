// Linear layouts: the blocked construction, slicing, broadcasting and the
// queries the lowering asks; the matrix cores' layouts and LDS swizzles.
#include "compiler/dialect/gpu/LinearLayout.h"
#include "compiler/dialect/gpu/Mfma.h"
#include "compiler/dialect/gpu/Swizzle.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

using namespace kiln::gpu;

TEST(LinearLayout, Blocked1DWithRepeats) {
  // 4 per thread, 32 lanes, 4 warps: a 512 tile, repeated twice over 1024.
  LinearLayout l = LinearLayout::blocked({1024}, {4}, {32}, {4}, {0});
  EXPECT_EQ(l.registers(), 8);
  EXPECT_EQ(l.size(HwDim::Lane), 32);
  EXPECT_EQ(l.size(HwDim::Warp), 4);
  for (int r = 0; r < 8; ++r)
    for (int lane = 0; lane < 32; ++lane)
      for (int w = 0; w < 4; ++w)
        ASSERT_EQ(l.apply(r, lane, w)[0], (r & 3) + 4 * lane + 128 * w + 512 * (r >> 2));
  EXPECT_EQ(l.contiguousRegisters(0), 4);
  EXPECT_TRUE(l.coversShape());
  EXPECT_EQ(l.broadcastMask(HwDim::Lane), 0u);
}

TEST(LinearLayout, Blocked2DFollowsOrder) {
  // Row-major (order [1, 0]): lanes walk dimension 1 first.
  LinearLayout l = LinearLayout::blocked({16, 32}, {1, 4}, {4, 8}, {4, 1}, {1, 0});
  EXPECT_EQ(l.registers(), 4);
  EXPECT_EQ(l.apply(0, 1, 0), (Coord{0, 4}));
  EXPECT_EQ(l.apply(0, 8, 0), (Coord{1, 0}));
  EXPECT_EQ(l.apply(3, 0, 2), (Coord{8, 3}));
  EXPECT_EQ(l.contiguousRegisters(1), 4);
  EXPECT_EQ(l.contiguousRegisters(0), 1);
  // Every element is held exactly once.
  std::set<std::pair<int, int>> held;
  for (int r = 0; r < 4; ++r)
    for (int lane = 0; lane < 32; ++lane)
      for (int w = 0; w < 4; ++w) {
        Coord c = l.apply(r, lane, w);
        held.insert({c[0], c[1]});
      }
  EXPECT_EQ(held.size(), 16u * 32u);
}

TEST(LinearLayout, SmallShapesBroadcast) {
  // 128 threads over 64 elements: warps 2 and 3 repeat warps 0 and 1.
  LinearLayout l = LinearLayout::blocked({64}, {1}, {32}, {4}, {0});
  EXPECT_EQ(l.registers(), 1);
  EXPECT_EQ(l.broadcastMask(HwDim::Warp), 2u);
  EXPECT_EQ(l.apply(0, 5, 3), l.apply(0, 5, 1));
  EXPECT_TRUE(l.coversShape());
  // Fewer elements than a thread's block: its register bits vanish.
  LinearLayout tiny = LinearLayout::blocked({2}, {4}, {32}, {1}, {0});
  EXPECT_EQ(tiny.registers(), 2);
  EXPECT_EQ(tiny.broadcastMask(HwDim::Lane), 31u);
}

TEST(LinearLayout, SliceDropsADimension) {
  LinearLayout l = LinearLayout::blocked({16, 32}, {1, 4}, {4, 8}, {4, 1}, {1, 0});
  LinearLayout rows = l.sliced(1); // what reducing along dimension 1 leaves
  EXPECT_EQ(rows.shape(), std::vector<int64_t>{16});
  EXPECT_EQ(rows.registers(), 1);
  EXPECT_EQ(rows.broadcastMask(HwDim::Lane), 0b00111u); // the 8 lanes along a row agree
  EXPECT_EQ(rows.apply(0, 8, 1)[0], 1 + 4);
  LinearLayout cols = l.sliced(0);
  EXPECT_EQ(cols.registers(), 4);
  EXPECT_EQ(cols.broadcastMask(HwDim::Warp), 0b11u);
}

TEST(LinearLayout, MappedAndThreadQueries) {
  LinearLayout l = LinearLayout::blocked({16, 32}, {1, 4}, {4, 8}, {4, 1}, {1, 0});
  LinearLayout t = l.mapped([](const Coord &c) { return Coord{c[1], c[0]}; }, {32, 16});
  EXPECT_EQ(t.apply(2, 9, 3), (Coord{l.apply(2, 9, 3)[1], l.apply(2, 9, 3)[0]}));
  EXPECT_TRUE(l.sameThreads(l));
  EXPECT_FALSE(l.sameThreads(LinearLayout::blocked({16, 32}, {1, 1}, {4, 8}, {4, 1}, {1, 0})));
  EXPECT_EQ(l.findRegister({0, 3}), 3);
  EXPECT_EQ(l.findRegister({1, 0}), -1); // row 1 lives in other lanes
  EXPECT_EQ(linearIndex({2, 5}, {16, 32}), 69);
  EXPECT_EQ(delinearize(69, {16, 32}), (Coord{2, 5}));
}

// The MFMA accumulator layout is the one AMD's matrix-core instructions
// write (CDNA3 ISA, "Dependent Matrix Multiply"): lane l of a P x P piece
// holds column l % P; register r holds row 8 * (r / 4) + 4 * (l / 32) +
// r % 4 for v_mfma_f32_32x32x8, 4 * (l / 16) + r for v_mfma_f32_16x16x16.
// Register index = r + accumulators * (piece along N + pieces along N *
// piece along M), which the lowering relies on.
TEST(LinearLayout, MfmaAccumulatorsAreWhereTheInstructionsWriteThem) {
  for (const MfmaShape shape : {MfmaShape{32, 8, 16}, MfmaShape{16, 16, 4}})
    for (auto [M, N, warps] : {std::tuple{32, 32, 4}, {64, 64, 4}, {128, 128, 4}, {128, 256, 8}, {256, 64, 8},
                               {static_cast<int>(shape.piece), 64, 2}}) {
      SCOPED_TRACE(std::to_string(shape.piece) + ": " + std::to_string(M) + "x" + std::to_string(N) + ", " +
                   std::to_string(warps) + " wavefronts");
      const LinearLayout layout = mfmaAccumulatorLayout(M, N, warps, shape);
      const MfmaWaves waves = mfmaWaves(M, N, warps, shape);
      const int P = static_cast<int>(shape.piece), A = static_cast<int>(shape.accumulators);
      const int mReps = M / (P * waves.m), nReps = N / (P * waves.n);
      ASSERT_EQ(layout.registers(), A * mReps * nReps);
      EXPECT_TRUE(layout.coversShape());
      for (int w = 0; w < warps; ++w) {
        const int wn = w % waves.n, wm = (w / waves.n) % waves.m;
        for (int l = 0; l < 64; ++l)
          for (int i = 0; i < mReps; ++i)
            for (int j = 0; j < nReps; ++j)
              for (int r = 0; r < A; ++r) {
                const int row = P == 32 ? 8 * (r / 4) + 4 * (l / 32) + r % 4 : 4 * (l / 16) + r;
                const Coord expected{wm * P + i * P * waves.m + row, wn * P + j * P * waves.n + l % P};
                ASSERT_EQ(layout.apply(r + A * (j + nReps * i), l, w), expected)
                    << "wavefront " << w << " lane " << l << " piece " << i << "," << j << " register " << r;
              }
      }
    }
}

namespace {

/// Where element (row, col) of a swizzled LDS tile lies, in elements, as
/// SwizzledTile::offset places it: 128-byte column blocks, then rows, then
/// 16-byte chunks XORed with the row's phase.
int64_t swizzledOffset(const Swizzle &swizzle, int64_t rows, int64_t cols, int64_t elementBytes, int64_t row,
                       int64_t col) {
  const int64_t vec = swizzle.vec, perPhase = swizzle.perPhase, maxPhase = swizzle.maxPhase;
  const int64_t blockCols = std::min<int64_t>(cols, 128 / elementBytes);
  const int64_t block = col / blockCols, inBlock = col % blockCols;
  const int64_t chunk = (inBlock / vec) ^ ((row / perPhase) % maxPhase);
  return block * rows * blockCols + row * blockCols + chunk * vec + inBlock % vec;
}

/// The largest number of distinct addresses one bank serves in any phase
/// of an LDS access of `bytes` a lane: AMD's LDS has 32 banks of 4 bytes,
/// and serves a wavefront's 16-byte accesses 8 lanes at a time, 8-byte ones
/// 16 lanes at a time (lanes reading one address share it).
int ldsConflicts(const std::vector<int64_t> &laneBytes, int64_t bytes) {
  const size_t lanesAPhase = 128 / bytes;
  int worst = 1;
  for (size_t first = 0; first < laneBytes.size(); first += lanesAPhase) {
    std::map<int64_t, std::set<int64_t>> wordsOfBank;
    for (size_t l = first; l < std::min(laneBytes.size(), first + lanesAPhase); ++l)
      for (int64_t word = laneBytes[l] / 4; word < (laneBytes[l] + bytes) / 4; ++word)
        wordsOfBank[word % 32].insert(word);
    for (const auto &[bank, words] : wordsOfBank)
      worst = std::max(worst, static_cast<int>(words.size()));
  }
  return worst;
}

} // namespace

TEST(SwizzledLds, MatrixCoreReadsAndRowStoresAreFreeOfBankConflicts) {
  // An operand staged K-major for the matrix cores ([rows][K], the swizzle
  // swizzleOf gives it): each lane reads its run of K of one row
  // (MfmaToLLVM.cpp: lane l, row l % P, K from the run's start times
  // l / P), 16 bytes where two instructions' K are read together, else 8;
  // rows are stored as 16-byte vectors, lanes along K first. Under AMD's
  // bank model neither conflicts, for every K step the plans take, except
  // 8-byte reads of 16-row pieces in 32-byte rows (16-bit K steps of 16 at
  // v_mfma 16x16x16), which two rows share a bank in.
  for (const int64_t elementBytes : {2, 4})
    for (const int64_t K : {16, 32, 64, 128}) {
      const int64_t rows = 128;
      const Swizzle swizzle = swizzleOf(K, elementBytes);
      for (const int64_t P : {32, 16}) {
        const int64_t perLane = elementBytes == 2 ? 4 : 2, kStep = perLane * (64 / P);
        const int64_t run = K % (2 * kStep) == 0 ? 2 * perLane : perLane, runBytes = run * elementBytes;
        SCOPED_TRACE(std::to_string(elementBytes) + "-byte elements, K " + std::to_string(K) + ", pieces of " +
                     std::to_string(P) + ", " + std::to_string(runBytes) + "-byte reads");
        for (int64_t k0 = 0; k0 < K; k0 += run * (64 / P))
          for (int64_t firstRow = 0; firstRow < rows; firstRow += P) {
            std::vector<int64_t> reads;
            for (int64_t l = 0; l < 64; ++l)
              reads.push_back(elementBytes *
                              swizzledOffset(swizzle, rows, K, elementBytes, firstRow + l % P, k0 + run * (l / P)));
            const bool sharedBank = runBytes == 8 && P == 16 && K * elementBytes == 32;
            EXPECT_EQ(ldsConflicts(reads, runBytes), sharedBank ? 2 : 1) << "rows from " << firstRow << ", K " << k0;
          }
      }
      const int64_t chunksARow = K * elementBytes / 16, vec = 16 / elementBytes;
      SCOPED_TRACE(std::to_string(elementBytes) + "-byte elements, K " + std::to_string(K) + ", stores");
      for (int64_t first = 0; first < rows * chunksARow; first += 64) {
        std::vector<int64_t> stores;
        for (int64_t l = 0; l < 64; ++l) {
          const int64_t chunk = first + l;
          stores.push_back(elementBytes * swizzledOffset(swizzle, rows, K, elementBytes, chunk / chunksARow,
                                                         chunk % chunksARow * vec));
        }
        EXPECT_EQ(ldsConflicts(stores, 16), 1) << "chunks from " << first;
      }
    }
}
