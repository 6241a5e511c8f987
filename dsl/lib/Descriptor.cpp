//===- Descriptor.cpp - tensor descriptors: block loads and stores --------===//

#include "dsl/lib/Build.h"

#include "compiler/dialect/tile/Tile.h"

#include <kiln/descriptor.h>
#include <kiln/error.h>

namespace kiln {

using namespace detail;

Descriptor::Descriptor(std::span<const Tensor> parts, Loc loc) {
  if (parts.size() < 4 || parts.size() % 2 != 0)
    fail(loc, "a descriptor is made of its tensor map, base, sizes and strides (2 + 2 * rank handles), got " +
                  std::to_string(parts.size()));
  const int rank = static_cast<int>(parts.size() - 2) / 2;
  map_ = parts[0];
  base_ = parts[1];
  if (map_.type().descriptor_rank != rank)
    fail(loc, "a descriptor's first handle must be the tensor map of a rank-" + std::to_string(rank) +
                  " descriptor parameter, got " + map_.describe());
  if (!base_.is_pointer() || !base_.is_scalar() || base_.dtype() != map_.dtype())
    fail(loc, "a descriptor's base must be a pointer to " + std::string(name(map_.dtype())) + ", got " +
                  base_.describe());
  for (int d = 0; d < rank; ++d) {
    const Tensor &size = parts[2 + d], &stride = parts[2 + rank + d];
    for (const Tensor *t : {&size, &stride})
      if (!t->is_scalar() || t->is_pointer() || t->dtype() != DType::i64)
        fail(loc, "a descriptor's sizes and strides are i64 scalars, got " + t->describe());
    sizes_.push_back(size);
    strides_.push_back(stride);
  }
}

namespace {

/// The i32 offsets of a descriptor access, one per dimension.
llvm::SmallVector<mlir::Value> offsetValues(const std::vector<Operand> &offsets, int rank, Loc loc,
                                            const char *what) {
  if (static_cast<int>(offsets.size()) != rank)
    fail(loc, std::string(what) + ": a rank-" + std::to_string(rank) + " descriptor takes " +
                  std::to_string(rank) + " offsets, got " + std::to_string(offsets.size()));
  llvm::SmallVector<mlir::Value> values;
  for (const Operand &offset : offsets) {
    Tensor t = materialize(offset, DType::i32, what);
    if (!t.is_scalar() || t.is_pointer() || !is_integer(t.dtype()))
      fail(loc, std::string(what) + ": offsets are integer scalars, got " + t.describe());
    // The copy engine's coordinates are signed 32-bit: narrower integers
    // widen, wider ones (and u32) must be converted by the caller, who knows
    // whether they fit.
    if (t.dtype() != DType::i32 && bit_width(t.dtype()) >= 32)
      fail(loc, std::string(what) + ": offsets are i32 (the copy engine's coordinates), got " + t.describe() +
                    "; convert it with .to(DType::i32) where it fits");
    if (t.dtype() != DType::i32)
      t = convert(t, DType::i32, loc);
    values.push_back(TraceAccess::use(t, loc, "a descriptor offset"));
  }
  return values;
}

llvm::SmallVector<mlir::Value> uses(const std::vector<Tensor> &handles, Loc loc) {
  llvm::SmallVector<mlir::Value> values;
  for (const Tensor &t : handles)
    values.push_back(TraceAccess::use(t, loc, "a descriptor size or stride"));
  return values;
}

} // namespace

Tensor Descriptor::load(const std::vector<Operand> &offsets, const Shape &shape, Loc loc) const {
  if (!map_.valid())
    fail(loc, "load through an empty descriptor");
  if (static_cast<int>(shape.size()) != rank())
    fail(loc, "descriptor load: a rank-" + std::to_string(rank()) + " descriptor reads " + std::to_string(rank()) +
                  "-d blocks, got shape " + to_string(shape));
  for (int64_t d : shape)
    if (d <= 0 || (d & (d - 1)) != 0)
      fail(loc, "descriptor load: block shape " + to_string(shape) + " must have power-of-two dimensions");
  auto offsetsIR = offsetValues(offsets, rank(), loc, "descriptor load");
  TraceContext &trace = TraceContext::current(loc);
  mlir::Value base = TraceAccess::use(base_, loc, "the descriptor's base");
  auto pointee = mlir::cast<tile::PointerType>(base.getType()).getPointeeType();
  auto type = mlir::RankedTensorType::get(shape, pointee);
  auto op = tile::DescriptorLoadOp::create(trace.builder(), trace.location(loc), type,
                                           TraceAccess::use(map_, loc, "the descriptor's map"), base,
                                           uses(sizes_, loc), uses(strides_, loc), offsetsIR);
  verify_op(op, loc);
  return TraceAccess::wrap(op, number(dtype()), loc);
}

void Descriptor::store(const std::vector<Operand> &offsets, const Tensor &value, Loc loc) const {
  if (!map_.valid())
    fail(loc, "store through an empty descriptor");
  TraceAccess::use(value, loc, "the stored value");
  if (value.is_pointer() || value.dtype() != dtype() || value.rank() != rank())
    fail(loc, "descriptor store of " + value.describe() + " through a rank-" + std::to_string(rank()) + " " +
                  std::string(name(dtype())) + " descriptor: the value must be a " + std::to_string(rank()) +
                  "-d block of " + std::string(name(dtype())) + " (convert it with .to<" +
                  std::string(name(dtype())) + ">())");
  if (base_.type().is_const)
    fail(loc, "descriptor store through a read-only base pointer");
  auto offsetsIR = offsetValues(offsets, rank(), loc, "descriptor store");
  TraceContext &trace = TraceContext::current(loc);
  auto op = tile::DescriptorStoreOp::create(
      trace.builder(), trace.location(loc), TraceAccess::use(map_, loc, "the descriptor's map"),
      TraceAccess::use(base_, loc, "the descriptor's base"), uses(sizes_, loc), uses(strides_, loc), offsetsIR,
      TraceAccess::use(value, loc));
  verify_op(op, loc);
}

TensorArg::TensorArg(Arg memory_in, std::vector<int64_t> sizes_in, std::vector<int64_t> strides_in)
    : memory(memory_in), sizes(std::move(sizes_in)), strides(std::move(strides_in)) {
  if (memory.kind() != Arg::Kind::memory)
    throw Error("TensorArg: the tensor's memory must be a Buffer, a host span or a device pointer");
  if (sizes.empty() || sizes.size() > 5)
    throw Error("TensorArg: descriptors have 1 to 5 dimensions, got " + std::to_string(sizes.size()));
  if (strides.empty()) {
    strides.assign(sizes.size(), 1);
    for (size_t d = sizes.size() - 1; d-- > 0;)
      strides[d] = strides[d + 1] * sizes[d + 1];
  }
  if (strides.size() != sizes.size())
    throw Error("TensorArg: " + std::to_string(sizes.size()) + " sizes but " + std::to_string(strides.size()) +
                " strides");
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] < 0 || strides[d] < 0)
      throw Error("TensorArg: sizes and strides must not be negative (dimension " + std::to_string(d) + ")");
}

void TensorArg::append_to(std::vector<Arg> &out) const {
  out.push_back(Arg::tensor_map(static_cast<int>(sizes.size())));
  out.push_back(memory);
  for (int64_t size : sizes)
    out.push_back(Arg(size));
  for (int64_t stride : strides)
    out.push_back(Arg(stride));
}

} // namespace kiln
