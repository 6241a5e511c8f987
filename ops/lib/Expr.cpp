//===- Expr.cpp - expression graphs: building, dtypes, keys, text ---------===//

#include "ops/lib/ExprNode.h"

#include <kiln/error.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>

namespace kiln::ops {

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;

Expr make(Expr::Node node) {
  for (const NodePtr &arg : node.args)
    node.depth = std::max(node.depth, arg->depth + 1);
  if (node.depth > kMaxExprDepth)
    throw Error("expression nests deeper than " + std::to_string(kMaxExprDepth) +
                " operations; split it into several ops");
  return Expr(std::make_shared<const Expr::Node>(std::move(node)));
}

/// The dtype values are computed in: 16- and 8-bit floats widen to f32.
DType computeDType(DType stored) {
  if (stored == DType::f16 || stored == DType::bf16 || is_float8(stored))
    return DType::f32;
  return stored;
}

bool isWeak(const Expr &e) { return e.node().kind == Expr::Node::Kind::literal; }

/// The dtype of a binary arithmetic result, as the DSL promotes.
DType promote(const Expr &a, const Expr &b, const char *what) {
  if (isWeak(a) && isWeak(b))
    return DType::f32;
  if (isWeak(a) || isWeak(b)) {
    const Expr &literal = isWeak(a) ? a : b, &other = isWeak(a) ? b : a;
    double v = literal.node().value;
    if (is_integer(other.dtype()) && v != std::floor(v))
      throw Error(std::string("'") + what + "': the literal " + std::to_string(v) + " meets an integer value (" +
                  std::string(name(other.dtype())) + "); cast it to a float first");
    return other.dtype();
  }
  DType x = a.dtype(), y = b.dtype();
  if (x == y)
    return x;
  if (is_float(x) && is_float(y)) {
    if ((x == DType::f16 && y == DType::bf16) || (x == DType::bf16 && y == DType::f16))
      return DType::f32;
    return bit_width(x) >= bit_width(y) ? x : y;
  }
  if (is_float(x) != is_float(y))
    return is_float(x) ? x : y;
  if (is_unsigned(x) != is_unsigned(y) && x != DType::i1 && y != DType::i1)
    throw Error(std::string("'") + what + "': a signed and an unsigned value (" + std::string(name(x)) + ", " +
                std::string(name(y)) + "); cast one of them");
  return bit_width(x) >= bit_width(y) ? x : y;
}

Expr binary(const char *op, const Expr &a, const Expr &b, DType dtype) {
  if (!a.valid() || !b.valid())
    throw Error(std::string("'") + op + "' of an empty expression");
  Expr::Node n;
  n.kind = Expr::Node::Kind::binary;
  n.op = op;
  n.dtype = dtype;
  n.args = {a.shared(), b.shared()};
  return make(std::move(n));
}

Expr arithmetic(const char *op, const Expr &a, const Expr &b) { return binary(op, a, b, promote(a, b, op)); }

Expr comparison(const char *op, const Expr &a, const Expr &b) {
  promote(a, b, op); // checks the operands meet
  return binary(op, a, b, DType::i1);
}

Expr logical(const char *op, const Expr &a, const Expr &b) {
  for (const Expr *e : {&a, &b})
    if (!isWeak(*e) && e->dtype() != DType::i1)
      throw Error(std::string("'") + op + "' takes conditions (i1), not " + std::string(name(e->dtype())));
  return binary(op, a, b, DType::i1);
}

Expr unary(const char *op, const Expr &x, bool floatsOnly) {
  if (!x.valid())
    throw Error(std::string("'") + op + "' of an empty expression");
  Expr in = x;
  if (floatsOnly && !isWeak(x) && !is_float(x.dtype()))
    in = cast(x, DType::f32); // as torch: math on integers gives floats
  Expr::Node n;
  n.kind = Expr::Node::Kind::unary;
  n.op = op;
  n.dtype = isWeak(in) ? DType::f32 : in.dtype();
  n.args = {in.shared()};
  return make(std::move(n));
}

} // namespace

Expr::Expr(double value) {
  Node n;
  n.kind = Node::Kind::literal;
  n.value = value;
  n.dtype = DType::f32;
  node_ = std::make_shared<const Node>(std::move(n));
}

DType Expr::dtype() const {
  if (!node_)
    throw Error("the dtype of an empty expression");
  return node_->dtype;
}

std::string Expr::key() const {
  if (!node_)
    return "none";
  const Node &n = *node_;
  switch (n.kind) {
  case Node::Kind::literal: {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", n.value);
    return text;
  }
  case Node::Kind::input:
    return "in" + std::to_string(n.index) + ":" + std::string(name(n.stored));
  case Node::Kind::reduced:
    return "r:" + std::string(name(n.dtype));
  case Node::Kind::length:
    return "n";
  case Node::Kind::cast:
    return "cast(" + Expr(n.args[0]).key() + "," + std::string(name(n.dtype)) + ")";
  case Node::Kind::gather:
    return "t" + std::to_string(n.index) + ":" + std::string(name(n.stored)) + "[" + Expr(n.args[0]).key() + "]";
  default:
    break;
  }
  std::string text = n.op + "(";
  for (size_t i = 0; i < n.args.size(); ++i)
    text += (i ? "," : "") + Expr(n.args[i]).key();
  return text + ")";
}

Expr input(int index, DType stored) {
  Expr::Node n;
  n.kind = Expr::Node::Kind::input;
  n.index = index;
  n.stored = stored;
  n.dtype = computeDType(stored);
  return make(std::move(n));
}

Expr gather(int tensor, const Expr &index, DType stored) {
  if (!index.valid() || (!isWeak(index) && !is_integer(index.dtype())))
    throw Error("a gathered element's index must be an integer expression");
  Expr::Node n;
  n.kind = Expr::Node::Kind::gather;
  n.index = tensor;
  n.stored = stored;
  n.dtype = computeDType(stored);
  n.args = {isWeak(index) ? cast(index, DType::i32).shared() : index.shared()};
  return make(std::move(n));
}

Expr reduced(DType dtype) {
  Expr::Node n;
  n.kind = Expr::Node::Kind::reduced;
  n.dtype = dtype;
  return make(std::move(n));
}

Expr reduced_length() {
  Expr::Node n;
  n.kind = Expr::Node::Kind::length;
  n.dtype = DType::i64;
  return make(std::move(n));
}

Expr operator+(const Expr &a, const Expr &b) { return arithmetic("add", a, b); }
Expr operator-(const Expr &a, const Expr &b) { return arithmetic("sub", a, b); }
Expr operator*(const Expr &a, const Expr &b) { return arithmetic("mul", a, b); }
Expr operator/(const Expr &a, const Expr &b) { return arithmetic("div", a, b); }
Expr operator-(const Expr &a) {
  if (a.valid() && isWeak(a))
    return Expr(-a.node().value);
  return unary("neg", a, false);
}
Expr operator<(const Expr &a, const Expr &b) { return comparison("lt", a, b); }
Expr operator<=(const Expr &a, const Expr &b) { return comparison("le", a, b); }
Expr operator>(const Expr &a, const Expr &b) { return comparison("gt", a, b); }
Expr operator>=(const Expr &a, const Expr &b) { return comparison("ge", a, b); }
Expr operator==(const Expr &a, const Expr &b) { return comparison("eq", a, b); }
Expr operator!=(const Expr &a, const Expr &b) { return comparison("ne", a, b); }
Expr operator&(const Expr &a, const Expr &b) { return logical("and", a, b); }
Expr operator|(const Expr &a, const Expr &b) { return logical("or", a, b); }

Expr where(const Expr &condition, const Expr &a, const Expr &b) {
  if (!condition.valid() || (!isWeak(condition) && condition.dtype() != DType::i1))
    throw Error("where: the condition must be a comparison (i1)");
  Expr::Node n;
  n.kind = Expr::Node::Kind::where;
  n.op = "where";
  n.dtype = promote(a, b, "where");
  n.args = {condition.shared(), a.shared(), b.shared()};
  return make(std::move(n));
}

Expr maximum(const Expr &a, const Expr &b) { return arithmetic("max", a, b); }
Expr minimum(const Expr &a, const Expr &b) { return arithmetic("min", a, b); }
Expr pow(const Expr &a, const Expr &b) {
  Expr x = !isWeak(a) && !is_float(a.dtype()) ? cast(a, DType::f32) : a;
  return arithmetic("pow", x, b);
}
Expr abs(const Expr &x) { return unary("abs", x, false); }
Expr exp(const Expr &x) { return unary("exp", x, true); }
Expr exp2(const Expr &x) { return unary("exp2", x, true); }
Expr log(const Expr &x) { return unary("log", x, true); }
Expr log2(const Expr &x) { return unary("log2", x, true); }
Expr sqrt(const Expr &x) { return unary("sqrt", x, true); }
Expr rsqrt(const Expr &x) { return unary("rsqrt", x, true); }
Expr sin(const Expr &x) { return unary("sin", x, true); }
Expr cos(const Expr &x) { return unary("cos", x, true); }
Expr tanh(const Expr &x) { return unary("tanh", x, true); }
Expr erf(const Expr &x) { return unary("erf", x, true); }
Expr sigmoid(const Expr &x) { return unary("sigmoid", x, true); }
Expr floor(const Expr &x) { return unary("floor", x, true); }
Expr ceil(const Expr &x) { return unary("ceil", x, true); }
Expr relu(const Expr &x) { return unary("relu", x, false); }
Expr gelu(const Expr &x) { return unary("gelu", x, true); }
Expr gelu_tanh(const Expr &x) { return unary("gelu_tanh", x, true); }
Expr silu(const Expr &x) { return unary("silu", x, true); }

Expr cast(const Expr &x, DType dtype) {
  if (!x.valid())
    throw Error("cast of an empty expression");
  Expr::Node n;
  n.kind = Expr::Node::Kind::cast;
  n.dtype = dtype;
  n.args = {x.shared()};
  return make(std::move(n));
}

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

namespace {

class Parser {
public:
  Parser(const std::string &text, const std::vector<DType> &inputs, DType reducedDType, const ExprNames *names = nullptr)
      : text_(text), inputs_(inputs), reduced_(reducedDType), names_(names) {}

  Expr parse() {
    Expr e = orExpr();
    skip();
    if (pos_ != text_.size())
      fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return e;
  }

private:
  [[noreturn]] void fail(const std::string &why) const {
    // Long texts are quoted around the failure, not whole.
    constexpr size_t context = 40;
    size_t from = pos_ > context ? pos_ - context : 0;
    std::string quoted = (from ? "..." : "") + text_.substr(from, 2 * context) +
                         (from + 2 * context < text_.size() ? "..." : "");
    throw Error("expression '" + quoted + "', at " + std::to_string(pos_ + 1) + ": " + why);
  }
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool accept(const std::string &token) {
    skip();
    if (text_.compare(pos_, token.size(), token) == 0) {
      pos_ += token.size();
      return true;
    }
    return false;
  }
  void expect(const std::string &token) {
    if (!accept(token))
      fail("expected '" + token + "'");
  }

  Expr orExpr() {
    Expr e = andExpr();
    while (accept("|"))
      e = e | andExpr();
    return e;
  }
  Expr andExpr() {
    Expr e = comparisonExpr();
    while (accept("&"))
      e = e & comparisonExpr();
    return e;
  }
  Expr comparisonExpr() {
    Expr e = additive();
    for (auto [token, fn] : std::initializer_list<std::pair<const char *, Expr (*)(const Expr &, const Expr &)>>{
             {"<=", [](const Expr &a, const Expr &b) { return a <= b; }},
             {">=", [](const Expr &a, const Expr &b) { return a >= b; }},
             {"==", [](const Expr &a, const Expr &b) { return a == b; }},
             {"!=", [](const Expr &a, const Expr &b) { return a != b; }},
             {"<", [](const Expr &a, const Expr &b) { return a < b; }},
             {">", [](const Expr &a, const Expr &b) { return a > b; }}})
      if (accept(token))
        return fn(e, additive());
    return e;
  }
  Expr additive() {
    Expr e = multiplicative();
    for (;;) {
      if (accept("+"))
        e = e + multiplicative();
      else if (accept("-"))
        e = e - multiplicative();
      else
        return e;
    }
  }
  Expr multiplicative() {
    Expr e = unaryExpr();
    for (;;) {
      if (accept("*"))
        e = e * unaryExpr();
      else if (accept("/"))
        e = e / unaryExpr();
      else
        return e;
    }
  }
  /// Counts the parser's own recursion (parentheses, calls, signs), which
  /// comes before any node is made.
  struct Nesting {
    explicit Nesting(Parser &p) : parser(p) {
      if (++parser.depth_ > kMaxExprDepth)
        parser.fail("nests deeper than " + std::to_string(kMaxExprDepth) + " levels");
    }
    ~Nesting() { --parser.depth_; }
    Parser &parser;
  };

  Expr unaryExpr() {
    Nesting nesting(*this);
    if (accept("-"))
      return -unaryExpr();
    return primary();
  }
  Expr primary() {
    skip();
    if (accept("(")) {
      Expr e = orExpr();
      expect(")");
      return e;
    }
    if (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) {
      const char *start = text_.c_str() + pos_;
      char *end = nullptr;
      double v = std::strtod(start, &end);
      pos_ += end - start;
      return Expr(v);
    }
    std::string word = identifier();
    if (word.empty())
      fail("expected a value");
    if (names_)
      return named(word);
    if (word == "r")
      return reduced(reduced_);
    if (word == "n")
      return reduced_length();
    if (word.size() > 2 && word.compare(0, 2, "in") == 0 && std::isdigit(static_cast<unsigned char>(word[2]))) {
      // Digits only, and no more of them than an input count can have.
      size_t index = 0;
      for (size_t i = 2; i < word.size(); ++i) {
        if (!std::isdigit(static_cast<unsigned char>(word[i])) || index > inputs_.size())
          fail("'" + word.substr(0, 24) + "' names no input (there are " + std::to_string(inputs_.size()) + ")");
        index = index * 10 + static_cast<size_t>(word[i] - '0');
      }
      if (index >= inputs_.size())
        fail("'" + word + "' names no input (there are " + std::to_string(inputs_.size()) + ")");
      return input(static_cast<int>(index), inputs_[index]);
    }
    return call(word);
  }
  /// A named value: an input, or an element of a named tensor.
  Expr named(const std::string &word) {
    for (size_t i = 0; i < names_->inputs.size(); ++i)
      if (names_->inputs[i] == word)
        return input(static_cast<int>(i), names_->input_dtypes[i]);
    for (size_t j = 0; j < names_->tensors.size(); ++j)
      if (names_->tensors[j] == word) {
        expect("[");
        Expr index = orExpr();
        expect("]");
        return gather(static_cast<int>(j), index, names_->tensor_dtypes[j]);
      }
    skip();
    if (pos_ < text_.size() && text_[pos_] == '(')
      return call(word);
    std::string known;
    for (const std::string &n : names_->inputs)
      if (!n.empty())
        known += (known.empty() ? "" : ", ") + n;
    for (const std::string &n : names_->tensors)
      known += (known.empty() ? "" : ", ") + n + "[...]";
    fail("'" + word.substr(0, 24) + "' names no value (" + known + ")");
  }
  std::string identifier() {
    skip();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    return text_.substr(start, pos_ - start);
  }
  Expr call(const std::string &function) {
    static const std::map<std::string, Expr (*)(const Expr &)> unaries = {
        {"abs", abs},     {"exp", exp},     {"exp2", exp2},   {"log", log},       {"log2", log2},
        {"sqrt", sqrt},   {"rsqrt", rsqrt}, {"sin", sin},     {"cos", cos},       {"tanh", tanh},
        {"erf", erf},     {"sigmoid", sigmoid}, {"floor", floor}, {"ceil", ceil}, {"relu", relu},
        {"gelu", gelu},   {"gelu_tanh", gelu_tanh}, {"silu", silu}};
    static const std::map<std::string, Expr (*)(const Expr &, const Expr &)> binaries = {
        {"max", maximum}, {"min", minimum}, {"pow", pow}};
    expect("(");
    if (function == "cast") {
      Expr x = orExpr();
      expect(",");
      std::string type = identifier();
      expect(")");
      for (DType t : {DType::i1, DType::i8, DType::i16, DType::i32, DType::i64, DType::u8, DType::u16, DType::u32,
                      DType::u64, DType::f16, DType::bf16, DType::f32, DType::f64, DType::f8e4m3, DType::f8e5m2})
        if (name(t) == type)
          return cast(x, t);
      fail("'" + type + "' is not a dtype");
    }
    if (function == "where") {
      Expr c = orExpr();
      expect(",");
      Expr a = orExpr();
      expect(",");
      Expr b = orExpr();
      expect(")");
      return where(c, a, b);
    }
    if (auto it = unaries.find(function); it != unaries.end()) {
      Expr x = orExpr();
      expect(")");
      return it->second(x);
    }
    if (auto it = binaries.find(function); it != binaries.end()) {
      Expr a = orExpr();
      expect(",");
      Expr b = orExpr();
      expect(")");
      return it->second(a, b);
    }
    fail("unknown function '" + function + "'");
  }

  const std::string &text_;
  const std::vector<DType> &inputs_;
  DType reduced_;
  const ExprNames *names_;
  size_t pos_ = 0;
  int depth_ = 0;
};

} // namespace

Expr parse_expr(const std::string &text, const std::vector<DType> &input_dtypes, DType reduced_dtype) {
  return Parser(text, input_dtypes, reduced_dtype).parse();
}

Expr parse_expr(const std::string &text, const ExprNames &names) {
  return Parser(text, names.input_dtypes, DType::f32, &names).parse();
}

} // namespace kiln::ops
