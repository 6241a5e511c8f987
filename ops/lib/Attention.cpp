//===- Attention.cpp - fused attention forward ----------------------------===//
//
// out = softmax(scale * q kᵀ + mask) v, one program a block of BLOCK_M
// queries of one (batch, head): it walks the keys BLOCK_N at a time with
// an online softmax in base 2 (the scale and log2(e) folded into one
// multiply), keeping the running maximum m, the running sum l and the f32
// accumulator in registers, then writes out = acc / l and, when asked, the
// row's log-sum-exp ln(2) * (m + log2 l).
//
// The keys a program's queries see, [lo, end), split into three loops: the
// blocks a window's left edge cuts, the blocks every query of the program
// sees whole (no mask: most of them), then the blocks the causal diagonal,
// a window's right edge or the end of the keys cut, whose hidden scores are
// -inf; blocks no query sees are never visited. A row that has seen only
// hidden keys keeps m = -inf, and its exponentials are taken against 0
// instead, so that it adds nothing rather than NaN. Soft-capping bends the
// scores through tanh first. Grouped-query attention reads K/V head
// h / (heads_q / heads_kv) in place; a packed batch reads each sequence's
// first token and lengths from cu_seqlens.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/GeneratedKernel.h"
#include "ops/lib/Views.h"

#include <kiln/cache.h>
#include <kiln/ops/library.h>

#include <array>
#include <cmath>

namespace kiln::ops {

namespace {

const std::string kOp = "attention";

/// The tensors, by role; each has strides along batch, sequence and head
/// (lse: batch, head, sequence).
enum Role { Q, K, V, OUT, LSE, TENSORS };

/// What tells one generated kernel apart from another.
struct Structure {
  DType dtype = DType::bf16;
  int64_t blockD = 64;   ///< the head dimension's block, a power of two >= 16
  bool evenD = true;     ///< D == blockD: no mask along the head dimension
  /// Query i sees keys from i + shift - left (boundedLeft) up to i + shift
  /// + right (boundedRight: a causal mask's diagonal, or a window's edge).
  bool boundedLeft = false, boundedRight = false;
  bool softcap = false;  ///< scores pass through cap * tanh(score / cap)
  bool lse = false;      ///< writes the log-sum-exp
  /// q, k, v and out are rows of D elements (a token's stride D, the
  /// batch's and head's whole numbers of rows, as in a contiguous [batch,
  /// heads, seq, D]): their offsets are rows times a constant, which lets
  /// the compiler read whole blocks of keys with the copy engine. The batch
  /// and head strides are then passed in rows.
  bool rowsOfD = false;
  /// A packed batch of sequences of their own lengths: each program reads
  /// its sequence's first token and length from cu_seqlens.
  bool varlen = false;
  /// (varlen) the bounds' diagonal goes through each sequence's last query
  /// and key (bottom-right), at shift seq_k - seq_q of its own
  bool shiftPerSequence = false;

  std::string key() const {
    return "attention|" + std::string(name(dtype)) + "|d" + std::to_string(blockD) + (evenD ? "" : "-masked") +
           (boundedLeft ? "|left" : "") + (boundedRight ? "|right" : "") + (softcap ? "|softcap" : "") +
           (lse ? "|lse" : "") + (rowsOfD ? "|rows-of-d" : "") + (varlen ? "|varlen" : "") +
           (shiftPerSequence ? "|own-shift" : "");
  }
};

/// Positions in the signature.
struct Params {
  Signature signature;
  int pointers[TENSORS] = {-1, -1, -1, -1, -1};
  int strides[TENSORS][3] = {};
  int seqQ = -1, seqK = -1, group = -1, scaleLog2 = -1, headDim = -1;
  int shift = -1, left = -1, right = -1; ///< the visible keys' bounds (i32)
  int capInput = -1, capOutput = -1;     ///< soft-capping: tanh(qk * capInput) * capOutput, in base 2
  int cuQ = -1, cuK = -1;                ///< (varlen) each sequence's first token, batch + 1 of them
};

Params parameters(const Structure &s) {
  Params q;
  for (int t : {Q, K, V})
    q.pointers[t] = q.signature.pointer(s.dtype, true);
  q.pointers[OUT] = q.signature.pointer(s.dtype, false);
  if (s.lse)
    q.pointers[LSE] = q.signature.pointer(DType::f32, false);
  if (s.varlen) {
    q.cuQ = q.signature.pointer(DType::i32, true);
    q.cuK = q.signature.pointer(DType::i32, true);
  }
  q.seqQ = q.signature.scalar(DType::i32);
  q.seqK = q.signature.scalar(DType::i32);
  q.group = q.signature.scalar(DType::i32);
  q.scaleLog2 = q.signature.scalar(DType::f32);
  if ((s.boundedLeft || s.boundedRight) && !s.shiftPerSequence)
    q.shift = q.signature.scalar(DType::i32);
  if (s.boundedLeft)
    q.left = q.signature.scalar(DType::i32);
  if (s.boundedRight)
    q.right = q.signature.scalar(DType::i32);
  if (s.softcap) {
    q.capInput = q.signature.scalar(DType::f32);
    q.capOutput = q.signature.scalar(DType::f32);
  }
  if (!s.evenD)
    q.headDim = q.signature.scalar(DType::i32);
  for (int t = 0; t < TENSORS; ++t)
    for (int d = 0; d < 3; ++d)
      q.strides[t][d] = q.pointers[t] >= 0 && !(s.rowsOfD && t != LSE && d == 1) && !(s.varlen && d == 0)
                            ? q.signature.scalar(DType::i64)
                            : -1;
  return q;
}

/// The online softmax's state for the program's rows.
struct Running {
  Tensor m, l, acc;
};

/// One program: BLOCK_M queries of head program_id(1) of batch program_id(2).
class QueryBlock {
public:
  QueryBlock(const Structure &s, const Params &q, const Config &cfg, const std::vector<Tensor> &args)
      : s(s), q(q), args(args), BM(cfg["BLOCK_M"]), BN(cfg["BLOCK_N"]) {
    Tensor batch = program_id(2).to(DType::i64), head = program_id(1);
    Tensor kvHead = (head / args[q.group]).to(DType::i64);
    // A packed batch: the sequence's tokens start at cu_seqlens[batch].
    Tensor firstToken[TENSORS];
    if (s.varlen) {
      Tensor startQ = load(args[q.cuQ] + program_id(2)), startK = load(args[q.cuK] + program_id(2));
      seqQ = load(args[q.cuQ] + (program_id(2) + 1)) - startQ;
      seqK = load(args[q.cuK] + (program_id(2) + 1)) - startK;
      firstToken[Q] = firstToken[OUT] = firstToken[LSE] = startQ.to(DType::i64);
      firstToken[K] = firstToken[V] = startK.to(DType::i64);
    } else {
      seqQ = args[q.seqQ];
      seqK = args[q.seqK];
    }
    // (A packed batch has no batch stride: a zero argument would tell the
    // compiler nothing about the pointers' alignment.)
    for (int t : {Q, OUT, K, V}) {
      const Tensor &h = t == K || t == V ? kvHead : head.to(DType::i64);
      Tensor offset = s.varlen ? firstToken[t] * stride(t, 1) + h * stride(t, 2) : batch * stride(t, 0) + h * stride(t, 2);
      base[t] = s.rowsOfD ? args[q.pointers[t]] + offset * s.blockD : args[q.pointers[t]] + offset;
    }
    if (s.lse) {
      Tensor offset = s.varlen ? firstToken[LSE] * stride(LSE, 2) + head.to(DType::i64) * stride(LSE, 1)
                               : batch * stride(LSE, 0) + head.to(DType::i64) * stride(LSE, 1);
      base[LSE] = args[q.pointers[LSE]] + offset;
    }
    if (s.shiftPerSequence)
      shift = seqK - seqQ;
    else if (q.shift >= 0)
      shift = args[q.shift];
    firstQuery = program_id(0) * BM;
    rows = firstQuery + arange(0, BM);
    keyOffsets = arange(0, BN);
    columns = arange(0, s.blockD);
    rowsIn = rows < seqQ;
  }

  void run() {
    Tensor qMask = expand_dims(rowsIn, 1);
    if (!s.evenD)
      qMask = qMask & expand_dims(columnsIn(), 0);
    Tensor queries = load(tile(Q, rows, 1), qMask, 0.0);
    Running state{full({BM}, -INFINITY, DType::f32), zeros({BM}, DType::f32), zeros({BM, s.blockD}, DType::f32)};
    // Keys [lo, end) hold every key a query of the program sees; the whole
    // blocks of [wholeStart, wholeEnd) every query sees, the others are cut
    // by the bounds or the end of the keys.
    Tensor lo = constant(0, DType::i32), wholeStart = lo;
    Tensor wholeEnd = seqK / BN * BN, end = seqK;
    const Tensor lastQuery = firstQuery + (BM - 1);
    if (s.boundedLeft) {
      Tensor reach = shift - args[q.left];
      lo = maximum(firstQuery + reach, 0) / BN * BN;
      wholeStart = (maximum(lastQuery + reach, 0) + (BN - 1)) / BN * BN;
    }
    if (s.boundedRight) {
      Tensor reach = shift + args[q.right];
      wholeEnd = minimum(maximum(firstQuery + reach + 1, 0) / BN * BN, wholeEnd);
      end = maximum(minimum(seqK, lastQuery + reach + 1), 0);
    }
    // A packed batch's program past its sequence's end walks no keys: no
    // work is spent on the padding up to the longest sequence.
    if (s.varlen)
      end = where(firstQuery < seqQ, end, 0);
    Tensor a = minimum(maximum(wholeStart, lo), end), b = maximum(minimum(wholeEnd, end), a);
    if (s.boundedLeft)
      state = attend(state, queries, lo, a, true);
    state = attend(state, queries, a, b, false);
    state = attend(state, queries, b, end, true);
    finish(state, qMask);
  }

private:
  const Structure &s;
  const Params &q;
  const std::vector<Tensor> &args;
  const int64_t BM, BN;
  Tensor base[TENSORS];
  Tensor seqQ, seqK; ///< this program's sequence lengths
  Tensor shift;      ///< the bounds' diagonal: key i + shift is query i's (with bounds)
  Tensor firstQuery, rows, keyOffsets, columns, rowsIn;

  Tensor stride(int t, int d) const { return args[q.strides[t][d]]; }
  Tensor columnsIn() const { return columns < args[q.headDim]; }

  /// Pointers to `positions` (along the sequence) x the head dimension of
  /// tensor `t`, positions along `axis` (0: a column of positions, 1: a row).
  Tensor tile(int t, const Tensor &positions, int axis) const {
    // (The positions' block expanded, then multiplied by the stride: the
    // form the copy engine's analysis takes apart.)
    const Operand rowStride = s.rowsOfD ? Operand(s.blockD) : Operand(stride(t, 1));
    return axis == 1 ? base[t] + expand_dims(positions.to(DType::i64), 1) * rowStride + expand_dims(columns, 0)
                     : base[t] + expand_dims(positions.to(DType::i64), 0) * rowStride + expand_dims(columns, 1);
  }

  /// Keys [lo, hi) into the running state; `cut`: some are hidden (past
  /// the keys' end, or by the mask).
  Running attend(const Running &state, const Tensor &queries, const Tensor &lo, const Tensor &hi, bool cut) const {
    const Tensor &scaleLog2 = args[q.scaleLog2];
    auto [m, l, acc] = for_range(
        lo, hi, BN, carry(state.m, state.l, state.acc),
        [&](const Tensor &start, const Tensor &m_i, const Tensor &l_i, const Tensor &acc_i) {
          Tensor keys = start + keyOffsets;
          Tensor keysIn, keyMask, valueMask;
          if (cut) {
            keysIn = keys < seqK;
            keyMask = expand_dims(keysIn, 0);
            valueMask = expand_dims(keysIn, 1);
          }
          if (!s.evenD) {
            keyMask = keyMask.valid() ? keyMask & expand_dims(columnsIn(), 1) : expand_dims(columnsIn(), 1);
            valueMask = valueMask.valid() ? valueMask & expand_dims(columnsIn(), 0) : expand_dims(columnsIn(), 0);
          }
          Tensor keysT = keyMask.valid() ? load(tile(K, keys, 0), keyMask, 0.0) : load(tile(K, keys, 0)); // D x BN
          Tensor scores = s.softcap ? tanh(dot(queries, keysT) * args[q.capInput]) * args[q.capOutput]
                                    : dot(queries, keysT) * scaleLog2;
          if (cut) {
            Tensor visible = expand_dims(keysIn, 0);
            if (s.boundedLeft)
              visible = visible & (expand_dims(keys, 0) >= expand_dims(rows + (shift - args[q.left]), 1));
            if (s.boundedRight)
              visible = visible & (expand_dims(keys, 0) <= expand_dims(rows + (shift + args[q.right]), 1));
            scores = where(visible, scores, -INFINITY);
          }
          Tensor m_ij = maximum(m_i, max(scores, 1));
          // A row that has seen no visible key keeps m = -inf: its
          // exponentials are taken against 0, giving 0 instead of NaN.
          Tensor pivot = cut ? where(m_ij == -INFINITY, 0.0, m_ij) : m_ij;
          Tensor p = exp2(scores - expand_dims(pivot, 1));
          Tensor alpha = exp2(m_i - pivot);
          Tensor values = valueMask.valid() ? load(tile(V, keys, 1), valueMask, 0.0) : load(tile(V, keys, 1)); // BN x D
          Tensor next = dot(p.to(s.dtype), values, acc_i * expand_dims(alpha, 1));
          return std::array{m_ij, l_i * alpha + sum(p, 1), next};
        });
    return {m, l, acc};
  }

  /// out = acc / l (zeros where no key was seen), and the log-sum-exp.
  void finish(const Running &state, const Tensor &outMask) const {
    Tensor seen = state.l > 0.0;
    Tensor out = where(expand_dims(seen, 1), state.acc / expand_dims(where(seen, state.l, 1.0), 1), 0.0);
    store(tile(OUT, rows, 1), out.to(s.dtype), outMask);
    if (s.lse) {
      Tensor lse = where(seen, (state.m + log2(where(seen, state.l, 1.0))) * std::log(2.0), -INFINITY);
      store(base[LSE] + rows.to(DType::i64) * stride(LSE, 2), lse, rowsIn);
    }
  }
};

Kernel makeKernel(const std::string &key, const Structure &s, const Params &q) {
  auto body = [s, q](const Config &cfg, const std::vector<Tensor> &args) { QueryBlock(s, q, cfg, args).run(); };
  return Kernel("kiln_attention_" + sha256_hex(key).substr(0, 10), q.signature.types(), body).library(kOp);
}

/// A view's sizes and strides in [batch, seq, heads, D] order.
struct Canonical {
  int64_t sizes[4] = {};
  int64_t strides[4] = {};
};

Canonical canonical(const TensorView &view, AttentionLayout layout) {
  Canonical c;
  const std::vector<int64_t> st = view.effective_strides();
  const int order[4] = {0, layout == AttentionLayout::bshd ? 1 : 2, layout == AttentionLayout::bshd ? 2 : 1, 3};
  for (int d = 0; d < 4; ++d) {
    c.sizes[d] = view.shape[order[d]];
    c.strides[d] = st[order[d]];
  }
  return c;
}

/// Checks q, k, v and out: ranks, dtypes, a contiguous head dimension.
void checkOperand(const TensorView &view, const char *role, DType dtype, int rank) {
  check_view(view, kOp, role);
  if (view.rank() != rank)
    throw Error(kOp + ": " + role + " " + view.describe() + " must have " + std::to_string(rank) + " dimensions (" +
                (rank == 4 ? "batch, seq, heads, head_dim or batch, heads, seq, head_dim"
                           : "tokens, heads, head_dim: a packed batch") +
                ")");
  if (view.dtype != dtype)
    throw Error(kOp + ": " + role + " is " + std::string(name(view.dtype)) + " but q is " + std::string(name(dtype)) +
                ": q, k, v and out share one dtype");
  if (view.shape[rank - 1] > 1 && view.effective_strides()[rank - 1] != 1)
    throw Error(kOp + ": " + role + " " + view.describe() + " must be contiguous along head_dim (stride 1)");
}

void checkOperands(const AttentionArgs &a, int rank) {
  const DType dtype = a.q.dtype;
  if (dtype != DType::bf16 && dtype != DType::f16)
    throw Error(kOp + ": q, k, v and out must be bf16 or f16, not " + std::string(name(dtype)));
  checkOperand(a.q, "q", dtype, rank);
  checkOperand(a.k, "k", dtype, rank);
  checkOperand(a.v, "v", dtype, rank);
  checkOperand(a.out, "out", dtype, rank);
}

void checkSame(int64_t a, int64_t b, const std::string &what) {
  if (a != b)
    throw Error(kOp + ": " + what + " differ (" + std::to_string(a) + " and " + std::to_string(b) + ")");
}

/// A call's sizes, its views in [batch, seq, heads, D] order, its scale.
/// A packed batch's seqQ and seqK are its longest sequences.
struct Problem {
  int64_t batch = 0, seqQ = 0, seqK = 0, headsQ = 0, headsKV = 0, D = 0;
  Canonical q, k, v, out;
  std::vector<int64_t> lseStrides; ///< batch, head, sequence
  double scale = 1;
};

/// The checks dense and packed calls share once their sizes are known;
/// `lseShape` is what the lse view must be.
void checkShared(const AttentionArgs &a, Problem &p, const std::vector<int64_t> &lseShape, const Stream &stream) {
  const Canonical &k = p.k, &v = p.v;
  checkSame(v.sizes[1], k.sizes[1], "the sequence lengths of k and v");
  checkSame(v.sizes[2], p.headsKV, "the head counts of k and v");
  for (const Canonical *c : {&k, &v})
    checkSame(c->sizes[3], p.D, "the head dimensions of q, k and v");
  if (a.out.shape != a.q.shape)
    throw Error(kOp + ": out " + a.out.describe() + " must have q's shape " + a.q.describe());
  if (p.D > 256)
    throw Error(kOp + ": head_dim " + std::to_string(p.D) + " is more than 256");
  if (p.headsKV == 0 ? p.headsQ != 0 : p.headsQ % p.headsKV != 0)
    throw Error(kOp + ": q's " + std::to_string(p.headsQ) + " heads are not a multiple of k and v's " +
                std::to_string(p.headsKV) + " (grouped-query attention shares each K/V head among a whole number)");
  for (int64_t size : {p.seqQ, p.seqK})
    if (size >= (int64_t(1) << 31))
      throw Error(kOp + ": sequences of 2^31 tokens or more are not supported");
  if (p.headsQ > 65535 || p.batch > 65535)
    throw Error(kOp + ": at most 65535 heads and 65535 batches (a grid's y and z)");
  std::vector<const TensorView *> views{&a.q, &a.k, &a.v, &a.out};
  if (a.lse.address) {
    check_view(a.lse, kOp, "lse");
    if (a.lse.dtype != DType::f32 || a.lse.shape != lseShape) {
      std::string want;
      for (int64_t d : lseShape)
        want += (want.empty() ? "" : ", ") + std::to_string(d);
      throw Error(kOp + ": lse " + a.lse.describe() + " must be f32 " +
                  (lseShape.size() == 3 ? "[batch, heads_q, seq_q]" : "[heads_q, tokens_q]") + " = [" + want + "]");
    }
    check_no_overlap(a.lse, kOp, "lse");
    views.push_back(&a.lse);
  }
  if (a.cu_seqlens_q.address) {
    views.push_back(&a.cu_seqlens_q);
    views.push_back(&a.cu_seqlens_k);
  }
  check_devices(views, stream, kOp);
  check_no_overlap(a.out, kOp, "out");
  p.scale = a.scale != 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(p.D, 1)));
  if (!std::isfinite(p.scale))
    throw Error(kOp + ": the scale must be finite");
  for (int64_t bound : {a.window_left, a.window_right})
    if (bound < -1 || bound >= (int64_t(1) << 31))
      throw Error(kOp + ": a window bound is -1 (none) or a number of keys below 2^31, got " + std::to_string(bound));
  if (!(a.softcap >= 0) || !std::isfinite(a.softcap))
    throw Error(kOp + ": softcap must be 0 (none) or a finite positive cap");
}

/// A dense call: [batch, seq, heads, D] views in `layout`'s order.
Problem checkedDense(const AttentionArgs &a, const Stream &stream) {
  checkOperands(a, 4);
  Problem p;
  p.q = canonical(a.q, a.layout);
  p.k = canonical(a.k, a.layout);
  p.v = canonical(a.v, a.layout);
  p.out = canonical(a.out, a.layout);
  p.batch = p.q.sizes[0], p.seqQ = p.q.sizes[1], p.headsQ = p.q.sizes[2], p.D = p.q.sizes[3];
  p.seqK = p.k.sizes[1], p.headsKV = p.k.sizes[2];
  for (const Canonical *c : {&p.k, &p.v})
    checkSame(c->sizes[0], p.batch, "the batch sizes of q, k and v");
  checkShared(a, p, {p.batch, p.headsQ, p.seqQ}, stream);
  if (a.lse.address)
    p.lseStrides = a.lse.effective_strides();
  return p;
}

/// One cu_seqlens: int32 [batch + 1], read to the host and checked: each
/// sequence starts at or after the one before and ends within `tokens`.
std::vector<int32_t> sequenceStarts(const TensorView &view, const char *role, int64_t tokens, const Stream &stream) {
  check_view(view, kOp, role);
  if (view.dtype != DType::i32 || view.rank() != 1 || view.shape[0] < 1)
    throw Error(kOp + ": " + role + " " + view.describe() + " must be int32 [batch + 1]");
  check_devices({&view}, stream, kOp);
  // (Read after the work queued before on the default stream: a caller's
  // own stream must have finished writing them.)
  std::vector<int32_t> starts(view.shape[0]);
  const int64_t stride = view.shape[0] > 1 ? view.effective_strides()[0] : 1;
  if (stride == 1)
    copy_to_host(stream.device(), view.address, starts.data(), starts.size() * 4);
  else
    for (size_t i = 0; i < starts.size(); ++i)
      copy_to_host(stream.device(), view.address + static_cast<uint64_t>(static_cast<int64_t>(i) * stride) * 4,
                   &starts[i], 4);
  for (size_t i = 0; i < starts.size(); ++i)
    if (starts[i] < 0 || starts[i] > tokens || (i > 0 && starts[i] < starts[i - 1]))
      throw Error(kOp + ": " + role + "[" + std::to_string(i) + "] = " + std::to_string(starts[i]) +
                  (starts[i] < 0 || starts[i] > tokens ? " is outside the " + std::to_string(tokens) + " tokens"
                                                       : " is before the sequence start before it"));
  return starts;
}

/// A packed batch: [tokens, heads, D] views and each sequence's start in
/// cu_seqlens_q and cu_seqlens_k.
Problem checkedPacked(const AttentionArgs &a, const Stream &stream) {
  checkOperands(a, 3);
  if (!a.cu_seqlens_k.address)
    throw Error(kOp + ": a packed batch needs cu_seqlens_k beside cu_seqlens_q");
  const std::vector<int32_t> startsQ = sequenceStarts(a.cu_seqlens_q, "cu_seqlens_q", a.q.shape[0], stream);
  const std::vector<int32_t> startsK = sequenceStarts(a.cu_seqlens_k, "cu_seqlens_k", a.k.shape[0], stream);
  checkSame(static_cast<int64_t>(startsQ.size()), static_cast<int64_t>(startsK.size()),
            "the lengths of cu_seqlens_q and cu_seqlens_k");
  Problem p;
  p.batch = static_cast<int64_t>(startsQ.size()) - 1;
  for (int64_t b = 0; b < p.batch; ++b) {
    p.seqQ = std::max<int64_t>(p.seqQ, startsQ[b + 1] - startsQ[b]);
    p.seqK = std::max<int64_t>(p.seqK, startsK[b + 1] - startsK[b]);
  }
  // As [batch, longest sequence, heads, D]: programs add their sequence's
  // first token to the pointers (no batch stride).
  auto packed = [&](const TensorView &view, int64_t seq) {
    const std::vector<int64_t> st = view.effective_strides();
    Canonical c;
    const int64_t sizes[4] = {p.batch, seq, view.shape[1], view.shape[2]}, strides[4] = {0, st[0], st[1], st[2]};
    std::copy(sizes, sizes + 4, c.sizes);
    std::copy(strides, strides + 4, c.strides);
    return c;
  };
  p.q = packed(a.q, p.seqQ), p.out = packed(a.out, p.seqQ), p.k = packed(a.k, p.seqK), p.v = packed(a.v, p.seqK);
  p.headsQ = a.q.shape[1], p.D = a.q.shape[2], p.headsKV = a.k.shape[1];
  checkSame(a.v.shape[0], a.k.shape[0], "the token counts of k and v");
  checkShared(a, p, {p.headsQ, a.q.shape[0]}, stream);
  if (a.lse.address) {
    const std::vector<int64_t> st = a.lse.effective_strides();
    p.lseStrides = {0, st[0], st[1]};
  }
  return p;
}

} // namespace

const char *name(AttentionMask mask) {
  switch (mask) {
  case AttentionMask::none: return "none";
  case AttentionMask::causal_top_left: return "causal_top_left";
  case AttentionMask::causal_bottom_right: return "causal_bottom_right";
  }
  return "?";
}

void attention(const AttentionArgs &a, const Stream &stream, const Config &config) {
  const Problem p = a.cu_seqlens_q.address ? checkedPacked(a, stream) : checkedDense(a, stream);
  if (a.out.numel() == 0)
    return;
  const DType dtype = a.q.dtype;
  const int64_t D = p.D;

  Structure s;
  s.dtype = dtype;
  s.blockD = std::max<int64_t>(16, next_pow2(D));
  s.evenD = s.blockD == D;
  const bool causal = a.mask != AttentionMask::none;
  s.boundedLeft = a.window_left >= 0;
  s.boundedRight = causal || a.window_right >= 0;
  s.softcap = a.softcap > 0;
  s.lse = a.lse.address != 0;
  s.varlen = a.cu_seqlens_q.address != 0;
  s.shiftPerSequence = s.varlen && (s.boundedLeft || s.boundedRight) && a.mask != AttentionMask::causal_top_left;
  s.rowsOfD = s.evenD && !s.varlen;
  for (const Canonical *c : {&p.q, &p.k, &p.v, &p.out})
    s.rowsOfD = s.rowsOfD && c->strides[1] == D && c->strides[0] % D == 0 && c->strides[2] % D == 0;
  // The fastest of the tiles measured on Hopper (docs/attention.md): 128
  // queries on two warpgroups; 64-key steps at D 64, 128 at D 128 (three
  // stages under a mask or a window; Hopper's shared memory: the target
  // compiled for, which KILN_TARGET may make older than the device).
  const bool bounded = s.boundedLeft || s.boundedRight;
  const bool hopper = compiles_for_hopper(stream);
  Config tile =
      s.blockD <= 64 ? Config{{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"num_warps", 8}, {"num_stages", 2}}
      : s.blockD <= 128
          ? Config{{"BLOCK_M", 128}, {"BLOCK_N", hopper ? 128 : 64}, {"num_warps", 8}, {"num_stages", hopper && bounded ? 3 : 2}}
          : Config{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"num_warps", 4}, {"num_stages", 2}};
  for (const auto &[key, value] : config.values())
    tile.set(key, value);
  const int64_t BM = tile["BLOCK_M"], BN = tile["BLOCK_N"];
  for (auto [what, size] : {std::pair{"BLOCK_M", BM}, {"BLOCK_N", BN}})
    if (size < 16 || (size & (size - 1)))
      throw Error(kOp + ": " + what + " must be a power of two of at least 16, got " + std::to_string(size));

  const Params q = parameters(s);
  const std::string key = s.key();
  Kernel kernel = cached_kernel(key, [&] { return makeKernel(key, s, q); });
  std::vector<Arg> args(q.signature.types().size(), Arg(0));
  const TensorView *of[TENSORS] = {&a.q, &a.k, &a.v, &a.out, &a.lse};
  const Canonical *canon[TENSORS] = {&p.q, &p.k, &p.v, &p.out, nullptr};
  for (int t = 0; t < TENSORS; ++t) {
    if (q.pointers[t] < 0)
      continue;
    args[q.pointers[t]] = arg_of(*of[t]);
    for (int d = 0; d < 3; ++d)
      if (q.strides[t][d] >= 0)
        args[q.strides[t][d]] =
            Arg(t == LSE ? p.lseStrides[d] : s.rowsOfD ? canon[t]->strides[d] / D : canon[t]->strides[d]);
  }
  if (s.varlen) {
    args[q.cuQ] = arg_of(a.cu_seqlens_q);
    args[q.cuK] = arg_of(a.cu_seqlens_k);
  }
  args[q.seqQ] = Arg(static_cast<int32_t>(p.seqQ));
  args[q.seqK] = Arg(static_cast<int32_t>(p.seqK));
  args[q.group] = Arg(static_cast<int32_t>(p.headsQ / std::max<int64_t>(p.headsKV, 1)));
  args[q.scaleLog2] = Arg(static_cast<float>(p.scale / std::log(2.0)));
  // Bounds relative to the diagonal through the last query and key
  // (top-left: through the first of each).
  if (q.shift >= 0)
    args[q.shift] = Arg(static_cast<int32_t>(a.mask == AttentionMask::causal_top_left ? 0 : p.seqK - p.seqQ));
  if (q.left >= 0)
    args[q.left] = Arg(static_cast<int32_t>(a.window_left));
  if (q.right >= 0)
    args[q.right] = Arg(static_cast<int32_t>(causal ? 0 : a.window_right));
  if (s.softcap) {
    args[q.capInput] = Arg(static_cast<float>(p.scale / a.softcap));
    args[q.capOutput] = Arg(static_cast<float>(a.softcap / std::log(2.0)));
  }
  if (q.headDim >= 0)
    args[q.headDim] = Arg(static_cast<int32_t>(D));
  kernel.launch_with(Grid(static_cast<uint32_t>(cdiv(p.seqQ, BM)), static_cast<uint32_t>(p.headsQ),
                          static_cast<uint32_t>(p.batch)),
                     tile, stream, args);
}

} // namespace kiln::ops
