// arith and math operations: elementwise on any number of elements (an
// operand of one element stands for all, as constants in combine functions).

#include "runtime/interp/Compiler.h"

#include <kiln/numeric.h>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>

namespace kiln::interp {

namespace arith = mlir::arith;
namespace math = mlir::math;

namespace {

template <class F> Instr unary(unsigned a, unsigned r, F f) {
  return [=](Exec &e) {
    const std::vector<Word> &A = e.slots[a].words;
    std::vector<Word> R(A.size());
    for (size_t i = 0; i < A.size(); ++i)
      R[i] = f(A[i]);
    e.slots[r].words = std::move(R);
  };
}

template <class F> Instr binary(unsigned a, unsigned b, unsigned r, F f) {
  return [=](Exec &e) {
    const std::vector<Word> &A = e.slots[a].words, &B = e.slots[b].words;
    size_t n = std::max(A.size(), B.size());
    bool sa = A.size() == 1, sb = B.size() == 1;
    std::vector<Word> R(n);
    for (size_t i = 0; i < n; ++i)
      R[i] = f(A[sa ? 0 : i], B[sb ? 0 : i]);
    e.slots[r].words = std::move(R);
  };
}

template <class F> Instr ternary(unsigned a, unsigned b, unsigned c, unsigned r, F f) {
  return [=](Exec &e) {
    const std::vector<Word> &A = e.slots[a].words, &B = e.slots[b].words, &C = e.slots[c].words;
    size_t n = std::max({A.size(), B.size(), C.size()});
    bool sa = A.size() == 1, sb = B.size() == 1, sc = C.size() == 1;
    std::vector<Word> R(n);
    for (size_t i = 0; i < n; ++i)
      R[i] = f(A[sa ? 0 : i], B[sb ? 0 : i], C[sc ? 0 : i]);
    e.slots[r].words = std::move(R);
  };
}

/// A float operation on doubles, its result rounded to the format.
template <class F> Instr float_unary(Compiler &c, mlir::Operation *op, F f) {
  DType t = float_dtype(mlir::getElementTypeOrSelf(op->getResult(0).getType()));
  return unary(c.slot(op->getOperand(0)), c.slot(op->getResult(0)),
               [=](Word a) { return from_double(round_float(t, f(as_double(a)))); });
}
template <class F> Instr float_binary(Compiler &c, mlir::Operation *op, F f) {
  DType t = float_dtype(mlir::getElementTypeOrSelf(op->getResult(0).getType()));
  return binary(c.slot(op->getOperand(0)), c.slot(op->getOperand(1)), c.slot(op->getResult(0)),
                [=](Word a, Word b) { return from_double(round_float(t, f(as_double(a), as_double(b)))); });
}

/// An integer operation on (signed or unsigned) 64-bit values, wrapped to
/// the width.
template <class F> Instr int_binary(Compiler &c, mlir::Operation *op, F f) {
  unsigned w = element_of(op->getResult(0).getType()).width;
  Word m = width_mask(w);
  return binary(c.slot(op->getOperand(0)), c.slot(op->getOperand(1)), c.slot(op->getResult(0)),
                [=](Word a, Word b) { return f(a, b, w) & m; });
}

unsigned width_of(mlir::Value v) { return element_of(v.getType()).width; }

/// The words of a constant attribute.
Data constant_words(mlir::Attribute attr, mlir::Type type) {
  Element el = element_of(type);
  auto word = [&](mlir::Attribute a) -> Word {
    if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(a))
      return i.getValue().getZExtValue() & width_mask(el.width);
    if (auto f = mlir::dyn_cast<mlir::FloatAttr>(a))
      return from_double(round_float(el.float_type, f.getValueAsDouble()));
    if (auto b = mlir::dyn_cast<mlir::BoolAttr>(a))
      return b.getValue() ? 1 : 0;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << a;
    throw Error("the interpreter cannot hold the constant " + text);
  };
  Data data;
  if (auto dense = mlir::dyn_cast<mlir::DenseElementsAttr>(attr)) {
    for (mlir::Attribute a : dense.getValues<mlir::Attribute>())
      data.words.push_back(word(a));
  } else {
    data.words.push_back(word(attr));
  }
  return data;
}

bool compare_float(arith::CmpFPredicate p, double a, double b) {
  using P = arith::CmpFPredicate;
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (p) {
  case P::AlwaysFalse: return false;
  case P::OEQ: return !unordered && a == b;
  case P::OGT: return !unordered && a > b;
  case P::OGE: return !unordered && a >= b;
  case P::OLT: return !unordered && a < b;
  case P::OLE: return !unordered && a <= b;
  case P::ONE: return !unordered && a != b;
  case P::ORD: return !unordered;
  case P::UEQ: return unordered || a == b;
  case P::UGT: return unordered || a > b;
  case P::UGE: return unordered || a >= b;
  case P::ULT: return unordered || a < b;
  case P::ULE: return unordered || a <= b;
  case P::UNE: return unordered || a != b;
  case P::UNO: return unordered;
  case P::AlwaysTrue: return true;
  }
  return false;
}

bool compare_int(arith::CmpIPredicate p, Word a, Word b, unsigned w) {
  using P = arith::CmpIPredicate;
  int64_t sa = sign_extend(a, w), sb = sign_extend(b, w);
  switch (p) {
  case P::eq: return a == b;
  case P::ne: return a != b;
  case P::slt: return sa < sb;
  case P::sle: return sa <= sb;
  case P::sgt: return sa > sb;
  case P::sge: return sa >= sb;
  case P::ult: return a < b;
  case P::ule: return a <= b;
  case P::ugt: return a > b;
  case P::uge: return a >= b;
  }
  return false;
}

/// IEEE 754-2019 maximum/minimum: NaN if either is NaN; +0 > -0.
double maximum(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
double minimum(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// Float to integer, saturating, NaN to 0 (Kiln's semantics of
/// arith.fptosi/fptoui, as PTX's cvt.rzi).
Word float_to_int(double v, unsigned w, bool is_signed) {
  if (std::isnan(v))
    return 0;
  v = std::trunc(v);
  if (is_signed) {
    double lo = -std::ldexp(1.0, w - 1), hi = std::ldexp(1.0, w - 1);
    if (v <= lo)
      return (Word(1) << (w - 1)) & width_mask(w);
    if (v >= hi)
      return width_mask(w) >> 1;
    return static_cast<Word>(static_cast<int64_t>(v)) & width_mask(w);
  }
  if (v <= 0)
    return 0;
  if (v >= std::ldexp(1.0, w))
    return width_mask(w);
  return static_cast<Word>(v);
}

/// Integer to float: one rounding, from the exact integer.
double int_to_float(Word x, unsigned w, bool is_signed, DType to) {
  if (to == DType::f32) {
    float f = is_signed ? static_cast<float>(sign_extend(x, w)) : static_cast<float>(x);
    return f;
  }
  double d = is_signed ? static_cast<double>(sign_extend(x, w)) : static_cast<double>(x);
  return round_float(to, d);
}

Rounding rounding_of(std::optional<arith::RoundingMode> mode) {
  if (mode && *mode == arith::RoundingMode::toward_zero)
    return Rounding::toward_zero;
  return Rounding::nearest_even;
}

} // namespace

Instr compile_elementwise(Compiler &c, mlir::Operation *op) {
  auto in = [&](unsigned i) { return c.slot(op->getOperand(i)); };
  auto out = [&] { return c.slot(op->getResult(0)); };
  return llvm::TypeSwitch<mlir::Operation *, Instr>(op)
      .Case([&](arith::ConstantOp k) -> Instr {
        Data data = constant_words(k.getValue(), k.getType());
        unsigned r = out();
        return [=](Exec &e) { e.slots[r] = data; };
      })
      // Integer arithmetic wraps at the width.
      .Case([&](arith::AddIOp) { return int_binary(c, op, [](Word a, Word b, unsigned) { return a + b; }); })
      .Case([&](arith::SubIOp) { return int_binary(c, op, [](Word a, Word b, unsigned) { return a - b; }); })
      .Case([&](arith::MulIOp) { return int_binary(c, op, [](Word a, Word b, unsigned) { return a * b; }); })
      .Case([&](arith::AndIOp) { return int_binary(c, op, [](Word a, Word b, unsigned) { return a & b; }); })
      .Case([&](arith::OrIOp) { return int_binary(c, op, [](Word a, Word b, unsigned) { return a | b; }); })
      .Case([&](arith::XOrIOp) { return int_binary(c, op, [](Word a, Word b, unsigned) { return a ^ b; }); })
      // Division by zero gives all ones (quotient) or the dividend
      // (remainder), as the GPU does; INT_MIN / -1 wraps.
      .Case([&](arith::DivUIOp) {
        return int_binary(c, op, [](Word a, Word b, unsigned) { return b ? a / b : ~Word(0); });
      })
      .Case([&](arith::RemUIOp) {
        return int_binary(c, op, [](Word a, Word b, unsigned) { return b ? a % b : a; });
      })
      .Case([&](arith::DivSIOp) {
        return int_binary(c, op, [](Word a, Word b, unsigned w) -> Word {
          int64_t x = sign_extend(a, w), y = sign_extend(b, w);
          if (y == 0)
            return ~Word(0);
          if (y == -1)
            return static_cast<Word>(0) - static_cast<Word>(x);
          return static_cast<Word>(x / y);
        });
      })
      .Case([&](arith::RemSIOp) {
        return int_binary(c, op, [](Word a, Word b, unsigned w) -> Word {
          int64_t x = sign_extend(a, w), y = sign_extend(b, w);
          if (y == 0)
            return a;
          if (y == -1)
            return 0;
          return static_cast<Word>(x % y);
        });
      })
      // Shifts by the width or more give 0 (or the sign), as PTX's.
      .Case([&](arith::ShLIOp) {
        return int_binary(c, op, [](Word a, Word b, unsigned w) { return b >= w ? 0 : a << b; });
      })
      .Case([&](arith::ShRUIOp) {
        return int_binary(c, op, [](Word a, Word b, unsigned w) { return b >= w ? 0 : a >> b; });
      })
      .Case([&](arith::ShRSIOp) {
        return int_binary(c, op, [](Word a, Word b, unsigned w) {
          int64_t x = sign_extend(a, w);
          return static_cast<Word>(b >= w ? (x < 0 ? -1 : 0) : x >> b);
        });
      })
      .Case([&](arith::MaxSIOp) {
        return int_binary(c, op, [](Word a, Word b, unsigned w) { return sign_extend(a, w) >= sign_extend(b, w) ? a : b; });
      })
      .Case([&](arith::MinSIOp) {
        return int_binary(c, op, [](Word a, Word b, unsigned w) { return sign_extend(a, w) <= sign_extend(b, w) ? a : b; });
      })
      .Case([&](arith::MaxUIOp) { return int_binary(c, op, [](Word a, Word b, unsigned) { return a >= b ? a : b; }); })
      .Case([&](arith::MinUIOp) { return int_binary(c, op, [](Word a, Word b, unsigned) { return a <= b ? a : b; }); })
      // Float arithmetic rounds each result to the format.
      .Case([&](arith::AddFOp) { return float_binary(c, op, [](double a, double b) { return a + b; }); })
      .Case([&](arith::SubFOp) { return float_binary(c, op, [](double a, double b) { return a - b; }); })
      .Case([&](arith::MulFOp) { return float_binary(c, op, [](double a, double b) { return a * b; }); })
      .Case([&](arith::DivFOp) { return float_binary(c, op, [](double a, double b) { return a / b; }); })
      .Case([&](arith::RemFOp) { return float_binary(c, op, [](double a, double b) { return std::fmod(a, b); }); })
      .Case([&](arith::MaximumFOp) { return float_binary(c, op, maximum); })
      .Case([&](arith::MinimumFOp) { return float_binary(c, op, minimum); })
      .Case([&](arith::MaxNumFOp) { return float_binary(c, op, [](double a, double b) { return std::fmax(a, b); }); })
      .Case([&](arith::MinNumFOp) { return float_binary(c, op, [](double a, double b) { return std::fmin(a, b); }); })
      .Case([&](arith::NegFOp) { return float_unary(c, op, [](double a) { return -a; }); })
      .Case([&](arith::CmpIOp cmp) {
        auto p = cmp.getPredicate();
        unsigned w = width_of(cmp.getLhs());
        return binary(in(0), in(1), out(), [=](Word a, Word b) -> Word { return compare_int(p, a, b, w); });
      })
      .Case([&](arith::CmpFOp cmp) {
        auto p = cmp.getPredicate();
        return binary(in(0), in(1), out(), [=](Word a, Word b) -> Word {
          return compare_float(p, as_double(a), as_double(b));
        });
      })
      .Case([&](arith::SelectOp) {
        return ternary(in(0), in(1), in(2), out(), [](Word c, Word a, Word b) { return c ? a : b; });
      })
      // Conversions.
      .Case([&](arith::ExtSIOp) {
        unsigned from = width_of(op->getOperand(0));
        Word m = width_mask(width_of(op->getResult(0)));
        return unary(in(0), out(), [=](Word a) { return static_cast<Word>(sign_extend(a, from)) & m; });
      })
      .Case([&](arith::ExtUIOp) { return unary(in(0), out(), [](Word a) { return a; }); })
      .Case([&](arith::TruncIOp) {
        Word m = width_mask(width_of(op->getResult(0)));
        return unary(in(0), out(), [=](Word a) { return a & m; });
      })
      .Case([&](arith::ExtFOp) { return unary(in(0), out(), [](Word a) { return a; }); })
      .Case([&](arith::TruncFOp trunc) {
        DType to = float_dtype(mlir::getElementTypeOrSelf(trunc.getType()));
        Rounding rounding = rounding_of(trunc.getRoundingmode());
        // Every conversion to an 8-bit float saturates, as tile.fp_to_fp does.
        bool saturate = is_float8(to);
        return unary(in(0), out(),
                     [=](Word a) { return from_double(round_to(to, as_double(a), rounding, saturate)); });
      })
      .Case([&](arith::SIToFPOp) {
        unsigned w = width_of(op->getOperand(0));
        DType to = float_dtype(mlir::getElementTypeOrSelf(op->getResult(0).getType()));
        return unary(in(0), out(), [=](Word a) { return from_double(int_to_float(a, w, true, to)); });
      })
      .Case([&](arith::UIToFPOp) {
        unsigned w = width_of(op->getOperand(0));
        DType to = float_dtype(mlir::getElementTypeOrSelf(op->getResult(0).getType()));
        return unary(in(0), out(), [=](Word a) { return from_double(int_to_float(a, w, false, to)); });
      })
      .Case([&](arith::FPToSIOp) {
        unsigned w = width_of(op->getResult(0));
        return unary(in(0), out(), [=](Word a) { return float_to_int(as_double(a), w, true); });
      })
      .Case([&](arith::FPToUIOp) {
        unsigned w = width_of(op->getResult(0));
        return unary(in(0), out(), [=](Word a) { return float_to_int(as_double(a), w, false); });
      })
      .Case([&](arith::BitcastOp) {
        Element from = element_of(op->getOperand(0).getType()), to = element_of(op->getResult(0).getType());
        return unary(in(0), out(), [=](Word a) -> Word {
          Word bits = from.kind == Element::floating ? encode_float(from.float_type, as_double(a)) : a;
          return to.kind == Element::floating ? from_double(decode_float(to.float_type, bits)) : bits;
        });
      })
      // math: computed in double, rounded to the format.
      .Case([&](math::ExpOp) { return float_unary(c, op, [](double a) { return std::exp(a); }); })
      .Case([&](math::Exp2Op) { return float_unary(c, op, [](double a) { return std::exp2(a); }); })
      .Case([&](math::LogOp) { return float_unary(c, op, [](double a) { return std::log(a); }); })
      .Case([&](math::Log2Op) { return float_unary(c, op, [](double a) { return std::log2(a); }); })
      .Case([&](math::SqrtOp) { return float_unary(c, op, [](double a) { return std::sqrt(a); }); })
      .Case([&](math::RsqrtOp) { return float_unary(c, op, [](double a) { return 1.0 / std::sqrt(a); }); })
      .Case([&](math::SinOp) { return float_unary(c, op, [](double a) { return std::sin(a); }); })
      .Case([&](math::CosOp) { return float_unary(c, op, [](double a) { return std::cos(a); }); })
      .Case([&](math::TanhOp) { return float_unary(c, op, [](double a) { return std::tanh(a); }); })
      .Case([&](math::ErfOp) { return float_unary(c, op, [](double a) { return std::erf(a); }); })
      .Case([&](math::ErfcOp) { return float_unary(c, op, [](double a) { return std::erfc(a); }); })
      .Case([&](math::FloorOp) { return float_unary(c, op, [](double a) { return std::floor(a); }); })
      .Case([&](math::CeilOp) { return float_unary(c, op, [](double a) { return std::ceil(a); }); })
      .Case([&](math::AbsFOp) { return float_unary(c, op, [](double a) { return std::fabs(a); }); })
      .Case([&](math::PowFOp) { return float_binary(c, op, [](double a, double b) { return std::pow(a, b); }); })
      .Case([&](math::AbsIOp) {
        unsigned w = width_of(op->getResult(0));
        Word m = width_mask(w);
        return unary(in(0), out(), [=](Word a) {
          int64_t x = sign_extend(a, w);
          // Negated as unsigned: the most negative value wraps to itself.
          return (x < 0 ? Word(0) - static_cast<Word>(x) : static_cast<Word>(x)) & m;
        });
      })
      .Case([&](math::FmaOp) {
        DType t = float_dtype(mlir::getElementTypeOrSelf(op->getResult(0).getType()));
        return ternary(in(0), in(1), in(2), out(), [=](Word a, Word b, Word x) {
          if (t == DType::f32)
            return from_double(std::fma(static_cast<float>(as_double(a)), static_cast<float>(as_double(b)),
                                        static_cast<float>(as_double(x))));
          return from_double(round_float(t, std::fma(as_double(a), as_double(b), as_double(x))));
        });
      })
      .Default([](mlir::Operation *) { return Instr(); });
}

bool is_elementwise_region(mlir::Region &region) {
  for (mlir::Operation &op : region.front()) {
    if (op.hasTrait<mlir::OpTrait::IsTerminator>())
      continue;
    mlir::Dialect *dialect = op.getDialect();
    if (!dialect || (dialect->getNamespace() != "arith" && dialect->getNamespace() != "math"))
      return false;
    // Tensor-typed values inside would have shapes; combine functions work
    // on scalars.
    for (mlir::Type t : op.getResultTypes())
      if (mlir::isa<mlir::ShapedType>(t))
        return false;
  }
  return true;
}

} // namespace kiln::interp
