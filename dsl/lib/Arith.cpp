//===- Arith.cpp - operators, elementwise math and casts ------------------===//

#include "dsl/lib/Build.h"

#include "compiler/dialect/tile/Tile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace kiln {

using namespace detail;
namespace arith = mlir::arith;
namespace math = mlir::math;

namespace {

struct Builder {
  TraceContext &trace;
  mlir::OpBuilder &b;
  mlir::Location l;
  Loc loc;
  explicit Builder(Loc loc)
      : trace(TraceContext::current(loc)), b(trace.builder()), l(trace.location(loc)), loc(loc) {}
  Tensor wrap(mlir::Value v, DType dtype) const { return TraceAccess::wrap(v, number(dtype), loc); }
  mlir::Value use(const Tensor &t) const { return TraceAccess::use(t, loc); }
};

enum class BinaryKind { add, sub, mul, div, rem, band, bor, bxor, shl, shr };

const char *symbol(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::add: return "'+'";
  case BinaryKind::sub: return "'-'";
  case BinaryKind::mul: return "'*'";
  case BinaryKind::div: return "'/'";
  case BinaryKind::rem: return "'%'";
  case BinaryKind::band: return "'&'";
  case BinaryKind::bor: return "'|'";
  case BinaryKind::bxor: return "'^'";
  case BinaryKind::shl: return "'<<'";
  case BinaryKind::shr: return "'>>'";
  }
  return "?";
}

bool is_pointer_operand(const Operand &operand) {
  return operand.kind() == Operand::Kind::tensor && operand.tensor().valid() &&
         operand.tensor().is_pointer();
}

/// `ptr + offset` (or `- offset`): advances pointers by whole elements.
Tensor pointer_offset(const Operand &ptr_operand, const Operand &offset_operand, bool negate,
                      Loc loc) {
  const char *what = negate ? "pointer '-'" : "pointer '+'";
  const Tensor &ptr = require_tensor(ptr_operand, what);
  if (is_pointer_operand(offset_operand))
    fail(loc, std::string(what) + ": both operands are pointers (" + ptr.describe() + " and " +
                  offset_operand.tensor().describe() + "); offsets are integers");
  Tensor offset = materialize(offset_operand, DType::i32, what);
  if (!is_integer(offset.dtype()) || offset.dtype() == DType::i1)
    fail(loc, std::string(what) + ": the offset must be an integer, got " + offset.describe());
  if (is_unsigned(offset.dtype())) // addptr sign-extends: widen unsigned offsets first
    offset = convert(offset, bit_width(offset.dtype()) < 64 ? DType::i64 : DType::u64, loc);
  if (negate)
    offset = make_constant(0, 0, false, offset.dtype(), {}, loc) - offset;
  Shape shape = broadcast_shape(ptr.shape(), offset.shape(), loc, what);
  Tensor p = broadcast_to_shape(ptr, shape, loc);
  Tensor o = broadcast_to_shape(offset, shape, loc);
  Builder bb(loc);
  auto op = tile::AddPtrOp::create(bb.b, bb.l, bb.use(p).getType(), bb.use(p), bb.use(o));
  return TraceAccess::wrap(op, ptr.type(), loc);
}

Tensor binary(BinaryKind kind, const Operand &a_operand, const Operand &b_operand) {
  Loc loc = a_operand.loc();
  if (kind == BinaryKind::add && is_pointer_operand(b_operand) && !is_pointer_operand(a_operand))
    return pointer_offset(b_operand, a_operand, false, loc);
  if ((kind == BinaryKind::add || kind == BinaryKind::sub) && is_pointer_operand(a_operand))
    return pointer_offset(a_operand, b_operand, kind == BinaryKind::sub, loc);
  if (is_pointer_operand(b_operand))
    fail(loc, std::string(symbol(kind)) + " does not apply to pointers (got " +
                  b_operand.tensor().describe() + ")");

  auto [x, y] = unify(a_operand, b_operand, symbol(kind));
  DType dtype = x.dtype();
  Builder bb(loc);
  mlir::Value a = bb.use(x), b = bb.use(y);
  bool fp = is_float(dtype), uns = is_unsigned(dtype) || dtype == DType::i1;
  auto need_int = [&] {
    if (fp)
      fail(loc, std::string(symbol(kind)) + " takes integers, got " + x.describe());
  };
  if (is_float8(dtype))
    fail(loc, std::string(symbol(kind)) + " on " + x.describe() +
                  ": 8-bit floats are for storage; convert to f16/f32 to compute");
  mlir::Value r;
  switch (kind) {
  case BinaryKind::add:
    r = fp ? arith::AddFOp::create(bb.b, bb.l, a, b).getResult()
           : arith::AddIOp::create(bb.b, bb.l, a, b).getResult();
    break;
  case BinaryKind::sub:
    r = fp ? arith::SubFOp::create(bb.b, bb.l, a, b).getResult()
           : arith::SubIOp::create(bb.b, bb.l, a, b).getResult();
    break;
  case BinaryKind::mul:
    r = fp ? arith::MulFOp::create(bb.b, bb.l, a, b).getResult()
           : arith::MulIOp::create(bb.b, bb.l, a, b).getResult();
    break;
  case BinaryKind::div:
    if (dtype == DType::i1)
      fail(loc, "'/' does not apply to i1 values");
    r = fp    ? arith::DivFOp::create(bb.b, bb.l, a, b).getResult()
        : uns ? arith::DivUIOp::create(bb.b, bb.l, a, b).getResult()
              : arith::DivSIOp::create(bb.b, bb.l, a, b).getResult();
    break;
  case BinaryKind::rem:
    if (dtype == DType::i1)
      fail(loc, "'%' does not apply to i1 values");
    r = fp    ? arith::RemFOp::create(bb.b, bb.l, a, b).getResult()
        : uns ? arith::RemUIOp::create(bb.b, bb.l, a, b).getResult()
              : arith::RemSIOp::create(bb.b, bb.l, a, b).getResult();
    break;
  case BinaryKind::band:
    need_int();
    r = arith::AndIOp::create(bb.b, bb.l, a, b);
    break;
  case BinaryKind::bor:
    need_int();
    r = arith::OrIOp::create(bb.b, bb.l, a, b);
    break;
  case BinaryKind::bxor:
    need_int();
    r = arith::XOrIOp::create(bb.b, bb.l, a, b);
    break;
  case BinaryKind::shl:
    need_int();
    r = arith::ShLIOp::create(bb.b, bb.l, a, b);
    break;
  case BinaryKind::shr:
    need_int();
    r = uns ? arith::ShRUIOp::create(bb.b, bb.l, a, b).getResult()
            : arith::ShRSIOp::create(bb.b, bb.l, a, b).getResult();
    break;
  }
  return bb.wrap(r, dtype);
}

enum class Compare { lt, le, gt, ge, eq, ne };

Tensor compare(Compare kind, const Operand &a_operand, const Operand &b_operand) {
  static const char *names[] = {"'<'", "'<='", "'>'", "'>='", "'=='", "'!='"};
  const char *what = names[static_cast<int>(kind)];
  Loc loc = a_operand.loc();
  auto [x, y] = unify(a_operand, b_operand, what);
  DType dtype = x.dtype();
  if (is_float8(dtype)) {
    x = convert(x, DType::f32, loc);
    y = convert(y, DType::f32, loc);
  }
  Builder bb(loc);
  mlir::Value a = bb.use(x), b = bb.use(y);
  if (is_float(dtype)) {
    static const arith::CmpFPredicate predicates[] = {
        arith::CmpFPredicate::OLT, arith::CmpFPredicate::OLE, arith::CmpFPredicate::OGT,
        arith::CmpFPredicate::OGE, arith::CmpFPredicate::OEQ, arith::CmpFPredicate::UNE};
    return bb.wrap(arith::CmpFOp::create(bb.b, bb.l, predicates[static_cast<int>(kind)], a, b),
                   DType::i1);
  }
  bool uns = is_unsigned(dtype) || dtype == DType::i1;
  static const arith::CmpIPredicate signed_predicates[] = {
      arith::CmpIPredicate::slt, arith::CmpIPredicate::sle, arith::CmpIPredicate::sgt,
      arith::CmpIPredicate::sge, arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne};
  static const arith::CmpIPredicate unsigned_predicates[] = {
      arith::CmpIPredicate::ult, arith::CmpIPredicate::ule, arith::CmpIPredicate::ugt,
      arith::CmpIPredicate::uge, arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne};
  auto predicate = (uns ? unsigned_predicates : signed_predicates)[static_cast<int>(kind)];
  return bb.wrap(arith::CmpIOp::create(bb.b, bb.l, predicate, a, b), DType::i1);
}

/// A float Tensor to compute math on: f16/bf16/fp8 widen to f32 (the result
/// is rounded back by `finish_math`).
Tensor math_input(const Operand &x, const char *what) {
  const Tensor &t = require_tensor(x, what);
  require_numbers(t, x.loc(), what);
  if (!is_float(t.dtype()))
    fail(x.loc(), std::string(what) + " takes floats, got " + t.describe() +
                      "; convert with .to<f32>()");
  if (t.dtype() == DType::f32 || t.dtype() == DType::f64)
    return t;
  return convert(t, DType::f32, x.loc());
}

Tensor finish_math(const Tensor &result, DType original, Loc loc) {
  return convert(result, original, loc);
}

/// `extra`: the op's further builder arguments (fast-math flags).
template <class MathOp, class... Extra> Tensor unary_math(const Operand &x, const char *what, Loc loc, Extra... extra) {
  Tensor in = math_input(x, what);
  DType original = x.tensor().dtype();
  Builder bb(loc);
  mlir::Value r = MathOp::create(bb.b, bb.l, bb.use(in), extra...);
  return finish_math(bb.wrap(r, in.dtype()), original, loc);
}

} // namespace

Tensor operator+(const Operand &a, const Operand &b) { return binary(BinaryKind::add, a, b); }
Tensor operator-(const Operand &a, const Operand &b) { return binary(BinaryKind::sub, a, b); }
Tensor operator*(const Operand &a, const Operand &b) { return binary(BinaryKind::mul, a, b); }
Tensor operator/(const Operand &a, const Operand &b) { return binary(BinaryKind::div, a, b); }
Tensor operator%(const Operand &a, const Operand &b) { return binary(BinaryKind::rem, a, b); }
Tensor operator&(const Operand &a, const Operand &b) { return binary(BinaryKind::band, a, b); }
Tensor operator|(const Operand &a, const Operand &b) { return binary(BinaryKind::bor, a, b); }
Tensor operator^(const Operand &a, const Operand &b) { return binary(BinaryKind::bxor, a, b); }
Tensor operator<<(const Operand &a, const Operand &b) { return binary(BinaryKind::shl, a, b); }
Tensor operator>>(const Operand &a, const Operand &b) { return binary(BinaryKind::shr, a, b); }

Tensor operator-(const Operand &a) {
  const Tensor &x = require_tensor(a, "unary '-'");
  require_numbers(x, a.loc(), "unary '-'");
  if (is_float(x.dtype())) {
    Tensor in = is_float8(x.dtype()) ? convert(x, DType::f32, a.loc()) : x;
    Builder bb(a.loc());
    return convert(bb.wrap(arith::NegFOp::create(bb.b, bb.l, bb.use(in)), in.dtype()), x.dtype(),
                   a.loc());
  }
  return Operand(0, a.loc()) - a;
}

Tensor operator~(const Operand &a) {
  const Tensor &x = require_tensor(a, "'~'");
  if (!is_integer(x.dtype()) || x.is_pointer())
    fail(a.loc(), "'~' takes integers, got " + x.describe());
  Tensor all_ones = make_constant(0, -1, false, x.dtype(), {}, a.loc());
  return a ^ Operand(all_ones, a.loc());
}

Tensor operator!(const Operand &a) {
  const Tensor &x = require_tensor(a, "'!'");
  if (x.dtype() != DType::i1 || x.is_pointer())
    fail(a.loc(), "'!' takes i1 values, got " + x.describe() + "; compare with 0 first");
  return a ^ Operand(true, a.loc());
}

Tensor operator<(const Operand &a, const Operand &b) { return compare(Compare::lt, a, b); }
Tensor operator<=(const Operand &a, const Operand &b) { return compare(Compare::le, a, b); }
Tensor operator>(const Operand &a, const Operand &b) { return compare(Compare::gt, a, b); }
Tensor operator>=(const Operand &a, const Operand &b) { return compare(Compare::ge, a, b); }
Tensor operator==(const Operand &a, const Operand &b) { return compare(Compare::eq, a, b); }
Tensor operator!=(const Operand &a, const Operand &b) { return compare(Compare::ne, a, b); }

Tensor &operator+=(Tensor &a, const Operand &b) { return a = Operand(a, b.loc()) + b; }
Tensor &operator-=(Tensor &a, const Operand &b) { return a = Operand(a, b.loc()) - b; }
Tensor &operator*=(Tensor &a, const Operand &b) { return a = Operand(a, b.loc()) * b; }
Tensor &operator/=(Tensor &a, const Operand &b) { return a = Operand(a, b.loc()) / b; }

Tensor where(const Operand &cond_operand, const Operand &a, const Operand &b, Loc loc) {
  const Tensor &cond = require_tensor(cond_operand, "where's condition");
  if (cond.dtype() != DType::i1 || cond.is_pointer())
    fail(loc, "where's condition must be i1, got " + cond.describe());
  Tensor x, y;
  if (is_pointer_operand(a) || is_pointer_operand(b)) {
    x = require_tensor(a, "where");
    y = require_tensor(b, "where");
    if (x.type() != y.type())
      fail(loc, "where chooses between " + x.describe() + " and " + y.describe() +
                    ", which differ in type");
    Shape shape = broadcast_shape(x.shape(), y.shape(), loc, "where");
    x = broadcast_to_shape(x, shape, loc);
    y = broadcast_to_shape(y, shape, loc);
  } else {
    std::tie(x, y) = unify(a, b, "where");
  }
  Shape shape = broadcast_shape(cond.shape(), x.shape(), loc, "where");
  Tensor c = broadcast_to_shape(cond, shape, loc);
  x = broadcast_to_shape(x, shape, loc);
  y = broadcast_to_shape(y, shape, loc);
  Builder bb(loc);
  auto op = arith::SelectOp::create(bb.b, bb.l, bb.use(c), bb.use(x), bb.use(y));
  return TraceAccess::wrap(op, x.type(), loc);
}

namespace {
Tensor minmax(const Operand &a, const Operand &b, bool is_max, Loc loc) {
  const char *what = is_max ? "maximum" : "minimum";
  auto [x, y] = unify(a, b, what);
  DType dtype = x.dtype();
  if (is_float8(dtype))
    fail(loc, std::string(what) + " on " + x.describe() + ": convert 8-bit floats to compute");
  Builder bb(loc);
  mlir::Value p = bb.use(x), q = bb.use(y), r;
  if (is_float(dtype))
    r = is_max ? arith::MaximumFOp::create(bb.b, bb.l, p, q).getResult()
               : arith::MinimumFOp::create(bb.b, bb.l, p, q).getResult();
  else if (is_unsigned(dtype) || dtype == DType::i1)
    r = is_max ? arith::MaxUIOp::create(bb.b, bb.l, p, q).getResult()
               : arith::MinUIOp::create(bb.b, bb.l, p, q).getResult();
  else
    r = is_max ? arith::MaxSIOp::create(bb.b, bb.l, p, q).getResult()
               : arith::MinSIOp::create(bb.b, bb.l, p, q).getResult();
  return bb.wrap(r, dtype);
}
} // namespace

Tensor maximum(const Operand &a, const Operand &b, Loc loc) { return minmax(a, b, true, loc); }
Tensor minimum(const Operand &a, const Operand &b, Loc loc) { return minmax(a, b, false, loc); }

Tensor clamp(const Operand &x, const Operand &lo, const Operand &hi, Loc loc) {
  return minimum(maximum(x, lo, loc), hi, loc);
}

Tensor abs(const Operand &x_operand, Loc loc) {
  const Tensor &x = require_tensor(x_operand, "abs");
  require_numbers(x, loc, "abs");
  if (is_float(x.dtype()))
    return unary_math<math::AbsFOp>(x_operand, "abs", loc);
  if (is_unsigned(x.dtype()) || x.dtype() == DType::i1)
    return x;
  Builder bb(loc);
  return bb.wrap(math::AbsIOp::create(bb.b, bb.l, bb.use(x)), x.dtype());
}

Tensor cdiv(const Operand &a, const Operand &b, Loc loc) {
  auto [x, y] = unify(a, b, "cdiv");
  if (is_float(x.dtype()))
    fail(loc, "cdiv takes integers, got " + x.describe());
  return (Operand(x, loc) + Operand(y, loc) - Operand(1, loc)) / Operand(y, loc);
}

Tensor exp(const Operand &x, Loc loc) { return unary_math<math::ExpOp>(x, "exp", loc); }
Tensor exp2(const Operand &x, Loc loc) { return unary_math<math::Exp2Op>(x, "exp2", loc); }
Tensor log(const Operand &x, Loc loc) { return unary_math<math::LogOp>(x, "log", loc); }
Tensor log2(const Operand &x, Loc loc) { return unary_math<math::Log2Op>(x, "log2", loc); }
Tensor sqrt(const Operand &x, Loc loc) { return unary_math<math::SqrtOp>(x, "sqrt", loc); }
Tensor rsqrt(const Operand &x, Loc loc) { return unary_math<math::RsqrtOp>(x, "rsqrt", loc); }
Tensor sin(const Operand &x, Loc loc) { return unary_math<math::SinOp>(x, "sin", loc); }
Tensor cos(const Operand &x, Loc loc) { return unary_math<math::CosOp>(x, "cos", loc); }
Tensor tanh(const Operand &x, Loc loc) { return unary_math<math::TanhOp>(x, "tanh", loc); }
Tensor erf(const Operand &x, Loc loc) { return unary_math<math::ErfOp>(x, "erf", loc); }
Tensor erfc(const Operand &x, Loc loc) { return unary_math<math::ErfcOp>(x, "erfc", loc); }
Tensor fast_erfc(const Operand &x, Loc loc) { // afn: an approximate function
  return unary_math<math::ErfcOp>(x, "fast_erfc", loc, arith::FastMathFlags::afn);
}
Tensor floor(const Operand &x, Loc loc) { return unary_math<math::FloorOp>(x, "floor", loc); }
Tensor ceil(const Operand &x, Loc loc) { return unary_math<math::CeilOp>(x, "ceil", loc); }

Tensor sigmoid(const Operand &x, Loc loc) {
  Tensor in = math_input(x, "sigmoid");
  Tensor one = make_constant(1.0, 0, true, in.dtype(), {}, loc);
  Tensor r = Operand(one, loc) / (Operand(one, loc) + exp(-Operand(in, loc), loc));
  return finish_math(r, x.tensor().dtype(), loc);
}

Tensor pow(const Operand &x, const Operand &y, Loc loc) {
  auto [a, b] = unify(x, y, "pow");
  DType original = a.dtype();
  Tensor p = math_input(Operand(a, loc), "pow"), q = math_input(Operand(b, loc), "pow");
  Builder bb(loc);
  return finish_math(bb.wrap(math::PowFOp::create(bb.b, bb.l, bb.use(p), bb.use(q)), p.dtype()),
                     original, loc);
}

Tensor fma(const Operand &a, const Operand &b, const Operand &c, Loc loc) {
  std::vector<Tensor> v = unify({&a, &b, &c}, "fma");
  DType original = v[0].dtype();
  Tensor x = math_input(Operand(v[0], loc), "fma"), y = math_input(Operand(v[1], loc), "fma"),
         z = math_input(Operand(v[2], loc), "fma");
  Builder bb(loc);
  return finish_math(
      bb.wrap(math::FmaOp::create(bb.b, bb.l, bb.use(x), bb.use(y), bb.use(z)), x.dtype()),
      original, loc);
}

Tensor Tensor::to(DType type, Loc loc) const { return convert(*this, type, loc); }

Tensor Tensor::bitcast(DType type, Loc loc) const {
  TraceAccess::use(*this, loc);
  if (is_pointer()) { // reinterpret the memory pointed to
    Builder bb(loc);
    ElementType to{type, true, this->type().is_const};
    mlir::Type target = ir_type(bb.trace.context(), to, shape());
    return TraceAccess::wrap(tile::BitcastOp::create(bb.b, bb.l, target, bb.use(*this)), to, loc);
  }
  if (bit_width(type) != bit_width(dtype()) || type == DType::i1 || dtype() == DType::i1)
    fail(loc, "bitcast of " + describe() + " to " + std::string(name(type)) +
                  ": the bit widths differ (" + std::to_string(bit_width(dtype())) + " vs " +
                  std::to_string(bit_width(type)) + ")");
  Builder bb(loc);
  mlir::Type target = ir_type(bb.trace.context(), number(type), shape());
  mlir::Value value = bb.use(*this);
  if (target == value.getType()) // e.g. i32 <-> u32: the same IR type
    return bb.wrap(value, type);
  return bb.wrap(tile::BitcastOp::create(bb.b, bb.l, target, value), type);
}

Tensor cast(const Tensor &x, DType type, Loc loc) { return x.to(type, loc); }
Tensor bitcast(const Tensor &x, DType type, Loc loc) { return x.bitcast(type, loc); }

} // namespace kiln
