// The operations of the Kiln DSL. Each records the caller's source line; a
// mistake in shapes or dtypes throws kiln::TraceError naming that line.
// docs/dsl.md describes every operation's semantics.
#pragma once

#include <kiln/precision.h>
#include <kiln/tensor.h>

#include <array>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

//===----------------------------------------------------------------------===//
// The program grid and making blocks
//===----------------------------------------------------------------------===//

/// Index of this program instance along grid axis 0, 1 or 2 (i32 scalar).
Tensor program_id(int axis, Loc loc = Loc::current());
/// Number of program instances along grid axis 0, 1 or 2 (i32 scalar).
Tensor num_programs(int axis, Loc loc = Loc::current());
/// The cluster this program belongs to: programs are launched in clusters
/// of the config's `cluster_size` consecutive programs along axis 0, so
/// this is program_id(0) / cluster_size, the same in the whole cluster
/// (i32 scalar). Copies whose coordinates depend only on such values are
/// shared by the cluster (see docs/tensor-cores.md).
Tensor cluster_id(Loc loc = Loc::current());
/// This program's position in its cluster: program_id(0) % cluster_size.
Tensor cluster_rank(Loc loc = Loc::current());
/// The i32 block [start, start + 1, ..., end - 1]; end - start must be a
/// power of two.
Tensor arange(int64_t start, int64_t end, Loc loc = Loc::current());
/// A block of `shape` (a scalar for {}) filled with `value` as `dtype`.
Tensor full(const Shape &shape, const Operand &value, DType dtype, Loc loc = Loc::current());
Tensor zeros(const Shape &shape, DType dtype, Loc loc = Loc::current());
/// A scalar constant of `dtype`.
Tensor constant(const Operand &value, DType dtype, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Elementwise arithmetic. Operands broadcast like NumPy (scalars splat;
// shapes align at the right; dimensions of size 1 stretch). Mixed dtypes:
// integers widen to the wider of the same signedness, floats to the wider
// float (f16 with bf16 gives f32), an integer meeting a float converts to the
// float's dtype; signed with unsigned, and fp8 with anything else, are errors.
//===----------------------------------------------------------------------===//

/// `+`, `-`: numbers, or a pointer block plus/minus an integer offset block
/// (in elements). `*`; `/` (integers: rounds toward zero, as C++);
/// `%` (integers: sign of the dividend, as C++; floats: fmod).
Tensor operator+(const Operand &a, const Operand &b);
Tensor operator-(const Operand &a, const Operand &b);
Tensor operator*(const Operand &a, const Operand &b);
Tensor operator/(const Operand &a, const Operand &b);
Tensor operator%(const Operand &a, const Operand &b);
Tensor operator-(const Operand &a);
/// Bitwise on integers (on i1: logical); shifts: arithmetic for signed.
Tensor operator&(const Operand &a, const Operand &b);
Tensor operator|(const Operand &a, const Operand &b);
Tensor operator^(const Operand &a, const Operand &b);
Tensor operator<<(const Operand &a, const Operand &b);
Tensor operator>>(const Operand &a, const Operand &b);
Tensor operator~(const Operand &a);
/// Logical not of an i1 value.
Tensor operator!(const Operand &a);
/// Comparisons give i1 (floats: ordered, so any comparison with NaN is
/// false except `!=`).
Tensor operator<(const Operand &a, const Operand &b);
Tensor operator<=(const Operand &a, const Operand &b);
Tensor operator>(const Operand &a, const Operand &b);
Tensor operator>=(const Operand &a, const Operand &b);
Tensor operator==(const Operand &a, const Operand &b);
Tensor operator!=(const Operand &a, const Operand &b);

Tensor &operator+=(Tensor &a, const Operand &b);
Tensor &operator-=(Tensor &a, const Operand &b);
Tensor &operator*=(Tensor &a, const Operand &b);
Tensor &operator/=(Tensor &a, const Operand &b);

/// `cond ? a : b`, elementwise (cond is i1; all three broadcast together).
Tensor where(const Operand &cond, const Operand &a, const Operand &b, Loc loc = Loc::current());
/// Elementwise max/min (floats: NaN if either is NaN).
Tensor maximum(const Operand &a, const Operand &b, Loc loc = Loc::current());
Tensor minimum(const Operand &a, const Operand &b, Loc loc = Loc::current());
Tensor clamp(const Operand &x, const Operand &lo, const Operand &hi, Loc loc = Loc::current());
Tensor abs(const Operand &x, Loc loc = Loc::current());
/// Integer division rounding up: (a + b - 1) / b, for non-negative a and positive b.
Tensor cdiv(const Operand &a, const Operand &b, Loc loc = Loc::current());
constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
/// The least power of two >= n (1 for n <= 1), for sizing blocks at trace
/// time; 2^62 above it, where none fits in int64_t.
constexpr int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n && p < (int64_t(1) << 62))
    p *= 2;
  return p;
}

/// Float math (f16/bf16 are computed in f32 and rounded back).
Tensor exp(const Operand &x, Loc loc = Loc::current());
Tensor exp2(const Operand &x, Loc loc = Loc::current());
Tensor log(const Operand &x, Loc loc = Loc::current());
Tensor log2(const Operand &x, Loc loc = Loc::current());
Tensor sqrt(const Operand &x, Loc loc = Loc::current());
Tensor rsqrt(const Operand &x, Loc loc = Loc::current());
Tensor sin(const Operand &x, Loc loc = Loc::current());
Tensor cos(const Operand &x, Loc loc = Loc::current());
Tensor tanh(const Operand &x, Loc loc = Loc::current());
Tensor sigmoid(const Operand &x, Loc loc = Loc::current());
Tensor erf(const Operand &x, Loc loc = Loc::current());
/// 1 - erf(x), without the cancellation for large x (relative error there).
Tensor erfc(const Operand &x, Loc loc = Loc::current());
/// erfc with a shorter polynomial on the GPU: relative error <= 2e-5 (f32),
/// for values that end in 16-bit formats (whose rounding is 25x coarser).
Tensor fast_erfc(const Operand &x, Loc loc = Loc::current());
Tensor floor(const Operand &x, Loc loc = Loc::current());
Tensor ceil(const Operand &x, Loc loc = Loc::current());
Tensor pow(const Operand &x, const Operand &y, Loc loc = Loc::current());
/// a * b + c with one rounding.
Tensor fma(const Operand &a, const Operand &b, const Operand &c, Loc loc = Loc::current());

/// Same as `x.to(type)` / `x.bitcast(type)`.
Tensor cast(const Tensor &x, DType type, Loc loc = Loc::current());
Tensor bitcast(const Tensor &x, DType type, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

Tensor expand_dims(const Tensor &x, int axis, Loc loc = Loc::current());
Tensor reshape(const Tensor &x, const Shape &shape, Loc loc = Loc::current());
Tensor broadcast_to(const Tensor &x, const Shape &shape, Loc loc = Loc::current());
Tensor trans(const Tensor &x, const std::vector<int> &order = {}, Loc loc = Loc::current());
/// Both operands broadcast to their common shape.
std::pair<Tensor, Tensor> broadcast(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
/// Stacks two blocks of one shape and dtype along a new last axis of size 2.
Tensor join(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
/// Splits a block whose last axis has size 2 into its two halves.
std::pair<Tensor, Tensor> split(const Tensor &x, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

enum class CacheModifier { none, ca, cg, cs, cv, wb, wt };
enum class EvictionPolicy { normal, evict_first, evict_last };
struct LoadOptions {
  CacheModifier cache = CacheModifier::none;
  EvictionPolicy evict = EvictionPolicy::normal;
  bool is_volatile = false;
};
struct StoreOptions {
  CacheModifier cache = CacheModifier::none;
  EvictionPolicy evict = EvictionPolicy::normal;
};

/// Reads through a pointer (block). Where `mask` (i1, broadcast to the
/// pointers' shape) is false nothing is read and the value is `other`
/// (default: undefined; the interpreter gives 0).
Tensor load(const Tensor &ptr, const Tensor &mask = {}, const Operand &other = {},
            LoadOptions options = {}, Loc loc = Loc::current());
/// Writes `value` (broadcast to the pointers' shape, converted to the
/// pointee dtype only if it is a literal) where `mask` is true.
void store(const Tensor &ptr, const Operand &value, const Tensor &mask = {},
           StoreOptions options = {}, Loc loc = Loc::current());

enum class MemSemantic { relaxed, acquire, release, acq_rel };
enum class MemScope { cta, gpu, sys };
struct AtomicOptions {
  MemSemantic sem = MemSemantic::acq_rel;
  MemScope scope = MemScope::gpu;
};

/// Atomic read-modify-writes; each returns the values held before.
Tensor atomic_add(const Tensor &ptr, const Operand &value, const Tensor &mask = {},
                  AtomicOptions options = {}, Loc loc = Loc::current());
Tensor atomic_max(const Tensor &ptr, const Operand &value, const Tensor &mask = {},
                  AtomicOptions options = {}, Loc loc = Loc::current());
Tensor atomic_min(const Tensor &ptr, const Operand &value, const Tensor &mask = {},
                  AtomicOptions options = {}, Loc loc = Loc::current());
Tensor atomic_and(const Tensor &ptr, const Operand &value, const Tensor &mask = {},
                  AtomicOptions options = {}, Loc loc = Loc::current());
Tensor atomic_or(const Tensor &ptr, const Operand &value, const Tensor &mask = {},
                 AtomicOptions options = {}, Loc loc = Loc::current());
Tensor atomic_xor(const Tensor &ptr, const Operand &value, const Tensor &mask = {},
                  AtomicOptions options = {}, Loc loc = Loc::current());
Tensor atomic_xchg(const Tensor &ptr, const Operand &value, const Tensor &mask = {},
                   AtomicOptions options = {}, Loc loc = Loc::current());
/// Where *ptr == cmp, stores value; returns the old values.
Tensor atomic_cas(const Tensor &ptr, const Operand &cmp, const Operand &value,
                  AtomicOptions options = {}, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Reductions, scans and dot
//===----------------------------------------------------------------------===//

/// Reductions along `axis` (the result loses that axis, or keeps it with
/// size 1 with `keep_dims`); without an axis, over all elements (a scalar).
/// f16/bf16/fp8 sums accumulate and return f32; integer sums narrower than
/// 32 bits return i32 (u32 for unsigned). max/min of floats propagate NaN.
Tensor sum(const Tensor &x, int axis, bool keep_dims = false, Loc loc = Loc::current());
Tensor sum(const Tensor &x, Loc loc = Loc::current());
Tensor max(const Tensor &x, int axis, bool keep_dims = false, Loc loc = Loc::current());
Tensor max(const Tensor &x, Loc loc = Loc::current());
Tensor min(const Tensor &x, int axis, bool keep_dims = false, Loc loc = Loc::current());
Tensor min(const Tensor &x, Loc loc = Loc::current());
/// Index (i32) of the first maximum / minimum along `axis`.
Tensor argmax(const Tensor &x, int axis, bool keep_dims = false, Loc loc = Loc::current());
Tensor argmin(const Tensor &x, int axis, bool keep_dims = false, Loc loc = Loc::current());

/// Combines scalars two at a time: (accumulated, next) -> combined.
using Combine = std::function<Tensor(const Tensor &, const Tensor &)>;
/// Combines several values at once: (accumulated..., next...) -> combined...
using CombineMany =
    std::function<std::vector<Tensor>(const std::vector<Tensor> &, const std::vector<Tensor> &)>;

/// A reduction with your own associative, commutative combine function,
/// traced on scalars.
Tensor reduce(const Tensor &x, int axis, const Combine &combine, bool keep_dims = false,
              Loc loc = Loc::current());
std::vector<Tensor> reduce(const std::vector<Tensor> &xs, int axis, const CombineMany &combine,
                           bool keep_dims = false, Loc loc = Loc::current());
/// Inclusive scan along `axis` with an associative combine function.
Tensor scan(const Tensor &x, int axis, const Combine &combine, bool reverse = false,
            Loc loc = Loc::current());
std::vector<Tensor> scan(const std::vector<Tensor> &xs, int axis, const CombineMany &combine,
                         bool reverse = false, Loc loc = Loc::current());
Tensor cumsum(const Tensor &x, int axis, bool reverse = false, Loc loc = Loc::current());
Tensor cumprod(const Tensor &x, int axis, bool reverse = false, Loc loc = Loc::current());

struct DotOptions {
  Precision precision = Precision::tf32;
  /// Accumulator dtype when no accumulator is given: f32 for float inputs
  /// (f16 allowed for f16), i32 for i8.
  DType out_dtype = DType::f32;
};
/// a (MxK) * b (KxN) + acc (MxN); rank 3 adds a batch dimension. Without
/// `acc`, starts from zeros of `options.out_dtype`.
Tensor dot(const Tensor &a, const Tensor &b, const Tensor &acc = {}, DotOptions options = {},
           Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Hints and debugging
//===----------------------------------------------------------------------===//

/// Promises that (along each dimension) values are multiples of `values`;
/// lets the compiler vectorize memory accesses. A false promise gives wrong
/// results.
Tensor multiple_of(const Tensor &x, const std::vector<int> &values, Loc loc = Loc::current());
/// Promises runs of `values` consecutive values along each dimension.
Tensor max_contiguous(const Tensor &x, const std::vector<int> &values, Loc loc = Loc::current());
/// Prints `prefix` and the values from every program instance.
void print(const std::string &prefix, const std::vector<Tensor> &values = {}, bool hex = false,
           Loc loc = Loc::current());
/// Stops the kernel with `message` if any element of `condition` is false.
void device_assert(const Tensor &condition, const std::string &message, Loc loc = Loc::current());

} // namespace kiln
