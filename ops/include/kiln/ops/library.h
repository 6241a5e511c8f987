// Kiln's ops library: the kernels a graph compiler emits, written in the
// DSL, for tensors described by TensorViews. Every op checks its arguments
// (dtypes, shapes, strides, devices) and throws kiln::Error saying what is
// wrong; it then compiles (once per structure: shapes and strides are
// runtime values) and launches on the stream. Views on the interpreter's
// device run on the interpreter, synchronously. docs/ops.md documents each.
// Public header: no MLIR.
#pragma once

#include <kiln/autotune.h>
#include <kiln/config.h>
#include <kiln/ops/expr.h>
#include <kiln/ops/view.h>
#include <kiln/precision.h>
#include <kiln/runtime.h>

#include <kiln/tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln::ops {

//===----------------------------------------------------------------------===//
// Fused pointwise
//===----------------------------------------------------------------------===//

/// One kernel for any number of outputs, each an expression over any number
/// of inputs. Inputs broadcast (NumPy rules) to the outputs' shape, which all
/// outputs share; any strides (0 for broadcast dimensions) are allowed.
///
///   Pointwise pw;
///   Expr x = pw.input(xv), w = pw.input(wv), b = pw.input(bv);
///   pw.output(yv, gelu(x * w + b));
///   pw.run(stream);
class Pointwise {
public:
  /// Adds an input; returns its loaded value (f16/bf16/fp8 widened to f32).
  Expr input(const TensorView &view);
  /// Adds an output: `value`, converted to the view's dtype.
  void output(const TensorView &view, const Expr &value);
  void run(const Stream &stream) const;

private:
  std::vector<TensorView> inputs_, outputs_;
  std::vector<Expr> values_;
};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

enum class Reduce { sum, mean, max, min, argmax, argmin, var };
/// "sum", "argmax", ...
const char *name(Reduce op);

/// A reduction along one dimension of an iteration space, with a fused
/// prologue (what is reduced: an expression of the inputs, which broadcast to
/// that space) and epilogue (what is stored: an expression of `reduced()`
/// and `reduced_length()`). Sums, means and variances accumulate in f32
/// (f64 for f64 inputs; integer sums in i64); `var` is Welford's, with
/// `correction` (1: unbiased, as torch.var's default); argmax/argmin give
/// the first index of the extreme (NaN counts as the maximum), as i64.
/// Rows of any length: short rows take one program each, long ones loop,
/// and very long rows with few of them split across programs and combine in
/// a second kernel.
///
///   Reduction r(Reduce::sum, /*dim=*/1);
///   r.reduce(exp(r.input(xv)));
///   r.output(outv, log(reduced(DType::f32)));      // logsumexp
///   r.run(stream);
class Reduction {
public:
  Reduction(Reduce op, int dim, int correction = 1) : op_(op), dim_(dim), correction_(correction) {}
  Expr input(const TensorView &view);
  /// What is reduced (default: input 0 as loaded).
  void reduce(const Expr &value);
  /// The output: the iteration space without `dim` (or with it as size 1);
  /// `epilogue` defaults to the reduced value itself.
  void output(const TensorView &view, const Expr &epilogue = {});
  void run(const Stream &stream) const;

  /// The dtype `reduced()` has: f32 sums of 16-bit floats, i64 for arg-ops
  /// and integer sums, ...
  DType reduced_dtype() const;

private:
  Reduce op_;
  int dim_;
  int correction_;
  std::vector<TensorView> inputs_;
  Expr value_;
  TensorView output_;
  Expr epilogue_;
  bool has_output_ = false;
};

/// out = op(x) along `dim` (negative counts from the end); `out` has x's
/// shape without `dim`, or with it as 1.
void reduce(Reduce op, const TensorView &x, int dim, const TensorView &out, const Stream &stream,
            int correction = 1);

//===----------------------------------------------------------------------===//
// Normalizations, along the last dimension (rows of any length and any
// strides; x and y f32, f16 or bf16, computed in f32). `config` may
// override the plan: ONE_PASS (0/1: read a row once, holding it on chip, or
// walk it twice), BLOCK_M (rows per program), BLOCK_N, num_warps, and for
// layer norm in one pass SHIFTED (0/1: mean and variance from one reduction
// of sums shifted by the row's first value, or from two).
//===----------------------------------------------------------------------===//

enum class Normalization { softmax, log_softmax, layer_norm, rms_norm };
/// "softmax", "layer_norm", ...
const char *name(Normalization op);

/// A normalization's tensors and epsilon; weight, bias, mean and rstd may
/// be absent (an empty TensorView).
struct NormalizationArgs {
  TensorView x, y, weight, bias, mean, rstd;
  double eps = 0;
};

/// Runs `op`. Without `config`, the plan is the tuned one for this problem
/// on this device when the tuning store has it (tuned first when
/// KILN_AUTOTUNE=quick|full asks), else the defaults.
void normalize(Normalization op, const NormalizationArgs &args, const Stream &stream, const Config &config = {});

/// The autotuner's task for `op` on these tensors (docs/autotune.md): the
/// plan's space, compiling (for `target`, by default the stream's GPU's),
/// running and checking each plan against the default plan's output.
autotune::Task tuning_task(Normalization op, const NormalizationArgs &args, const Stream &stream,
                           const std::string &target = "");

/// y = softmax(x) and log_softmax(x) over the last dimension.
void softmax(const TensorView &x, const TensorView &y, const Stream &stream, const Config &config = {});
void log_softmax(const TensorView &x, const TensorView &y, const Stream &stream, const Config &config = {});

/// y = (x - mean) * rstd * weight + bias over the last dimension, rstd =
/// 1/sqrt(var + eps) (biased variance). weight/bias (1-D, the last
/// dimension's length) may be absent (address 0); mean and rstd (x's shape
/// without the last dimension, f32) are written when given.
void layer_norm(const TensorView &x, const TensorView &weight, const TensorView &bias, double eps,
                const TensorView &y, const TensorView &mean, const TensorView &rstd, const Stream &stream,
                const Config &config = {});

/// y = x * rstd * weight, rstd = 1/sqrt(mean(x^2) + eps); weight and rstd
/// optional as above.
void rms_norm(const TensorView &x, const TensorView &weight, double eps, const TensorView &y,
              const TensorView &rstd, const Stream &stream, const Config &config = {});

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

enum class Activation { none, relu, gelu, silu };
/// "none", "relu", "gelu", "silu".
const char *name(Activation a);
/// "ieee", "tf32", "tf32x3".
const char *name(Precision p);

/// out = act(alpha * (a x b) + bias) + residual, in f32, stored as out's
/// dtype. a is [M, K] and b [K, N] (any strides: row- or column-major), out
/// [M, N]; with a leading batch dimension (rank 3) each batch multiplies on
/// its own (a or b may broadcast over it with stride 0 or size 1). f16 and
/// bf16 operands run on tensor cores (docs/tensor-cores.md); f32 ones as
/// `precision` says: `ieee` (the default, as PyTorch's) with FMAs in full
/// f32, `tf32` on tensor cores with each operand rounded to tf32 (10
/// mantissa bits), `tf32x3` on tensor cores with three tf32 products per
/// pair (near f32 accuracy). out is f32, f16 or bf16. bias ([N]) and
/// residual (out's shape; may be out itself) are optional (empty views).
/// fp8 operands (f8e4m3 or f8e5m2, either on each side) must be K-major (a
/// with contiguous rows, b the transpose of an [N, K] tensor) and run on
/// Hopper's tensor cores (wgmma; FMAs elsewhere); scale_a and scale_b
/// (optional, any operand dtype: f32 of one element, or scale_a [M] one a
/// row of a, scale_b [N] one a column of b) multiply the product first:
/// out = act(alpha * scale_a * scale_b * (a x b) + bias) + residual. Block
/// scales (2-D products, both scales blockwise, any strides): scale_a [M,
/// ceil(K / 128)] one a row and 128 K elements, scale_b [ceil(K / 128),
/// ceil(N / 128)] one a 128 x 128 block of b; out = act(alpha * sum over K
/// blocks kb of (a[:, kb] x b[kb, :]) * scale_a[:, kb] * scale_b[kb, n /
/// 128] + bias) + residual, each block's sum in f32.
struct MatmulArgs {
  TensorView a, b, out, bias, residual;
  double alpha = 1;
  Activation activation = Activation::none;
  Precision precision = Precision::ieee; ///< f32 operands only
  TensorView scale_a, scale_b;
  /// fp8 operands (without block scales, which always promote): true, the
  /// tensor cores' own running sums (about 14 bits kept; as
  /// torch._scaled_mm(use_fast_accum=True)); false, each K step's sum
  /// promoted into f32 registers (as its default): more accurate, slower
  /// (no producer warpgroup, half the tile).
  bool fast_accumulation = true;
};
/// Runs it. `config` may set the tile: BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M
/// (tiles along M walked together, for L2 reuse), num_warps, num_stages;
/// without it, the tuned config for this problem on this device when the
/// tuning store has one (tuned first when KILN_AUTOTUNE=quick|full), else
/// defaults by shape.
void matmul(const MatmulArgs &args, const Stream &stream, const Config &config = {});
/// The autotuner's task for these tensors: the tile space (pruned by shared
/// memory and registers), each config checked against the default's output.
autotune::Task tuning_task(const MatmulArgs &args, const Stream &stream, const std::string &target = "");

/// Grouped products in one launch (mixture-of-experts layers, as
/// torch._grouped_mm takes them): a [M, K] holds G groups of rows, group g
/// rows offsets[g - 1] .. offsets[g] (from 0); each group's rows times its
/// own b[g] ([G, K, N]) into the same rows of out [M, N]: out[rows of g] =
/// act(alpha * scale_a * scale_b[g] * (a[rows of g] x b[g])). offsets
/// (int32 [G], cumulative ends) stays on the device: nothing reads it on
/// the host. Offsets are clamped to [0, M] and made non-decreasing (a
/// group ending before the previous one is empty); rows past the last
/// group's end are not written. Dtypes as matmul's: a and b f16, bf16, f32
/// (at `precision`) or fp8 (K-major); out f32, f16 or bf16. scale_a and
/// scale_b (optional, f32): one element, or scale_a [M] (a's rows) and
/// scale_b [G, N] (each group's columns).
struct GroupedMatmulArgs {
  TensorView a, b, offsets, out;
  double alpha = 1;
  Activation activation = Activation::none;
  Precision precision = Precision::ieee; ///< f32 operands only
  TensorView scale_a, scale_b;
};
/// Runs it; `config` as matmul's (no SPLIT_K or clusters).
void grouped_matmul(const GroupedMatmulArgs &args, const Stream &stream, const Config &config = {});
/// The autotuner's task for these tensors (the matmul tile space, unsplit).
autotune::Task grouped_matmul_tuning_task(const GroupedMatmulArgs &args, const Stream &stream, const std::string &target = "");

// -- Attention --------------------------------------------------------------

/// How q, k, v and out lay out their four dimensions (any strides; the
/// head dimension's must be 1): FlashAttention's [batch, seq, heads,
/// head_dim], or PyTorch's scaled_dot_product_attention's [batch, heads,
/// seq, head_dim].
enum class AttentionLayout { bshd, bhsd };
/// Which keys a query sees. `causal_top_left`: query i sees keys 0..i
/// (PyTorch's is_causal); `causal_bottom_right`: the mask's diagonal ends at
/// the last key, so query i sees keys 0..i + (seq_k - seq_q) (FlashAttention
/// 2.1 and later); the two agree when seq_q == seq_k. A query that sees no
/// key gets an output of zeros and a log-sum-exp of -inf.
enum class AttentionMask { none, causal_top_left, causal_bottom_right };
const char *name(AttentionMask mask);

/// Where a score modifier or mask modifier is evaluated: the block's
/// batch and query head (i32 scalars), each row's query position `q_idx`
/// ([rows, 1], i32) and each column's key position `kv_idx` ([1, keys],
/// i32), positions within the sequence; `captured`: a pointer to each of
/// the modifiers' tensors, to load from (`load(at.captured[0] + at.q_idx)`).
struct ModifierIndices {
  Tensor batch, head, q_idx, kv_idx;
  std::vector<Tensor> captured;
};

/// Score and mask modifiers (FlexAttention's score_mod and mask_mod, in
/// C++): DSL code traced into the attention kernels' inner loop, forward
/// and backward. A score modifier takes a block's scores ([rows, keys],
/// f32: scale · q·k, soft-capped where the call caps) and returns the
/// scores the softmax takes; a mask modifier returns which keys each query
/// sees (with the call's mask and window).
struct AttentionModifiers {
  /// Tells these modifiers' code apart from every other's: the kernels
  /// they are traced into are kept by it (with the tensors' dtypes).
  std::string name;
  /// Tensors the modifiers read (a bias table, document ids), passed to
  /// the kernels as they are.
  std::vector<TensorView> tensors;
  std::function<Tensor(const Tensor &score, const ModifierIndices &at)> score_mod;
  /// The score modifier's derivative in the score, for the backward pass
  /// (1 for additive biases such as ALiBi; 1 - tanh² for soft-capping).
  std::function<Tensor(const Tensor &score, const ModifierIndices &at)> score_mod_grad;
  std::function<Tensor(const ModifierIndices &at)> mask_mod;
  /// Whether mask_mod reads the head (`at.head`) or the batch (`at.batch`).
  /// Where it does not, one block mask serves every head (every sequence
  /// of a dense batch), which the block-mask pass then computes once.
  /// attention_modifiers sets them from the mask's text.
  bool mask_reads_head = true, mask_reads_batch = true;
};

/// Modifiers from texts (what the C ABI and Python take): `score_mod` over
/// `score` (f32), `b`, `h`, `q_idx` and `kv_idx` (i32) and elements of the
/// named tensors (`doc[q_idx]`: 1-D tensors of any stride; an index past a
/// tensor's end reads its last element, before its start its first);
/// `mask_mod` over the same but `score`; either may be empty (none). The
/// score modifier's derivative is taken symbolically. E.g. "tanh(score /
/// 30) * 30", "score + slopes[h] * cast(kv_idx - q_idx, f32)", "doc[q_idx]
/// == doc[kv_idx]". Throws kiln::Error naming a mistake's position.
std::shared_ptr<const AttentionModifiers>
attention_modifiers(const std::string &score_mod, const std::string &mask_mod,
                    const std::vector<std::pair<std::string, TensorView>> &tensors = {});

struct AttentionArgs {
  /// q [batch, seq_q, heads_q, D], k and v [batch, seq_k, heads_kv, D], out
  /// like q (in `layout`'s order); bf16 or f16, one dtype for all; D at
  /// most 256. heads_q a multiple of heads_kv: grouped-query attention
  /// reads each K/V head for heads_q / heads_kv query heads, in place.
  TensorView q, k, v, out;
  /// Optional: f32 [batch, heads_q, seq_q], the natural log of each row's
  /// sum of exp(scale * q k) (what a backward pass and split-KV merges need).
  TensorView lse;
  AttentionLayout layout = AttentionLayout::bshd;
  AttentionMask mask = AttentionMask::none;
  /// Multiplies q kᵀ; 0: 1 / sqrt(D).
  double scale = 0;
  /// Local (sliding-window) attention: query i sees keys from i + shift -
  /// window_left to i + shift + window_right, shift = seq_k - seq_q
  /// (FlashAttention's alignment; 0 under `causal_top_left`); -1: no bound
  /// on that side. A causal mask bounds the right side at 0.
  int64_t window_left = -1, window_right = -1;
  /// Logit soft-capping (Gemma 2's): scores become cap * tanh(score / cap)
  /// after the scale and before the mask; 0: none.
  double softcap = 0;
  /// A packed batch of sequences of their own lengths (FlashAttention's
  /// varlen): q and out [tokens_q, heads_q, D], k and v [tokens_k,
  /// heads_kv, D], and int32 [batch + 1] each sequence's first token (the
  /// next one's start is its end); lse then [heads_q, tokens_q]. Read on the
  /// host before the launch and checked (non-decreasing, within the
  /// tokens); masks and windows align to each sequence's own lengths.
  TensorView cu_seqlens_q, cu_seqlens_k;
  /// A paged KV cache (decoding, chunked prefill): k and v [pages,
  /// page_size, heads_kv, D] in `layout`'s order, block_table int32 [batch,
  /// max_pages] (contiguous along the pages) naming sequence b's j-th page,
  /// cache_seqlens int32 [batch] its number of keys; q, out and lse as a
  /// dense call's. Both read on the host before the launch and checked:
  /// every page a sequence's keys reach must be one of the cache's. Masks
  /// and windows align to each sequence's own length.
  TensorView block_table, cache_seqlens;
  /// false: the caller vouches for block_table and cache_seqlens, which are
  /// then not read on the host (that read waits for the stream: what a
  /// decoding loop or a CUDA graph cannot afford). The kernel still never
  /// reads outside the cache or the table: it clamps page numbers into the
  /// cache and lengths into the table, so a bad index gives wrong numbers,
  /// not a fault.
  bool check_indices = true;
  /// Split-KV (flash-decoding): each row's keys are taken in this many runs
  /// by programs of their own, whose partial results a second kernel
  /// merges by their log-sum-exp: what keeps the GPU busy when few queries
  /// meet long keys. 0: chosen from the sizes and the device; 1: none; at
  /// most 128; not for packed batches.
  int num_splits = 0;
  /// Optional score and mask modifiers.
  std::shared_ptr<const AttentionModifiers> modifiers;
};
/// out = softmax(scale * q kᵀ + mask) v, in f32 within, per batch and head.
/// `config` may set BLOCK_M (queries a program), BLOCK_N (keys a step),
/// num_warps, num_stages; without one, a call takes the tuned tile from the
/// tuning store (autotune --op attention) or the default.
void attention(const AttentionArgs &args, const Stream &stream, const Config &config = {});

/// The gradients of attention's forward pass: dq, dk and dv (q's, k's and
/// v's shapes and dtype, in `forward.layout`'s order, any strides with a
/// contiguous head dimension) from the forward call's q, k, v, out and lse
/// (required) and dout (out's shape): dv = Pᵀ dO, dk = scale · dSᵀ Q, dq =
/// scale · dS K with P the forward's probabilities, recomputed from lse,
/// and dS = P ∘ (dO Vᵀ - rowsum(dO ∘ O)) (through soft-capping's tanh where
/// it is on). Every forward variant but a paged cache: masks, windows,
/// soft-capping, a custom scale, grouped-query heads (dk and dv summed over
/// each K/V head's query heads), packed batches. In f32 within.
struct AttentionBackwardArgs {
  /// The forward call (its out and lse as it wrote them).
  AttentionArgs forward;
  TensorView dout, dq, dk, dv;
  /// false: dq's f32 sums gathered with atomic adds by the programs over
  /// keys (their order varies from run to run, and so may dq's last bits);
  /// true: a pass of its own over the queries, the same bits every run.
  bool deterministic = false;
};
/// Runs it. `config` may set BLOCK_M (queries a step), BLOCK_N (keys a
/// program), num_warps, num_stages.
void attention_backward(const AttentionBackwardArgs &args, const Stream &stream, const Config &config = {});
/// The autotuner's task for these tensors (dense: the tuner runs every
/// tile on them, so out and lse must not overlap the inputs): the tile
/// space, each tile checked against the default's output.
autotune::Task attention_tuning_task(const AttentionArgs &args, const Stream &stream, const std::string &target = "");

} // namespace kiln::ops
