//===- Memory.cpp - loads, stores, atomics, hints, printing ---------------===//

#include "dsl/lib/Build.h"

#include "compiler/dialect/tile/Tile.h"

namespace kiln {

using namespace detail;

namespace {

const Tensor &require_pointer(const Tensor &ptr, Loc loc, const char *what) {
  TraceAccess::use(ptr, loc, what);
  if (!ptr.is_pointer())
    fail(loc, std::string(what) + " needs pointers, got " + ptr.describe() +
                  " (offset a pointer argument: ptr + offsets)");
  return ptr;
}

const Tensor *optional_mask(const Tensor &mask, Loc loc, const char *what) {
  if (!mask.valid())
    return nullptr;
  TraceAccess::use(mask, loc, what);
  if (mask.is_pointer() || mask.dtype() != DType::i1)
    fail(loc, std::string(what) + ": the mask must be i1, got " + mask.describe());
  return &mask;
}

/// A value to store or combine through `ptr`: literals take the pointee
/// dtype; Tensors must already have it.
Tensor pointee_value(const Operand &value, const Tensor &ptr, Loc loc, const char *what) {
  Tensor v = materialize(value, ptr.dtype(), what);
  if (v.is_pointer() || v.dtype() != ptr.dtype())
    fail(loc, std::string(what) + ": " + v.describe() + " through " + ptr.describe() +
                  "; convert the value with .to<" + std::string(name(ptr.dtype())) + ">()");
  return v;
}

tile::CacheModifier cache(CacheModifier c) { return static_cast<tile::CacheModifier>(c); }
tile::EvictionPolicy evict(EvictionPolicy e) { return static_cast<tile::EvictionPolicy>(e); }

Tensor atomic(tile::AtomicRMWKind int_kind, tile::AtomicRMWKind unsigned_kind,
              tile::AtomicRMWKind float_kind, const char *what, const Tensor &ptr_in,
              const Operand &value, const Tensor &mask_in, AtomicOptions options, Loc loc) {
  const Tensor &ptr = require_pointer(ptr_in, loc, what);
  if (ptr.type().is_const)
    fail(loc, std::string(what) + " through " + ptr.describe() +
                  ": the kernel parameter is a ConstPtr (read-only)");
  Tensor v = pointee_value(value, ptr, loc, what);
  const Tensor *mask = optional_mask(mask_in, loc, what);
  Shape shape = broadcast_shape(ptr.shape(), v.shape(), loc, what);
  if (mask)
    shape = broadcast_shape(shape, mask->shape(), loc, what);
  Tensor p = broadcast_to_shape(ptr, shape, loc);
  Tensor x = broadcast_to_shape(v, shape, loc);
  mlir::Value m;
  if (mask)
    m = TraceAccess::use(broadcast_to_shape(*mask, shape, loc), loc);
  auto kind = is_float(ptr.dtype())      ? float_kind
              : is_unsigned(ptr.dtype()) ? unsigned_kind
                                         : int_kind;
  TraceContext &trace = TraceContext::current(loc);
  auto op = tile::AtomicRMWOp::create(
      trace.builder(), trace.location(loc), TraceAccess::use(x, loc).getType(), kind,
      TraceAccess::use(p, loc), TraceAccess::use(x, loc), m,
      static_cast<tile::MemSemantic>(options.sem), static_cast<tile::MemScope>(options.scope));
  verify_op(op, loc);
  return TraceAccess::wrap(op, number(ptr.dtype()), loc);
}

} // namespace

Tensor load(const Tensor &ptr_in, const Tensor &mask_in, const Operand &other_in,
            LoadOptions options, Loc loc) {
  const Tensor &ptr = require_pointer(ptr_in, loc, "load");
  const Tensor *mask = optional_mask(mask_in, loc, "load");
  if (other_in.present() && !mask)
    fail(loc, "load: 'other' is the value of masked-off elements and needs a mask");
  Shape shape = ptr.shape();
  if (mask)
    shape = broadcast_shape(shape, mask->shape(), loc, "load");
  Tensor other;
  if (other_in.present()) {
    other = pointee_value(other_in, ptr, loc, "load's 'other'");
    shape = broadcast_shape(shape, other.shape(), loc, "load");
  }
  Tensor p = broadcast_to_shape(ptr, shape, loc);
  mlir::Value m, o;
  if (mask)
    m = TraceAccess::use(broadcast_to_shape(*mask, shape, loc), loc);
  if (other.valid())
    o = TraceAccess::use(broadcast_to_shape(other, shape, loc), loc);
  TraceContext &trace = TraceContext::current(loc);
  auto op = tile::LoadOp::create(trace.builder(), trace.location(loc), TraceAccess::use(p, loc), m,
                                 o);
  op.setCache(cache(options.cache));
  op.setEvict(evict(options.evict));
  op.setIsVolatile(options.is_volatile);
  return TraceAccess::wrap(op, number(ptr.dtype()), loc);
}

void store(const Tensor &ptr_in, const Operand &value, const Tensor &mask_in, StoreOptions options,
           Loc loc) {
  const Tensor &ptr = require_pointer(ptr_in, loc, "store");
  if (ptr.type().is_const)
    fail(loc, "store through " + ptr.describe() + ": the kernel parameter is a ConstPtr (read-only)");
  Tensor v = pointee_value(value, ptr, loc, "store");
  const Tensor *mask = optional_mask(mask_in, loc, "store");
  Shape shape = ptr.shape();
  if (mask)
    shape = broadcast_shape(shape, mask->shape(), loc, "store");
  Shape with_value = broadcast_shape(shape, v.shape(), loc, "store");
  if (with_value != shape)
    fail(loc, "store of " + v.describe() + " through " + ptr.describe() +
                  ": the values do not fit the pointers' shape " + to_string(shape));
  Tensor p = broadcast_to_shape(ptr, shape, loc);
  Tensor x = broadcast_to_shape(v, shape, loc);
  mlir::Value m;
  if (mask)
    m = TraceAccess::use(broadcast_to_shape(*mask, shape, loc), loc);
  TraceContext &trace = TraceContext::current(loc);
  tile::StoreOp::create(trace.builder(), trace.location(loc), TraceAccess::use(p, loc),
                        TraceAccess::use(x, loc), m, cache(options.cache), evict(options.evict));
}

using K = tile::AtomicRMWKind;

Tensor atomic_add(const Tensor &ptr, const Operand &value, const Tensor &mask,
                  AtomicOptions options, Loc loc) {
  return atomic(K::add, K::add, K::fadd, "atomic_add", ptr, value, mask, options, loc);
}
Tensor atomic_max(const Tensor &ptr, const Operand &value, const Tensor &mask,
                  AtomicOptions options, Loc loc) {
  return atomic(K::max, K::umax, K::max, "atomic_max", ptr, value, mask, options, loc);
}
Tensor atomic_min(const Tensor &ptr, const Operand &value, const Tensor &mask,
                  AtomicOptions options, Loc loc) {
  return atomic(K::min, K::umin, K::min, "atomic_min", ptr, value, mask, options, loc);
}
Tensor atomic_and(const Tensor &ptr, const Operand &value, const Tensor &mask,
                  AtomicOptions options, Loc loc) {
  return atomic(K::and_, K::and_, K::and_, "atomic_and", ptr, value, mask, options, loc);
}
Tensor atomic_or(const Tensor &ptr, const Operand &value, const Tensor &mask,
                 AtomicOptions options, Loc loc) {
  return atomic(K::or_, K::or_, K::or_, "atomic_or", ptr, value, mask, options, loc);
}
Tensor atomic_xor(const Tensor &ptr, const Operand &value, const Tensor &mask,
                  AtomicOptions options, Loc loc) {
  return atomic(K::xor_, K::xor_, K::xor_, "atomic_xor", ptr, value, mask, options, loc);
}
Tensor atomic_xchg(const Tensor &ptr, const Operand &value, const Tensor &mask,
                   AtomicOptions options, Loc loc) {
  return atomic(K::xchg, K::xchg, K::xchg, "atomic_xchg", ptr, value, mask, options, loc);
}

Tensor atomic_cas(const Tensor &ptr_in, const Operand &cmp, const Operand &value,
                  AtomicOptions options, Loc loc) {
  const Tensor &ptr = require_pointer(ptr_in, loc, "atomic_cas");
  if (ptr.type().is_const)
    fail(loc, "atomic_cas through " + ptr.describe() +
                  ": the kernel parameter is a ConstPtr (read-only)");
  Tensor c = pointee_value(cmp, ptr, loc, "atomic_cas");
  Tensor v = pointee_value(value, ptr, loc, "atomic_cas");
  Shape shape = broadcast_shape(ptr.shape(), c.shape(), loc, "atomic_cas");
  shape = broadcast_shape(shape, v.shape(), loc, "atomic_cas");
  Tensor p = broadcast_to_shape(ptr, shape, loc);
  c = broadcast_to_shape(c, shape, loc);
  v = broadcast_to_shape(v, shape, loc);
  TraceContext &trace = TraceContext::current(loc);
  auto op = tile::AtomicCASOp::create(
      trace.builder(), trace.location(loc), TraceAccess::use(v, loc).getType(),
      TraceAccess::use(p, loc), TraceAccess::use(c, loc), TraceAccess::use(v, loc),
      static_cast<tile::MemSemantic>(options.sem), static_cast<tile::MemScope>(options.scope));
  verify_op(op, loc);
  return TraceAccess::wrap(op, number(ptr.dtype()), loc);
}

namespace {
Tensor hint(const Tensor &x, const std::vector<int> &values, bool multiple, Loc loc) {
  const char *what = multiple ? "multiple_of" : "max_contiguous";
  mlir::Value value = TraceAccess::use(x, loc, what);
  size_t entries = x.is_scalar() ? 1 : x.shape().size();
  if (values.size() != entries)
    fail(loc, std::string(what) + " on " + x.describe() + " needs " + std::to_string(entries) +
                  " value(s), one per dimension, got " + std::to_string(values.size()));
  for (int v : values)
    if (v < 1)
      fail(loc, std::string(what) + ": values must be positive, got " + std::to_string(v));
  if (!x.is_pointer() && !is_integer(x.dtype()))
    fail(loc, std::string(what) + " describes integers or pointers, got " + x.describe());
  TraceContext &trace = TraceContext::current(loc);
  auto array = trace.builder().getDenseI32ArrayAttr(values);
  auto op = tile::HintOp::create(trace.builder(), trace.location(loc), value.getType(), value,
                                 multiple ? array : nullptr, multiple ? nullptr : array);
  return TraceAccess::wrap(op, x.type(), loc);
}
} // namespace

Tensor multiple_of(const Tensor &x, const std::vector<int> &values, Loc loc) {
  return hint(x, values, true, loc);
}
Tensor max_contiguous(const Tensor &x, const std::vector<int> &values, Loc loc) {
  return hint(x, values, false, loc);
}

void print(const std::string &prefix, const std::vector<Tensor> &values, bool hex, Loc loc) {
  TraceContext &trace = TraceContext::current(loc);
  llvm::SmallVector<mlir::Value> operands;
  for (const Tensor &v : values)
    operands.push_back(TraceAccess::use(v, loc, "print"));
  tile::PrintOp::create(trace.builder(), trace.location(loc), prefix, hex, operands);
}

void device_assert(const Tensor &condition, const std::string &message, Loc loc) {
  mlir::Value value = TraceAccess::use(condition, loc, "device_assert");
  if (condition.is_pointer() || condition.dtype() != DType::i1)
    fail(loc, "device_assert needs an i1 condition, got " + condition.describe());
  TraceContext &trace = TraceContext::current(loc);
  tile::AssertOp::create(trace.builder(), trace.location(loc), value, message);
}

} // namespace kiln
