// Expressions over the values an op loads: what a fused pointwise kernel
// computes, what a reduction reduces (its prologue) and what it stores (its
// epilogue). An Expr is a small immutable graph built with operators and the
// functions below; an op turns it into one kernel. Public header: no MLIR.
//
// Numbers: 16-bit and 8-bit float inputs are computed in f32 (as
// TorchInductor does) and rounded once when stored; literals take the dtype
// of the value they meet; mixed dtypes promote as the DSL's operators do.
#pragma once

#include <kiln/dtype.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln::ops {

class Expr {
public:
  struct Node;

  Expr() = default;
  /// A literal (it takes the dtype of what it meets; alone, f32).
  Expr(double value);
  Expr(int value) : Expr(static_cast<double>(value)) {}

  bool valid() const { return node_ != nullptr; }
  /// The dtype the value is computed in.
  DType dtype() const;
  /// A canonical text of the graph ("add(in0,mul(in1,2))"): equal texts
  /// compute the same; kernels are cached by it.
  std::string key() const;

  const Node &node() const { return *node_; }
  const std::shared_ptr<const Node> &shared() const { return node_; }
  explicit Expr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}

private:
  std::shared_ptr<const Node> node_;
};

/// Input `index` of an op, loaded (and widened to its compute dtype).
Expr input(int index, DType stored);
/// In a reduction's epilogue: the reduced value, and the length reduced over.
Expr reduced(DType dtype);
Expr reduced_length();

Expr operator+(const Expr &a, const Expr &b);
Expr operator-(const Expr &a, const Expr &b);
Expr operator*(const Expr &a, const Expr &b);
Expr operator/(const Expr &a, const Expr &b);
Expr operator-(const Expr &a);
Expr operator<(const Expr &a, const Expr &b);
Expr operator<=(const Expr &a, const Expr &b);
Expr operator>(const Expr &a, const Expr &b);
Expr operator>=(const Expr &a, const Expr &b);
Expr operator==(const Expr &a, const Expr &b);
Expr operator!=(const Expr &a, const Expr &b);
Expr operator&(const Expr &a, const Expr &b);
Expr operator|(const Expr &a, const Expr &b);

Expr where(const Expr &condition, const Expr &a, const Expr &b);
Expr maximum(const Expr &a, const Expr &b);
Expr minimum(const Expr &a, const Expr &b);
Expr pow(const Expr &a, const Expr &b);
Expr abs(const Expr &x);
Expr exp(const Expr &x);
Expr exp2(const Expr &x);
Expr log(const Expr &x);
Expr log2(const Expr &x);
Expr sqrt(const Expr &x);
Expr rsqrt(const Expr &x);
Expr sin(const Expr &x);
Expr cos(const Expr &x);
Expr tanh(const Expr &x);
Expr erf(const Expr &x);
Expr sigmoid(const Expr &x);
Expr floor(const Expr &x);
Expr ceil(const Expr &x);
/// max(x, 0)
Expr relu(const Expr &x);
/// x/2 (1 + erf(x / sqrt 2)), as torch.nn.functional.gelu
Expr gelu(const Expr &x);
/// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), gelu(approximate="tanh")
Expr gelu_tanh(const Expr &x);
/// x * sigmoid(x)
Expr silu(const Expr &x);
/// A value conversion (as Tensor::to in the DSL).
Expr cast(const Expr &x, DType dtype);
/// Element `index` (an integer expression) of tensor `tensor` of the
/// tensors an op gathers from (attention modifiers' tensors), stored as
/// `stored`.
Expr gather(int tensor, const Expr &index, DType stored);

/// The derivative of `e` in input `index`, as an expression (where a
/// function is not differentiable, as relu at 0 or floor, the derivative
/// of its pieces). Throws kiln::Error naming a function it has none of.
Expr derivative(const Expr &e, int index);

/// Parses the text form the C ABI takes: `in0`..`inN` (inputs), `r` and
/// `n` (a reduction's value and length, in epilogues), numbers, `+ - * /`,
/// comparisons, `&`, `|`, parentheses and the functions above by name
/// (`where(c, a, b)`, `max(a, b)`, `min(a, b)`, `gelu(x)`, `cast(x, f16)`,
/// ...). `input_dtypes[i]` is input i's stored dtype. Throws kiln::Error
/// naming the position of a mistake.
Expr parse_expr(const std::string &text, const std::vector<DType> &input_dtypes, DType reduced_dtype = DType::f32);

/// What a text with named values may use: input i by the name
/// `inputs[i]`, and tensor j by `tensors[j]`, indexed: `doc[q_idx]`.
struct ExprNames {
  std::vector<std::string> inputs;
  std::vector<DType> input_dtypes;
  std::vector<std::string> tensors;
  std::vector<DType> tensor_dtypes;
};
/// Parses a text over named values (attention modifiers' texts); otherwise
/// as parse_expr above.
Expr parse_expr(const std::string &text, const ExprNames &names);

} // namespace kiln::ops
