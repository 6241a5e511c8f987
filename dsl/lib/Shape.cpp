//===- Shape.cpp - the grid, constants, and shape operations --------------===//

#include "dsl/lib/Build.h"

#include "compiler/dialect/tile/Tile.h"

namespace kiln {

using namespace detail;

namespace {
tile::GridDim grid_dim(int axis, Loc loc, const char *what) {
  if (axis < 0 || axis > 2)
    fail(loc, std::string(what) + ": grid axis must be 0, 1 or 2, got " + std::to_string(axis));
  return static_cast<tile::GridDim>(axis);
}

int normalize_axis(int axis, int rank, Loc loc, const char *what, bool inclusive = false) {
  int limit = inclusive ? rank + 1 : rank;
  int normalized = axis < 0 ? axis + limit : axis;
  if (normalized < 0 || normalized >= limit)
    fail(loc, std::string(what) + ": axis " + std::to_string(axis) +
                  " is out of range for rank " + std::to_string(rank) + " (valid: " +
                  std::to_string(-limit) + ".." + std::to_string(limit - 1) + ")");
  return normalized;
}
} // namespace

Tensor program_id(int axis, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  auto op = tile::ProgramIdOp::create(trace.builder(), trace.location(loc),
                                      trace.builder().getI32Type(),
                                      grid_dim(axis, loc, "program_id"));
  return TraceAccess::wrap(op, number(DType::i32), loc);
}

Tensor num_programs(int axis, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  auto op = tile::NumProgramsOp::create(trace.builder(), trace.location(loc),
                                        trace.builder().getI32Type(),
                                        grid_dim(axis, loc, "num_programs"));
  return TraceAccess::wrap(op, number(DType::i32), loc);
}

Tensor cluster_id(Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  auto op = tile::ClusterIdOp::create(trace.builder(), trace.location(loc), trace.builder().getI32Type());
  return TraceAccess::wrap(op, number(DType::i32), loc);
}

Tensor cluster_rank(Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  auto op = tile::ClusterRankOp::create(trace.builder(), trace.location(loc), trace.builder().getI32Type());
  return TraceAccess::wrap(op, number(DType::i32), loc);
}

Tensor arange(int64_t start, int64_t end, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  int64_t length = end - start;
  if (start < 0 || end > INT32_MAX)
    fail(loc, "arange(" + std::to_string(start) + ", " + std::to_string(end) +
                  "): bounds must lie in [0, 2^31)");
  if (length <= 0)
    fail(loc, "arange(" + std::to_string(start) + ", " + std::to_string(end) +
                  "): end must be greater than start");
  if ((length & (length - 1)) != 0)
    fail(loc, "arange(" + std::to_string(start) + ", " + std::to_string(end) + ") has " +
                  std::to_string(length) + " elements; block sizes must be powers of two");
  auto type = mlir::RankedTensorType::get({length}, trace.builder().getI32Type());
  auto op = tile::RangeOp::create(trace.builder(), trace.location(loc), type,
                                  static_cast<uint32_t>(start), static_cast<uint32_t>(end));
  return TraceAccess::wrap(op, number(DType::i32), loc);
}

Tensor full(const Shape &shape, const Operand &value, DType dtype, Loc loc) {
  for (int64_t d : shape)
    if (d <= 0 || (d & (d - 1)) != 0)
      fail(loc, "full/zeros: block shape " + to_string(shape) +
                    " must have power-of-two dimensions");
  check_block_size(number(dtype), shape, loc);
  if (value.kind() == Operand::Kind::tensor) {
    Tensor v = convert(value.tensor(), dtype, loc);
    if (!v.is_scalar())
      fail(loc, "full: the fill value must be a scalar, got " + v.describe());
    return broadcast_to_shape(v, shape, loc);
  }
  Tensor scalar = materialize(Operand(value), dtype, "full");
  return broadcast_to_shape(scalar, shape, loc);
}

Tensor zeros(const Shape &shape, DType dtype, Loc loc) {
  return full(shape, Operand(0, loc), dtype, loc);
}

Tensor constant(const Operand &value, DType dtype, Loc loc) { return full({}, value, dtype, loc); }

Tensor Tensor::expand_dims(int axis, Loc loc) const { return kiln::expand_dims(*this, axis, loc); }
Tensor Tensor::reshape(const Shape &shape, Loc loc) const { return kiln::reshape(*this, shape, loc); }
Tensor Tensor::broadcast_to(const Shape &shape, Loc loc) const {
  return kiln::broadcast_to(*this, shape, loc);
}
Tensor Tensor::trans(const std::vector<int> &order, Loc loc) const {
  return kiln::trans(*this, order, loc);
}

Tensor expand_dims(const Tensor &x, int axis, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  mlir::Value value = TraceAccess::use(x, loc);
  if (x.is_scalar())
    fail(loc, "expand_dims of " + x.describe() + ": make a block first (e.g. full({1}, x, dtype))");
  int normalized = normalize_axis(axis, x.rank(), loc, "expand_dims", /*inclusive=*/true);
  Shape shape = x.shape();
  shape.insert(shape.begin() + normalized, 1);
  auto op = tile::ExpandDimsOp::create(trace.builder(), trace.location(loc),
                                       ir_type(trace.context(), x.type(), shape), value,
                                       static_cast<uint32_t>(normalized));
  return TraceAccess::wrap(op, x.type(), loc);
}

Tensor reshape(const Tensor &x, const Shape &shape, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  mlir::Value value = TraceAccess::use(x, loc);
  for (int64_t d : shape)
    if (d <= 0 || (d & (d - 1)) != 0)
      fail(loc, "reshape to " + to_string(shape) + ": dimensions must be powers of two");
  check_block_size(x.type(), shape, loc);
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  if (x.is_scalar() || count != x.numel())
    fail(loc, "reshape of " + x.describe() + " (" + std::to_string(x.numel()) +
                  " elements) to " + to_string(shape) + " (" + std::to_string(count) +
                  " elements)");
  if (shape == x.shape())
    return x;
  auto op = tile::ReshapeOp::create(trace.builder(), trace.location(loc),
                                    ir_type(trace.context(), x.type(), shape), value);
  return TraceAccess::wrap(op, x.type(), loc);
}

Tensor broadcast_to(const Tensor &x, const Shape &shape, Loc loc) {
  TraceAccess::use(x, loc);
  check_block_size(x.type(), shape, loc);
  Shape common = broadcast_shape(x.shape(), shape, loc, "broadcast_to");
  if (common != shape)
    fail(loc, "broadcast_to: " + x.describe() + " does not broadcast to " + to_string(shape));
  return broadcast_to_shape(x, shape, loc);
}

std::pair<Tensor, Tensor> broadcast(const Tensor &a, const Tensor &b, Loc loc) {
  TraceAccess::use(a, loc);
  TraceAccess::use(b, loc);
  Shape shape = broadcast_shape(a.shape(), b.shape(), loc, "broadcast");
  return {broadcast_to_shape(a, shape, loc), broadcast_to_shape(b, shape, loc)};
}

Tensor trans(const Tensor &x, const std::vector<int> &order_in, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  mlir::Value value = TraceAccess::use(x, loc);
  std::vector<int> order = order_in;
  if (order.empty())
    for (int i = x.rank() - 1; i >= 0; --i)
      order.push_back(i);
  std::vector<bool> seen(x.rank(), false);
  bool valid = static_cast<int>(order.size()) == x.rank();
  for (int d : order) {
    valid = valid && d >= 0 && d < x.rank() && !seen[d];
    if (valid)
      seen[d] = true;
  }
  if (!valid) {
    std::string text;
    for (int d : order)
      text += (text.empty() ? "" : ", ") + std::to_string(d);
    fail(loc, "trans of " + x.describe() + ": order {" + text + "} is not a permutation of 0.." +
                  std::to_string(x.rank() - 1));
  }
  Shape shape;
  for (int d : order)
    shape.push_back(x.shape()[d]);
  auto op = tile::TransOp::create(trace.builder(), trace.location(loc),
                                  ir_type(trace.context(), x.type(), shape), value,
                                  llvm::ArrayRef<int32_t>(order.data(), order.size()));
  return TraceAccess::wrap(op, x.type(), loc);
}

Tensor join(const Tensor &a, const Tensor &b, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  mlir::Value va = TraceAccess::use(a, loc), vb = TraceAccess::use(b, loc);
  if (a.type() != b.type() || a.shape() != b.shape())
    fail(loc, "join needs two blocks of one shape and type, got " + a.describe() + " and " +
                  b.describe());
  if (a.is_scalar())
    fail(loc, "join takes blocks, got " + a.describe());
  Shape shape = a.shape();
  shape.push_back(2);
  auto op = tile::JoinOp::create(trace.builder(), trace.location(loc),
                                 ir_type(trace.context(), a.type(), shape), va, vb);
  return TraceAccess::wrap(op, a.type(), loc);
}

std::pair<Tensor, Tensor> split(const Tensor &x, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  mlir::Value value = TraceAccess::use(x, loc);
  if (x.is_scalar() || x.shape().back() != 2)
    fail(loc, "split needs a block whose last dimension is 2, got " + x.describe());
  Shape shape(x.shape().begin(), x.shape().end() - 1);
  if (shape.empty())
    fail(loc, "split of " + x.describe() + " would give scalars; reshape it to 1x2 first");
  mlir::Type type = ir_type(trace.context(), x.type(), shape);
  auto op = tile::SplitOp::create(trace.builder(), trace.location(loc), type, type, value);
  return {TraceAccess::wrap(op.getLhs(), x.type(), loc),
          TraceAccess::wrap(op.getRhs(), x.type(), loc)};
}

} // namespace kiln
