//===- ExprEval.cpp - expressions into DSL values -------------------------===//

#include "ops/lib/ExprNode.h"

#include <cmath>

namespace kiln::ops {

using Node = Expr::Node;

Operand Evaluator::operand(const std::shared_ptr<const Node> &node) {
  if (node->kind == Node::Kind::literal) // takes the dtype of what it meets, as in the DSL
    return node->value == std::floor(node->value) && std::fabs(node->value) < 9e15
               ? Operand(static_cast<int64_t>(node->value))
               : Operand(node->value);
  return (*this)(Expr(node));
}

Tensor Evaluator::operator()(const Expr &e) {
  const Node &n = e.node();
  if (auto it = done_.find(&n); it != done_.end())
    return it->second;
  Tensor result;
  switch (n.kind) {
  case Node::Kind::literal:
    result = constant(n.value, DType::f32);
    break;
  case Node::Kind::input: {
    Tensor loaded = input_(n.index);
    result = loaded.dtype() == n.dtype ? loaded : loaded.to(n.dtype);
    break;
  }
  case Node::Kind::reduced:
    result = reduced_;
    break;
  case Node::Kind::length:
    result = length_;
    break;
  case Node::Kind::cast:
    result = (*this)(Expr(n.args[0])).to(n.dtype);
    break;
  case Node::Kind::gather: {
    if (!gather_)
      throw Error("this op gathers from no tensors (" + Expr(Expr(std::make_shared<const Node>(n))).key() + ")");
    Tensor loaded = gather_(n.index, (*this)(Expr(n.args[0])));
    result = loaded.dtype() == n.dtype ? loaded : loaded.to(n.dtype);
    break;
  }
  case Node::Kind::where: {
    Operand a = operand(n.args[1]), b = operand(n.args[2]);
    if (!a.tensor().valid() && !b.tensor().valid()) // two literals: give one the result's dtype
      a = Operand(constant(n.args[1]->value, n.dtype));
    result = kiln::where(operand(n.args[0]), a, b);
    break;
  }
  case Node::Kind::unary: {
    Tensor x = (*this)(Expr(n.args[0]));
    const std::string &op = n.op;
    if (op == "neg") result = -x;
    else if (op == "abs") result = kiln::abs(x);
    else if (op == "exp") result = kiln::exp(x);
    else if (op == "exp2") result = kiln::exp2(x);
    else if (op == "log") result = kiln::log(x);
    else if (op == "log2") result = kiln::log2(x);
    else if (op == "sqrt") result = kiln::sqrt(x);
    else if (op == "rsqrt") result = kiln::rsqrt(x);
    else if (op == "sin") result = kiln::sin(x);
    else if (op == "cos") result = kiln::cos(x);
    else if (op == "tanh") result = kiln::tanh(x);
    else if (op == "erf") result = kiln::erf(x);
    else if (op == "sigmoid") result = kiln::sigmoid(x);
    else if (op == "floor") result = kiln::floor(x);
    else if (op == "ceil") result = kiln::ceil(x);
    else if (op == "relu") result = kiln::maximum(x, 0);
    else if (op == "gelu") { // x/2 erfc(-x / sqrt 2): x Phi(x) with relative accuracy where it is small
      Tensor scaled = x * -0.7071067811865476;
      result = x * ((narrow_ ? kiln::fast_erfc(scaled) : kiln::erfc(scaled)) * 0.5);
    } else if (op == "gelu_tanh") {
      Tensor half = x * 0.5;
      Tensor inner = x * kiln::fma(x * x, 0.044715 * 0.7978845608028654, 0.7978845608028654);
      result = kiln::fma(half, kiln::tanh(inner), half);
    } else if (op == "silu") result = x * kiln::sigmoid(x);
    else throw Error("unknown unary operation '" + op + "'");
    break;
  }
  case Node::Kind::binary: {
    // a * b + c on floats rounds once (one fma), as Triton's default FP
    // fusion does: one instruction fewer an element where kernels are bound
    // by their arithmetic (16-bit pointwise ones).
    if (n.op == "add" && is_float(n.dtype)) {
      auto product = [&](const Node &m) {
        return m.kind == Node::Kind::binary && m.op == "mul" && m.dtype == n.dtype &&
               m.args[0]->kind != Node::Kind::literal && m.args[1]->kind != Node::Kind::literal;
      };
      for (int i = 0; i < 2; ++i)
        if (product(*n.args[i])) {
          const Node &m = *n.args[i];
          result = kiln::fma(operand(m.args[0]), operand(m.args[1]), operand(n.args[1 - i]));
          break;
        }
      if (result.valid())
        break;
    }
    Operand a = operand(n.args[0]), b = operand(n.args[1]);
    if (!a.tensor().valid() && !b.tensor().valid()) // two literals: one becomes a value
      a = Operand(constant(n.args[0]->value, n.dtype == DType::i1 ? DType::f32 : n.dtype));
    const std::string &op = n.op;
    if (op == "add") result = a + b;
    else if (op == "sub") result = a - b;
    else if (op == "mul") result = a * b;
    else if (op == "div") result = a / b;
    else if (op == "max") result = kiln::maximum(a, b);
    else if (op == "min") result = kiln::minimum(a, b);
    else if (op == "pow") result = kiln::pow(a, b);
    else if (op == "lt") result = a < b;
    else if (op == "le") result = a <= b;
    else if (op == "gt") result = a > b;
    else if (op == "ge") result = a >= b;
    else if (op == "eq") result = a == b;
    else if (op == "ne") result = a != b;
    else if (op == "and") result = a & b;
    else if (op == "or") result = a | b;
    else throw Error("unknown binary operation '" + op + "'");
    break;
  }
  }
  done_[&n] = result;
  return result;
}

std::set<int> inputs_of(const Expr &e) {
  std::set<int> found;
  std::function<void(const Node &)> walk = [&](const Node &n) {
    if (n.kind == Node::Kind::input)
      found.insert(n.index);
    for (const auto &arg : n.args)
      walk(*arg);
  };
  if (e.valid())
    walk(e.node());
  return found;
}

} // namespace kiln::ops
