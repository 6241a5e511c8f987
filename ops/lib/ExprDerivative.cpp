//===- ExprDerivative.cpp - expressions differentiated symbolically --------===//
//
// The derivative of an expression in one input, by the chain rule over its
// nodes, as another expression: what the attention backward pass takes of
// a score modifier written as a text (soft-capping's tanh, an ALiBi bias,
// a scale). Integer values, comparisons and gathered elements carry no
// derivative; where a function has a kink (relu, abs, max, min, where's
// branches) the derivative is that of the piece the value is on.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/ExprNode.h"

#include <cmath>
#include <map>

namespace kiln::ops {

namespace {

using Node = Expr::Node;

class Differentiator {
public:
  explicit Differentiator(int index) : index_(index) {}

  /// d e / d input; an invalid Expr for zero (kept apart so that zero
  /// terms vanish instead of growing the expression).
  Expr operator()(const Expr &e) {
    const Node &n = e.node();
    if (auto it = done_.find(&n); it != done_.end())
      return it->second;
    Expr d = differentiate(e, n);
    done_[&n] = d;
    return d;
  }

private:
  int index_;
  std::map<const Node *, Expr> done_;

  static Expr arg(const Node &n, int i) { return Expr(n.args[static_cast<size_t>(i)]); }
  static Expr times(const Expr &a, const Expr &b) { return a.valid() && b.valid() ? a * b : Expr(); }
  static Expr plus(const Expr &a, const Expr &b) { return !a.valid() ? b : !b.valid() ? a : a + b; }
  static Expr negated(const Expr &a) { return a.valid() ? -a : Expr(); }

  Expr differentiate(const Expr &e, const Node &n) {
    switch (n.kind) {
    case Node::Kind::input: return n.index == index_ && is_float(n.dtype) ? Expr(1.0) : Expr();
    case Node::Kind::literal:
    case Node::Kind::reduced:
    case Node::Kind::length:
    case Node::Kind::gather: return Expr();
    case Node::Kind::cast: {
      Expr d = (*this)(arg(n, 0));
      return d.valid() && is_float(n.dtype) ? cast(d, n.dtype) : Expr();
    }
    case Node::Kind::where: {
      Expr a = (*this)(arg(n, 1)), b = (*this)(arg(n, 2));
      if (!a.valid() && !b.valid())
        return Expr();
      return where(arg(n, 0), a.valid() ? a : Expr(0.0), b.valid() ? b : Expr(0.0));
    }
    case Node::Kind::unary: return unary(e, n);
    case Node::Kind::binary: return binary(n);
    }
    return Expr();
  }

  Expr unary(const Expr &e, const Node &n) {
    const Expr x = arg(n, 0);
    const Expr dx = (*this)(x);
    if (!dx.valid() || !is_float(n.dtype))
      return Expr();
    const std::string &op = n.op;
    Expr f; // f'(x)
    if (op == "neg") return negated(dx);
    if (op == "abs") f = where(x >= 0.0, Expr(1.0), Expr(-1.0));
    else if (op == "exp") f = e;
    else if (op == "exp2") f = e * std::log(2.0);
    else if (op == "log") f = 1.0 / x;
    else if (op == "log2") f = 1.0 / (x * std::log(2.0));
    else if (op == "sqrt") f = 0.5 / e;
    else if (op == "rsqrt") f = e * -0.5 / x;
    else if (op == "sin") f = cos(x);
    else if (op == "cos") f = -sin(x);
    else if (op == "tanh") f = 1.0 - e * e;
    else if (op == "erf") f = exp(-(x * x)) * (2.0 / std::sqrt(M_PI));
    else if (op == "sigmoid") f = e * (1.0 - e);
    else if (op == "floor" || op == "ceil") return Expr();
    else if (op == "relu") f = where(x > 0.0, Expr(1.0), Expr(0.0));
    else if (op == "silu") {
      Expr s = sigmoid(x);
      f = s * (1.0 + x * (1.0 - s));
    } else if (op == "gelu") // Φ(x) + x φ(x)
      f = 0.5 * (1.0 + erf(x * 0.7071067811865476)) + x * exp(-0.5 * (x * x)) * 0.3989422804014327;
    else
      throw Error("no derivative of '" + op + "' (in " + e.key() + ")");
    return times(f, dx);
  }

  Expr binary(const Node &n) {
    const Expr a = arg(n, 0), b = arg(n, 1);
    const std::string &op = n.op;
    if (!is_float(n.dtype)) // (comparisons, logic, integer arithmetic)
      return Expr();
    const Expr da = (*this)(a), db = (*this)(b);
    if (!da.valid() && !db.valid())
      return Expr();
    if (op == "add") return plus(da, db);
    if (op == "sub") return plus(da, negated(db));
    if (op == "mul") return plus(times(da, b), times(a, db));
    if (op == "div") return plus(times(da, 1.0 / b), times(db, -a / (b * b)));
    auto zeroIfNone = [](const Expr &d) { return d.valid() ? d : Expr(0.0); };
    if (op == "max") return where(a >= b, zeroIfNone(da), zeroIfNone(db));
    if (op == "min") return where(a <= b, zeroIfNone(da), zeroIfNone(db));
    if (op == "pow") // b a^(b-1) da + a^b ln(a) db
      return plus(times(b * pow(a, b - 1.0), da), times(pow(a, b) * log(a), db));
    throw Error("no derivative of '" + op + "'");
  }
};

} // namespace

Expr derivative(const Expr &e, int index) {
  if (!e.valid())
    throw Error("the derivative of an empty expression");
  Expr d = Differentiator(index)(e);
  return d.valid() ? d : Expr(0.0);
}

} // namespace kiln::ops
