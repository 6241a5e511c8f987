//===- Reduction.cpp - reductions with fused prologues and epilogues ------===//
//
// The iteration space splits into the reduced dimension (R) and the kept
// ones (merged where every tensor walks them as one, then flattened into
// "kept" indices). A program owns a block of kept indices and walks R in
// chunks, each lane accumulating its own state (ReduceMath), and combines
// its lanes at the end; the epilogue expression computes what is stored.
// The tile is [kept, R] when the input is contiguous along R (a row
// reduction) and [R, kept] when it is contiguous along the kept indices (a
// column reduction), so loads stay 16 bytes wide either way.
//
// With few kept blocks and a long R, R splits across programs: the first
// kernel writes each split's state to a workspace, a second combines the
// splits and runs the epilogue.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/ExprNode.h"
#include "ops/lib/GeneratedKernel.h"
#include "ops/lib/ReduceMath.h"
#include "ops/lib/Space.h"
#include "ops/lib/Workspace.h"

#include <kiln/cache.h>
#include <kiln/ops/library.h>

#include <algorithm>

namespace kiln::ops {

namespace {

enum class Along { contiguous, broadcast, strided }; ///< how an input steps along R

struct Plan {
  int64_t R = 1;
  std::vector<int64_t> keptSizes;            ///< the merged kept dimensions
  int64_t kept = 1;                          ///< their product
  std::vector<std::vector<int64_t>> strides; ///< per tensor (inputs, then the output), per kept dimension
  std::vector<int64_t> rStrides;             ///< per input
  bool columns = false;                      ///< the tile is [R, kept]
  bool wide = false;                         ///< i64 index arithmetic
};

Along stepping(int64_t stride) {
  return stride == 1 ? Along::contiguous : stride == 0 ? Along::broadcast : Along::strided;
}

/// One kernel's parameter positions. A split's first kernel writes states
/// (`states`) instead of the output; its second reads them.
struct Params {
  Signature signature;
  std::vector<int> inputs, states;
  int output = -1, R = -1, kept = -1, splitLength = -1, splits = -1;
  std::vector<int> keptSizes;                ///< the first: -1 (not needed)
  std::vector<std::vector<int>> keptStrides; ///< per tensor, per kept dimension (-1: it does not step)
  std::vector<int> rStrides;                 ///< per input (-1: contiguous or broadcast)
};

enum class Stage { whole, partial, combine };

struct Spec {
  Reduce op;
  int correction;
  Expr value, epilogue;
  std::vector<DType> inputs;
  DType output;
  Plan plan;
  Stage stage;
};

std::string structureKey(const Spec &s) {
  const Plan &p = s.plan;
  std::string key = std::string("reduce|") + name(s.op) + "|c" + std::to_string(s.correction) + "|" +
                    (s.stage == Stage::whole ? "whole" : s.stage == Stage::partial ? "partial" : "combine") + "|" +
                    (p.columns ? "columns" : "rows") + "|" + (p.wide ? "i64" : "i32") + "|kept" +
                    std::to_string(p.keptSizes.size());
  for (size_t t = 0; t < p.strides.size(); ++t) {
    key += "|";
    if (t < s.inputs.size())
      key += std::string(name(s.inputs[t])) + ":";
    for (int64_t st : p.strides[t])
      key += st == 0 ? '.' : st == 1 ? 'c' : 's';
    if (t < s.inputs.size())
      key += stepping(p.rStrides[t]) == Along::contiguous ? "/c" : stepping(p.rStrides[t]) == Along::broadcast ? "/." : "/s";
  }
  return key + "|out:" + std::string(name(s.output)) + "|value=" + s.value.key() + "|epilogue=" + s.epilogue.key();
}

Params parameters(const Spec &s) {
  const Plan &p = s.plan;
  Params q;
  DType index = p.wide ? DType::i64 : DType::i32;
  ReduceMath math(s.op, s.value.dtype(), s.correction);
  if (s.stage != Stage::combine)
    for (DType t : s.inputs)
      q.inputs.push_back(q.signature.pointer(t, true));
  if (s.stage != Stage::whole)
    for (DType t : math.state_types())
      q.states.push_back(q.signature.pointer(t, s.stage == Stage::combine));
  if (s.stage != Stage::partial)
    q.output = q.signature.pointer(s.output, false);
  q.R = q.signature.scalar(index);
  q.kept = q.signature.scalar(index);
  if (s.stage != Stage::whole) {
    q.splits = q.signature.scalar(index);
    q.splitLength = q.signature.scalar(index);
  }
  for (size_t k = 0; k < p.keptSizes.size(); ++k)
    q.keptSizes.push_back(k == 0 ? -1 : q.signature.scalar(index));
  size_t first = s.stage == Stage::combine ? s.inputs.size() : 0; // the combine stage addresses only the output
  size_t last = s.stage == Stage::partial ? s.inputs.size() : p.strides.size();
  q.keptStrides.resize(p.strides.size());
  for (size_t t = first; t < last; ++t)
    for (int64_t st : p.strides[t])
      q.keptStrides[t].push_back(st != 0 ? q.signature.scalar(index) : -1);
  if (s.stage != Stage::combine)
    for (int64_t st : p.rStrides)
      q.rStrides.push_back(stepping(st) == Along::strided ? q.signature.scalar(index) : -1);
  return q;
}

/// One program of a stage: a block of BLOCK_K kept indices. Tile axes:
/// `keptAxis` holds kept indices, `rAxis` positions along R.
class KeptBlock {
public:
  KeptBlock(const Spec &s, const Params &q, const Config &cfg, const std::vector<Tensor> &args)
      : s(s), q(q), args(args), p(s.plan), BK(cfg["BLOCK_K"]), BR(cfg["BLOCK_R"]), keptAxis(p.columns ? 1 : 0),
        rAxis(1 - keptAxis), index(p.wide ? DType::i64 : DType::i32), math(s.op, s.value.dtype(), s.correction),
        tile(p.columns ? Shape{BR, BK} : Shape{BK, BR}) {
    Tensor keptBlock = program_id(0);
    split = program_id(1);
    kept = keptBlock.to(index) * BK + arange(0, BK).to(index);
    keptMask = kept < args[q.kept];
    coords = unflatten(kept, arguments_at(q.keptSizes, args));
  }

  void run() const {
    const Tensor &length = args[q.R];
    std::vector<Tensor> state = s.stage == Stage::combine ? combinedSplits() : walked(length);
    if (s.stage == Stage::partial) {
      Tensor at = kept * args[q.splits] + split.to(index);
      for (size_t c = 0; c < q.states.size(); ++c)
        store(args[q.states[c]] + at, state[c], keptMask);
      return;
    }
    Tensor reduced = math.finish(state, length);
    Tensor result = s.epilogue.valid() ? Evaluator([](int) -> Tensor { throw Error("an epilogue reads no inputs"); },
                                                   reduced, length.to(DType::i64))(s.epilogue)
                                       : reduced;
    if (result.dtype() != s.output)
      result = result.to(s.output);
    Tensor out = args[q.output] + keptOffset(s.inputs.size());
    store(out.is_scalar() ? broadcast_to(out, {BK}) : out, result, keptMask);
  }

private:
  const Spec &s;
  const Params &q;
  const std::vector<Tensor> &args;
  const Plan &p;
  const int64_t BK, BR;
  const int keptAxis, rAxis;
  const DType index;
  const ReduceMath math;
  const Shape tile;
  Tensor split, kept, keptMask;
  std::vector<Tensor> coords;

  /// A vector laid along `axis` of the tile (a scalar stays one).
  static Tensor onAxis(const Tensor &v, int axis) { return v.is_scalar() ? v : expand_dims(v, axis == 0 ? 1 : 0); }
  Tensor keptOffset(size_t t) const { return offset_of(coords, arguments_at(q.keptStrides[t], args), index); }

  /// The combine stage: every split's state for the kept block ([splits,
  /// kept] tiles), reduced.
  std::vector<Tensor> combinedSplits() const {
    Tensor splitsIdx = arange(0, BR).to(index);
    Tensor mask = onAxis(splitsIdx < args[q.splits], rAxis) & onAxis(keptMask, keptAxis);
    Tensor at = onAxis(kept * args[q.splits], keptAxis) + onAxis(splitsIdx, rAxis);
    std::vector<Tensor> init = math.init(tile);
    std::vector<Tensor> state;
    for (size_t c = 0; c < q.states.size(); ++c)
      state.push_back(where(mask, load(args[q.states[c]] + at, mask), init[c]));
    return math.reduce(state, rAxis);
  }

  /// The other stages: R (or the program's split of it) walked BLOCK_R at a
  /// time, each lane keeping its own state, the lanes reduced at the end.
  std::vector<Tensor> walked(const Tensor &length) const {
    std::vector<Tensor> offsets;
    for (size_t i = 0; i < q.inputs.size(); ++i)
      offsets.push_back(keptOffset(i));
    Tensor begin = constant(0, index), end = length;
    if (s.stage == Stage::partial) {
      begin = split.to(index) * args[q.splitLength];
      end = minimum(begin + args[q.splitLength], length);
    }
    std::vector<std::unique_ptr<Var>> lanes;
    for (Tensor &t : math.init(tile))
      lanes.push_back(std::make_unique<Var>(t));
    for_range(begin, end, BR, [&](const Tensor &start) {
      Tensor r = start + arange(0, BR).to(index);
      Tensor rMask = r < end;
      Tensor mask = onAxis(rMask, rAxis) & onAxis(keptMask, keptAxis);
      auto load_input = [&](int i) -> Tensor {
        Tensor ptr = args[q.inputs[i]] + onAxis(offsets[i], keptAxis);
        switch (stepping(p.rStrides[i])) {
        case Along::contiguous: ptr = ptr + onAxis(r, rAxis); break;
        case Along::strided: ptr = ptr + onAxis(r * args[q.rStrides[i]], rAxis); break;
        case Along::broadcast: break;
        }
        return load(ptr.shape() == tile ? ptr : broadcast_to(ptr, tile), mask);
      };
      Tensor value = Evaluator(load_input)(s.value);
      if (value.shape() != tile)
        value = broadcast_to(value, tile);
      std::vector<Tensor> current;
      for (auto &lane : lanes)
        current.push_back(lane->get());
      Tensor chunk = (start - begin) / BR;
      std::vector<Tensor> next = math.update(current, value, broadcast_to(onAxis(r.to(DType::i64), rAxis), tile), mask,
                                             chunk);
      for (size_t c = 0; c < lanes.size(); ++c)
        *lanes[c] = next[c];
    });
    std::vector<Tensor> state;
    for (auto &lane : lanes)
      state.push_back(lane->get());
    return math.reduce(state, rAxis);
  }
};

Kernel makeKernel(const std::string &key, const Spec &s, const Params &q) {
  auto body = [s, q](const Config &cfg, const std::vector<Tensor> &args) { KeptBlock(s, q, cfg, args).run(); };
  return Kernel("kiln_reduce_" + sha256_hex(key).substr(0, 10), q.signature.types(), body).library(name(s.op));
}

int normalizeDim(int dim, size_t rank, const std::string &op) {
  int r = static_cast<int>(rank);
  if (dim < -r || dim >= r)
    throw Error(op + ": dim " + std::to_string(dim) + " is out of range for " + std::to_string(rank) + " dimensions");
  return dim < 0 ? dim + r : dim;
}

} // namespace

Expr Reduction::input(const TensorView &view) {
  check_view(view, std::string(name(op_)), "input " + std::to_string(inputs_.size()));
  inputs_.push_back(view);
  return ops::input(static_cast<int>(inputs_.size()) - 1, view.dtype);
}

void Reduction::reduce(const Expr &value) {
  if (!value.valid())
    throw Error(std::string(name(op_)) + ": nothing to reduce (an empty expression)");
  value_ = value;
}

void Reduction::output(const TensorView &view, const Expr &epilogue) {
  check_view(view, std::string(name(op_)), "the output");
  output_ = view;
  epilogue_ = epilogue;
  has_output_ = true;
}

DType Reduction::reduced_dtype() const {
  Expr value = value_.valid() ? value_ : (inputs_.empty() ? Expr() : ops::input(0, inputs_[0].dtype));
  return ReduceMath(op_, value.valid() ? value.dtype() : DType::f32, correction_).result();
}

namespace {

/// The output's strides over the kept dimensions: it has the input space's
/// shape without `dim`, or with it as 1.
std::vector<int64_t> keptOutputStrides(const TensorView &output, const std::vector<int64_t> &shape, int dim,
                                       const std::string &op) {
  std::vector<int64_t> keptShape = shape;
  keptShape.erase(keptShape.begin() + dim);
  std::vector<int64_t> outStrides = output.effective_strides();
  if (output.shape == keptShape) {
  } else if (output.rank() == static_cast<int>(shape.size()) && output.shape[dim] == 1) {
    std::vector<int64_t> without = output.shape;
    without.erase(without.begin() + dim);
    if (without != keptShape)
      throw Error(op + ": the output " + output.describe() + " does not match the input's shape without dim " +
                  std::to_string(dim));
    outStrides.erase(outStrides.begin() + dim);
  } else {
    throw Error(op + ": the output " + output.describe() + " must have the input's shape without dim " +
                std::to_string(dim) + " (or with it as 1)");
  }
  return outStrides;
}

/// R, the kept dimensions merged, each tensor's strides, the tile's
/// orientation and the offsets' width; kept is 0 when there is nothing to
/// compute.
Plan planReduction(const std::vector<TensorView> &inputs, const std::vector<int64_t> &shape, int dim,
                   const std::vector<int64_t> &outStrides, Reduce reduceOp, const std::string &op) {
  std::vector<int64_t> keptShape = shape;
  keptShape.erase(keptShape.begin() + dim);
  Plan p;
  p.R = shape[dim];
  if (p.R == 0 && (reduceOp == Reduce::max || reduceOp == Reduce::min || reduceOp == Reduce::argmax || reduceOp == Reduce::argmin))
    throw Error(op + ": the reduced dimension is empty");
  std::vector<std::vector<int64_t>> keptStrides;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int64_t> s = broadcast_strides(inputs[i], shape, op, "input " + std::to_string(i));
    p.rStrides.push_back(s[dim]);
    s.erase(s.begin() + dim);
    keptStrides.push_back(s);
  }
  keptStrides.push_back(outStrides);
  Collapsed c = collapse(keptShape.empty() ? std::vector<int64_t>{1} : keptShape,
                         keptShape.empty() ? std::vector<std::vector<int64_t>>(keptStrides.size(), {0}) : keptStrides);
  p.keptSizes = c.sizes;
  p.strides = c.strides;
  for (int64_t d : p.keptSizes)
    p.kept *= d;
  if (p.kept == 0)
    return p;
  std::vector<int64_t> all_sizes = p.keptSizes;
  all_sizes.push_back(std::max<int64_t>(p.R, 1));
  std::vector<std::vector<int64_t>> all_strides = p.strides;
  for (size_t i = 0; i < inputs.size(); ++i)
    all_strides[i].push_back(p.rStrides[i]);
  all_strides.back().push_back(0);
  p.wide = !fits_i32(all_sizes, all_strides);
  // Columns when the first input that moves is contiguous along the kept
  // indices but not along R.
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool moves = p.rStrides[i] != 0;
    for (int64_t s : p.strides[i])
      moves = moves || s != 0;
    if (!moves)
      continue;
    p.columns = p.rStrides[i] != 1 && p.strides[i].back() == 1 && p.keptSizes.back() > 1;
    break;
  }
  return p;
}

/// A stage's tile, and how R splits across programs.
struct Tiling {
  int64_t BR = 1, BK = 1, warps = 1, keptBlocks = 1, splits = 1, splitLength = 1;
};

Tiling tilingOf(const Plan &p, const Stream &stream, const std::string &op) {
  // Tiles of up to 4096 elements; long R splits when the kept blocks alone
  // would leave the GPU idle.
  int64_t BR, BK;
  if (p.columns) {
    BK = std::min<int64_t>(next_pow2(p.kept), 256);
    BR = std::min<int64_t>(next_pow2(std::max<int64_t>(p.R, 1)), std::max<int64_t>(1, 4096 / BK));
  } else {
    BR = std::min<int64_t>(next_pow2(std::max<int64_t>(p.R, 1)), 2048);
    BK = std::min<int64_t>(next_pow2(p.kept), std::max<int64_t>(1, 4096 / BR));
  }
  const int64_t keptBlocks = cdiv(p.kept, BK);
  const int64_t programsWanted = 4 * stream.device().multiprocessors();
  int64_t splits = 1;
  if (p.R >= 8 * BR && keptBlocks < programsWanted)
    splits = std::clamp<int64_t>(programsWanted / keptBlocks, 1, std::min<int64_t>(cdiv(p.R, 4 * BR), 1024));
  // At least one block long: an empty R (a sum of nothing) is one split.
  const int64_t splitLength = std::max<int64_t>(cdiv(cdiv(p.R, splits), BR), 1) * BR;
  splits = cdiv(std::max<int64_t>(p.R, 1), splitLength);
  if (keptBlocks >= (int64_t(1) << 31) || splits > 65535)
    throw Error(op + ": too many programs for one grid");
  Tiling t;
  t.BR = BR;
  t.BK = BK;
  t.warps = std::clamp<int64_t>(BK * BR / 512, 1, 8);
  t.keptBlocks = keptBlocks;
  t.splits = splits;
  t.splitLength = splitLength;
  return t;
}

/// Launches one stage with its arguments; `states`: the split states'
/// memory (the partial and combine stages).
void launchStage(const Spec &s, const Config &config, Grid grid, const std::vector<Arg> &states,
                 const std::vector<TensorView> &inputs, const TensorView &output, const Tiling &t,
                 const Stream &stream) {
  const Plan &p = s.plan;
  Params q = parameters(s);
  std::string key = structureKey(s);
  Kernel kernel = cached_kernel(key, [&] { return makeKernel(key, s, q); });
  std::vector<Arg> args(q.signature.types().size(), Arg(0));
  for (size_t i = 0; i < q.inputs.size(); ++i)
    args[q.inputs[i]] = arg_of(inputs[i]);
  for (size_t c = 0; c < q.states.size(); ++c)
    args[q.states[c]] = states[c];
  if (q.output >= 0)
    args[q.output] = arg_of(output);
  args[q.R] = Arg(p.R);
  args[q.kept] = Arg(p.kept);
  if (q.splits >= 0) {
    args[q.splits] = Arg(t.splits);
    args[q.splitLength] = Arg(t.splitLength);
  }
  for (size_t k = 1; k < p.keptSizes.size(); ++k)
    args[q.keptSizes[k]] = Arg(p.keptSizes[k]);
  for (size_t tensor = 0; tensor < q.keptStrides.size(); ++tensor)
    for (size_t k = 0; k < q.keptStrides[tensor].size(); ++k)
      if (q.keptStrides[tensor][k] >= 0)
        args[q.keptStrides[tensor][k]] = Arg(p.strides[tensor][k]);
  for (size_t i = 0; i < q.rStrides.size(); ++i)
    if (q.rStrides[i] >= 0)
      args[q.rStrides[i]] = Arg(p.rStrides[i]);
  kernel.launch_with(grid, config, stream, args);
}

} // namespace

void Reduction::run(const Stream &stream) const {
  const std::string op = name(op_);
  if (inputs_.empty() || !has_output_)
    throw Error(op + ": needs an input and an output");
  Expr value = value_.valid() ? value_ : ops::input(0, inputs_[0].dtype);
  for (int index : inputs_of(value))
    if (index >= static_cast<int>(inputs_.size()))
      throw Error(op + ": the reduced expression reads input " + std::to_string(index) + ", which was not added");
  if (epilogue_.valid() && !inputs_of(epilogue_).empty())
    throw Error(op + ": an epilogue may use the reduced value and length, not inputs");
  std::vector<const TensorView *> all;
  for (const TensorView &v : inputs_)
    all.push_back(&v);
  all.push_back(&output_);
  check_devices(all, stream, op);
  std::vector<const TensorView *> ins(all.begin(), all.end() - 1);
  std::vector<int64_t> shape = broadcast_shape(ins, op);
  if (shape.empty())
    shape = {1};
  int dim = normalizeDim(dim_, shape.size(), op);
  ReduceMath math(op_, value.dtype(), correction_); // checks the dtype suits the op

  std::vector<int64_t> outStrides = keptOutputStrides(output_, shape, dim, op);
  check_no_overlap(output_, op, "the output");
  const Plan p = planReduction(inputs_, shape, dim, outStrides, op_, op);
  if (p.kept == 0)
    return;
  const Tiling t = tilingOf(p, stream, op);
  Spec spec{op_, correction_, value, epilogue_, {}, output_.dtype, p, t.splits > 1 ? Stage::partial : Stage::whole};
  for (const TensorView &v : inputs_)
    spec.inputs.push_back(v.dtype);
  Config config{{"BLOCK_K", t.BK}, {"BLOCK_R", t.BR}, {"num_warps", t.warps}};
  if (t.splits == 1) {
    launchStage(spec, config, Grid(static_cast<uint32_t>(t.keptBlocks)), {}, inputs_, output_, t, stream);
    return;
  }
  // Each state array in the stream's workspace, 256-byte aligned.
  std::vector<size_t> bytes, offsets;
  size_t total = 0;
  for (DType type : math.state_types()) {
    bytes.push_back(static_cast<size_t>(p.kept * t.splits) * size_in_bytes(type));
    offsets.push_back(total);
    total += (bytes.back() + 255) / 256 * 256;
  }
  Buffer space = workspace(stream, total);
  std::vector<Arg> states;
  for (size_t c = 0; c < bytes.size(); ++c)
    states.push_back(Arg::device_pointer(space.address() + offsets[c], bytes[c], space.device().kind()));
  launchStage(spec, config, Grid(static_cast<uint32_t>(t.keptBlocks), static_cast<uint32_t>(t.splits)), states, inputs_,
              output_, t, stream);
  Spec combine = spec;
  combine.stage = Stage::combine;
  const int64_t CB = std::min<int64_t>(next_pow2(p.kept), std::max<int64_t>(1, 4096 / next_pow2(t.splits)));
  Config combineConfig{{"BLOCK_K", CB}, {"BLOCK_R", next_pow2(t.splits)},
                       {"num_warps", std::clamp<int64_t>(CB * next_pow2(t.splits) / 512, 1, 8)}};
  combine.plan.columns = false;
  launchStage(combine, combineConfig, Grid(static_cast<uint32_t>(cdiv(p.kept, CB))), states, inputs_, output_, t,
              stream);
}

void reduce(Reduce op, const TensorView &x, int dim, const TensorView &out, const Stream &stream, int correction) {
  Reduction r(op, dim, correction);
  r.input(x);
  r.output(out);
  r.run(stream);
}

} // namespace kiln::ops
