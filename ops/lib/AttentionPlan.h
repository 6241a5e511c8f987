//===- AttentionPlan.h - an attention call's launches -----------*- C++ -*-===//
//
// What the op and its autotuner share: a call planned into its launches
// (the forward kernel, and the merge when the keys are split), the default
// tile, the tile space the autotuner searches and the key it stores its
// winner under.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ops/lib/AttentionKernel.h"
#include "ops/lib/AttentionProblem.h"
#include "ops/lib/Launches.h"

#include <kiln/autotune.h>

#include <string>
#include <vector>

namespace kiln::ops {

/// One call's launches, planned.
struct AttentionLaunch {
  struct Step {
    Kernel kernel;
    Config config;
    Grid grid;
    std::vector<Arg> args;
    /// The workspace's regions this step reads or writes (-1: none): a
    /// split pass's partial results, a packed batch's walk's tile table.
    int partialOut = -1, partialLse = -1, tiles = -1;
  };
  /// (a packed batch's walk) the listing of its tiles; the forward kernel;
  /// (split) the merge
  std::vector<Step> steps;
  size_t forwardStep = 0; ///< which step is the forward kernel
  uint64_t workspaceBytes = 0, lseOffset = 0; ///< (split) the partial results' region, its lse part
  uint64_t tableBytes = 0;                    ///< (a packed batch's walk) the tile table's, from the workspace's start

  void queue(const Stream &stream) const;
  /// Compiles every step for `arch`; returns the forward kernel's.
  CompiledKernel compile(const std::string &arch) const;
};

/// Plans a checked call (checked_attention) with `config` over the default
/// tile.
AttentionLaunch prepare_attention(const AttentionArgs &a, const AttentionProblem &p, const Stream &stream,
                                  const Config &config);

/// The untuned tile of a call; `arch` the target compiled for.
Config default_attention_tile(const AttentionArgs &a, const AttentionProblem &p, const std::string &arch);

/// Whether the blocks of keys a call's kernel reads whole, BLOCK_N keys
/// each, are read by the copy engine (rows of D or token rows, keys the
/// blocks divide or a packed batch of a block or more): what a producer
/// warpgroup feeds.
bool copy_engine_reads_keys(const AttentionArgs &a, const AttentionProblem &p, int64_t blockN);

/// Whether a call's programs may walk its tiles (config `persistent`): a
/// dense or packed batch (not paged or of heads packed into one program's
/// rows) whose keys and values stream through rings alone (D up to 128:
/// D 256 holds its queries in shared memory), which the compiler's
/// producer then fills across tiles. (Split-KV calls stay one program a run.)
bool tiles_can_be_walked(const AttentionArgs &a, const AttentionProblem &p);

/// The tiles the autotuner searches for a call, and the key of its
/// problem (its structure, its sizes bucketed).
ConfigSpace attention_space(const AttentionArgs &a, const AttentionProblem &p, const std::string &arch);
std::string attention_problem_key(const AttentionArgs &a, const AttentionProblem &p);

/// A backward call's passes (AttentionBackward.cpp), checked and planned
/// with `config` over the default tile.
Launches prepare_attention_backward(const AttentionBackwardArgs &args, const Stream &stream, const Config &config);

/// The config a call without one runs (Tuned.h's chosen_config).
Config chosen_attention_config(const AttentionArgs &a, const AttentionProblem &p, const Stream &stream);

} // namespace kiln::ops
