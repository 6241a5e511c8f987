//===- AttentionBackward.cpp - the gradients of attention -----------------===//
//
// Planning a backward call: the forward call's arguments checked as the
// forward checks them (checked_attention), the gradients' views against
// them, and the passes (AttentionBackwardKernel.h) launched in order:
//
//   rows:    Δ = rowsum(dO ∘ O) into the workspace (and dq's f32 sums zeroed)
//   blocks:  (a mask modifier) the blocks of queries each block of keys meets
//   keys:    dk, dv (and dq's sums, by atomic adds)
//   then     dq from its sums, or (deterministic) the queries pass.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/AttentionBackwardKernel.h"
#include "ops/lib/AttentionPlan.h"
#include "ops/lib/Views.h"
#include "ops/lib/Workspace.h"

#include <kiln/ops/library.h>

#include <algorithm>

namespace kiln::ops {

using namespace attention_backward_kernel;

namespace {

const std::string kOp = "attention_backward";

/// The workspace's regions: Δ, then dq's f32 sums, each aligned.
size_t aligned(size_t bytes) { return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment; }

/// A gradient's view: its forward tensor's shape and dtype, a contiguous
/// head dimension, device memory of the call's device.
void checkGradient(const TensorView &view, const char *role, const TensorView &like, const char *likeRole) {
  check_view(view, kOp, role);
  if (view.shape != like.shape || view.dtype != like.dtype)
    throw Error(kOp + ": " + role + " " + view.describe() + " must have " + likeRole + "'s shape and dtype " +
                like.describe());
  if (view.shape.back() > 1 && view.effective_strides().back() != 1)
    throw Error(kOp + ": " + role + " " + view.describe() + " must be contiguous along head_dim (stride 1)");
}

/// The default tile: two warpgroups, 64 keys a program and 64 queries a
/// step at D 64, 32 queries at D 128, 32 keys and 32 queries at D 256: the
/// largest whose keys, values and their gradients' f32 sums stay in the
/// registers (ptxas spills nothing at D 64, a few bytes from D 128).
Config defaultTile(int64_t D) {
  const int64_t queries = D > 64 ? 32 : 64, keys = D > 128 ? 32 : 64;
  return Config{{"BLOCK_M", queries}, {"BLOCK_N", keys}, {"num_warps", 8}, {"num_stages", 2}};
}

} // namespace

Launches prepare_attention_backward(const AttentionBackwardArgs &b, const Stream &stream, const Config &config) {
  const AttentionArgs &a = b.forward;
  if (a.block_table.address)
    throw Error(kOp + ": a paged cache has no backward pass (training reads dense or packed batches)");
  if (!a.lse.address)
    throw Error(kOp + ": needs the forward's lse (its rows' log-sum-exp)");
  if (a.modifiers && a.modifiers->score_mod && !a.modifiers->score_mod_grad)
    throw Error(kOp + ": the score modifier of '" + a.modifiers->name +
                "' has no derivative (score_mod_grad): the backward pass needs it");
  const AttentionProblem p = checked_attention(a, stream);
  checkGradient(b.dout, "dout", a.out, "out");
  checkGradient(b.dq, "dq", a.q, "q");
  checkGradient(b.dk, "dk", a.k, "k");
  checkGradient(b.dv, "dv", a.v, "v");
  check_devices({&a.q, &b.dout, &b.dq, &b.dk, &b.dv}, stream, kOp);
  for (auto [view, role] : {std::pair{&b.dq, "dq"}, {&b.dk, "dk"}, {&b.dv, "dv"}})
    check_no_overlap(*view, kOp, role);
  const int64_t blockM = config.get("BLOCK_M", defaultTile(p.D)["BLOCK_M"]);
  const int64_t blockN = config.get("BLOCK_N", defaultTile(p.D)["BLOCK_N"]);
  for (auto [what, size] : {std::pair{"BLOCK_M", blockM}, {"BLOCK_N", blockN}})
    if (size < 16 || size > 256 || (size & (size - 1)))
      throw Error(kOp + ": " + what + " must be a power of two from 16 to 256, got " + std::to_string(size));
  Launches launch;
  if (a.q.numel() == 0 && a.k.numel() == 0)
    return launch;

  Structure s;
  s.dtype = a.q.dtype;
  s.blockD = std::max<int64_t>(16, next_pow2(p.D));
  s.evenD = s.blockD == p.D;
  const KeyBounds bounds = key_bounds(a, p);
  s.boundedLeft = bounds.boundedLeft;
  s.boundedRight = bounds.boundedRight;
  s.softcap = a.softcap > 0;
  s.varlen = a.cu_seqlens_q.address != 0;
  s.shiftPerSequence = bounds.shiftPerSequence;
  s.atomic = !b.deterministic;
  s.modifiers = a.modifiers;
  s.blockMask = a.modifiers && a.modifiers->mask_mod;
  // (Every head sees the same keys, and every sequence of a dense batch:
  // only the mask can tell them apart.)
  s.maskPerHead = s.blockMask && a.modifiers->mask_reads_head;
  s.maskPerBatch = s.blockMask && (a.modifiers->mask_reads_batch || s.varlen);

  // Each tensor's strides along batch, sequence and head; Δ and dq's sums
  // laid out in the workspace as lse and q are in a packed or dense call.
  const int64_t tokensQ = s.varlen ? a.q.shape[0] : p.batch * p.seqQ;
  const AttentionView views[] = {p.q, p.k, p.v, p.out, attention_view_of(b.dout, a, p, false),
                                 {}, {}, {}, attention_view_of(b.dq, a, p, false),
                                 attention_view_of(b.dk, a, p, true), attention_view_of(b.dv, a, p, true)};
  int64_t strides[TENSORS][3] = {};
  for (int t : {Q, K, V, OUT, DOUT, DQ, DK, DV})
    for (int d = 0; d < 3; ++d)
      strides[t][d] = views[t].strides[d];
  strides[LSE][0] = p.lseStrides[0], strides[LSE][1] = p.lseStrides[2], strides[LSE][2] = p.lseStrides[1];
  // Δ: [batch, heads_q, seq_q] ([heads_q, tokens_q] packed); dq's sums
  // [batch, seq_q, heads_q, D] ([tokens_q, heads_q, D] packed).
  strides[DELTA][0] = s.varlen ? 0 : p.headsQ * p.seqQ, strides[DELTA][1] = 1;
  strides[DELTA][2] = s.varlen ? tokensQ : p.seqQ;
  strides[DQ_SUM][0] = s.varlen ? 0 : p.seqQ * p.headsQ * p.D, strides[DQ_SUM][1] = p.headsQ * p.D;
  strides[DQ_SUM][2] = p.D;
  const size_t deltaBytes = aligned(static_cast<size_t>(p.headsQ * tokensQ) * sizeof(float));
  const size_t sumBytes = s.atomic ? aligned(static_cast<size_t>(tokensQ * p.headsQ * p.D) * sizeof(float)) : 0;
  // (Block mask: a row a block of keys and query head, after them.)
  const int64_t queryBlockCount = cdiv(p.seqQ, blockM), keyBlockCount = cdiv(p.seqK, blockN);
  const size_t tableOffset = deltaBytes + sumBytes;
  const size_t tableBytes =
      s.blockMask ? aligned(static_cast<size_t>(p.batch * p.headsQ * keyBlockCount * (2 * queryBlockCount + 2)) * 4) : 0;
  launch.workspace_bytes = tableOffset + tableBytes;
  const TensorView *of[TENSORS] = {&a.q, &a.k, &a.v, &a.out, &b.dout, &a.lse, nullptr, nullptr, &b.dq, &b.dk, &b.dv};

  Config tile = defaultTile(p.D);
  for (const auto &[key, value] : config.values())
    tile.set(key, value);
  const uint32_t queryBlocks = static_cast<uint32_t>(cdiv(p.seqQ, blockM)),
                 keyBlocks = static_cast<uint32_t>(cdiv(p.seqK, blockN));
  // (A pass over no blocks is not launched: no queries leave dk and dv the
  // keys pass's zeros, no keys leave dq its sums' or the queries pass's.)
  auto step = [&](Pass pass, Grid grid) {
    if (grid.x == 0 || grid.y == 0 || grid.z == 0)
      return;
    Structure st = s;
    st.pass = pass;
    const Params q = parameters(st);
    const std::string key = st.key();
    Launches::Step one{cached_kernel(key, [&] { return make_kernel(st, q); }),
                       tile,
                       grid,
                       std::vector<Arg>(q.signature.types().size(), Arg(0)),
                       {},
                       {},
                       -1};
    for (int t = 0; t < TENSORS; ++t) {
      if (q.pointers[t] < 0)
        continue;
      if (t == DELTA || t == DQ_SUM)
        one.workspace.push_back({q.pointers[t], t == DELTA ? 0 : deltaBytes});
      else
        one.args[q.pointers[t]] = arg_of(*of[t]);
      for (int d = 0; d < 3; ++d)
        if (q.strides[t][d] >= 0)
          one.args[q.strides[t][d]] = Arg(strides[t][d]);
    }
    if (q.cuQ >= 0)
      one.args[q.cuQ] = arg_of(a.cu_seqlens_q);
    if (q.cuK >= 0)
      one.args[q.cuK] = arg_of(a.cu_seqlens_k);
    if (q.seqQ >= 0)
      one.args[q.seqQ] = Arg(static_cast<int32_t>(p.seqQ));
    if (q.seqK >= 0)
      one.args[q.seqK] = Arg(static_cast<int32_t>(p.seqK));
    if (q.group >= 0)
      one.args[q.group] = Arg(static_cast<int32_t>(p.headsQ / std::max<int64_t>(p.headsKV, 1)));
    if (q.scale >= 0)
      one.args[q.scale] = Arg(static_cast<float>(p.scale));
    for (auto [position, value] : {std::pair{q.shift, bounds.shift}, {q.left, bounds.left}, {q.right, bounds.right}})
      if (position >= 0)
        one.args[position] = Arg(value);
    if (q.cap >= 0)
      one.args[q.cap] = Arg(static_cast<float>(a.softcap));
    if (q.headDim >= 0)
      one.args[q.headDim] = Arg(static_cast<int32_t>(p.D));
    if (q.captured >= 0)
      for (size_t i = 0; i < a.modifiers->tensors.size(); ++i)
        one.args[q.captured + static_cast<int>(i)] = arg_of(a.modifiers->tensors[i]);
    if (q.blockTable >= 0) {
      one.workspace.push_back({q.blockTable, tableOffset});
      one.args[q.blockColumns] = Arg(static_cast<int32_t>(queryBlockCount));
    }
    launch.steps.push_back(std::move(one));
  };
  const uint32_t headsQ = static_cast<uint32_t>(p.headsQ), headsKV = static_cast<uint32_t>(p.headsKV),
                 batch = static_cast<uint32_t>(p.batch);
  step(Pass::rows, Grid(queryBlocks, headsQ, batch));
  if (s.blockMask)
    step(Pass::blocks, Grid(keyBlocks, s.maskPerHead ? headsQ : 1, s.maskPerBatch ? batch : 1));
  step(Pass::keys, Grid(keyBlocks, headsKV, batch));
  step(s.atomic ? Pass::convert : Pass::queries, Grid(queryBlocks, headsQ, batch));
  return launch;
}

void attention_backward(const AttentionBackwardArgs &args, const Stream &stream, const Config &config) {
  check_present_views({{&args.forward.q, "q"}, {&args.dout, "dout"}, {&args.dq, "dq"}, {&args.dk, "dk"},
                       {&args.dv, "dv"}},
                      kOp);
  prepare_attention_backward(args, stream, config).queue(stream);
}

} // namespace kiln::ops
