//===- ControlFlow.cpp - Var, for_range, if_, while_ ----------------------===//
//
// Loops and branches carry explicit values plus every live Var. Bodies are
// traced once into the regions of scf.for / scf.if / scf.while; inside a
// body each Var reads the region's block argument, and after the op it reads
// the op's result.
//
//===----------------------------------------------------------------------===//

#include "dsl/lib/Build.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <algorithm>

namespace kiln {

using namespace detail;
namespace scf = mlir::scf;

namespace {

/// Checks a value flowing into a Var and shapes literals and scalars to it.
Tensor value_for_var(const Tensor &current, const Operand &value, Loc declared, Loc loc) {
  Tensor v = value.kind() == Operand::Kind::tensor
                 ? (TraceAccess::use(value.tensor(), loc, "the value assigned"), value.tensor())
                 : materialize(value, current.dtype(), "assignment to a Var");
  if (v.type() != current.type() || (!v.is_scalar() && v.shape() != current.shape()))
    fail(loc, "assigning " + v.describe() + " to the Var declared at " + where(declared) +
                  ", which holds " + current.describe() +
                  (v.type() != current.type() ? "; convert with .to<>()" : ""));
  if (v.shape() != current.shape())
    v = broadcast_to_shape(v, current.shape(), loc);
  return v;
}

/// Saves the values of the live Vars and restores them (on every path out
/// of a body, including errors).
struct VarSnapshot {
  std::vector<Var *> vars;
  std::vector<Tensor> values;
  explicit VarSnapshot(TraceContext &trace) : vars(trace.vars()) {
    for (Var *var : vars)
      values.push_back(TraceAccess::get(*var));
  }
  void restore() const {
    for (size_t i = 0; i < vars.size(); ++i)
      TraceAccess::set(*vars[i], values[i]);
  }
  std::vector<Tensor> current() const {
    std::vector<Tensor> now;
    for (Var *var : vars)
      now.push_back(TraceAccess::get(*var));
    return now;
  }
};

/// Checks that the values yielded for explicit carried values keep their
/// types and shapes.
void check_yield(const std::vector<Tensor> &init, const std::vector<Tensor> &next, Loc loc,
                 const char *what) {
  if (next.size() != init.size())
    fail(loc, std::string(what) + " returns " + std::to_string(next.size()) +
                  " value(s) but carries " + std::to_string(init.size()));
  for (size_t i = 0; i < init.size(); ++i) {
    TraceAccess::use(next[i], loc, "a carried value");
    if (next[i].type() != init[i].type() || next[i].shape() != init[i].shape())
      fail(loc, std::string(what) + ": carried value #" + std::to_string(i) + " starts as " +
                    init[i].describe() + " but the body returns " + next[i].describe());
  }
}

llvm::SmallVector<mlir::Value> values_of(const std::vector<Tensor> &tensors, Loc loc) {
  llvm::SmallVector<mlir::Value> values;
  for (const Tensor &t : tensors)
    values.push_back(TraceAccess::use(t, loc, "a carried value"));
  return values;
}

llvm::SmallVector<mlir::Type> types_of(const std::vector<Tensor> &tensors) {
  llvm::SmallVector<mlir::Type> types;
  for (const Tensor &t : tensors)
    types.push_back(TraceAccess::raw(t).getType());
  return types;
}

/// Replaces the terminator of `block` (if any) by an scf.yield of `values`.
void yield_at_end(mlir::OpBuilder &b, mlir::Location l, mlir::Block &block,
                  llvm::ArrayRef<mlir::Value> values) {
  if (!block.empty() && block.back().hasTrait<mlir::OpTrait::IsTerminator>())
    block.back().erase();
  b.setInsertionPointToEnd(&block);
  scf::YieldOp::create(b, l, values);
}

/// A loop bound: an integer literal or a signed integer scalar.
DType bound_dtype(const Operand &bound, const char *what) {
  if (bound.kind() == Operand::Kind::integer)
    return DType::i32;
  const Tensor &t = require_tensor(bound, what);
  if (!t.is_scalar() || t.is_pointer() || !is_signed_integer(t.dtype()))
    fail(bound.loc(), std::string(what) + " must be a signed integer scalar (or literal), got " +
                          t.describe());
  return bit_width(t.dtype()) > 32 ? DType::i64 : DType::i32;
}

} // namespace

//===----------------------------------------------------------------------===//
// Var
//===----------------------------------------------------------------------===//

Var::Var(const Tensor &init, Loc loc) : loc_(loc) {
  TraceContext &trace = TraceContext::current(loc);
  TraceAccess::use(init, loc, "a Var's initial value");
  value_ = init;
  trace_ = trace.id();
  trace.vars().push_back(this);
}

Var::Var(const Operand &init, DType dtype, Loc loc)
    : Var(full({}, init, dtype, loc), loc) {}

Var::~Var() {
  TraceContext *trace = TraceContext::active();
  if (!trace || trace->id() != trace_)
    return;
  auto &vars = trace->vars();
  vars.erase(std::remove(vars.begin(), vars.end(), this), vars.end());
}

Var &Var::operator=(const Operand &value) {
  value_ = value_for_var(value_, value, loc_, value.loc());
  return *this;
}

Var &Var::operator+=(const Operand &value) { return *this = Operand(value_, value.loc()) + value; }
Var &Var::operator-=(const Operand &value) { return *this = Operand(value_, value.loc()) - value; }
Var &Var::operator*=(const Operand &value) { return *this = Operand(value_, value.loc()) * value; }
Var &Var::operator/=(const Operand &value) { return *this = Operand(value_, value.loc()) / value; }

//===----------------------------------------------------------------------===//
// for_range
//===----------------------------------------------------------------------===//

struct detail::ForLoop::State {
  TraceContext &trace;
  Loc loc;
  scf::ForOp op;
  VarSnapshot outer;
  std::vector<Tensor> init;
  uint32_t scope = 0;
  mlir::OpBuilder::InsertPoint after;
};

detail::ForLoop::ForLoop(const Operand &lo, const Operand &hi, const Operand &step,
                         std::vector<Tensor> carried, Loc loc)
    : state_(nullptr) {
  TraceContext &trace = TraceContext::current(loc);
  trace.check_nesting(loc, "this for_range");
  DType dtype = DType::i32;
  for (auto [bound, what] : {std::pair{&lo, "for_range's start"}, std::pair{&hi, "for_range's end"},
                             std::pair{&step, "for_range's step"}})
    if (bound_dtype(*bound, what) == DType::i64)
      dtype = DType::i64;
  if (step.kind() == Operand::Kind::integer && step.integer() <= 0)
    fail(loc, "for_range's step must be positive, got " + std::to_string(step.integer()));
  auto bound = [&](const Operand &operand) {
    return TraceAccess::use(convert(materialize(operand, dtype, "for_range"), dtype, loc), loc);
  };
  mlir::Value lb = bound(lo), ub = bound(hi), st = bound(step);
  for (const Tensor &t : carried)
    TraceAccess::use(t, loc, "a carried value");

  state_ = new State{trace, loc, {}, VarSnapshot(trace), carried, 0, {}};
  std::vector<Tensor> all = carried;
  for (const Tensor &v : state_->outer.values)
    all.push_back(v);
  mlir::OpBuilder &b = trace.builder();
  state_->op = scf::ForOp::create(b, trace.location(loc), lb, ub, st, values_of(all, loc));
  state_->after = b.saveInsertionPoint();
  mlir::Block *body = state_->op.getBody();
  b.setInsertionPointToStart(body);
  state_->scope = trace.open_scope("for_range body", loc);

  induction_ = TraceAccess::wrap(state_->op.getInductionVar(), number(dtype), loc);
  auto args = state_->op.getRegionIterArgs();
  for (size_t i = 0; i < carried.size(); ++i)
    carried_.push_back(TraceAccess::wrap(args[i], carried[i].type(), loc));
  for (size_t i = 0; i < state_->outer.vars.size(); ++i)
    TraceAccess::set(*state_->outer.vars[i],
                     TraceAccess::wrap(args[carried.size() + i], state_->outer.values[i].type(),
                                       state_->outer.vars[i]->declared_at()));
}

detail::ForLoop::~ForLoop() {
  if (!state_)
    return;
  // Only reached when the body threw: leave the trace consistent for the
  // error path (the whole trace is discarded).
  state_->trace.close_scope(state_->scope);
  state_->outer.restore();
  delete state_;
}

std::vector<Tensor> detail::ForLoop::finish(const std::vector<Tensor> &next) {
  State &s = *state_;
  check_yield(s.init, next, s.loc, "for_range's body");
  std::vector<Tensor> yielded = next;
  for (const Tensor &v : s.outer.current())
    yielded.push_back(v);
  mlir::OpBuilder &b = s.trace.builder();
  yield_at_end(b, s.trace.location(s.loc), *s.op.getBody(), values_of(yielded, s.loc));
  s.trace.close_scope(s.scope);
  b.restoreInsertionPoint(s.after);

  std::vector<Tensor> results;
  for (size_t i = 0; i < s.init.size(); ++i)
    results.push_back(TraceAccess::wrap(s.op.getResult(i), s.init[i].type(), s.loc));
  for (size_t i = 0; i < s.outer.vars.size(); ++i)
    TraceAccess::set(*s.outer.vars[i], TraceAccess::wrap(s.op.getResult(s.init.size() + i),
                                                         s.outer.values[i].type(), s.loc));
  delete state_;
  state_ = nullptr;
  return results;
}

//===----------------------------------------------------------------------===//
// if_
//===----------------------------------------------------------------------===//

struct detail::IfBranch::State {
  TraceContext &trace;
  Loc loc;
  size_t explicit_results;
  scf::IfOp op; ///< built without results; rebuilt with them in finish()
  VarSnapshot outer;
  std::vector<Tensor> then_results;
  uint32_t scope = 0;
  mlir::OpBuilder::InsertPoint after;
};

detail::IfBranch::IfBranch(const Tensor &condition, size_t explicit_results, Loc loc)
    : state_(nullptr) {
  TraceContext &trace = TraceContext::current(loc);
  trace.check_nesting(loc, "this if_");
  mlir::Value cond = TraceAccess::use(condition, loc, "if_'s condition");
  if (!condition.is_scalar() || condition.is_pointer() || condition.dtype() != DType::i1)
    fail(loc, "if_ needs a scalar i1 condition, got " + condition.describe() +
                  (condition.is_scalar() ? "" : "; to choose per element use where()"));
  mlir::OpBuilder &b = trace.builder();
  auto op = scf::IfOp::create(b, trace.location(loc), mlir::TypeRange{}, cond,
                              /*withElseRegion=*/true);
  state_ = new State{trace, loc, explicit_results, op, VarSnapshot(trace), {}, 0, {}};
  state_->after = b.saveInsertionPoint();
}

detail::IfBranch::~IfBranch() {
  if (!state_)
    return;
  if (state_->scope)
    state_->trace.close_scope(state_->scope);
  state_->outer.restore();
  delete state_;
}

void detail::IfBranch::begin_then() {
  State &s = *state_;
  s.trace.builder().setInsertionPointToStart(&s.op.getThenRegion().front());
  s.scope = s.trace.open_scope("if_ then-branch", s.loc);
}

void detail::IfBranch::end_then(const std::vector<Tensor> &results) {
  State &s = *state_;
  if (results.size() != s.explicit_results)
    fail(s.loc, "if_'s then-branch returns " + std::to_string(results.size()) + " value(s)");
  s.then_results = results;
  std::vector<Tensor> yielded = results;
  for (const Tensor &v : s.outer.current())
    yielded.push_back(v);
  yield_at_end(s.trace.builder(), s.trace.location(s.loc), s.op.getThenRegion().front(),
               values_of(yielded, s.loc));
  s.trace.close_scope(s.scope);
  s.scope = 0;
  s.outer.restore();
}

void detail::IfBranch::begin_else() {
  State &s = *state_;
  s.trace.builder().setInsertionPointToStart(&s.op.getElseRegion().front());
  s.scope = s.trace.open_scope("if_ else-branch", s.loc);
}

void detail::IfBranch::end_else(const std::vector<Tensor> &results) {
  State &s = *state_;
  for (size_t i = 0; i < results.size() && i < s.then_results.size(); ++i)
    TraceAccess::use(results[i], s.loc, "the else-branch's result");
  if (results.size() != s.then_results.size())
    fail(s.loc, "if_'s branches return different numbers of values (" +
                    std::to_string(s.then_results.size()) + " and " +
                    std::to_string(results.size()) + ")");
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].type() != s.then_results[i].type() ||
        results[i].shape() != s.then_results[i].shape())
      fail(s.loc, "if_'s branches return different values for result #" + std::to_string(i) +
                      ": " + s.then_results[i].describe() + " and " + results[i].describe());
  std::vector<Tensor> yielded = results;
  for (const Tensor &v : s.outer.current())
    yielded.push_back(v);
  yield_at_end(s.trace.builder(), s.trace.location(s.loc), s.op.getElseRegion().front(),
               values_of(yielded, s.loc));
  s.trace.close_scope(s.scope);
  s.scope = 0;
  s.outer.restore();
}

std::vector<Tensor> detail::IfBranch::finish() {
  State &s = *state_;
  mlir::OpBuilder &b = s.trace.builder();
  b.restoreInsertionPoint(s.after);
  // Now that the branches are traced, make the op with its result types and
  // move the branches into it.
  auto then_yield = s.op.getThenRegion().front().getTerminator();
  auto op = scf::IfOp::create(b, s.op.getLoc(), then_yield->getOperandTypes(), s.op.getCondition(),
                              /*withElseRegion=*/true);
  op.getThenRegion().front().erase();
  op.getElseRegion().front().erase();
  op.getThenRegion().takeBody(s.op.getThenRegion());
  op.getElseRegion().takeBody(s.op.getElseRegion());
  s.op.erase();

  std::vector<Tensor> results;
  for (size_t i = 0; i < s.explicit_results; ++i)
    results.push_back(TraceAccess::wrap(op.getResult(i), s.then_results[i].type(), s.loc));
  for (size_t i = 0; i < s.outer.vars.size(); ++i)
    TraceAccess::set(*s.outer.vars[i], TraceAccess::wrap(op.getResult(s.explicit_results + i),
                                                         s.outer.values[i].type(), s.loc));
  delete state_;
  state_ = nullptr;
  return results;
}

//===----------------------------------------------------------------------===//
// while_
//===----------------------------------------------------------------------===//

struct detail::WhileLoop::State {
  TraceContext &trace;
  Loc loc;
  scf::WhileOp op;
  VarSnapshot outer;
  std::vector<Tensor> init;
  uint32_t scope = 0;
  mlir::OpBuilder::InsertPoint after;
};

detail::WhileLoop::WhileLoop(std::vector<Tensor> carried, Loc loc) : state_(nullptr) {
  TraceContext &trace = TraceContext::current(loc);
  trace.check_nesting(loc, "this while_");
  for (const Tensor &t : carried)
    TraceAccess::use(t, loc, "a carried value");
  state_ = new State{trace, loc, {}, VarSnapshot(trace), carried, 0, {}};
  std::vector<Tensor> all = carried;
  for (const Tensor &v : state_->outer.values)
    all.push_back(v);
  mlir::OpBuilder &b = trace.builder();
  mlir::Location l = trace.location(loc);
  auto types = types_of(all);
  state_->op = scf::WhileOp::create(b, l, types, values_of(all, loc));
  state_->after = b.saveInsertionPoint();
  llvm::SmallVector<mlir::Location> locations(types.size(), l);
  mlir::Block *before = b.createBlock(&state_->op.getBefore(), {}, types, locations);
  b.setInsertionPointToStart(before);
  state_->scope = trace.open_scope("while_ condition", loc);
  for (size_t i = 0; i < carried.size(); ++i)
    before_.push_back(TraceAccess::wrap(before->getArgument(i), carried[i].type(), loc));
  for (size_t i = 0; i < state_->outer.vars.size(); ++i)
    TraceAccess::set(*state_->outer.vars[i],
                     TraceAccess::wrap(before->getArgument(carried.size() + i),
                                       state_->outer.values[i].type(),
                                       state_->outer.vars[i]->declared_at()));
}

detail::WhileLoop::~WhileLoop() {
  if (!state_)
    return;
  if (state_->scope)
    state_->trace.close_scope(state_->scope);
  state_->outer.restore();
  delete state_;
}

void detail::WhileLoop::end_before(const Tensor &condition) {
  State &s = *state_;
  mlir::Value cond = TraceAccess::use(condition, s.loc, "while_'s condition");
  if (!condition.is_scalar() || condition.is_pointer() || condition.dtype() != DType::i1)
    fail(s.loc, "while_'s condition must be a scalar i1, got " + condition.describe());
  mlir::OpBuilder &b = s.trace.builder();
  mlir::Location l = s.trace.location(s.loc);
  std::vector<Tensor> forwarded = before_;
  for (const Tensor &v : s.outer.current())
    forwarded.push_back(v);
  scf::ConditionOp::create(b, l, cond, values_of(forwarded, s.loc));
  s.trace.close_scope(s.scope);

  auto types = types_of(forwarded);
  llvm::SmallVector<mlir::Location> locations(types.size(), l);
  mlir::Block *after = b.createBlock(&s.op.getAfter(), {}, types, locations);
  b.setInsertionPointToStart(after);
  s.scope = s.trace.open_scope("while_ body", s.loc);
  for (size_t i = 0; i < s.init.size(); ++i)
    after_.push_back(TraceAccess::wrap(after->getArgument(i), s.init[i].type(), s.loc));
  for (size_t i = 0; i < s.outer.vars.size(); ++i)
    TraceAccess::set(*s.outer.vars[i], TraceAccess::wrap(after->getArgument(s.init.size() + i),
                                                         s.outer.values[i].type(),
                                                         s.outer.vars[i]->declared_at()));
}

std::vector<Tensor> detail::WhileLoop::finish(const std::vector<Tensor> &next) {
  State &s = *state_;
  check_yield(s.init, next, s.loc, "while_'s body");
  std::vector<Tensor> yielded = next;
  for (const Tensor &v : s.outer.current())
    yielded.push_back(v);
  mlir::OpBuilder &b = s.trace.builder();
  scf::YieldOp::create(b, s.trace.location(s.loc), values_of(yielded, s.loc));
  s.trace.close_scope(s.scope);
  s.scope = 0;
  b.restoreInsertionPoint(s.after);
  std::vector<Tensor> results;
  for (size_t i = 0; i < s.init.size(); ++i)
    results.push_back(TraceAccess::wrap(s.op.getResult(i), s.init[i].type(), s.loc));
  for (size_t i = 0; i < s.outer.vars.size(); ++i)
    TraceAccess::set(*s.outer.vars[i], TraceAccess::wrap(s.op.getResult(s.init.size() + i),
                                                         s.outer.values[i].type(), s.loc));
  delete state_;
  state_ = nullptr;
  return results;
}

} // namespace kiln
