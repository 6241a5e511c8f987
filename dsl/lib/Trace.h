//===- Trace.h - the state of the kernel being traced ---------*- C++ -*-===//
//
// Internal to dsl/lib: the DSL's operations build IR through the TraceContext
// of the current thread. Every handle records which trace and which region
// body made it, so misuse (a handle kept from another trace, a value used
// outside the loop body that made it) is caught with the user's line.
//
//===----------------------------------------------------------------------===//

#pragma once

#include <kiln/control.h>
#include <kiln/error.h>
#include <kiln/tensor.h>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

/// Region bodies (loops, branches, combine functions) nest at most this
/// deep in a kernel: kernels need a handful, and each level costs stack in
/// every recursive walk over the IR after tracing.
constexpr size_t kMaxNestedBodies = 64;
/// A block holds at most 2^20 elements (Triton's limit too): a program's
/// block lives in its threads' registers, and larger ones only spill while
/// compiles take minutes and gigabytes.
constexpr int64_t kMaxBlockElements = int64_t(1) << 20;

/// One open region body (a loop or branch body) of the trace.
struct Scope {
  uint32_t id;
  const char *kind; ///< "for_range body", "if_ branch", ...
  Loc opened_at;
  /// Combine functions of reductions and scans see only their arguments:
  /// values from outside are refused.
  bool isolated = false;
};

class TraceContext {
public:
  TraceContext(mlir::MLIRContext &context, mlir::ModuleOp module);
  ~TraceContext();
  TraceContext(const TraceContext &) = delete;

  /// The trace running on this thread; a TraceError at `loc` if none is
  /// (a DSL op called outside a kernel being traced).
  static TraceContext &current(Loc loc);
  static TraceContext *active();

  mlir::MLIRContext &context() { return context_; }
  mlir::OpBuilder &builder() { return builder_; }
  mlir::Location location(Loc loc);
  uint32_t id() const { return id_; }

  /// Refuses a new region body at `loc` when kMaxNestedBodies are open.
  void check_nesting(Loc loc, const char *what) const;
  uint32_t open_scope(const char *kind, Loc loc, bool isolated = false);
  void close_scope(uint32_t scope);
  uint32_t innermost_scope() const { return scopes_.back().id; }
  const Scope *find_open_scope(uint32_t id) const;
  /// The innermost isolated scope opened after scope `id`, if any: a value
  /// of scope `id` may not be used below it.
  const Scope *isolating_scope_above(uint32_t id) const;
  /// Where a closed scope was opened, for "made inside ..." messages.
  const Scope *find_closed_scope(uint32_t id) const;

  /// The Vars alive now, oldest first.
  std::vector<Var *> &vars() { return vars_; }

  /// Config names the kernel looked up while traced.
  void note_config_key(std::string_view name) { config_keys_.emplace(name); }
  const std::set<std::string, std::less<>> &config_keys() const { return config_keys_; }

private:
  mlir::MLIRContext &context_;
  mlir::OpBuilder builder_;
  uint32_t id_;
  uint32_t next_scope_ = 1;
  std::vector<Scope> scopes_;
  std::vector<Scope> closed_scopes_;
  std::vector<Var *> vars_;
  std::set<std::string, std::less<>> config_keys_;
  TraceContext *previous_;
};

/// Throws the TraceError of `message` at `loc`, or where the outermost
/// LibraryScope on this thread says.
[[noreturn]] void fail(Loc loc, const std::string &message);

/// The line errors name for `loc`: itself, the caller of the outermost
/// LibraryScope, or none (a library kernel's: an empty location).
Loc reported_location(Loc loc);
/// "file:line" of a location errors name, "library code" for none.
std::string where(Loc loc);

/// Refuses, at `loc`, a block of `shape` holding more than
/// kMaxBlockElements. Every handle an operation makes is checked (see
/// TraceAccess::wrap); operations that take a shape from their caller check
/// it before building anything.
void check_block_size(const ElementType &type, const Shape &shape, Loc loc);

/// Runs the verifier of `op` (built by the DSL) and turns a failure into a
/// TraceError at `loc` carrying the verifier's message: the safety net
/// behind the DSL's own checks.
void verify_op(mlir::Operation *op, Loc loc);

/// Conversions between DSL types and IR types.
mlir::Type scalar_type(mlir::MLIRContext &context, DType dtype);
mlir::Type element_type(mlir::MLIRContext &context, const ElementType &type);
mlir::Type ir_type(mlir::MLIRContext &context, const ElementType &type, const Shape &shape);

/// Access to the private parts of handles.
struct TraceAccess {
  /// The IR value of `t`, after checking it may be used here: it is not
  /// empty, belongs to this trace, and its region body is still open.
  static mlir::Value use(const Tensor &t, Loc loc, const char *role = "operand");
  /// A handle for `value`, made at `loc` in the innermost open scope.
  static Tensor wrap(mlir::Value value, const ElementType &type, Loc loc);
  /// The same without a value check (for Vars and loop plumbing).
  static mlir::Value raw(const Tensor &t) {
    return mlir::Value::getFromOpaquePointer(t.value_);
  }
  static uint32_t scope(const Tensor &t) { return t.scope_; }
  static void set(Var &var, const Tensor &value) { var.value_ = value; }
  static const Tensor &get(const Var &var) { return var.value_; }
};

/// "a 128x64 f32 block" / "an i32 scalar".
std::string describe(const ElementType &type, const Shape &shape);

} // namespace kiln::detail
