//===- ExprNode.h - the nodes of an expression, and their evaluation ------===//

#pragma once

#include <kiln/kiln.h>
#include <kiln/ops/expr.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln::ops {

struct Expr::Node {
  enum class Kind { literal, input, reduced, length, unary, binary, where, cast, gather };
  Kind kind = Kind::literal;
  std::string op;         ///< unary/binary/where: "add", "exp", ...
  double value = 0;       ///< literal
  int index = 0;          ///< input; gather: the tensor (args[0] the element's index)
  DType stored = DType::f32; ///< input: the dtype in memory
  DType dtype = DType::f32;  ///< what the value is computed in (literals: f32 until they meet a value)
  std::vector<std::shared_ptr<const Node>> args;
  int depth = 1; ///< the longest chain of nodes down to a leaf, this one included
};

/// The deepest expression accepted: evaluating, keying and tracing walk the
/// graph recursively, so a bound keeps any text or C++ built expression off
/// the end of the stack (a thread's can be as small as 256 KiB).
constexpr int kMaxExprDepth = 512;

/// Turns expressions into DSL values while a kernel traces; shared
/// subexpressions are traced once.
class Evaluator {
public:
  /// `input(i)`: input i's loaded value (already widened); `reduced` and
  /// `length`: a reduction's value and length, for epilogues.
  Evaluator(std::function<Tensor(int)> input, Tensor reduced = {}, Tensor length = {})
      : input_(std::move(input)), reduced_(std::move(reduced)), length_(std::move(length)) {}

  /// Every value ends in a 16- or 8-bit float: functions may take their
  /// shorter approximations (gelu: fast_erfc, relative error <= 2e-5).
  void for_narrow_outputs() { narrow_ = true; }
  /// `gather(tensor, index)`: element `index` of a gathered tensor, loaded.
  void gathering(std::function<Tensor(int, const Tensor &)> gather) { gather_ = std::move(gather); }

  /// The value of `e`, in its dtype (a literal alone: an f32 scalar).
  Tensor operator()(const Expr &e);

private:
  Operand operand(const std::shared_ptr<const Expr::Node> &node);
  std::function<Tensor(int)> input_;
  std::function<Tensor(int, const Tensor &)> gather_;
  Tensor reduced_, length_;
  bool narrow_ = false;
  std::map<const Expr::Node *, Tensor> done_;
};

/// The inputs an expression reads.
std::set<int> inputs_of(const Expr &e);

} // namespace kiln::ops
