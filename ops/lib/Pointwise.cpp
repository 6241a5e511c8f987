//===- Pointwise.cpp - fused pointwise kernels ----------------------------===//
//
// The iteration space is the outputs' shape. Its dimensions, merged where
// every tensor walks them as one, become rows (all but the last, flattened)
// and columns (the last); each program computes a BLOCK_R x BLOCK_C tile.
// A tensor contiguous along the columns gets 16-byte accesses; one broadcast
// along the rows (a bias) or the columns (a per-row scale) is loaded once
// per tile and broadcast in registers. Sizes and strides are runtime
// arguments: the kernel depends only on the structure (dtypes, which
// dimensions each tensor steps along, the expressions).
//
//===----------------------------------------------------------------------===//

#include "ops/lib/ExprNode.h"
#include "ops/lib/GeneratedKernel.h"
#include "ops/lib/Space.h"

#include <kiln/cache.h>
#include <kiln/ops/library.h>

#include <algorithm>

namespace kiln::ops {

namespace {

enum class ColumnKind { contiguous, broadcast, strided };

/// How one tensor is addressed in the [rows..., columns] space.
struct Addressing {
  std::vector<bool> steps;   ///< per row dimension: a nonzero stride
  ColumnKind column = ColumnKind::contiguous;
  bool rowBroadcast() const {
    for (bool s : steps)
      if (s)
        return false;
    return true;
  }
};

struct Plan {
  std::vector<int64_t> rowSizes; ///< the row dimensions (possibly none)
  int64_t rows = 1, columns = 1;
  std::vector<std::vector<int64_t>> strides; ///< per tensor (inputs, then outputs): row dims..., column
  std::vector<Addressing> addressing;
  bool wide = false; ///< i64 index arithmetic
};

Plan plan(const std::vector<int64_t> &shape, const std::vector<std::vector<int64_t>> &strides) {
  Collapsed c = collapse(shape, strides);
  Plan p;
  p.columns = c.sizes.back();
  p.rowSizes.assign(c.sizes.begin(), c.sizes.end() - 1);
  for (int64_t d : p.rowSizes)
    p.rows *= d;
  p.strides = c.strides;
  p.wide = !fits_i32(c.sizes, c.strides);
  for (const auto &s : c.strides) {
    Addressing a;
    for (size_t k = 0; k + 1 < s.size(); ++k)
      a.steps.push_back(s[k] != 0);
    int64_t cs = s.back();
    a.column = cs == 1 ? ColumnKind::contiguous : cs == 0 ? ColumnKind::broadcast : ColumnKind::strided;
    p.addressing.push_back(a);
  }
  return p;
}

std::string structureKey(const Plan &p, const std::vector<TensorView> &inputs, const std::vector<TensorView> &outputs,
                         const std::vector<Expr> &values) {
  std::string key = "pointwise|" + std::string(p.wide ? "i64" : "i32") + "|rows" + std::to_string(p.rowSizes.size());
  auto tensor = [&](const TensorView &v, const Addressing &a) {
    key += "|" + std::string(name(v.dtype)) + ":";
    for (bool s : a.steps)
      key += s ? 'r' : '.';
    key += a.column == ColumnKind::contiguous ? 'c' : a.column == ColumnKind::broadcast ? '.' : 's';
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    tensor(inputs[i], p.addressing[i]);
  for (size_t o = 0; o < outputs.size(); ++o) {
    tensor(outputs[o], p.addressing[inputs.size() + o]);
    key += "=" + values[o].key();
  }
  return key;
}

/// Parameter positions of the generated kernel.
struct Params {
  Signature signature;
  std::vector<int> pointers;                 ///< per tensor
  int rows = -1, columns = -1, columnBlocks = -1;
  std::vector<int> rowSizes;                 ///< per row dimension (the first: -1, not needed)
  std::vector<std::vector<int>> rowStrides;  ///< per tensor, per row dimension (-1: does not step)
  std::vector<int> columnStrides;            ///< per tensor (-1: contiguous or broadcast)
};

Params parameters(const Plan &p, const std::vector<TensorView> &inputs, const std::vector<TensorView> &outputs) {
  Params q;
  DType index = p.wide ? DType::i64 : DType::i32;
  size_t tensors = inputs.size() + outputs.size();
  for (size_t t = 0; t < tensors; ++t) {
    bool isInput = t < inputs.size();
    const TensorView &v = isInput ? inputs[t] : outputs[t - inputs.size()];
    q.pointers.push_back(q.signature.pointer(v.dtype, isInput));
  }
  q.rows = q.signature.scalar(index);
  q.columns = q.signature.scalar(index);
  q.columnBlocks = q.signature.scalar(DType::i32);
  for (size_t k = 0; k < p.rowSizes.size(); ++k)
    q.rowSizes.push_back(k == 0 ? -1 : q.signature.scalar(index));
  for (size_t t = 0; t < tensors; ++t) {
    std::vector<int> strides;
    for (bool steps : p.addressing[t].steps)
      strides.push_back(steps ? q.signature.scalar(index) : -1);
    q.rowStrides.push_back(strides);
    q.columnStrides.push_back(p.addressing[t].column == ColumnKind::strided ? q.signature.scalar(index) : -1);
  }
  return q;
}

Kernel makeKernel(const std::string &key, const Plan &p, const Params &q, const std::vector<TensorView> &inputs,
                  const std::vector<TensorView> &outputs, const std::vector<Expr> &values) {
  std::vector<DType> outputTypes;
  for (const TensorView &v : outputs)
    outputTypes.push_back(v.dtype);
  size_t nInputs = inputs.size();
  DType index = p.wide ? DType::i64 : DType::i32;
  auto body = [p, q, nInputs, outputTypes, values, index](const Config &cfg, const std::vector<Tensor> &args) {
    const int64_t BR = cfg["BLOCK_R"], BC = cfg["BLOCK_C"];
    Tensor pid = program_id(0);
    Tensor blockC = pid % args[q.columnBlocks], blockR = pid / args[q.columnBlocks];
    Tensor rows = blockR.to(index) * BR + arange(0, BR).to(index);
    Tensor cols = blockC.to(index) * BC + arange(0, BC).to(index);
    Tensor rowMask = rows < args[q.rows], colMask = cols < args[q.columns];
    Tensor mask = expand_dims(rowMask, 1) & expand_dims(colMask, 0);
    std::vector<Tensor> coords = unflatten(rows, arguments_at(q.rowSizes, args));

    auto rowOffset = [&](size_t t) {
      return offset_of(coords, arguments_at(q.rowStrides[t], args), index);
    };
    auto columnOffset = [&](size_t t) {
      switch (p.addressing[t].column) {
      case ColumnKind::contiguous: return cols;
      case ColumnKind::strided: return cols * args[q.columnStrides[t]];
      case ColumnKind::broadcast: break;
      }
      return Tensor();
    };
    auto tileOffsets = [&](size_t t) {
      Tensor row = rowOffset(t), column = columnOffset(t);
      Tensor offsets = row.is_scalar() ? row : expand_dims(row, 1);
      if (column.valid())
        offsets = offsets + expand_dims(column, 0);
      return offsets.shape() == Shape{BR, BC} ? offsets : broadcast_to(offsets, {BR, BC});
    };

    auto load_input = [&](int i) -> Tensor {
      const Addressing &a = p.addressing[i];
      const Tensor &ptr = args[q.pointers[i]];
      bool rowB = a.rowBroadcast(), colB = a.column == ColumnKind::broadcast;
      if (rowB && colB)
        return load(ptr);
      if (rowB) // the same row for every row of the tile: load it once
        return expand_dims(load(ptr + columnOffset(i), colMask), 0);
      if (colB)
        return expand_dims(load(ptr + rowOffset(i), rowMask), 1);
      return load(ptr + tileOffsets(i), mask);
    };
    Evaluator evaluate(load_input);
    if (std::all_of(outputTypes.begin(), outputTypes.end(),
                    [](DType t) { return is_float(t) && size_in_bytes(t) <= 2; }))
      evaluate.for_narrow_outputs();
    for (size_t o = 0; o < values.size(); ++o) {
      size_t t = nInputs + o;
      Tensor value = evaluate(values[o]);
      if (value.dtype() != outputTypes[o])
        value = value.to(outputTypes[o]);
      store(args[q.pointers[t]] + tileOffsets(t), value, mask);
    }
  };
  return Kernel("kiln_pointwise_" + sha256_hex(key).substr(0, 10), q.signature.types(), body).library("pointwise");
}

} // namespace

Expr Pointwise::input(const TensorView &view) {
  check_view(view, "pointwise", "input " + std::to_string(inputs_.size()));
  inputs_.push_back(view);
  return ops::input(static_cast<int>(inputs_.size()) - 1, view.dtype);
}

void Pointwise::output(const TensorView &view, const Expr &value) {
  check_view(view, "pointwise", "output " + std::to_string(outputs_.size()));
  if (!value.valid())
    throw Error("pointwise: output " + std::to_string(outputs_.size()) + " has no expression");
  for (int index : inputs_of(value))
    if (index >= static_cast<int>(inputs_.size()))
      throw Error("pointwise: output " + std::to_string(outputs_.size()) + " reads input " + std::to_string(index) +
                  ", which was not added");
  outputs_.push_back(view);
  values_.push_back(value);
}

void Pointwise::run(const Stream &stream) const {
  if (outputs_.empty())
    throw Error("pointwise: no outputs");
  std::vector<const TensorView *> all;
  for (const TensorView &v : inputs_)
    all.push_back(&v);
  for (const TensorView &v : outputs_)
    all.push_back(&v);
  check_devices(all, stream, "pointwise");
  std::vector<int64_t> shape = outputs_[0].shape;
  for (const TensorView &v : outputs_)
    if (v.shape != shape)
      throw Error("pointwise: outputs must share one shape; " + v.describe() + " and " + outputs_[0].describe() +
                  " differ");
  std::vector<std::vector<int64_t>> strides;
  for (size_t i = 0; i < inputs_.size(); ++i)
    strides.push_back(broadcast_strides(inputs_[i], shape, "pointwise", "input " + std::to_string(i)));
  for (size_t o = 0; o < outputs_.size(); ++o) {
    check_no_overlap(outputs_[o], "pointwise", "output " + std::to_string(o));
    strides.push_back(outputs_[o].effective_strides());
  }
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  if (count == 0)
    return;

  Plan p = plan(shape, strides);
  Params q = parameters(p, inputs_, outputs_);
  std::string key = structureKey(p, inputs_, outputs_, values_);
  Kernel kernel = cached_kernel(key, [&] { return makeKernel(key, p, q, inputs_, outputs_, values_); });

  // Tiles of 4096 elements (fewer for small tensors), as wide as the rows.
  const int64_t BC = std::min<int64_t>(next_pow2(p.columns), 2048);
  const int64_t BR = std::min<int64_t>(next_pow2(p.rows), std::max<int64_t>(1, 4096 / BC));
  const int64_t warps = std::clamp<int64_t>(BR * BC / 512, 1, 8);
  const int64_t columnBlocks = cdiv(p.columns, BC), rowBlocks = cdiv(p.rows, BR);
  if (columnBlocks * rowBlocks >= (int64_t(1) << 31))
    throw Error("pointwise: " + std::to_string(count) + " elements need more programs than a grid holds");

  std::vector<Arg> args(q.signature.types().size(), Arg(0));
  for (size_t i = 0; i < inputs_.size(); ++i)
    args[q.pointers[i]] = arg_of(inputs_[i]);
  for (size_t o = 0; o < outputs_.size(); ++o)
    args[q.pointers[inputs_.size() + o]] = arg_of(outputs_[o]);
  args[q.rows] = Arg(p.rows);
  args[q.columns] = Arg(p.columns);
  args[q.columnBlocks] = Arg(columnBlocks);
  for (size_t k = 1; k < p.rowSizes.size(); ++k)
    args[q.rowSizes[k]] = Arg(p.rowSizes[k]);
  for (size_t t = 0; t < p.strides.size(); ++t) {
    for (size_t k = 0; k < p.rowSizes.size(); ++k)
      if (q.rowStrides[t][k] >= 0)
        args[q.rowStrides[t][k]] = Arg(p.strides[t][k]);
    if (q.columnStrides[t] >= 0)
      args[q.columnStrides[t]] = Arg(p.strides[t].back());
  }
  Config config{{"BLOCK_R", BR}, {"BLOCK_C", BC}, {"num_warps", warps}};
  kernel.launch_with(Grid(static_cast<uint32_t>(columnBlocks * rowBlocks)), config, stream, args);
}

} // namespace kiln::ops
