//===- AttentionKernel.h - the attention op's generated kernels -*- C++ -*-===//
//
// What tells one generated attention kernel apart from another (its
// Structure), where each argument sits in its signature (Params), and the
// kernels themselves: the forward pass over one block of queries, and the
// merge of a split-KV pass's partial results.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ops/lib/GeneratedKernel.h"

#include <kiln/ops/library.h>

#include <memory>
#include <string>

namespace kiln::ops::attention_kernel {

/// The tensors, by role; each has strides along batch, sequence and head
/// (lse: batch, head, sequence; a paged cache's k and v: page, position in
/// the page, head).
enum Role { Q, K, V, OUT, LSE, TENSORS };

struct Structure {
  DType dtype = DType::bf16;
  int64_t blockD = 64; ///< the head dimension's block, a power of two >= 16
  bool evenD = true;   ///< D == blockD: no mask along the head dimension
  /// Query i sees keys from i + shift - left (boundedLeft) up to i + shift
  /// + right (boundedRight: a causal mask's diagonal, or a window's edge).
  bool boundedLeft = false, boundedRight = false;
  bool softcap = false; ///< scores pass through cap * tanh(score / cap)
  /// The scale is negative: a row's largest score is its smallest product,
  /// so the scores are scaled before their maximum is taken.
  bool negativeScale = false;
  bool lse = false;     ///< writes the log-sum-exp
  /// q, k, v and out are rows of D elements (a token's stride D, the
  /// batch's and head's whole numbers of rows, as in a contiguous [batch,
  /// heads, seq, D]): their offsets are rows times a constant, which lets
  /// the compiler read whole blocks of keys with the copy engine. The batch
  /// and head strides are then passed in rows.
  bool rowsOfD = false;
  /// q, k, v and out are tokens of heads x D elements (FlashAttention's
  /// [batch, seq, heads, D] with its heads side by side, a batch a whole
  /// number of tokens): a token's stride is passed, the batch's in tokens,
  /// and a head is D columns into the token, the form the compiler reads
  /// with the copy engine as boxes of a [tokens, heads x D] tensor.
  bool tokenRows = false;
  /// A packed batch of sequences of their own lengths: each program reads
  /// its sequence's first token and length from cu_seqlens.
  bool varlen = false;
  /// A paged KV cache: key j of sequence b sits in page block_table[b][j /
  /// page_size] at position j % page_size; cache_seqlens[b] keys.
  bool paged = false;
  /// (varlen, paged) the bounds' diagonal goes through each sequence's last
  /// query and key (bottom-right), at shift seq_k - seq_q of its own
  bool shiftPerSequence = false;
  /// Every block of keys lies within the keys (a dense call whose seq_k
  /// BLOCK_N divides): no load is masked, only scores the bounds hide, so
  /// that every loop reads the same unmasked blocks, as the compiler's
  /// producer warpgroup asks; without bounds no block is cut at all.
  bool evenK = false;
  /// (varlen, token rows) Blocks of keys the end of a sequence cuts are read
  /// whole, moved back to end at its last key (a sequence shorter than a
  /// block: to start at the batch's first), their other keys hidden in the
  /// scores: every load reads a whole block within the batch's keys, as the
  /// copy engine and the compiler's producer warpgroup ask. (A sequence
  /// shorter than a block reads its neighbours' keys too, whose values meet
  /// probabilities of exactly 0.)
  bool wholeCutBlocks = false;
  /// (grouped-query) A program's rows are the queries of every query head
  /// that shares its K/V head program_id(1): row r is query r % seq_q of
  /// head kvHead * group + r / seq_q, so that the group reads its keys once
  /// (what decoding, a few queries over long keys, is bound by).
  bool packHeads = false;
  /// Split-KV: program_id(0) also picks one of `splits` runs of key blocks,
  /// and the program writes its f32 partial output and log-sum-exp for the
  /// merge kernel instead of out and lse.
  bool split = false;
  /// Persistent programs: each walks tiles (a block of queries of one head
  /// of one batch) pid, pid + programs, ... one after another, so that the
  /// compiler's producer brings a tile's first keys in while the consumers
  /// finish the one before, and no program's start or end is left exposed.
  /// A packed batch's programs walk the tiles its sequences have, listed
  /// in a table (tile_list_kernel) in the workspace.
  /// (Not with split, paged or packHeads, nor at D 256.)
  bool persistent = false;

  /// Score and mask modifiers traced into the loop over keys (their
  /// tensors passed after the other parameters); not with packHeads.
  std::shared_ptr<const AttentionModifiers> modifiers;

  /// (a mask modifier; not split, paged or persistent) The blocks of keys
  /// each tile visits come from a block mask the block-mask pass wrote:
  /// those partly visible (masked) and those wholly visible (not masked);
  /// blocks no query of the tile sees are skipped.
  bool blockMask = false;
  /// (blockMask) Whether each head (each sequence of the batch) has block
  /// mask rows of its own; where not, all share head 0's (batch 0's).
  bool maskPerHead = true, maskPerBatch = true;

  bool scoreMod() const { return modifiers && modifiers->score_mod; }
  bool maskMod() const { return modifiers && modifiers->mask_mod; }

  /// Whether a query block's keys grow with its index (a causal diagonal,
  /// a right edge alone): later blocks cost more.
  bool keysGrowWithQueries() const { return boundedRight && !boundedLeft; }

  std::string key() const;
};

/// Positions in the forward kernel's signature.
struct Params {
  Signature signature;
  int pointers[TENSORS] = {-1, -1, -1, -1, -1};
  int strides[TENSORS][3] = {};
  int seqQ = -1, seqK = -1, group = -1, scaleLog2 = -1, headDim = -1;
  int shift = -1, left = -1, right = -1; ///< the visible keys' bounds (i32)
  int capInput = -1, capOutput = -1;     ///< soft-capping: tanh(qk * capInput) * capOutput, in base 2
  int cuQ = -1, cuK = -1;                ///< (varlen) each sequence's first token, batch + 1 of them
  int firstKey = -1;                     ///< (whole cut blocks) cu_seqlens_k[0], the batch's first key
  /// (paged) block_table [batch, max_pages] with its row stride, each
  /// sequence's keys, the keys a page holds
  int table = -1, tableStride = -1, cacheSeqlens = -1, pageSize = -1;
  /// (paged) the keys a table row reaches and the cache's last page: what
  /// lengths and page numbers are clamped into, so that no index read from
  /// memory can take a load outside the table or the cache
  int tableKeys = -1, lastPage = -1;
  /// (split) the runs of key blocks, and the partial results: out f32
  /// [splits, batch, heads_q, seq_q, blockD] and lse f32 [splits, batch,
  /// heads_q, seq_q]
  int splits = -1, partialOut = -1, partialLse = -1;
  int heads = -1, batches = -1; ///< (persistent) the tiles' heads and batches (i32)
  int captured = -1;            ///< the modifiers' first tensor, the others after it
  /// (block mask) the table (i32, a row a tile: the counts of partly and
  /// wholly visible blocks, then their lists, `blockColumns` entries each)
  int blockTable = -1, blockColumns = -1;
  /// (persistent, varlen) the tile table (i64 sequence * 2^32 + query
  /// block, tile_list_kernel) and its entries (i32)
  int tiles = -1, tileEntries = -1;
};

Params parameters(const Structure &s);

/// The forward kernel: grid (query blocks x splits, heads_q, batch); config
/// BLOCK_M, BLOCK_N, num_warps, num_stages.
Kernel forward_kernel(const Structure &s, const Params &q);

/// (block mask) The pass that writes the block table the forward kernel
/// reads: the forward's signature, grid and config.
Kernel block_mask_kernel(const Structure &s, const Params &q);

/// The table a packed batch's walk reads its tiles from: entry e is
/// sequence b * 2^32 + query block i, the sequences' blocks one after
/// another, as many entries as the sequences have blocks of BLOCK_M
/// queries. Grid 1; config BLOCK_M (the forward kernel's), num_warps.
struct TileListParams {
  Signature signature;
  int cuQ = -1, table = -1, batch = -1;
};

TileListParams tile_list_parameters();
std::string tile_list_key();
Kernel tile_list_kernel(const TileListParams &q);

/// The merge of a split-KV pass: for each query row, out = Σ_s w_s o_s / Σ_s
/// w_s with w_s = exp(lse_s - max lse), lse = max + log Σ w_s.
struct MergeParams {
  Signature signature;
  int partialOut = -1, partialLse = -1, out = -1, lse = -1;
  int outStrides[3] = {-1, -1, -1}; ///< batch, sequence, head
  int lseStrides[3] = {-1, -1, -1}; ///< batch, head, sequence
  int splits = -1, seqQ = -1, headDim = -1;
};

MergeParams merge_parameters(DType dtype, bool lse);

/// The merge kernel's key in the generated kernels' cache.
std::string merge_key(DType dtype, int64_t blockD, bool lse);
/// Grid (cdiv(seq_q, BLOCK_M), heads_q, batch); config BLOCK_M, num_warps.
Kernel merge_kernel(DType dtype, int64_t blockD, bool lse, const MergeParams &q);

} // namespace kiln::ops::attention_kernel
