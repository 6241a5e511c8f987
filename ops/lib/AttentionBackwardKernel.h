//===- AttentionBackwardKernel.h - attention's backward kernels -*- C++ -*-===//
//
// The kernels of attention's backward pass (FlashAttention-2's schedule):
// the rows' rowsum(dO ∘ O); programs over blocks of keys, which recompute
// each block's probabilities from the forward's log-sum-exp and gather dk
// and dv in registers over every query (and query head of a K/V head's
// group) that sees them, adding dq's share atomically into f32 sums; or,
// deterministic, a pass of programs over blocks of queries for dq; and dq
// from its f32 sums.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ops/lib/GeneratedKernel.h"

#include <kiln/ops/library.h>

#include <memory>
#include <string>

namespace kiln::ops::attention_backward_kernel {

/// The tensors, by role, each with strides along batch, sequence and head
/// (the head dimension's is 1). LSE and DELTA (each query row's rowsum(dO
/// ∘ O)) are f32 rows without a head dimension; DQ_SUM is dq's f32 sums.
enum Role { Q, K, V, OUT, DOUT, LSE, DELTA, DQ_SUM, DQ, DK, DV, TENSORS };

/// Which kernel: the rows' dO·O (zeroing dq's sums where they are
/// atomic); the programs over keys (dk, dv; dq's atomic sums); the
/// programs over queries (dq); dq from its sums; (block mask) the blocks
/// of queries each block of keys of each query head meets.
enum class Pass { rows, keys, queries, convert, blocks };

struct Structure {
  Pass pass = Pass::rows;
  DType dtype = DType::bf16;
  int64_t blockD = 64; ///< the head dimension's block, a power of two >= 16
  bool evenD = true;   ///< D == blockD
  /// The forward's bounds: query i sees keys from i + shift - left up to i
  /// + shift + right.
  bool boundedLeft = false, boundedRight = false;
  bool softcap = false;
  bool varlen = false;           ///< a packed batch (cu_seqlens)
  bool shiftPerSequence = false; ///< (varlen) bounds through each sequence's last query and key
  bool atomic = false;           ///< dq gathered in DQ_SUM by atomic adds
  /// Score and mask modifiers (their tensors passed after the other
  /// parameters; a score modifier with its derivative).
  std::shared_ptr<const AttentionModifiers> modifiers;
  /// (a mask modifier) The keys pass visits the blocks of queries the
  /// blocks pass listed for each of its blocks of keys and query heads.
  bool blockMask = false;
  /// (blockMask) Whether each query head (each sequence of the batch) has
  /// block-mask rows of its own; where not, all share head 0's (batch 0's).
  bool maskPerHead = true, maskPerBatch = true;

  /// Whether the pass reads or writes tensor `role`.
  bool uses(int role) const;
  std::string key() const;
};

/// Positions in a pass's signature.
struct Params {
  Signature signature;
  int pointers[TENSORS];
  int strides[TENSORS][3]; ///< batch, sequence, head
  int seqQ = -1, seqK = -1, group = -1, scale = -1;
  int shift = -1, left = -1, right = -1; ///< the bounds (i32)
  int cap = -1;                          ///< soft-capping's cap (f32)
  int headDim = -1;
  int cuQ = -1, cuK = -1; ///< (varlen) each sequence's first token, batch + 1 of them
  int captured = -1;      ///< the modifiers' first tensor, the others after it
  /// (block mask) the table (i32, a row a block of keys and query head: the
  /// counts of partly and wholly visible blocks of queries, then their
  /// lists, `blockColumns` entries each)
  int blockTable = -1, blockColumns = -1;
};

Params parameters(const Structure &s);

/// Grids: rows, queries, convert (cdiv(seq_q, BLOCK_M), heads_q, batch);
/// keys (cdiv(seq_k, BLOCK_N), heads_kv, batch); blocks (cdiv(seq_k,
/// BLOCK_N), heads_q, batch). Config BLOCK_M, BLOCK_N,
/// num_warps, num_stages.
Kernel make_kernel(const Structure &s, const Params &q);

} // namespace kiln::ops::attention_backward_kernel
