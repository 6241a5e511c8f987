//===- Trace.cpp - trace state, handle checks, type mapping ---------------===//

#include "dsl/lib/Trace.h"

#include "compiler/dialect/tile/Tile.h"

#include <kiln/kernel.h>

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <algorithm>
#include <atomic>

namespace kiln {

std::string to_string(const ElementType &type) {
  if (type.descriptor_rank > 0)
    return "tensormap<" + std::string(name(type.dtype)) + ", " + std::to_string(type.descriptor_rank) + ">";
  std::string text;
  if (type.is_pointer)
    text = type.is_const ? "*const " : "*";
  return text + std::string(name(type.dtype));
}

std::string to_string(const Shape &shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

std::string Tensor::describe() const {
  if (!valid())
    return "an empty Tensor";
  return detail::describe(type_, shape_);
}

} // namespace kiln

namespace kiln::detail {

namespace {
thread_local TraceContext *currentTrace = nullptr;
std::atomic<uint32_t> nextTraceId{1};

/// What the outermost LibraryScope of this thread says errors name.
struct LibraryOrigin {
  bool active = false;
  Loc caller;       ///< used when `what` is empty
  std::string what; ///< else errors read "<what>: <message>"
};
thread_local LibraryOrigin libraryOrigin;
} // namespace

/// "a" or "an" as spoken before `word` ("an f32", "a u8", "an 8x16").
static const char *article(const std::string &word) {
  if (word.empty())
    return "a";
  if (std::isdigit(static_cast<unsigned char>(word[0]))) {
    size_t digits = word.find_first_not_of("0123456789");
    std::string number = word.substr(0, digits);
    return number[0] == '8' || number == "11" || number == "18" ? "an" : "a";
  }
  return std::string("aefhilmnorsx").find(word[0]) != std::string::npos ? "an" : "a";
}

std::string describe(const ElementType &type, const Shape &shape) {
  std::string element = to_string(type);
  std::string text = shape.empty() ? element + " scalar" : to_string(shape) + " " + element + " block";
  return std::string(article(text)) + " " + text;
}

Loc reported_location(Loc loc) { return libraryOrigin.active ? libraryOrigin.caller : loc; }

std::string where(Loc loc) {
  if (!loc.file_name() || !*loc.file_name())
    return "library code";
  return std::string(loc.file_name()) + ":" + std::to_string(loc.line());
}

void check_block_size(const ElementType &type, const Shape &shape, Loc loc) {
  int64_t elements = 1;
  for (int64_t size : shape) {
    if (size > kMaxBlockElements / elements) // (the product may pass 2^63)
      fail(loc, "this makes " + describe(type, shape) + ", more than the " + std::to_string(kMaxBlockElements) +
                    " (2^20) elements a block may hold");
    elements *= std::max<int64_t>(size, 1);
  }
}

[[noreturn]] void fail(Loc loc, const std::string &message) {
  if (libraryOrigin.active && !libraryOrigin.what.empty())
    throw TraceError(Loc(), libraryOrigin.what + ": " + message);
  throw TraceError(reported_location(loc), message);
}

void verify_op(mlir::Operation *op, Loc loc) {
  std::string message;
  mlir::ScopedDiagnosticHandler handler(op->getContext(), [&](mlir::Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error && message.empty())
      message = diagnostic.str();
    return mlir::success();
  });
  if (mlir::failed(mlir::verify(op, /*verifyRecursively=*/false)))
    fail(loc, message.empty() ? "invalid operation" : message);
}

TraceContext::TraceContext(mlir::MLIRContext &context, mlir::ModuleOp module)
    : context_(context), builder_(&context), id_(nextTraceId++), previous_(currentTrace) {
  builder_.setInsertionPointToEnd(module.getBody());
  scopes_.push_back({next_scope_++, "kernel body", Loc()});
  currentTrace = this;
}

TraceContext::~TraceContext() { currentTrace = previous_; }

TraceContext *TraceContext::active() { return currentTrace; }

TraceContext &TraceContext::current(Loc loc) {
  if (!currentTrace)
    fail(loc, "Kiln operations build a kernel and can only run while one is traced "
              "(inside a function passed to kiln::jit)");
  return *currentTrace;
}

mlir::Location TraceContext::location(Loc loc) {
  // A library function called in a user's kernel stands for the user's line
  // (in the interpreter's errors, say); a library's kernel keeps its own.
  if (libraryOrigin.active && libraryOrigin.what.empty())
    loc = libraryOrigin.caller;
  if (!loc.file_name() || !*loc.file_name())
    return mlir::UnknownLoc::get(&context_);
  return mlir::FileLineColLoc::get(&context_, loc.file_name(), loc.line(), loc.column());
}

void TraceContext::check_nesting(Loc loc, const char *what) const {
  if (scopes_.size() > kMaxNestedBodies) // (the kernel body is not nested)
    fail(loc, std::string(what) + " would nest region bodies " + std::to_string(kMaxNestedBodies + 1) +
                  " deep; kernels may nest loops, branches and combine functions at most " +
                  std::to_string(kMaxNestedBodies) + " deep");
}

uint32_t TraceContext::open_scope(const char *kind, Loc loc, bool isolated) {
  scopes_.push_back({next_scope_++, kind, loc, isolated});
  return scopes_.back().id;
}

void TraceContext::close_scope(uint32_t scope) {
  for (size_t i = scopes_.size(); i-- > 1;) {
    if (scopes_[i].id == scope) {
      closed_scopes_.push_back(scopes_[i]);
      scopes_.erase(scopes_.begin() + i);
      return;
    }
  }
}

const Scope *TraceContext::find_open_scope(uint32_t id) const {
  for (const Scope &scope : scopes_)
    if (scope.id == id)
      return &scope;
  return nullptr;
}

const Scope *TraceContext::isolating_scope_above(uint32_t id) const {
  const Scope *isolating = nullptr;
  for (size_t i = scopes_.size(); i-- > 0 && scopes_[i].id != id;)
    if (scopes_[i].isolated && !isolating)
      isolating = &scopes_[i];
  return isolating;
}

const Scope *TraceContext::find_closed_scope(uint32_t id) const {
  for (const Scope &scope : closed_scopes_)
    if (scope.id == id)
      return &scope;
  return nullptr;
}

mlir::Type scalar_type(mlir::MLIRContext &context, DType dtype) {
  switch (dtype) {
  case DType::f16: return mlir::Float16Type::get(&context);
  case DType::bf16: return mlir::BFloat16Type::get(&context);
  case DType::f32: return mlir::Float32Type::get(&context);
  case DType::f64: return mlir::Float64Type::get(&context);
  case DType::f8e4m3: return mlir::Float8E4M3FNType::get(&context);
  case DType::f8e5m2: return mlir::Float8E5M2Type::get(&context);
  default: return mlir::IntegerType::get(&context, bit_width(dtype));
  }
}

mlir::Type element_type(mlir::MLIRContext &context, const ElementType &type) {
  if (type.descriptor_rank > 0)
    return tile::TensorMapType::get(&context);
  mlir::Type scalar = scalar_type(context, type.dtype);
  if (type.is_pointer)
    return tile::PointerType::get(scalar, 1);
  return scalar;
}

mlir::Type ir_type(mlir::MLIRContext &context, const ElementType &type, const Shape &shape) {
  mlir::Type element = element_type(context, type);
  if (shape.empty())
    return element;
  return mlir::RankedTensorType::get(shape, element);
}

mlir::Value TraceAccess::use(const Tensor &t, Loc loc, const char *role) {
  TraceContext &trace = TraceContext::current(loc);
  if (!t.valid())
    fail(loc, std::string(role) + " is an empty Tensor (it was never given a value)");
  if (t.trace_ != trace.id())
    fail(loc, std::string(role) + " (" + t.describe() + " made at " + where(t.defined_at_) +
                  ") belongs to another trace; handles cannot be kept between traces");
  if (!trace.find_open_scope(t.scope_)) {
    const Scope *scope = trace.find_closed_scope(t.scope_);
    std::string inside = scope ? std::string(scope->kind) + " that starts at " +
                                     where(scope->opened_at)
                               : std::string("a finished region body");
    fail(loc, std::string(role) + " (" + t.describe() + " made at " + where(t.defined_at_) +
                  " inside the " + inside +
                  ") is used outside that body; carry it out with a Var or the body's "
                  "return value");
  }
  if (const Scope *isolated = trace.isolating_scope_above(t.scope_))
    fail(loc, std::string(role) + " (" + t.describe() + " made at " + where(t.defined_at_) +
                  ") comes from outside the " + isolated->kind + " that starts at " +
                  where(isolated->opened_at) +
                  "; it may use only its arguments and constants made inside it");
  return raw(t);
}

Tensor TraceAccess::wrap(mlir::Value value, const ElementType &type, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  Tensor t;
  t.value_ = value.getAsOpaquePointer();
  t.type_ = type;
  if (auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(value.getType())) {
    t.shape_.assign(tensor.getShape().begin(), tensor.getShape().end());
    check_block_size(type, t.shape_, loc);
  }
  t.trace_ = trace.id();
  t.scope_ = trace.innermost_scope();
  t.defined_at_ = reported_location(loc);
  return t;
}

} // namespace kiln::detail

namespace kiln {

LibraryScope::LibraryScope(Loc caller) : outermost_(!detail::libraryOrigin.active) {
  if (outermost_)
    detail::libraryOrigin = {true, caller, {}};
}

LibraryScope::LibraryScope(std::string what) : outermost_(!detail::libraryOrigin.active) {
  if (outermost_)
    detail::libraryOrigin = {true, Loc(), std::move(what)};
}

LibraryScope::~LibraryScope() {
  if (outermost_)
    detail::libraryOrigin = {};
}

} // namespace kiln
