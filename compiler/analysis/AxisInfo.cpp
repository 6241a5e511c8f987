//===- AxisInfo.cpp - forward propagation of axis facts -------------------===//

#include "compiler/analysis/AxisInfo.h"

#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/tile/Tile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <numeric>

using namespace mlir;

namespace kiln::gpu {

namespace {

int64_t pow2Divisor(int64_t v) {
  if (v == 0)
    return kMaxDivisibility;
  uint64_t u = v < 0 ? uint64_t(-(v + 1)) + 1 : uint64_t(v);
  return std::min<int64_t>(int64_t(u & (~u + 1)), kMaxDivisibility);
}

int64_t gcd(int64_t a, int64_t b) { return std::gcd(a, b); }

unsigned rankOf(Type type) {
  if (auto t = dyn_cast<RankedTensorType>(type))
    return std::max<unsigned>(1, t.getRank());
  return 1;
}

SmallVector<int64_t> shapeOf(Type type) {
  if (auto t = dyn_cast<RankedTensorType>(type))
    return SmallVector<int64_t>(t.getShape());
  return {1};
}

/// A value of `type` equal to `v` everywhere.
AxisInfo constantInfo(Type type, int64_t v) {
  AxisInfo info = AxisInfo::unknown(rankOf(type));
  SmallVector<int64_t> shape = shapeOf(type);
  for (unsigned d = 0; d < info.rank(); ++d) {
    info.constancy[d] = shape[d];
    info.divisibility[d] = pow2Divisor(v);
  }
  info.constant = v;
  return info;
}

/// Every element broadcast from a scalar: constant along every dimension.
AxisInfo splatInfo(Type type, const AxisInfo &scalar) {
  AxisInfo info = AxisInfo::unknown(rankOf(type));
  SmallVector<int64_t> shape = shapeOf(type);
  for (unsigned d = 0; d < info.rank(); ++d) {
    info.constancy[d] = shape[d];
    info.divisibility[d] = scalar.divisibility[0];
  }
  info.constant = scalar.constant;
  return info;
}

AxisInfo meet(const AxisInfo &a, const AxisInfo &b) {
  if (a.rank() != b.rank())
    return AxisInfo::unknown(a.rank());
  AxisInfo r = AxisInfo::unknown(a.rank());
  for (unsigned d = 0; d < a.rank(); ++d) {
    r.contiguity[d] = gcd(a.contiguity[d], b.contiguity[d]);
    r.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d]);
    r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
  }
  if (a.constant == b.constant)
    r.constant = a.constant;
  return r;
}

/// Divisibility of an operand's elements along d when the result does not
/// keep its runs: a run's later elements (start + 1, ...) divide by 1 only.
int64_t runDivisibility(const AxisInfo &x, unsigned d, bool runsKept) {
  return runsKept || x.contiguity[d] == 1 ? x.divisibility[d] : 1;
}

/// a + b (or a - b): runs survive where the other side is constant.
AxisInfo addInfo(const AxisInfo &a, const AxisInfo &b, bool subtract, int64_t bScale = 1) {
  AxisInfo r = AxisInfo::unknown(a.rank());
  for (unsigned d = 0; d < a.rank(); ++d) {
    int64_t contiguous = gcd(a.contiguity[d], b.constancy[d]);
    if (!subtract)
      contiguous = std::max(contiguous, gcd(a.constancy[d], b.contiguity[d]));
    r.contiguity[d] = contiguous;
    r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
    bool runs = contiguous > 1;
    r.divisibility[d] = gcd(runDivisibility(a, d, runs),
                            std::min(runDivisibility(b, d, runs) * bScale, kMaxDivisibility));
  }
  if (a.constant && b.constant)
    r.constant = subtract ? *a.constant - *b.constant * bScale : *a.constant + *b.constant * bScale;
  return r;
}

AxisInfo mulInfo(const AxisInfo &a, const AxisInfo &b) {
  AxisInfo r = AxisInfo::unknown(a.rank());
  for (unsigned d = 0; d < a.rank(); ++d) {
    r.contiguity[d] = a.constant == 1 ? b.contiguity[d] : b.constant == 1 ? a.contiguity[d] : 1;
    r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
    bool runs = r.contiguity[d] > 1;
    r.divisibility[d] =
        std::min(runDivisibility(a, d, runs) * runDivisibility(b, d, runs), kMaxDivisibility);
  }
  if (a.constant && b.constant)
    r.constant = *a.constant * *b.constant;
  return r;
}

/// a / c for a constant power of two c (also a >> log2 c).
AxisInfo divInfo(const AxisInfo &a, const AxisInfo &b) {
  AxisInfo r = AxisInfo::unknown(a.rank());
  for (unsigned d = 0; d < a.rank(); ++d)
    r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
  if (b.constant && *b.constant > 0 && (*b.constant & (*b.constant - 1)) == 0) {
    int64_t c = *b.constant;
    for (unsigned d = 0; d < a.rank(); ++d) {
      // Aligned runs of c consecutive values share a quotient.
      if (a.divisibility[d] % c == 0)
        r.constancy[d] = std::max(r.constancy[d], gcd(a.contiguity[d], c));
      r.divisibility[d] = std::max<int64_t>(1, a.divisibility[d] / c);
    }
    if (a.constant)
      r.constant = *a.constant / c;
  }
  return r;
}

/// a % c for a constant power of two c.
AxisInfo remInfo(const AxisInfo &a, const AxisInfo &b) {
  AxisInfo r = AxisInfo::unknown(a.rank());
  for (unsigned d = 0; d < a.rank(); ++d)
    r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
  if (b.constant && *b.constant > 0 && (*b.constant & (*b.constant - 1)) == 0) {
    int64_t c = *b.constant;
    for (unsigned d = 0; d < a.rank(); ++d) {
      r.contiguity[d] = gcd(a.contiguity[d], c);
      r.divisibility[d] = gcd(a.divisibility[d], c);
      r.constancy[d] = std::max(r.constancy[d], gcd(a.constancy[d], c));
    }
    return r;
  }
  // A divisor constant along d and divisible by D wraps runs only at
  // multiples of D (x % N with N a multiple of 16 keeps 16-runs).
  for (unsigned d = 0; d < a.rank(); ++d) {
    int64_t wraps = gcd(b.divisibility[d], b.constancy[d]);
    r.contiguity[d] = gcd(gcd(a.contiguity[d], a.divisibility[d]), wraps);
    // Runs cut inside one of a's start at multiples of the new length.
    r.divisibility[d] = r.contiguity[d] == a.contiguity[d] ? gcd(a.divisibility[d], b.divisibility[d])
                                                          : r.contiguity[d];
  }
  return r;
}

/// Comparisons: a contiguous run against a constant flips at most at a
/// multiple of the constant's divisibility.
AxisInfo compareInfo(arith::CmpIPredicate predicate, const AxisInfo &a, const AxisInfo &b) {
  AxisInfo r = AxisInfo::unknown(a.rank());
  bool ordering = predicate != arith::CmpIPredicate::eq && predicate != arith::CmpIPredicate::ne;
  for (unsigned d = 0; d < a.rank(); ++d) {
    int64_t constancy = gcd(a.constancy[d], b.constancy[d]);
    if (ordering) {
      if (b.constancy[d] > 1 || b.constant)
        constancy = std::max(constancy, gcd(gcd(a.contiguity[d], b.constancy[d]),
                                            gcd(a.divisibility[d], b.divisibility[d])));
      if (a.constancy[d] > 1 || a.constant)
        constancy = std::max(constancy, gcd(gcd(b.contiguity[d], a.constancy[d]),
                                            gcd(a.divisibility[d], b.divisibility[d])));
    }
    r.constancy[d] = constancy;
  }
  return r;
}

/// Values whose runs of equal values are all that is known (masks, ...).
AxisInfo constancyOnly(std::initializer_list<AxisInfo> operands, unsigned rank) {
  AxisInfo r = AxisInfo::unknown(rank);
  bool first = true;
  for (const AxisInfo &o : operands) {
    for (unsigned d = 0; d < rank && d < o.rank(); ++d)
      r.constancy[d] = first ? o.constancy[d] : gcd(r.constancy[d], o.constancy[d]);
    first = false;
  }
  return r;
}

} // namespace

AxisInfo AxisInfo::unknown(unsigned rank) {
  AxisInfo info;
  rank = std::max(1u, rank);
  info.contiguity.assign(rank, 1);
  info.divisibility.assign(rank, 1);
  info.constancy.assign(rank, 1);
  return info;
}

int64_t AxisInfo::elementDivisibility() const {
  int64_t result = kMaxDivisibility;
  for (unsigned d = 0; d < rank(); ++d)
    result = gcd(result, contiguity[d] > 1 ? 1 : divisibility[d]);
  return result;
}

AxisInfoAnalysis::AxisInfoAnalysis(Operation *root) {
  root->walk<WalkOrder::PreOrder>([&](tile::FuncOp func) {
    auto argAttrs = func.getArgAttrsAttr();
    for (BlockArgument arg : func.getArguments()) {
      AxisInfo info = AxisInfo::unknown(1);
      if (argAttrs)
        if (auto dict = dyn_cast_or_null<DictionaryAttr>(argAttrs[arg.getArgNumber()]))
          if (auto div = dyn_cast_or_null<IntegerAttr>(dict.get("tile.divisibility")))
            info.divisibility[0] = div.getInt();
      set(arg, info);
    }
    visitRegion(func.getBody());
    return WalkResult::skip();
  });
}

AxisInfo AxisInfoAnalysis::get(Value value) const {
  auto it = infos_.find(value);
  if (it != infos_.end())
    return it->second;
  return AxisInfo::unknown(rankOf(value.getType()));
}

void AxisInfoAnalysis::set(Value value, AxisInfo info) { infos_[value] = std::move(info); }

void AxisInfoAnalysis::visitRegion(Region &region) {
  for (Block &block : region)
    for (Operation &op : block)
      visit(&op);
}

void AxisInfoAnalysis::visit(Operation *op) {
  auto in = [&](unsigned i) { return get(op->getOperand(i)); };
  auto resultRank = [&] { return op->getNumResults() ? rankOf(op->getResult(0).getType()) : 1u; };

  // Structured control flow: loop-carried values meet their initial and
  // yielded facts (two rounds reach the fixpoint of these monotone rules;
  // the second only when the first changed a carried fact). Each level's
  // rounds multiply the visits of the loops inside it, so loops nested
  // deeper than kMaxRefinedLoopDepth start from nothing known, which needs
  // one round.
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    AxisInfo lb = get(loop.getLowerBound()), step = get(loop.getStep());
    AxisInfo iv = AxisInfo::unknown(1);
    iv.divisibility[0] = gcd(lb.divisibility[0], step.divisibility[0]);
    set(loop.getInductionVar(), iv);
    const bool refined = loopDepth_ < kMaxRefinedLoopDepth;
    for (auto [arg, init] : llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs()))
      set(arg, refined ? get(init) : AxisInfo::unknown(rankOf(arg.getType())));
    ++loopDepth_;
    for (int round = 0; round < 2; ++round) {
      visitRegion(loop.getRegion());
      auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
      bool changed = false;
      for (auto [arg, init, next] :
           llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs(), yield.getOperands())) {
        AxisInfo carried = meet(get(init), get(next));
        changed = changed || !(carried == get(arg));
        set(arg, std::move(carried));
      }
      if (!refined || !changed)
        break;
    }
    --loopDepth_;
    for (auto [result, arg] : llvm::zip(loop.getResults(), loop.getRegionIterArgs()))
      set(result, get(arg));
    return;
  }
  if (auto branch = dyn_cast<scf::IfOp>(op)) {
    visitRegion(branch.getThenRegion());
    visitRegion(branch.getElseRegion());
    if (branch.getNumResults() && !branch.getElseRegion().empty()) {
      auto thenYield = branch.thenYield(), elseYield = branch.elseYield();
      for (unsigned i = 0; i < branch.getNumResults(); ++i)
        set(branch.getResult(i), meet(get(thenYield.getOperand(i)), get(elseYield.getOperand(i))));
    }
    return;
  }
  if (auto loop = dyn_cast<scf::WhileOp>(op)) {
    for (BlockArgument arg : loop.getBeforeArguments())
      set(arg, AxisInfo::unknown(rankOf(arg.getType())));
    for (BlockArgument arg : loop.getAfterArguments())
      set(arg, AxisInfo::unknown(rankOf(arg.getType())));
    visitRegion(loop.getBefore());
    visitRegion(loop.getAfter());
    return;
  }
  for (Region &region : op->getRegions())
    visitRegion(region);
  if (op->getNumResults() != 1)
    return;
  Value result = op->getResult(0);
  Type type = result.getType();
  if (!getElementTypeOrSelf(type).isIntOrIndex() &&
      !isa<tile::PointerType>(getElementTypeOrSelf(type)))
    return; // floats: nothing to know

  AxisInfo info =
      llvm::TypeSwitch<Operation *, AxisInfo>(op)
          .Case([&](arith::ConstantOp c) {
            if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
              return constantInfo(type, i.getValue().getSExtValue());
            if (auto dense = dyn_cast<SplatElementsAttr>(c.getValue()))
              if (dense.getElementType().isIntOrIndex())
                return constantInfo(type, dense.getSplatValue<APInt>().getSExtValue());
            return AxisInfo::unknown(resultRank());
          })
          .Case([&](tile::RangeOp range) {
            AxisInfo r = AxisInfo::unknown(1);
            int64_t start = static_cast<int32_t>(range.getStart());
            r.contiguity[0] = static_cast<int32_t>(range.getEnd()) - start;
            r.divisibility[0] = pow2Divisor(start);
            return r;
          })
          .Case([&](tile::SplatOp) { return splatInfo(type, in(0)); })
          .Case([&](tile::HintOp hint) {
            AxisInfo r = in(0);
            if (auto m = hint.getMultipleOf())
              for (unsigned d = 0; d < r.rank() && d < m->size(); ++d)
                r.divisibility[d] = (*m)[d];
            if (auto c = hint.getMaxContiguous())
              for (unsigned d = 0; d < r.rank() && d < c->size(); ++d)
                r.contiguity[d] = std::max<int64_t>(r.contiguity[d], (*c)[d]);
            return r;
          })
          .Case([&](tile::AddPtrOp addptr) {
            auto ptr = cast<tile::PointerType>(getElementTypeOrSelf(addptr.getType()));
            Type pointee = ptr.getPointeeType();
            int64_t bytes = isa<tile::PointerType>(pointee) ? 8
                                                              : std::max(1u, pointee.getIntOrFloatBitWidth() / 8);
            AxisInfo r = addInfo(in(0), in(1), false, bytes);
            r.constant.reset();
            return r;
          })
          .Case([&](arith::AddIOp) { return addInfo(in(0), in(1), false); })
          .Case([&](arith::SubIOp) { return addInfo(in(0), in(1), true); })
          .Case([&](arith::MulIOp) { return mulInfo(in(0), in(1)); })
          .Case<arith::DivSIOp, arith::DivUIOp>([&](Operation *) { return divInfo(in(0), in(1)); })
          .Case<arith::RemSIOp, arith::RemUIOp>([&](Operation *) { return remInfo(in(0), in(1)); })
          .Case([&](arith::ShLIOp) {
            AxisInfo shift = in(1);
            if (shift.constant && *shift.constant >= 0 && *shift.constant < 30)
              return mulInfo(in(0), constantInfo(type, int64_t(1) << *shift.constant));
            return constancyOnly({in(0), in(1)}, resultRank());
          })
          .Case<arith::ShRSIOp, arith::ShRUIOp>([&](Operation *) {
            AxisInfo shift = in(1);
            if (shift.constant && *shift.constant >= 0 && *shift.constant < 30)
              return divInfo(in(0), constantInfo(type, int64_t(1) << *shift.constant));
            return constancyOnly({in(0), in(1)}, resultRank());
          })
          .Case([&](arith::CmpIOp cmp) { return compareInfo(cmp.getPredicate(), in(0), in(1)); })
          .Case([&](arith::SelectOp) {
            AxisInfo c = in(0), a = in(1), b = in(2);
            AxisInfo r = meet(a, b);
            for (unsigned d = 0; d < r.rank() && d < c.rank(); ++d) {
              r.constancy[d] = gcd(r.constancy[d], c.constancy[d]);
              r.contiguity[d] = gcd(r.contiguity[d], c.constancy[d]);
            }
            return r;
          })
          .Case<arith::AndIOp, arith::OrIOp, arith::XOrIOp>([&](Operation *) {
            return constancyOnly({in(0), in(1)}, resultRank());
          })
          .Case<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp, ConvertLayoutOp>(
              [&](Operation *) { return in(0); })
          .Case([&](tile::BroadcastOp b) {
            AxisInfo src = in(0), r = src;
            auto from = cast<RankedTensorType>(b.getSrc().getType()).getShape();
            auto to = cast<RankedTensorType>(b.getType()).getShape();
            for (unsigned d = 0; d < r.rank(); ++d)
              if (from[d] == 1 && to[d] != 1) {
                r.constancy[d] = to[d];
                r.contiguity[d] = 1;
              }
            return r;
          })
          .Case([&](tile::ExpandDimsOp e) {
            AxisInfo src = in(0), r = src;
            unsigned axis = e.getAxis();
            r.contiguity.insert(r.contiguity.begin() + axis, 1);
            r.constancy.insert(r.constancy.begin() + axis, 1);
            r.divisibility.insert(r.divisibility.begin() + axis, src.elementDivisibility());
            return r;
          })
          .Case([&](tile::TransOp t) {
            AxisInfo src = in(0), r = AxisInfo::unknown(src.rank());
            auto order = t.getOrder();
            for (unsigned d = 0; d < r.rank(); ++d) {
              r.contiguity[d] = src.contiguity[order[d]];
              r.divisibility[d] = src.divisibility[order[d]];
              r.constancy[d] = src.constancy[order[d]];
            }
            r.constant = src.constant;
            return r;
          })
          .Default([&](Operation *) { return AxisInfo::unknown(resultRank()); });
  set(result, std::move(info));
}

int64_t AxisInfoAnalysis::vectorWidth(Value ptr, unsigned dim, int64_t elementBytes,
                                      Value mask) const {
  AxisInfo p = get(ptr);
  if (dim >= p.rank())
    return 1;
  int64_t width = std::min<int64_t>(p.contiguity[dim], 16 / elementBytes);
  // Aligned to the vector: the run starts must be multiples of its bytes.
  while (width > 1 && p.divisibility[dim] % (width * elementBytes) != 0)
    width /= 2;
  if (mask) {
    AxisInfo m = get(mask);
    if (dim < m.rank())
      width = std::min(width, m.constancy[dim]);
  }
  return std::max<int64_t>(1, width);
}

} // namespace kiln::gpu
