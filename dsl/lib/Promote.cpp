//===- Promote.cpp - literals, dtype promotion, broadcasting, conversion --===//

#include "dsl/lib/Build.h"

#include "compiler/dialect/tile/Tile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <limits>

namespace kiln::detail {

namespace {

std::string literal_text(const Operand &operand) {
  if (operand.kind() == Operand::Kind::floating) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%g", operand.floating());
    return buffer;
  }
  if (operand.is_bool())
    return operand.integer() ? "true" : "false";
  return std::to_string(operand.integer());
}

/// Whether the integer literal fits `dtype` exactly.
bool fits(int64_t value, bool too_large, DType dtype) {
  if (too_large)
    return dtype == DType::u64;
  switch (dtype) {
  case DType::i1: return value == 0 || value == 1;
  case DType::i8: return value >= INT8_MIN && value <= INT8_MAX;
  case DType::i16: return value >= INT16_MIN && value <= INT16_MAX;
  case DType::i32: return value >= INT32_MIN && value <= INT32_MAX;
  case DType::i64: return true;
  case DType::u8: return value >= 0 && value <= UINT8_MAX;
  case DType::u16: return value >= 0 && value <= UINT16_MAX;
  case DType::u32: return value >= 0 && value <= UINT32_MAX;
  case DType::u64: return value >= 0;
  default: return true;
  }
}

/// The largest finite value of a float dtype.
double max_finite(DType dtype) {
  switch (dtype) {
  case DType::f16: return 65504.0;
  case DType::bf16: return 3.3895313892515355e38;
  case DType::f32: return std::numeric_limits<float>::max();
  case DType::f8e4m3: return 448.0;
  case DType::f8e5m2: return 57344.0;
  default: return std::numeric_limits<double>::max();
  }
}

} // namespace

Tensor make_constant(double floating, int64_t integer, bool is_float_value, DType dtype,
                     const Shape &shape, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  mlir::MLIRContext &context = trace.context();
  mlir::Type scalar = scalar_type(context, dtype);
  mlir::TypedAttr attr;
  if (is_float(dtype)) {
    double value = is_float_value ? floating : static_cast<double>(integer);
    attr = mlir::FloatAttr::get(scalar, value);
  } else {
    attr = mlir::IntegerAttr::get(
        scalar, llvm::APInt(bit_width(dtype), static_cast<uint64_t>(integer), false, true));
  }
  mlir::Type type = ir_type(context, number(dtype), shape);
  if (!shape.empty())
    attr = mlir::SplatElementsAttr::get(mlir::cast<mlir::ShapedType>(type), attr);
  auto op = mlir::arith::ConstantOp::create(trace.builder(), trace.location(loc), type, attr);
  return TraceAccess::wrap(op.getResult(), number(dtype), loc);
}

Tensor materialize(const Operand &operand, DType dtype, const char *what) {
  Loc loc = operand.loc();
  switch (operand.kind()) {
  case Operand::Kind::none:
    fail(loc, std::string(what) + " is missing an operand");
  case Operand::Kind::tensor:
    TraceAccess::use(operand.tensor(), loc, what);
    return operand.tensor();
  case Operand::Kind::integer:
    if (operand.is_bool() && dtype != DType::i1 && !is_integer(dtype))
      fail(loc, std::string("the literal ") + literal_text(operand) + " in " + what +
                    " meets " + std::string(name(dtype)) + " values; booleans go with i1");
    if (is_integer(dtype) && !fits(operand.integer(), operand.too_large(), dtype))
      fail(loc, "the literal " + literal_text(operand) + " in " + what + " does not fit " +
                    std::string(name(dtype)) + ", the dtype of the value it meets");
    return make_constant(0, operand.integer(), false, dtype, {}, loc);
  case Operand::Kind::floating: {
    if (!is_float(dtype))
      fail(loc, "the floating literal " + literal_text(operand) + " in " + what + " meets " +
                    std::string(name(dtype)) +
                    " values; convert one side explicitly (e.g. x.to<f32>())");
    double value = operand.floating();
    if (std::isfinite(value) && std::fabs(value) > max_finite(dtype))
      fail(loc, "the literal " + literal_text(operand) + " in " + what +
                    " is beyond the range of " + std::string(name(dtype)) + " (largest " +
                    std::to_string(max_finite(dtype)) + ")");
    return make_constant(value, 0, true, dtype, {}, loc);
  }
  }
  fail(loc, "unknown operand");
}

const Tensor &require_tensor(const Operand &operand, const char *what) {
  if (operand.kind() != Operand::Kind::tensor)
    fail(operand.loc(), std::string(what) + " needs a Tensor here, not " +
                            (operand.present() ? "the literal " + literal_text(operand)
                                               : std::string("nothing")));
  TraceAccess::use(operand.tensor(), operand.loc(), what);
  return operand.tensor();
}

DType promote(DType a, DType b, Loc loc, const char *what) {
  if (a == b)
    return a;
  auto mismatch = [&](const std::string &why) -> DType {
    fail(loc, std::string(what) + " mixes " + std::string(name(a)) + " and " +
                  std::string(name(b)) + ": " + why);
  };
  if (is_float8(a) || is_float8(b))
    return mismatch("8-bit floats only combine with their own dtype; convert with .to<>()");
  if (is_float(a) && is_float(b)) {
    if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16))
      return DType::f32;
    return bit_width(a) >= bit_width(b) ? a : b;
  }
  if (is_float(a))
    return b == DType::i1 ? mismatch("convert the i1 value with .to<>()") : a;
  if (is_float(b))
    return a == DType::i1 ? mismatch("convert the i1 value with .to<>()") : b;
  if (a == DType::i1 || b == DType::i1)
    return mismatch("i1 (boolean) values only combine with i1; convert with .to<>()");
  if (is_unsigned(a) != is_unsigned(b))
    return mismatch("signed and unsigned integers do not mix implicitly; convert one with .to<>()");
  return bit_width(a) >= bit_width(b) ? a : b;
}

Shape broadcast_shape(const Shape &a, const Shape &b, Loc loc, const char *what) {
  Shape result(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < result.size(); ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      fail(loc, std::string(what) + ": shapes " + to_string(a) + " and " + to_string(b) +
                    " do not broadcast (dimension " + std::to_string(result.size() - 1 - i) +
                    ": " + std::to_string(da) + " vs " + std::to_string(db) + ")");
    result[result.size() - 1 - i] = da == 1 ? db : da;
  }
  return result;
}

Tensor broadcast_to_shape(const Tensor &t, const Shape &shape, Loc loc) {
  if (t.shape() == shape)
    return t;
  TraceContext &trace = TraceContext::current(loc);
  mlir::OpBuilder &b = trace.builder();
  mlir::Location l = trace.location(loc);
  mlir::Value value = TraceAccess::use(t, loc);
  mlir::Type type = ir_type(trace.context(), t.type(), shape);
  if (t.is_scalar()) {
    auto splat = tile::SplatOp::create(b, l, type, value);
    return TraceAccess::wrap(splat, t.type(), loc);
  }
  if (t.rank() > static_cast<int>(shape.size()))
    fail(loc, "cannot broadcast " + t.describe() + " to the lower-rank shape " + to_string(shape));
  // Add leading dimensions of size 1, then stretch.
  Shape current = t.shape();
  while (current.size() < shape.size()) {
    current.insert(current.begin(), 1);
    value = tile::ExpandDimsOp::create(b, l, ir_type(trace.context(), t.type(), current), value, 0);
  }
  for (size_t i = 0; i < shape.size(); ++i)
    if (current[i] != shape[i] && current[i] != 1)
      fail(loc, "cannot broadcast " + t.describe() + " to " + to_string(shape) + " (dimension " +
                    std::to_string(i) + ": " + std::to_string(current[i]) + " vs " +
                    std::to_string(shape[i]) + ")");
  if (current != shape)
    value = tile::BroadcastOp::create(b, l, type, value);
  return TraceAccess::wrap(value, t.type(), loc);
}

void require_numbers(const Tensor &t, Loc loc, const char *what) {
  if (t.is_pointer())
    fail(loc, std::string(what) + " takes numbers, not pointers (got " + t.describe() + ")");
}

std::pair<Tensor, Tensor> unify(const Operand &a, const Operand &b, const char *what) {
  std::vector<Tensor> both = unify({&a, &b}, what);
  return {both[0], both[1]};
}

std::vector<Tensor> unify(const std::vector<const Operand *> &operands, const char *what) {
  Loc loc = operands.front()->loc();
  // The dtype: promoted over the Tensor operands; literals then take it.
  bool any_tensor = false;
  DType dtype = DType::i1;
  for (const Operand *operand : operands) {
    if (operand->kind() != Operand::Kind::tensor)
      continue;
    const Tensor &t = operand->tensor();
    TraceAccess::use(t, operand->loc(), what);
    require_numbers(t, operand->loc(), what);
    dtype = any_tensor ? promote(dtype, t.dtype(), operand->loc(), what) : t.dtype();
    any_tensor = true;
  }
  if (!any_tensor)
    fail(loc, std::string(what) + " needs at least one Tensor operand (its literals take that "
                                  "Tensor's dtype)");
  std::vector<Tensor> values;
  Shape shape;
  for (const Operand *operand : operands) {
    Tensor t = materialize(*operand, dtype, what);
    values.push_back(convert(t, dtype, operand->loc()));
    shape = broadcast_shape(shape, t.shape(), operand->loc(), what);
  }
  for (Tensor &value : values)
    value = broadcast_to_shape(value, shape, loc);
  return values;
}

Tensor convert(const Tensor &t, DType to, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  mlir::Value value = TraceAccess::use(t, loc);
  if (t.is_pointer())
    fail(loc, "cannot convert " + t.describe() + " to " + std::string(name(to)) +
                  " (pointers convert with bitcast only)");
  DType from = t.dtype();
  if (from == to)
    return t;
  mlir::OpBuilder &b = trace.builder();
  mlir::Location l = trace.location(loc);
  mlir::MLIRContext &context = trace.context();
  mlir::Type target = ir_type(context, number(to), t.shape());
  auto wrap = [&](mlir::Value v) { return TraceAccess::wrap(v, number(to), loc); };

  if (to == DType::i1) {
    if (is_float8(from))
      return convert(convert(t, DType::f32, loc), to, loc);
    mlir::Value zero = TraceAccess::raw(make_constant(0, 0, false, from, t.shape(), loc));
    if (is_float(from)) // NaN is "true", as in C++
      return wrap(mlir::arith::CmpFOp::create(b, l, mlir::arith::CmpFPredicate::UNE, value, zero));
    return wrap(mlir::arith::CmpIOp::create(b, l, mlir::arith::CmpIPredicate::ne, value, zero));
  }
  if (is_float(from) && is_float(to)) {
    if (is_float8(from) || is_float8(to)) {
      auto op = tile::FpToFpOp::create(b, l, target, value, nullptr);
      if (is_float8(to))
        op.setRounding(tile::RoundingMode::rtne);
      return wrap(op);
    }
    if (bit_width(to) == bit_width(from)) // f16 <-> bf16: neither holds the other
      return convert(convert(t, DType::f32, loc), to, loc);
    if (bit_width(to) > bit_width(from))
      return wrap(mlir::arith::ExtFOp::create(b, l, target, value));
    return wrap(mlir::arith::TruncFOp::create(b, l, target, value));
  }
  if (is_integer(from) && is_float(to)) {
    if (is_float8(to))
      return convert(convert(t, DType::f32, loc), to, loc);
    if (is_unsigned(from) || from == DType::i1)
      return wrap(mlir::arith::UIToFPOp::create(b, l, target, value));
    return wrap(mlir::arith::SIToFPOp::create(b, l, target, value));
  }
  if (is_float(from) && is_integer(to)) {
    // Kiln gives arith.fptosi/fptoui saturating semantics (NaN -> 0).
    if (is_float8(from))
      return convert(convert(t, DType::f32, loc), to, loc);
    if (is_unsigned(to))
      return wrap(mlir::arith::FPToUIOp::create(b, l, target, value));
    return wrap(mlir::arith::FPToSIOp::create(b, l, target, value));
  }
  // Integer to integer.
  int wf = bit_width(from), wt = bit_width(to);
  if (wf == wt) // same bits, other signedness: the IR type does not change
    return wrap(value);
  if (wt < wf)
    return wrap(mlir::arith::TruncIOp::create(b, l, target, value));
  if (is_unsigned(from) || from == DType::i1)
    return wrap(mlir::arith::ExtUIOp::create(b, l, target, value));
  return wrap(mlir::arith::ExtSIOp::create(b, l, target, value));
}

} // namespace kiln::detail
