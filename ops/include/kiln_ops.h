/* Kiln's ops library through a C ABI, for runtimes that are not C++.
 *
 * Tensors are non-owning DLPack DLTensors (Debian's dlpack 0.6 and DLPack
 * 1.x lay DLTensor out the same way): CUDA memory (kDLCUDA) runs on that GPU
 * on `stream` (a CUstream; NULL is the default stream), host memory
 * (kDLCPU) runs on Kiln's CPU interpreter, synchronously. Outputs are
 * allocated by the caller. Every function returns KILN_OK or an error code;
 * kiln_ops_last_error() then says what was wrong (per thread). No function
 * throws, aborts or writes outside the tensors it is given. Each tensor's
 * memory must hold every element its shape, strides and byte_offset reach:
 * a tensor that claims more memory than it has is the caller's bug, which
 * no function can detect.
 *
 * Supported dtypes: float 16/32/64, bfloat16, int 8/16/32/64, uint 8/16/32/64,
 * bool (as 8-bit), and DLPack 1.1's float8_e4m3fn (code 10) and float8_e5m2
 * (code 12) for kiln_matmul_scaled; one lane. docs/ops.md documents each
 * operation.
 */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include <dlpack/dlpack.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The version of this header's ABI: a library of another version refuses nothing, but check it. */
#define KILN_OPS_ABI_VERSION 6

enum {
  KILN_OK = 0,
  KILN_ERROR_INVALID_ARGUMENT = 1, /**< a null pointer, an unsupported dtype, device or layout */
  KILN_ERROR_FAILED = 2,           /**< the op refused its arguments (shapes, ...) or failed (compile, CUDA) */
  KILN_ERROR_INTERNAL = 3          /**< anything else: a bug, please report it */
};

/** What kiln_reduce computes. */
enum {
  KILN_REDUCE_SUM = 0,
  KILN_REDUCE_MEAN = 1,
  KILN_REDUCE_MAX = 2,
  KILN_REDUCE_MIN = 3,
  KILN_REDUCE_ARGMAX = 4,
  KILN_REDUCE_ARGMIN = 5,
  KILN_REDUCE_VAR = 6
};

/** The activation kiln_matmul applies. */
enum {
  KILN_ACTIVATION_NONE = 0,
  KILN_ACTIVATION_RELU = 1,
  KILN_ACTIVATION_GELU = 2, /**< exact (erf) */
  KILN_ACTIVATION_SILU = 3
};

/** How kiln_matmul multiplies f32 operands (16-bit ones are exact). */
enum {
  KILN_PRECISION_IEEE = 0,  /**< FMAs in full f32 (PyTorch's default) */
  KILN_PRECISION_TF32 = 1,  /**< tensor cores, operands rounded to tf32 (10 mantissa bits) */
  KILN_PRECISION_TF32X3 = 2 /**< tensor cores, three tf32 products per pair: near f32 */
};

/** How kiln_attention's q, k, v and out lay out their dimensions. */
enum {
  KILN_ATTENTION_LAYOUT_BSHD = 0, /**< [batch, seq, heads, head_dim] (FlashAttention's) */
  KILN_ATTENTION_LAYOUT_BHSD = 1  /**< [batch, heads, seq, head_dim] (PyTorch's scaled_dot_product_attention) */
};

/** Which keys a query sees in kiln_attention. */
enum {
  KILN_ATTENTION_MASK_NONE = 0,
  KILN_ATTENTION_MASK_CAUSAL_TOP_LEFT = 1,    /**< query i sees keys 0..i (PyTorch's is_causal) */
  KILN_ATTENTION_MASK_CAUSAL_BOTTOM_RIGHT = 2 /**< query i sees keys 0..i + seq_k - seq_q (FlashAttention's) */
};

/** kiln_attention's options. Set struct_size to sizeof(kiln_attention_options):
 *  later versions append fields, and a library reads only those the caller's
 *  struct_size covers (the rest keep their defaults). */
typedef struct {
  int64_t struct_size;
  int layout;   /**< KILN_ATTENTION_LAYOUT_* */
  int mask;     /**< KILN_ATTENTION_MASK_* */
  double scale; /**< multiplies q k^T; 0: 1 / sqrt(head_dim) */
  /** Nonzero: a sliding window. Query i sees keys from i + shift - window_left
   *  to i + shift + window_right (shift = seq_k - seq_q, or 0 under
   *  KILN_ATTENTION_MASK_CAUSAL_TOP_LEFT); -1: no bound on that side. */
  int has_window;
  int64_t window_left, window_right;
  double softcap; /**< nonzero: scores become softcap * tanh(score / softcap) */
  /** Non-NULL: a packed batch (FlashAttention's varlen). q and out [tokens_q,
   *  heads_q, head_dim], k and v [tokens_k, heads_kv, head_dim], lse [heads_q,
   *  tokens_q]; these int32 [batch + 1] hold each sequence's first token
   *  (read before the launch and checked; layout is then ignored). */
  const DLTensor *cu_seqlens_q, *cu_seqlens_k;
  /* Since ABI 4. */
  /** Non-NULL: a paged KV cache. k and v [pages, page_size, heads_kv,
   *  head_dim] (in layout's order), block_table int32 [batch, max_pages]
   *  each sequence's pages, cache_seqlens int32 [batch] its keys (both read
   *  before the launch and checked). */
  const DLTensor *block_table, *cache_seqlens;
  /** Split-KV: runs each row's keys are taken in (merged by their
   *  log-sum-exp); 0: chosen, 1: none, at most 128. */
  int num_splits;
  /** Nonzero: the caller vouches for block_table and cache_seqlens, which
   *  are then not read on the host (a read that waits for the stream); the
   *  kernel still clamps them into the cache and the table. */
  int unchecked_indices;
  /* Since ABI 6. */
  /** Non-NULL: score and mask modifiers as expressions (FlexAttention's
   *  score_mod and mask_mod): score_mod over score (f32: scale * q.k,
   *  capped), b, h, q_idx, kv_idx (int32, positions within the sequence) and
   *  elements of the named tensors ("score + slopes[h] * cast(kv_idx - q_idx,
   *  f32)", "tanh(score / 30) * 30"); mask_mod over the same but score, a
   *  condition ("doc[q_idx] == doc[kv_idx]", "kv_idx <= q_idx"). The
   *  backward pass takes score_mod's derivative itself. */
  const char *score_mod, *mask_mod;
  /** The tensors the modifiers name: num_tensors 1-D tensors and their names. */
  int num_tensors;
  const char *const *tensor_names;
  const DLTensor *const *tensors;
} kiln_attention_options;

/** KILN_OPS_ABI_VERSION of the library. */
int kiln_ops_abi_version(void);
/** The library's version, e.g. "0.1.0+1e1c6c75f6e1". */
const char *kiln_ops_version(void);
/** Why the last call on this thread failed ("" after a success). */
const char *kiln_ops_last_error(void);

/** Fused pointwise: `expressions` holds one expression per output,
 *  separated by ';', over in0..inN (e.g. "gelu(in0 * in1 + in2); in0 + 1").
 *  Inputs broadcast to the outputs' common shape; 16-bit float inputs
 *  compute in f32; each result is converted to its output's dtype. */
int kiln_pointwise(const char *expressions, const DLTensor *const *inputs, int num_inputs,
                   const DLTensor *const *outputs, int num_outputs, void *stream);

/** out = op(x) along `dim` (negative: from the end); out has x's shape
 *  without dim or with it as 1. Sums of floats accumulate in f32; argmax and
 *  argmin write int64; var divides by (length - correction). */
int kiln_reduce(int op, const DLTensor *x, int64_t dim, const DLTensor *out, int correction, void *stream);

/** A reduction of the expression `prologue` over inputs in0..inN (which
 *  broadcast together) along `dim`, storing the expression `epilogue` of r
 *  (the reduced value) and n (the length); NULL or "" means the input, or
 *  r. E.g. logsumexp: op SUM, prologue "exp(in0)", epilogue "log(r)". */
int kiln_reduce_fused(int op, const char *prologue, const DLTensor *const *inputs, int num_inputs, int64_t dim,
                      const char *epilogue, const DLTensor *out, int correction, void *stream);

/** Along the last dimension. */
int kiln_softmax(const DLTensor *x, const DLTensor *y, void *stream);
int kiln_log_softmax(const DLTensor *x, const DLTensor *y, void *stream);
/** weight, bias, mean and rstd may be NULL. */
int kiln_layer_norm(const DLTensor *x, const DLTensor *weight, const DLTensor *bias, double eps, const DLTensor *y,
                    const DLTensor *mean, const DLTensor *rstd, void *stream);
int kiln_rms_norm(const DLTensor *x, const DLTensor *weight, double eps, const DLTensor *y, const DLTensor *rstd,
                  void *stream);

/** out = activation(alpha * (a x b) + bias) + residual: a [M, K], b [K, N],
 *  out [M, N] (or all with a leading batch dimension; a or b may have batch
 *  1), any strides. a and b both f16, bf16 (tensor cores) or f32; out,
 *  bias ([N]) and residual (out's shape; may be out) f32, f16 or bf16;
 *  bias and residual may be NULL. Accumulates in f32. `precision`
 *  (KILN_PRECISION_*) says how f32 operands multiply. */
int kiln_matmul(const DLTensor *a, const DLTensor *b, const DLTensor *bias, const DLTensor *residual, double alpha,
                int activation, int precision, const DLTensor *out, void *stream);

/** out = activation(alpha * scale_a * scale_b * (a x b) + bias) + residual,
 *  as kiln_matmul (f32 operands at full precision), and for fp8 operands:
 *  a and b float8_e4m3fn or float8_e5m2 (either on each side), K-major (a
 *  with contiguous rows, b the transpose of an [N, K] tensor), as
 *  torch._scaled_mm takes them. scale_a and scale_b (each may be NULL: 1)
 *  are f32 of one element (the tensor's) or of M elements (a's rows) and N
 *  (b's columns); since ABI 6, or both block scales (2-D products, any
 *  strides): scale_a [M, ceil(K / 128)], one a row and 128 K elements,
 *  scale_b [ceil(K / 128), ceil(N / 128)], one a 128 x 128 block of b,
 *  each block's product scaled before it joins the f32 sum. */
int kiln_matmul_scaled(const DLTensor *a, const DLTensor *b, const DLTensor *scale_a, const DLTensor *scale_b,
                       const DLTensor *bias, const DLTensor *residual, double alpha, int activation,
                       const DLTensor *out, void *stream);

/** Since ABI 6: grouped products in one launch (mixture-of-experts layers,
 *  as torch._grouped_mm takes them): a [M, K] holds G groups of rows,
 *  group g ending at offsets[g] (int32 [G], cumulative; read on the device
 *  only: clamped to [0, M] and made non-decreasing); each group's rows
 *  times b[g] (b [G, K, N]) into the same rows of out [M, N]; rows past the
 *  last group are not written. out = activation(alpha * scale_a * scale_b
 *  * (a x b[g])). Dtypes as kiln_matmul_scaled's (fp8 K-major: b's groups
 *  transposes of [N, K] matrices); scale_a f32 of one element or M,
 *  scale_b of one or [G, N] (NULL: 1); `precision` for f32 operands. At
 *  most 4096 groups. */
int kiln_grouped_matmul(const DLTensor *a, const DLTensor *b, const DLTensor *offsets, const DLTensor *scale_a,
                        const DLTensor *scale_b, double alpha, int activation, int precision, const DLTensor *out,
                        void *stream);

/** out = softmax(scale * q k^T + mask) v per batch and head: q and out
 *  [batch, seq_q, heads_q, head_dim], k and v [batch, seq_k, heads_kv,
 *  head_dim] in options->layout's order, all bf16 or all f16, head_dim
 *  at most 256 and contiguous; heads_q a multiple of heads_kv (grouped-query
 *  attention). lse (may be NULL): f32 [batch, heads_q, seq_q], each row's
 *  natural log-sum-exp. options may be NULL (BSHD, no mask, 1/sqrt(head_dim)). */
int kiln_attention(const DLTensor *q, const DLTensor *k, const DLTensor *v, const DLTensor *out, const DLTensor *lse,
                   const kiln_attention_options *options, void *stream);

/** Since ABI 6: the gradients dq, dk, dv (q's, k's, v's shapes and dtype)
 *  of kiln_attention's call with these q, k, v, options and its out and
 *  lse (required), from dout (out's shape). Every option but a paged
 *  cache; grouped-query heads get dk and dv summed over their query heads.
 *  deterministic nonzero: dq the same bits every run (a pass of its own),
 *  else gathered by atomic adds. */
int kiln_attention_backward(const DLTensor *q, const DLTensor *k, const DLTensor *v, const DLTensor *out,
                            const DLTensor *lse, const DLTensor *dout, const DLTensor *dq, const DLTensor *dk,
                            const DLTensor *dv, const kiln_attention_options *options, int deterministic,
                            void *stream);

#ifdef __cplusplus
}
#endif

#endif /* KILN_OPS_H */
