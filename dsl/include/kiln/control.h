// Control flow of the Kiln DSL: loops and branches that become `scf`
// operations in the IR. Plain C++ `for`/`if` over trace-time values (config
// entries, shapes) simply unroll or specialize while tracing; these are for
// decisions on runtime values.
//
// Values flow out of a loop or branch in one of two ways:
//  - explicitly: `carry(a, b)` names the values a loop carries; the body
//    takes them as arguments and returns their next values;
//  - through `Var`s: every Var alive when the loop or branch starts is
//    carried automatically, so assigning to it inside the body is seen after.
// A Tensor made inside a body and used after it is a trace-time error naming
// the line that made it.
#pragma once

#include <kiln/tensor.h>

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln {

/// A mutable kernel variable: loops and branches carry it automatically.
/// Its dtype and shape are fixed when it is made (`Var acc(zeros({64}, f32));`);
/// assigning a value of another dtype or shape is a trace-time error.
class Var {
public:
  explicit Var(const Tensor &init, Loc loc = Loc::current());
  Var(const Operand &init, DType dtype, Loc loc = Loc::current());
  Var(const Var &) = delete;
  ~Var();

  Var &operator=(const Operand &value);
  Var &operator=(const Var &other) { return *this = Operand(other.value_, other.loc_); }
  Var &operator+=(const Operand &value);
  Var &operator-=(const Operand &value);
  Var &operator*=(const Operand &value);
  Var &operator/=(const Operand &value);

  const Tensor &get() const { return value_; }
  operator const Tensor &() const { return value_; }
  const Tensor *operator->() const { return &value_; }
  Loc declared_at() const { return loc_; }

private:
  friend struct detail::TraceAccess;
  Tensor value_;
  Loc loc_;
  uint32_t trace_ = 0;
};

inline Operand::Operand(const Var &var, Loc loc) : Operand(var.get(), loc) {}

/// The values a loop carries explicitly: `for_range(0, n, 1, carry(acc), body)`.
template <size_t N> struct Carry {
  std::array<Tensor, N> values;
};
template <class... Ts> Carry<sizeof...(Ts)> carry(const Ts &...values) {
  return Carry<sizeof...(Ts)>{{Tensor(values)...}};
}

namespace detail {

/// The non-template core of the control-flow builders (dsl/lib).
class ForLoop {
public:
  ForLoop(const Operand &lo, const Operand &hi, const Operand &step,
          std::vector<Tensor> carried, Loc loc);
  ~ForLoop();
  const Tensor &induction() const { return induction_; }
  const std::vector<Tensor> &carried() const { return carried_; }
  /// Ends the body yielding `next` (the explicit carried values); returns
  /// the loop's results for them.
  std::vector<Tensor> finish(const std::vector<Tensor> &next);

private:
  struct State;
  State *state_;
  Tensor induction_;
  std::vector<Tensor> carried_;
};

class IfBranch {
public:
  IfBranch(const Tensor &condition, size_t explicit_results, Loc loc);
  ~IfBranch();
  void begin_then();
  void end_then(const std::vector<Tensor> &results);
  void begin_else();
  void end_else(const std::vector<Tensor> &results);
  std::vector<Tensor> finish();

private:
  struct State;
  State *state_;
};

class WhileLoop {
public:
  WhileLoop(std::vector<Tensor> carried, Loc loc);
  ~WhileLoop();
  const std::vector<Tensor> &before_args() const { return before_; }
  void end_before(const Tensor &condition);
  const std::vector<Tensor> &after_args() const { return after_; }
  std::vector<Tensor> finish(const std::vector<Tensor> &next);

private:
  struct State;
  State *state_;
  std::vector<Tensor> before_, after_;
};

/// Turns a body's return value (Tensor, std::array, std::tuple, std::pair
/// or std::vector of Tensors) into a vector.
template <class R> std::vector<Tensor> to_values(const R &result) {
  if constexpr (std::is_convertible_v<R, Tensor>) {
    return {Tensor(result)};
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    return result;
  } else {
    return std::apply([](const auto &...v) { return std::vector<Tensor>{Tensor(v)...}; }, result);
  }
}

template <size_t N> auto from_values(const std::vector<Tensor> &values) {
  if constexpr (N == 1) {
    return values[0];
  } else {
    std::array<Tensor, N> out;
    for (size_t i = 0; i < N; ++i)
      out[i] = values[i];
    return out;
  }
}

template <size_t N, class Body>
std::vector<Tensor> call_with(Body &body, const Tensor &first, const std::vector<Tensor> &args) {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return to_values(body(first, args[I]...));
  }(std::make_index_sequence<N>());
}

template <size_t N, class Fn> auto call_unpacked(Fn &fn, const std::vector<Tensor> &args) {
  return [&]<size_t... I>(std::index_sequence<I...>) { return fn(args[I]...); }(
             std::make_index_sequence<N>());
}

} // namespace detail

/// A loop over i = lo, lo + step, ... < hi (i32, or i64 if a bound is i64).
/// `body(i)` runs once while tracing; Vars it assigns are carried.
template <class Body>
  requires std::is_invocable_v<Body &, const Tensor &>
void for_range(const Operand &lo, const Operand &hi, const Operand &step, Body &&body,
               Loc loc = Loc::current()) {
  detail::ForLoop loop(lo, hi, step, {}, loc);
  body(loop.induction());
  loop.finish({});
}

/// The same with explicitly carried values: `body(i, c...)` returns their
/// next values; the loop returns their final values (a Tensor for one, a
/// std::array for several).
template <size_t N, class Body>
auto for_range(const Operand &lo, const Operand &hi, const Operand &step, const Carry<N> &init,
               Body &&body, Loc loc = Loc::current()) {
  detail::ForLoop loop(lo, hi, step, std::vector<Tensor>(init.values.begin(), init.values.end()),
                       loc);
  auto next = detail::call_with<N>(body, loop.induction(), loop.carried());
  return detail::from_values<N>(loop.finish(next));
}

/// Runs `then_body` where the scalar i1 `condition` holds and `else_body`
/// where not. Bodies returning void communicate through Vars; bodies
/// returning Tensors (or arrays/tuples of them, the same types from both)
/// make if_ return those values.
template <class Then, class Else>
auto if_(const Tensor &condition, Then &&then_body, Else &&else_body, Loc loc = Loc::current()) {
  using R = std::invoke_result_t<Then &>;
  if constexpr (std::is_void_v<R>) {
    detail::IfBranch branch(condition, 0, loc);
    branch.begin_then();
    then_body();
    branch.end_then({});
    branch.begin_else();
    else_body();
    branch.end_else({});
    branch.finish();
  } else {
    constexpr size_t n = [] {
      if constexpr (std::is_convertible_v<R, Tensor>) return size_t(1);
      else return std::tuple_size_v<R>;
    }();
    detail::IfBranch branch(condition, n, loc);
    branch.begin_then();
    branch.end_then(detail::to_values(then_body()));
    branch.begin_else();
    branch.end_else(detail::to_values(else_body()));
    return detail::from_values<n>(branch.finish());
  }
}

/// A branch without else; its body communicates through Vars.
template <class Then> void if_(const Tensor &condition, Then &&then_body, Loc loc = Loc::current()) {
  static_assert(std::is_void_v<std::invoke_result_t<Then &>>,
                "an if_ without else cannot return values: use Vars, or give an else body");
  if_(condition, std::forward<Then>(then_body), [] {}, loc);
}

/// `while (cond()) body();` over Vars: both run once while tracing.
template <class Cond, class Body>
  requires std::is_invocable_v<Cond &> && std::is_invocable_v<Body &>
void while_(Cond &&cond, Body &&body, Loc loc = Loc::current()) {
  detail::WhileLoop loop({}, loc);
  loop.end_before(cond());
  body();
  loop.finish({});
}

/// The same with explicitly carried values: `cond(c...)` returns the scalar
/// i1 condition, `body(c...)` the next values; returns the final values.
template <size_t N, class Cond, class Body>
auto while_(const Carry<N> &init, Cond &&cond, Body &&body, Loc loc = Loc::current()) {
  detail::WhileLoop loop(std::vector<Tensor>(init.values.begin(), init.values.end()), loc);
  loop.end_before(detail::call_unpacked<N>(cond, loop.before_args()));
  auto next = detail::to_values(detail::call_unpacked<N>(body, loop.after_args()));
  return detail::from_values<N>(loop.finish(next));
}

} // namespace kiln
