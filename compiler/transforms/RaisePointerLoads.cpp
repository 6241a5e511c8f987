//===- RaisePointerLoads.cpp - pointer-block loads as boxes of a tensor ---===//
//
// The load must read the same elements as the descriptor load that
// replaces it, element for element, everywhere the difference could be
// seen. The analysis below therefore accepts only forms it can take apart
// completely:
//
//   pointers  splat(param + offset) + sum over the two dimensions of
//             expand_dims(line_d) * stride_d        (broadcasts, sext looked through;
//             the uniform offset a whole number of rows of a constant stride,
//             or, with a parameter row stride, rows `x * stride` plus a
//             provably non-negative offset within a row: a head's columns)
//   line_d    start + range(0, n), or (start + range(0, n)) % size
//   mask      AND of  line < limit  and  line >= limit  per dimension
//
// and relates them through linear forms over the scalars they are built
// from (the loop counter, program ids, parameters): a mask `offs_k <
// K - k * BK` on pointers advanced by BK a step is the tensor bound K on
// the coordinate k * BK.
//
//===----------------------------------------------------------------------===//

#include "compiler/transforms/RaisePointerLoads.h"

#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/transforms/ProgramWalk.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace kiln {

using namespace mlir;

namespace {

Value stripExtension(Value v) {
  while (auto ext = v.getDefiningOp<arith::ExtSIOp>())
    v = ext.getIn();
  return v;
}

std::optional<int64_t> constantOf(Value v) {
  APInt constant;
  if (matchPattern(stripExtension(v), m_ConstantInt(&constant)))
    return constant.getSExtValue();
  return std::nullopt;
}

/// The scalar a uniform block holds (splat, broadcasts looked through), or
/// the scalar itself; null for other blocks (a constant block is not taken
/// apart here: constantOf reads it).
Value uniformScalar(Value v) {
  v = stripExtension(v);
  while (auto broadcast = v.getDefiningOp<tile::BroadcastOp>())
    v = stripExtension(broadcast.getSrc());
  if (!isa<RankedTensorType>(v.getType()))
    return v;
  if (auto splat = v.getDefiningOp<tile::SplatOp>())
    return stripExtension(splat.getSrc());
  return {};
}

/// `coefficient * atom` (no atom: the constant `coefficient`).
struct Monomial {
  Value atom;
  int64_t coefficient = 1;
};

Monomial monomialOf(Value v) {
  v = stripExtension(v);
  if (std::optional<int64_t> c = constantOf(v))
    return {Value(), *c};
  if (auto mul = v.getDefiningOp<arith::MulIOp>()) {
    Monomial l = monomialOf(mul.getLhs()), r = monomialOf(mul.getRhs());
    if (!l.atom || !r.atom)
      return {l.atom ? l.atom : r.atom, l.coefficient * r.coefficient};
  }
  return {v, 1};
}

/// A uniform block or scalar as a monomial; nothing for other blocks.
std::optional<Monomial> uniformMonomial(Value v) {
  if (std::optional<int64_t> c = constantOf(v))
    return Monomial{Value(), *c};
  Value scalar = uniformScalar(v);
  if (!scalar)
    return std::nullopt;
  return monomialOf(scalar);
}

/// A sum of scalars times constants, plus a constant.
struct Linear {
  llvm::MapVector<Value, int64_t> terms;
  int64_t constant = 0;

  void add(const Linear &other, int64_t scale) {
    for (const auto &[atom, coefficient] : other.terms)
      terms[atom] += coefficient * scale;
    constant += other.constant * scale;
  }
  /// The terms with a nonzero coefficient.
  SmallVector<std::pair<Value, int64_t>> nonzero() const {
    SmallVector<std::pair<Value, int64_t>> result;
    for (const auto &[atom, coefficient] : terms)
      if (coefficient != 0)
        result.push_back({atom, coefficient});
    return result;
  }
};

Linear linearOf(Value v, int depth = 0) {
  Linear result;
  v = stripExtension(v);
  if (std::optional<int64_t> c = constantOf(v)) {
    result.constant = *c;
    return result;
  }
  if (depth < 16) {
    if (auto add = v.getDefiningOp<arith::AddIOp>()) {
      result.add(linearOf(add.getLhs(), depth + 1), 1);
      result.add(linearOf(add.getRhs(), depth + 1), 1);
      return result;
    }
    if (auto sub = v.getDefiningOp<arith::SubIOp>()) {
      result.add(linearOf(sub.getLhs(), depth + 1), 1);
      result.add(linearOf(sub.getRhs(), depth + 1), -1);
      return result;
    }
    if (auto mul = v.getDefiningOp<arith::MulIOp>()) {
      if (std::optional<int64_t> c = constantOf(mul.getRhs())) {
        result.add(linearOf(mul.getLhs(), depth + 1), *c);
        return result;
      }
      if (std::optional<int64_t> c = constantOf(mul.getLhs())) {
        result.add(linearOf(mul.getRhs(), depth + 1), *c);
        return result;
      }
    }
  }
  result.terms[v] = 1;
  return result;
}

/// An index line: `start + range(0, n)`, the start a sum of scalars plus a
/// constant; wrapped, `(start + range) % bound`, keeping the unwrapped line.
struct IndexLine {
  SmallVector<Value> starts;
  int64_t startConstant = 0;
  Value bound, unwrapped;

  Linear start() const {
    Linear result;
    for (Value s : starts)
      result.add(linearOf(s), 1);
    result.constant += startConstant;
    return result;
  }
};

std::optional<IndexLine> plainLineOf(Value v, int64_t length, int depth = 0) {
  v = stripExtension(v);
  if (auto range = v.getDefiningOp<tile::RangeOp>()) {
    if (int64_t(range.getEnd()) - int64_t(range.getStart()) != length)
      return std::nullopt;
    IndexLine line;
    line.startConstant = range.getStart();
    return line;
  }
  auto add = v.getDefiningOp<arith::AddIOp>();
  if (!add || depth > 8)
    return std::nullopt;
  for (auto [uniform, rest] : {std::pair{add.getLhs(), add.getRhs()}, std::pair{add.getRhs(), add.getLhs()}}) {
    std::optional<int64_t> c = constantOf(uniform);
    Value scalar = c ? Value() : uniformScalar(uniform);
    if (!c && !scalar)
      continue;
    std::optional<IndexLine> line = plainLineOf(rest, length, depth + 1);
    if (!line)
      continue;
    if (c)
      line->startConstant += *c;
    else
      line->starts.push_back(scalar);
    return line;
  }
  return std::nullopt;
}

std::optional<IndexLine> indexLineOf(Value v, int64_t length) {
  v = stripExtension(v);
  if (auto rem = v.getDefiningOp<arith::RemSIOp>()) {
    Value bound = uniformScalar(rem.getRhs());
    std::optional<IndexLine> line = bound ? plainLineOf(rem.getLhs(), length) : std::nullopt;
    if (!line)
      return std::nullopt;
    line->bound = bound;
    line->unwrapped = stripExtension(rem.getLhs());
    return line;
  }
  return plainLineOf(v, length);
}

/// One dimension of a pointer block: its index line times its stride.
struct Line {
  int dim = 0;
  IndexLine index;
  Monomial stride;
};

/// The rank-2 block `expand_dims(line, axis)` varies along dimension
/// `1 - axis`.
std::optional<Line> expandedLine(Value v, Monomial stride) {
  auto expand = v.getDefiningOp<tile::ExpandDimsOp>();
  if (!expand || cast<RankedTensorType>(expand.getType()).getRank() != 2)
    return std::nullopt;
  auto source = cast<RankedTensorType>(expand.getSrc().getType());
  std::optional<IndexLine> index = indexLineOf(expand.getSrc(), source.getShape()[0]);
  if (!index)
    return std::nullopt;
  return Line{expand.getAxis() == 0 ? 1 : 0, *index, stride};
}

bool offsetLines(Value offset, Monomial scale, SmallVectorImpl<Line> &lines, int depth = 0) {
  if (depth > 16)
    return false;
  offset = stripExtension(offset);
  while (auto broadcast = offset.getDefiningOp<tile::BroadcastOp>())
    offset = stripExtension(broadcast.getSrc());
  if (auto add = offset.getDefiningOp<arith::AddIOp>())
    return offsetLines(add.getLhs(), scale, lines, depth + 1) && offsetLines(add.getRhs(), scale, lines, depth + 1);
  if (auto mul = offset.getDefiningOp<arith::MulIOp>()) {
    for (auto [factor, rest] : {std::pair{mul.getRhs(), mul.getLhs()}, std::pair{mul.getLhs(), mul.getRhs()}}) {
      std::optional<Monomial> m = uniformMonomial(factor);
      if (!m || (m->atom && scale.atom)) // (a stride must be one parameter)
        continue;
      return offsetLines(rest, {scale.atom ? scale.atom : m->atom, scale.coefficient * m->coefficient}, lines,
                         depth + 1);
    }
    return false;
  }
  std::optional<Line> line = expandedLine(offset, scale);
  if (!line)
    return false;
  lines.push_back(*line);
  return true;
}

/// A block of pointers as a pointer parameter, a uniform offset in
/// elements (a head's rows at `pid_h * N * D`), and one line per dimension.
struct PointerBlock {
  BlockArgument base;
  Linear offset;
  SmallVector<Line, 2> lines; ///< by dimension
};

std::optional<PointerBlock> pointerBlockOf(Value ptrs, tile::FuncOp func) {
  SmallVector<Line> lines;
  Value p = ptrs;
  for (int depth = 0; depth < 16; ++depth) {
    while (auto broadcast = p.getDefiningOp<tile::BroadcastOp>())
      p = broadcast.getSrc();
    if (auto add = p.getDefiningOp<tile::AddPtrOp>()) {
      if (!offsetLines(add.getOffset(), Monomial{}, lines))
        return std::nullopt;
      p = add.getPtr();
      continue;
    }
    auto splat = p.getDefiningOp<tile::SplatOp>();
    if (!splat)
      return std::nullopt;
    // The scalar pointer: the parameter advanced by uniform offsets.
    Linear offset;
    Value scalar = splat.getSrc();
    for (int steps = 0; steps < 4; ++steps) {
      auto add = scalar.getDefiningOp<tile::AddPtrOp>();
      if (!add)
        break;
      offset.add(linearOf(add.getOffset()), 1);
      scalar = add.getPtr();
    }
    auto base = dyn_cast<BlockArgument>(scalar);
    if (!base || base.getOwner() != &func.getBody().front() || lines.size() != 2 || lines[0].dim == lines[1].dim)
      return std::nullopt;
    PointerBlock block{base, offset, {}};
    if (lines[0].dim == 1)
      std::swap(lines[0], lines[1]);
    block.lines.assign(lines.begin(), lines.end());
    return block;
  }
  return std::nullopt;
}

/// A conjunct of a mask: `line < limit` (upper) or `line >= limit`.
struct Bound {
  int dim = 0;
  bool upper = true;
  IndexLine line;
  Value lineValue, limit;
};

std::optional<Bound> boundOf(Value conjunct) {
  while (auto broadcast = conjunct.getDefiningOp<tile::BroadcastOp>())
    conjunct = broadcast.getSrc();
  int dim = -1;
  Value compared = conjunct;
  if (auto expand = conjunct.getDefiningOp<tile::ExpandDimsOp>()) {
    if (cast<RankedTensorType>(expand.getType()).getRank() != 2)
      return std::nullopt;
    dim = expand.getAxis() == 0 ? 1 : 0;
    compared = expand.getSrc();
  }
  auto cmp = compared.getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return std::nullopt;
  bool upper;
  if (cmp.getPredicate() == arith::CmpIPredicate::slt)
    upper = true;
  else if (cmp.getPredicate() == arith::CmpIPredicate::sge)
    upper = false;
  else
    return std::nullopt;
  Value lineValue = cmp.getLhs();
  if (dim < 0) { // a comparison of the rank-2 blocks: the line is expanded
    Value lhs = cmp.getLhs();
    while (auto broadcast = lhs.getDefiningOp<tile::BroadcastOp>())
      lhs = broadcast.getSrc();
    auto expand = lhs.getDefiningOp<tile::ExpandDimsOp>();
    if (!expand || cast<RankedTensorType>(expand.getType()).getRank() != 2)
      return std::nullopt;
    dim = expand.getAxis() == 0 ? 1 : 0;
    lineValue = expand.getSrc();
  }
  Value limit = uniformScalar(cmp.getRhs());
  if (!limit && constantOf(cmp.getRhs()))
    limit = cmp.getRhs(); // a constant block: linearOf reads it
  auto type = dyn_cast<RankedTensorType>(lineValue.getType());
  if (!limit || !type || type.getRank() != 1)
    return std::nullopt;
  std::optional<IndexLine> line = plainLineOf(lineValue, type.getShape()[0]);
  if (!line)
    return std::nullopt;
  return Bound{dim, upper, *line, stripExtension(lineValue), limit};
}

void conjunctsOf(Value mask, SmallVectorImpl<Value> &out) {
  while (auto broadcast = mask.getDefiningOp<tile::BroadcastOp>())
    mask = broadcast.getSrc();
  if (auto both = mask.getDefiningOp<arith::AndIOp>()) {
    conjunctsOf(both.getLhs(), out);
    conjunctsOf(both.getRhs(), out);
    return;
  }
  out.push_back(mask);
}

/// An integer parameter the specialization proved positive.
bool isPositiveParameter(Value v, tile::FuncOp func) {
  auto arg = dyn_cast<BlockArgument>(stripExtension(v));
  return arg && arg.getOwner() == &func.getBody().front() && isa<IntegerType>(arg.getType()) &&
         func.getArgAttr(arg.getArgNumber(), "tile.positive");
}

/// `x` where `v` is `x * factor` (extensions looked through); null otherwise.
Value otherFactor(Value v, Value factor) {
  auto mul = stripExtension(v).getDefiningOp<arith::MulIOp>();
  if (!mul)
    return {};
  factor = stripExtension(factor);
  if (stripExtension(mul.getRhs()) == factor)
    return mul.getLhs();
  if (stripExtension(mul.getLhs()) == factor)
    return mul.getRhs();
  return {};
}

/// Whether `v` is provably at least 0: a program id or count, a
/// non-negative constant, a positive parameter, the counter of a walk over
/// tiles (ProgramWalk.h) that starts at such a value and steps up by a
/// positive constant or the program count, and products, sums, quotients,
/// remainders and minimums of such (a head `pid / group`, a tile's query
/// block `tile % blocks`), and a maximum with such (`max(blocks, 1)`).
/// (Other loops' counters are not taken: their kernels read the boxes they
/// read before walks came.)
bool isNonNegative(Value v, tile::FuncOp func, int depth = 0) {
  v = stripExtension(v);
  if (std::optional<int64_t> c = constantOf(v))
    return *c >= 0;
  if (v.getDefiningOp<tile::ProgramIdOp>() || v.getDefiningOp<tile::NumProgramsOp>() || isPositiveParameter(v, func))
    return true;
  if (depth > 8)
    return false;
  if (auto counter = dyn_cast<BlockArgument>(v)) {
    auto loop = dyn_cast<scf::ForOp>(counter.getOwner()->getParentOp());
    if (!loop || counter != loop.getInductionVar() || !walksTiles(loop))
      return false;
    std::optional<int64_t> step = constantOf(loop.getStep());
    const bool stepsUp = step ? *step > 0 : loop.getStep().getDefiningOp<tile::NumProgramsOp>() != nullptr;
    return stepsUp && isNonNegative(loop.getLowerBound(), func, depth + 1);
  }
  Operation *op = v.getDefiningOp();
  if (isa_and_nonnull<arith::MulIOp, arith::AddIOp, arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
                      arith::MinSIOp>(op))
    return isNonNegative(op->getOperand(0), func, depth + 1) && isNonNegative(op->getOperand(1), func, depth + 1);
  // (A signed maximum is at least each operand: a divisor kept at 1 or more.)
  if (isa_and_nonnull<arith::MaxSIOp>(op))
    return isNonNegative(op->getOperand(0), func, depth + 1) || isNonNegative(op->getOperand(1), func, depth + 1);
  return false;
}

/// Where a size or stride comes from: a positive integer parameter (or,
/// for strides, any integer parameter) or a positive constant.
std::optional<TensorMapSource> sourceOf(const Linear &value, tile::FuncOp func, bool mustBePositive) {
  auto terms = value.nonzero();
  if (terms.empty())
    return value.constant >= 1 ? std::optional(TensorMapSource{-1, value.constant}) : std::nullopt;
  if (terms.size() != 1 || terms[0].second != 1 || value.constant != 0)
    return std::nullopt;
  auto arg = dyn_cast<BlockArgument>(terms[0].first);
  if (!arg || arg.getOwner() != &func.getBody().front() || !isa<IntegerType>(arg.getType()) ||
      (mustBePositive && !isPositiveParameter(arg, func)))
    return std::nullopt;
  return TensorMapSource{static_cast<int>(arg.getArgNumber()), 0};
}

/// Whether every use of the dot result `result`, through elementwise
/// arithmetic, loop-carried accumulators and further accumulations, ends in
/// a store whose mask keeps only elements whose `dim` index `unwrapped`
/// lies below `bound`: the rows (or columns) a wrapped line reads again
/// never reach memory.
bool onlyStoredBelow(Value result, int dim, Value unwrapped, Value bound) {
  SmallVector<Value> work{result};
  llvm::DenseSet<Value> seen;
  auto storeMasks = [&](tile::StoreOp store) {
    if (!store.getMask())
      return false;
    SmallVector<Value> conjuncts;
    conjunctsOf(store.getMask(), conjuncts);
    return llvm::any_of(conjuncts, [&](Value conjunct) {
      std::optional<Bound> b = boundOf(conjunct);
      return b && b->upper && b->dim == dim && b->lineValue == unwrapped && stripExtension(b->limit) == bound;
    });
  };
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto yield = dyn_cast<scf::YieldOp>(user)) {
        auto loop = dyn_cast<scf::ForOp>(yield->getParentOp());
        if (!loop)
          return false;
        work.push_back(loop.getRegionIterArgs()[use.getOperandNumber()]);
        work.push_back(loop.getResult(use.getOperandNumber()));
      } else if (auto dot = dyn_cast<tile::DotOp>(user)) {
        if (use.get() != dot.getC())
          return false;
        work.push_back(dot.getResult());
      } else if (auto store = dyn_cast<tile::StoreOp>(user)) {
        if (use.get() != store.getValue() || !storeMasks(store))
          return false;
      } else if (user->hasTrait<OpTrait::Elementwise>() && user->getNumResults() == 1 &&
                 isa<RankedTensorType>(user->getResult(0).getType()) &&
                 cast<RankedTensorType>(user->getResult(0).getType()).getShape() ==
                     cast<RankedTensorType>(v.getType()).getShape()) {
        work.push_back(user->getResult(0));
      } else {
        return false;
      }
    }
  }
  return true;
}

/// The dimension of the dot's result that dimension `dim` of the loaded
/// block becomes, when it is not the contraction; -1 otherwise.
int resultDimOf(tile::LoadOp load, int dim, tile::DotOp &dot) {
  Value operand = load.getResult();
  Operation *user = *load->getUsers().begin();
  if (auto trans = dyn_cast<tile::TransOp>(user)) {
    operand = trans.getResult();
    dim = 1 - dim;
    if (!trans->hasOneUse())
      return -1;
    user = *trans->getUsers().begin();
  }
  dot = dyn_cast<tile::DotOp>(user);
  if (!dot)
    return -1;
  if (dot.getA() == operand && dim == 0)
    return 0;
  if (dot.getB() == operand && dim == 1)
    return 1;
  return -1;
}

Value i32Constant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(static_cast<int32_t>(v)));
}

/// Builds `sum(starts) + constant` (i32) before the builder's point.
Value buildStart(OpBuilder &b, Location loc, const IndexLine &line) {
  Value sum;
  auto add = [&](Value v) { sum = sum ? arith::AddIOp::create(b, loc, sum, v).getResult() : v; };
  for (Value s : line.starts)
    add(s);
  if (line.startConstant != 0 || !sum)
    add(i32Constant(b, loc, line.startConstant));
  return sum;
}

/// `start + rows` (i32). A 64-bit term is truncated: the launch refuses a
/// tensor of more rows than 32 bits count (TensorMapSpec::offset_rows);
/// a column offset alike (offset_columns).
Value addTerms(OpBuilder &b, Location loc, Value start, const Linear &rows) {
  for (const auto &[atom, coefficient] : rows.nonzero()) {
    Value term = atom;
    if (!term.getType().isInteger(32))
      term = arith::TruncIOp::create(b, loc, b.getI32Type(), term);
    if (coefficient != 1)
      term = arith::MulIOp::create(b, loc, term, i32Constant(b, loc, coefficient));
    start = arith::AddIOp::create(b, loc, start, term);
  }
  if (rows.constant != 0)
    start = arith::AddIOp::create(b, loc, start, i32Constant(b, loc, rows.constant));
  return start;
}

/// What a load that reads a box of a tensor reads, as the descriptor load
/// replacing it needs it.
struct BoxRead {
  scf::ForOp loop;
  PointerBlock block;
  int advancedDim = -1;           ///< the dimension a carried block advances along (-1: none)
  int64_t perUnit = 0;            ///< elements it advances per unit of the loop counter
  int inner = 1;                  ///< the block's unit-stride dimension
  TensorMapSource sizes[2];       ///< by the block's dimensions
  TensorMapSource outerStride;
  Linear rows;                    ///< the uniform offset, in rows of the outer dimension
  Linear columns;                 ///< and within a row (a parameter row stride only)
};

/// The box `load` reads, when it provably reads one (raisePointerLoad).
std::optional<BoxRead> boxReadBy(tile::LoadOp load, tile::FuncOp func) {
  auto type = dyn_cast<RankedTensorType>(load.getType());
  auto loop = dyn_cast<scf::ForOp>(load->getParentOp());
  if (!type || type.getRank() != 2 || !loop || load.getIsVolatile() || !load->hasOneUse() ||
      !loop.getInductionVar().getType().isInteger(32))
    return std::nullopt;
  // Masked-off elements must read as the copy engine's +0.
  if (load.getMask() && (!load.getOther() || !(matchPattern(load.getOther(), m_PosZeroFloat()) ||
                                                matchPattern(load.getOther(), m_Zero()))))
    return std::nullopt;

  // The pointers, and how a loop-carried block advances: along one
  // dimension, `perIteration` elements a step.
  Value ptrs = load.getPtr();
  int advancedDim = -1;
  int64_t perIteration = 0;
  Value carriedInit;
  if (auto arg = dyn_cast<BlockArgument>(ptrs); arg && arg.getOwner() == loop.getBody()) {
    if (arg == loop.getInductionVar())
      return std::nullopt;
    unsigned index = arg.getArgNumber() - loop.getNumInductionVars();
    auto next = loop.getYieldedValues()[index].getDefiningOp<tile::AddPtrOp>();
    std::optional<Monomial> step = next && next.getPtr() == arg ? uniformMonomial(next.getOffset()) : std::nullopt;
    if (!step)
      return std::nullopt;
    carriedInit = loop.getInitArgs()[index];
    std::optional<PointerBlock> block = pointerBlockOf(carriedInit, func);
    if (!block)
      return std::nullopt;
    for (const Line &line : block->lines) {
      if (line.stride.atom != step->atom || line.stride.coefficient == 0 ||
          step->coefficient % line.stride.coefficient != 0)
        continue;
      if (advancedDim >= 0)
        return std::nullopt; // ambiguous
      advancedDim = line.dim;
      perIteration = step->coefficient / line.stride.coefficient;
    }
    if (advancedDim < 0 || block->lines[advancedDim].index.bound)
      return std::nullopt;
    ptrs = carriedInit;
  }
  std::optional<PointerBlock> block = pointerBlockOf(ptrs, func);
  if (!block)
    return std::nullopt;
  for (const Line &line : block->lines)
    if (line.index.starts.size() > 4 ||
        !llvm::all_of(line.index.starts, [](Value start) { return start.getType().isInteger(32); }))
      return std::nullopt;

  // Per-iteration advance in terms of the induction variable: a step of
  // `s` moves `perIteration` elements, so the coordinate moves
  // `perIteration / s` per unit of the counter.
  std::optional<int64_t> loopStep = constantOf(loop.getStep());
  int64_t perUnit = 0;
  if (advancedDim >= 0) {
    if (!loopStep || *loopStep <= 0 || perIteration % *loopStep != 0)
      return std::nullopt;
    perUnit = perIteration / *loopStep;
  }
  auto coordinate = [&](int d) {
    Linear c = block->lines[d].index.start();
    if (d == advancedDim) {
      Linear counter = linearOf(loop.getInductionVar());
      counter.add(linearOf(loop.getLowerBound()), -1);
      c.add(counter, perUnit);
    }
    return c;
  };

  // The tensor's dimensions: the unit-stride one innermost.
  int inner = -1;
  for (int d = 0; d < 2; ++d)
    if (!block->lines[d].stride.atom && block->lines[d].stride.coefficient == 1)
      inner = d;
  if (inner < 0)
    return std::nullopt;
  const int outer = 1 - inner;
  const Monomial &outerStride = block->lines[outer].stride;
  if (outerStride.atom && outerStride.coefficient != 1)
    return std::nullopt;
  std::optional<TensorMapSource> outerStrideSource =
      outerStride.atom ? sourceOf(linearOf(outerStride.atom), func, false)
                       : sourceOf(Linear{{}, outerStride.coefficient}, func, true);
  if (!outerStrideSource)
    return std::nullopt;

  // A uniform offset (a head's rows) is a whole number of rows of a
  // constant outer stride, on a dimension nothing bounds: where a mask or
  // a wrap bounds it, the rows past the bound are the next head's, which
  // the pointers would not read but the box would. With a parameter row
  // stride (a token's row of heads x D), the terms `x * stride` are rows
  // and the rest, provably non-negative, a column offset within the row (a
  // head's), on an inner dimension nothing bounds either: the box then
  // reads the pointers' elements at (row, column), element for element.
  Linear rows, columns;
  const bool offsetRows = !block->offset.nonzero().empty() || block->offset.constant != 0;
  if (offsetRows && outerStride.atom) {
    if (block->lines[outer].index.bound || block->lines[inner].index.bound || block->offset.constant < 0)
      return std::nullopt;
    columns.constant = block->offset.constant;
    for (const auto &[atom, coefficient] : block->offset.nonzero()) {
      if (!(atom.getType().isInteger(32) || atom.getType().isInteger(64)))
        return std::nullopt;
      if (Value factor = otherFactor(atom, outerStride.atom)) {
        if (!(factor.getType().isInteger(32) || factor.getType().isInteger(64)))
          return std::nullopt;
        rows.terms[factor] += coefficient;
      } else if (coefficient > 0 && isNonNegative(atom, func)) {
        columns.terms[atom] += coefficient;
      } else {
        return std::nullopt;
      }
    }
  } else if (offsetRows) {
    const int64_t s = outerStride.coefficient;
    if (s <= 0 || block->lines[outer].index.bound || block->offset.constant % s != 0)
      return std::nullopt;
    rows.constant = block->offset.constant / s;
    for (const auto &[atom, coefficient] : block->offset.nonzero()) {
      if (coefficient % s != 0 || !(atom.getType().isInteger(32) || atom.getType().isInteger(64)))
        return std::nullopt;
      rows.terms[atom] = coefficient / s;
    }
  }
  const bool offsetColumns = !columns.nonzero().empty() || columns.constant != 0;

  // Each dimension's size: a mask's bound, a wrap's size, or unbounded.
  std::optional<TensorMapSource> sizes[2];
  SmallVector<Value> conjuncts;
  if (load.getMask())
    conjunctsOf(load.getMask(), conjuncts);
  for (Value conjunct : conjuncts) {
    std::optional<Bound> bound = boundOf(conjunct);
    if (!bound || bound->line.bound || (offsetRows && bound->dim == outer) || (offsetColumns && bound->dim == inner))
      return std::nullopt;
    // line' < limit, line' = start' + i, reads coordinate + i:
    // coordinate + i < limit - start' + coordinate.
    Linear edge = linearOf(bound->limit);
    edge.add(bound->line.start(), -1);
    edge.add(coordinate(bound->dim), 1);
    if (!bound->upper) {
      if (!edge.nonzero().empty() || edge.constant != 0)
        return std::nullopt; // a lower bound other than the tensor's first element
      continue;
    }
    if (sizes[bound->dim])
      return std::nullopt;
    sizes[bound->dim] = sourceOf(edge, func, true);
    if (!sizes[bound->dim])
      return std::nullopt;
  }
  for (int d = 0; d < 2; ++d) {
    const IndexLine &index = block->lines[d].index;
    if (!index.bound)
      continue;
    tile::DotOp dot;
    int resultDim = resultDimOf(load, d, dot);
    if (sizes[d] || resultDim < 0 || !isPositiveParameter(index.bound, func) ||
        !onlyStoredBelow(dot.getResult(), resultDim, index.unwrapped, index.bound))
      return std::nullopt;
    sizes[d] = sourceOf(linearOf(index.bound), func, true);
  }
  BoxRead read{loop, *block, advancedDim, perUnit, inner, {}, *outerStrideSource, rows, columns};
  for (int d = 0; d < 2; ++d) // (no bound the kernel keeps: the pointers' own reach)
    read.sizes[d] = sizes[d].value_or(TensorMapSource{-1, std::numeric_limits<int32_t>::max()});
  return read;
}

} // namespace

bool readsABox(tile::LoadOp load, tile::FuncOp func) { return boxReadBy(load, func).has_value(); }

std::optional<RaisedLoad> raisePointerLoad(tile::LoadOp load, tile::FuncOp func) {
  std::optional<BoxRead> read = boxReadBy(load, func);
  if (!read)
    return std::nullopt;
  auto type = cast<RankedTensorType>(load.getType());
  scf::ForOp loop = read->loop;
  const PointerBlock &block = read->block;
  const int inner = read->inner, outer = 1 - inner;

  // The descriptor load: coordinates at the load, sizes and strides
  // before the loop, the tensor map a new last parameter.
  OpBuilder b(load);
  Location loc = load.getLoc();
  SmallVector<Value> offsets(2);
  for (int d = 0; d < 2; ++d) {
    Value start = buildStart(b, loc, block.lines[d].index);
    if (d == read->advancedDim) {
      Value counter = arith::SubIOp::create(b, loc, loop.getInductionVar(), loop.getLowerBound());
      Value moved = arith::MulIOp::create(b, loc, counter, i32Constant(b, loc, read->perUnit));
      start = arith::AddIOp::create(b, loc, start, moved);
    }
    if (d == outer)
      start = addTerms(b, loc, start, read->rows);
    else
      start = addTerms(b, loc, start, read->columns);
    offsets[d] = start;
  }
  OpBuilder outside(loop);
  Block &entry = func.getBody().front();
  auto i64Of = [&](const TensorMapSource &source) -> Value {
    if (source.parameter < 0)
      return arith::ConstantOp::create(outside, loc, outside.getI64IntegerAttr(source.constant));
    Value arg = entry.getArgument(source.parameter);
    return arg.getType().isInteger(64) ? arg : arith::ExtSIOp::create(outside, loc, outside.getI64Type(), arg);
  };
  RaisedLoad raised;
  raised.original = load;
  raised.sources.base = static_cast<int>(block.base.getArgNumber());
  raised.sources.sizes = {read->sizes[outer], read->sizes[inner]};
  raised.sources.strides = {read->outerStride, TensorMapSource{-1, 1}};
  raised.sources.offset_rows = !read->rows.nonzero().empty();
  raised.sources.offset_columns = !read->columns.nonzero().empty();
  SmallVector<Value> sizeValues{i64Of(read->sizes[outer]), i64Of(read->sizes[inner])};
  SmallVector<Value> strideValues{i64Of(read->outerStride), i64Of(TensorMapSource{-1, 1})};

  const unsigned mapIndex = func.getNumArguments();
  MLIRContext *context = func.getContext();
  (void)func.insertArgument(mapIndex, tile::TensorMapType::get(context),
                            DictionaryAttr::get(context, {NamedAttribute(StringAttr::get(context, gpu::kAddedMapAttr),
                                                                         UnitAttr::get(context))}),
                            func.getLoc());
  Value map = entry.getArgument(mapIndex);
  auto boxType = RankedTensorType::get({type.getShape()[outer], type.getShape()[inner]}, type.getElementType());
  raised.load = tile::DescriptorLoadOp::create(b, loc, boxType, map, block.base, sizeValues, strideValues,
                                               ValueRange{offsets[outer], offsets[inner]});
  raised.replacement = raised.load.getResult();
  if (inner == 0)
    raised.replacement = tile::TransOp::create(b, loc, type, raised.replacement, b.getDenseI32ArrayAttr({1, 0}));
  load.getResult().replaceAllUsesWith(raised.replacement);
  return raised;
}

void commitRaisedLoad(RaisedLoad &raised) {
  tile::LoadOp load = raised.original;
  auto loop = cast<scf::ForOp>(load->getParentOp());
  Value ptrs = load.getPtr();
  load.erase();
  // A loop-carried pointer block nothing else reads: carry it unchanged,
  // which the canonicalizer then removes with its increments.
  if (auto arg = dyn_cast<BlockArgument>(ptrs); arg && arg.getOwner() == loop.getBody()) {
    unsigned index = arg.getArgNumber() - loop.getNumInductionVars();
    Operation *next = loop.getYieldedValues()[index].getDefiningOp();
    if (arg.hasOneUse() && next && next->hasOneUse() && loop.getResult(index).use_empty()) {
      loop.getBody()->getTerminator()->setOperand(index, arg);
      next->erase();
    }
  }
}

void abandonRaisedLoad(RaisedLoad &raised, tile::FuncOp func) {
  Value map = raised.load.getMap();
  raised.replacement.replaceAllUsesWith(raised.original.getResult());
  if (raised.replacement != raised.load.getResult())
    raised.replacement.getDefiningOp()->erase();
  // The coordinates, sizes and strides built for it, as far as nothing
  // else uses them.
  llvm::SetVector<Operation *> work;
  auto defsOf = [&](Operation *op) {
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        work.insert(def);
  };
  defsOf(raised.load);
  raised.load.erase();
  while (!work.empty()) {
    Operation *def = work.pop_back_val();
    if (!isOpTriviallyDead(def))
      continue;
    defsOf(def);
    def->erase();
  }
  (void)func.eraseArgument(cast<BlockArgument>(map).getArgNumber());
}

} // namespace kiln
