//===- MatmulKernel.h - the matmul op's generated kernels ------*- C++ -*-===//
//
// One DSL kernel per structure (dtypes, which epilogue inputs exist, the
// activation, f32 operands' precision, batched or not, whether BLOCK_K
// divides K, 32- or 64-bit offsets, how operands are read and tiles
// walked); sizes and strides are runtime arguments, so unit strides and
// sizes divisible by 16 specialize at launch.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ops/lib/GeneratedKernel.h"

#include <kiln/kiln.h>
#include <kiln/ops/library.h>

#include <string>

namespace kiln::ops::matmul_kernel {

/// The K elements (and B's N elements) that one block scale covers.
constexpr int64_t kScaleBlock = 128;

/// The parameters of a generated kernel, by role. SCALE_A, SCALE_B: f32
/// scales of A's rows and B's columns (one for the whole tensor, one a
/// row / column, or blocks: A's [M][K / 128], B's [K / 128][N / 128]). WORK: the split-K partial tiles, f32 planes
/// [chunk * batches + batch][M][N]. TILES: a grouped product's tile table
/// (GroupedMatmul.cpp): the number of tile rows, then each tile row's
/// group, first row and end row (i32).
enum Role { A, B, OUT, BIAS, RESIDUAL, SCALE_A, SCALE_B, WORK, TILES, OPERANDS };

/// What a kernel computes: the whole product with its epilogue; or, with
/// split-K, one K chunk's partial sums, or the sum of the chunks with the
/// epilogue.
enum class Phase { whole, partial, combine };

struct Structure {
  DType dtypes[OPERANDS] = {};
  bool present[OPERANDS] = {true, true, true, false, false, false, false, false, false};
  Phase phase = Phase::whole;
  Activation activation = Activation::none;
  Precision precision = Precision::ieee; ///< f32 operands only
  bool batched = false, evenK = true, wide = false;
  bool descriptors = false;    ///< A and B through tensor descriptors
  bool aKContiguous = true;    ///< (descriptors) A stored [M][K], else [K][M]
  bool bNContiguous = true;    ///< (descriptors) B stored [K][N], else [N][K]
  bool outDescriptor = false;  ///< out written through a tensor descriptor
  bool persistent = false;     ///< programs walk the tiles (PERSISTENT)
  /// (persistent with pointer loads, not on Hopper) the operand pointers
  /// are carried from step to step and formed afresh only for a new tile
  bool carriedPointers = false;
  /// alpha is not 1: the epilogue multiplies by it (else no alpha
  /// parameter, and none of the 128 multiplies a thread a 128x256 tile
  /// would take between two tiles' dots)
  bool scaled = false;
  /// (SCALE_A, SCALE_B present) a scale a row of A, a column of B; else one
  bool scaleRows = false, scaleColumns = false;
  /// (SCALE_A, SCALE_B present) block scales: A's one a row and 128 K
  /// elements, B's one a 128 x 128 block; each K step's product is
  /// multiplied by its blocks' scales before it joins the f32 sum
  bool blockScales = false;
  /// Each K step's sum promoted into the f32 accumulator (fp8 operands'
  /// accurate sums; block scales do so too)
  bool promote = false;
  /// Groups (mixture-of-experts layers): A [rows][K] and OUT [rows][N] cut
  /// into groups of rows whose tiles TILES lists, each group's rows times
  /// its own B (strides[B][0] apart; SCALE_B's columns strides[SCALE_B][0]
  /// apart)
  bool grouped = false;

  /// What tells this structure's kernel apart from every other's.
  std::string key() const;
};

/// Positions in the signature.
struct Params {
  Signature signature;
  int pointers[OPERANDS] = {-1, -1, -1, -1, -1, -1, -1, -1, -1};
  int descriptors[3] = {-1, -1, -1}; ///< A, B and OUT's descriptors (their first parameter), if accessed through them
  int M = -1, N = -1, K = -1, alpha = -1;
  int chunk = -1;  ///< partial: K elements per chunk
  int splits = -1; ///< combine: the number of chunks
  /// batch (WORK: plane; grouped B and SCALE_B: group), rows, columns (bias,
  /// row and column scales: their one dimension's, last)
  int strides[OPERANDS][3] = {};
};

/// The parameters the kernel of structure `s` takes.
Params parameters(const Structure &s);

/// The kernel of structure `s` (named after `key`, its structure's key).
Kernel make_kernel(const std::string &key, const Structure &s, const Params &q);

} // namespace kiln::ops::matmul_kernel
