//===- Reduce.cpp - reductions, scans and dot -----------------------------===//

#include "dsl/lib/Build.h"

#include "compiler/dialect/tile/Tile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace kiln {

using namespace detail;
namespace arith = mlir::arith;

namespace {

int normalize_axis(int axis, int rank, Loc loc, const char *what) {
  int normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    fail(loc, std::string(what) + ": axis " + std::to_string(axis) +
                  " is out of range for rank " + std::to_string(rank) + " (valid: " +
                  std::to_string(-rank) + ".." + std::to_string(rank - 1) + ")");
  return normalized;
}

/// Checks the operands of a reduction or scan: blocks of numbers, one shape.
void check_operands(const std::vector<Tensor> &xs, Loc loc, const char *what) {
  if (xs.empty())
    fail(loc, std::string(what) + " needs at least one operand");
  for (const Tensor &x : xs) {
    TraceAccess::use(x, loc, what);
    require_numbers(x, loc, what);
    if (x.is_scalar())
      fail(loc, std::string(what) + " takes blocks, got " + x.describe());
    if (x.shape() != xs.front().shape())
      fail(loc, std::string(what) + ": operands must share one shape, got " +
                    xs.front().describe() + " and " + x.describe());
  }
}

/// Traces `combine` inside `region` on scalar arguments of the operands'
/// types and ends it with a return op of type `ReturnOp`.
template <class ReturnOp>
void trace_combine(mlir::Region &region, const std::vector<Tensor> &xs, const CombineMany &combine,
                   Loc loc, const char *kind) {
  TraceContext &trace = TraceContext::current(loc);
  trace.check_nesting(loc, kind);
  mlir::OpBuilder &b = trace.builder();
  mlir::OpBuilder::InsertionGuard guard(b);
  llvm::SmallVector<mlir::Type> types;
  llvm::SmallVector<mlir::Location> locations;
  for (int round = 0; round < 2; ++round)
    for (const Tensor &x : xs) {
      types.push_back(scalar_type(trace.context(), x.dtype()));
      locations.push_back(trace.location(loc));
    }
  mlir::Block *block = b.createBlock(&region, {}, types, locations);
  uint32_t scope = trace.open_scope(kind, loc, /*isolated=*/true);
  struct Close {
    TraceContext &trace;
    uint32_t scope;
    ~Close() { trace.close_scope(scope); }
  } close{trace, scope};
  std::vector<Tensor> acc, next;
  for (size_t i = 0; i < xs.size(); ++i) {
    acc.push_back(TraceAccess::wrap(block->getArgument(i), number(xs[i].dtype()), loc));
    next.push_back(TraceAccess::wrap(block->getArgument(xs.size() + i), number(xs[i].dtype()), loc));
  }
  std::vector<Tensor> results = combine(acc, next);
  if (results.size() != xs.size())
    fail(loc, std::string(kind) + " returned " + std::to_string(results.size()) +
                  " value(s) for " + std::to_string(xs.size()) + " operand(s)");
  llvm::SmallVector<mlir::Value> yielded;
  for (size_t i = 0; i < results.size(); ++i) {
    mlir::Value v = TraceAccess::use(results[i], loc, "the combine function's result");
    if (!results[i].is_scalar() || results[i].dtype() != xs[i].dtype() || results[i].is_pointer())
      fail(loc, std::string(kind) + " must return " +
                    describe(number(xs[i].dtype()), {}) + " for operand #" + std::to_string(i) +
                    ", got " + results[i].describe());
    yielded.push_back(v);
  }
  ReturnOp::create(b, trace.location(loc), yielded);
}

CombineMany single(const Combine &combine) {
  return [combine](const std::vector<Tensor> &a, const std::vector<Tensor> &b) {
    return std::vector<Tensor>{combine(a[0], b[0])};
  };
}

/// Accumulation dtype of sums and products.
DType accumulation_dtype(DType dtype) {
  if (dtype == DType::f16 || dtype == DType::bf16 || is_float8(dtype))
    return DType::f32;
  if (dtype == DType::i1 || dtype == DType::i8 || dtype == DType::i16)
    return DType::i32;
  if (dtype == DType::u8 || dtype == DType::u16)
    return DType::u32;
  return dtype;
}

/// All axes of `x` reduced one at a time (for the axis-less reductions).
Tensor reduce_all(Tensor x, const std::function<Tensor(const Tensor &, int)> &reduce_axis, Loc loc) {
  TraceAccess::use(x, loc);
  if (x.is_scalar())
    fail(loc, "reduction of " + x.describe() + ": there is nothing to reduce");
  if (x.rank() > 1)
    x = reshape(x, {x.numel()}, loc);
  return reduce_axis(x, 0);
}

Tensor max_or_min(const Tensor &x_in, int axis, bool keep_dims, bool is_max, Loc loc) {
  const char *what = is_max ? "max" : "min";
  check_operands({x_in}, loc, what);
  if (is_float8(x_in.dtype()))
    fail(loc, std::string(what) + " of " + x_in.describe() + ": convert 8-bit floats first");
  return reduce(x_in, axis, [is_max, loc](const Tensor &a, const Tensor &b) {
    return is_max ? maximum(a, b, loc) : minimum(a, b, loc);
  }, keep_dims, loc);
}

Tensor arg_extreme(const Tensor &x, int axis_in, bool keep_dims, bool is_max, Loc loc) {
  const char *what = is_max ? "argmax" : "argmin";
  check_operands({x}, loc, what);
  if (is_float8(x.dtype()))
    fail(loc, std::string(what) + " of " + x.describe() + ": convert 8-bit floats first");
  int axis = normalize_axis(axis_in, x.rank(), loc, what);
  // Indices along `axis`, broadcast to x's shape.
  Tensor index = arange(0, x.shape()[axis], loc);
  Shape index_shape(x.rank(), 1);
  index_shape[axis] = x.shape()[axis];
  index = broadcast_to_shape(reshape(index, index_shape, loc), x.shape(), loc);
  bool fp = is_float(x.dtype());
  auto combine = [=](const std::vector<Tensor> &a, const std::vector<Tensor> &b) {
    const Tensor &va = a[0], &ia = a[1], &vb = b[0], &ib = b[1];
    Tensor better = is_max ? vb > va : vb < va;
    Tensor tie = (vb == va) & (ib < ia);
    Tensor take_b = better | tie;
    if (fp) { // NaN counts as the extreme value, first NaN wins (as in PyTorch)
      Tensor nan_a = va != va, nan_b = vb != vb;
      take_b = (nan_b & ((!nan_a) | (ib < ia))) | ((!nan_a) & (!nan_b) & take_b);
    }
    return std::vector<Tensor>{where(take_b, vb, va, loc), where(take_b, ib, ia, loc)};
  };
  return reduce({x, index}, axis, combine, keep_dims, loc)[1];
}

} // namespace

std::vector<Tensor> reduce(const std::vector<Tensor> &xs, int axis_in, const CombineMany &combine,
                           bool keep_dims, Loc loc) {
  check_operands(xs, loc, "reduce");
  int axis = normalize_axis(axis_in, xs.front().rank(), loc, "reduce");
  TraceContext &trace = TraceContext::current(loc);
  Shape shape = xs.front().shape();
  shape.erase(shape.begin() + axis);
  llvm::SmallVector<mlir::Type> result_types;
  llvm::SmallVector<mlir::Value> operands;
  for (const Tensor &x : xs) {
    result_types.push_back(ir_type(trace.context(), number(x.dtype()), shape));
    operands.push_back(TraceAccess::use(x, loc));
  }
  auto op = tile::ReduceOp::create(trace.builder(), trace.location(loc), result_types, operands,
                                   static_cast<uint32_t>(axis));
  trace_combine<tile::ReduceReturnOp>(op.getCombineOp(), xs, combine, loc,
                                      "reduce's combine function");
  std::vector<Tensor> results;
  for (size_t i = 0; i < xs.size(); ++i) {
    Tensor r = TraceAccess::wrap(op.getResult(i), number(xs[i].dtype()), loc);
    if (keep_dims)
      r = r.is_scalar() ? full({1}, r, r.dtype(), loc) : expand_dims(r, axis, loc);
    results.push_back(r);
  }
  return results;
}

Tensor reduce(const Tensor &x, int axis, const Combine &combine, bool keep_dims, Loc loc) {
  return reduce(std::vector<Tensor>{x}, axis, single(combine), keep_dims, loc)[0];
}

std::vector<Tensor> scan(const std::vector<Tensor> &xs, int axis_in, const CombineMany &combine,
                         bool reverse, Loc loc) {
  check_operands(xs, loc, "scan");
  int axis = normalize_axis(axis_in, xs.front().rank(), loc, "scan");
  TraceContext &trace = TraceContext::current(loc);
  llvm::SmallVector<mlir::Type> result_types;
  llvm::SmallVector<mlir::Value> operands;
  for (const Tensor &x : xs) {
    result_types.push_back(ir_type(trace.context(), number(x.dtype()), x.shape()));
    operands.push_back(TraceAccess::use(x, loc));
  }
  auto op = tile::ScanOp::create(trace.builder(), trace.location(loc), result_types, operands,
                                 static_cast<uint32_t>(axis), reverse);
  trace_combine<tile::ScanReturnOp>(op.getCombineOp(), xs, combine, loc,
                                    "scan's combine function");
  std::vector<Tensor> results;
  for (size_t i = 0; i < xs.size(); ++i)
    results.push_back(TraceAccess::wrap(op.getResult(i), number(xs[i].dtype()), loc));
  return results;
}

Tensor scan(const Tensor &x, int axis, const Combine &combine, bool reverse, Loc loc) {
  return scan(std::vector<Tensor>{x}, axis, single(combine), reverse, loc)[0];
}

Tensor sum(const Tensor &x, int axis, bool keep_dims, Loc loc) {
  check_operands({x}, loc, "sum");
  Tensor widened = convert(x, accumulation_dtype(x.dtype()), loc);
  return reduce(widened, axis, [loc](const Tensor &a, const Tensor &b) { return Operand(a, loc) + b; },
                keep_dims, loc);
}

Tensor sum(const Tensor &x, Loc loc) {
  return reduce_all(x, [loc](const Tensor &t, int axis) { return sum(t, axis, false, loc); }, loc);
}

Tensor max(const Tensor &x, int axis, bool keep_dims, Loc loc) {
  return max_or_min(x, axis, keep_dims, true, loc);
}
Tensor max(const Tensor &x, Loc loc) {
  return reduce_all(x, [loc](const Tensor &t, int axis) { return max(t, axis, false, loc); }, loc);
}
Tensor min(const Tensor &x, int axis, bool keep_dims, Loc loc) {
  return max_or_min(x, axis, keep_dims, false, loc);
}
Tensor min(const Tensor &x, Loc loc) {
  return reduce_all(x, [loc](const Tensor &t, int axis) { return min(t, axis, false, loc); }, loc);
}

Tensor argmax(const Tensor &x, int axis, bool keep_dims, Loc loc) {
  return arg_extreme(x, axis, keep_dims, true, loc);
}
Tensor argmin(const Tensor &x, int axis, bool keep_dims, Loc loc) {
  return arg_extreme(x, axis, keep_dims, false, loc);
}

Tensor cumsum(const Tensor &x, int axis, bool reverse, Loc loc) {
  check_operands({x}, loc, "cumsum");
  Tensor widened = convert(x, accumulation_dtype(x.dtype()), loc);
  return scan(widened, axis, [loc](const Tensor &a, const Tensor &b) { return Operand(a, loc) + b; },
              reverse, loc);
}

Tensor cumprod(const Tensor &x, int axis, bool reverse, Loc loc) {
  check_operands({x}, loc, "cumprod");
  Tensor widened = convert(x, accumulation_dtype(x.dtype()), loc);
  return scan(widened, axis, [loc](const Tensor &a, const Tensor &b) { return Operand(a, loc) * b; },
              reverse, loc);
}

Tensor dot(const Tensor &a, const Tensor &b, const Tensor &acc_in, DotOptions options, Loc loc) {
  TraceAccess::use(a, loc, "dot's a");
  TraceAccess::use(b, loc, "dot's b");
  require_numbers(a, loc, "dot");
  require_numbers(b, loc, "dot");
  if ((a.rank() != 2 && a.rank() != 3) || b.rank() != a.rank())
    fail(loc, "dot multiplies 2-D blocks (3-D with a batch dimension), got " + a.describe() +
                  " and " + b.describe());
  int r = a.rank();
  int64_t m = a.shape()[r - 2], k = a.shape()[r - 1], kb = b.shape()[r - 2], n = b.shape()[r - 1];
  if (k != kb)
    fail(loc, "dot: inner dimensions differ: a is " + a.describe() + " (K = " + std::to_string(k) +
                  "), b is " + b.describe() + " (K = " + std::to_string(kb) + ")");
  if (a.dtype() != b.dtype() && !(is_float8(a.dtype()) && is_float8(b.dtype())))
    fail(loc, "dot: operand dtypes differ (" + a.describe() + " and " + b.describe() +
                  "); convert one with .to<>()");
  Shape out_shape = a.shape();
  out_shape[r - 1] = n;
  if (r == 3 && a.shape()[0] != b.shape()[0])
    fail(loc, "dot: batch sizes differ (" + a.describe() + " and " + b.describe() + ")");
  Tensor acc = acc_in;
  if (!acc.valid()) {
    DType out = options.out_dtype;
    if (a.dtype() == DType::i8 && out == DType::f32)
      out = DType::i32;
    acc = zeros(out_shape, out, loc);
  }
  TraceAccess::use(acc, loc, "dot's accumulator");
  if (acc.shape() != out_shape)
    fail(loc, "dot: the accumulator is " + acc.describe() + " but a x b is " +
                  to_string(out_shape) + " (" + std::to_string(m) + "x" + std::to_string(n) + ")");
  tile::InputPrecision precision = tile::InputPrecision::ieee;
  if (a.dtype() == DType::f32)
    precision = static_cast<tile::InputPrecision>(
        options.precision == Precision::tf32     ? tile::InputPrecision::tf32
        : options.precision == Precision::tf32x3 ? tile::InputPrecision::tf32x3
                                                 : tile::InputPrecision::ieee);
  TraceContext &trace = TraceContext::current(loc);
  mlir::Value accumulator = TraceAccess::use(acc, loc);
  auto op = tile::DotOp::create(trace.builder(), trace.location(loc), accumulator.getType(),
                                TraceAccess::use(a, loc), TraceAccess::use(b, loc), accumulator,
                                precision);
  verify_op(op, loc);
  return TraceAccess::wrap(op, acc.type(), loc);
}

} // namespace kiln
