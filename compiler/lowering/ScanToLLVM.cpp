//===- ScanToLLVM.cpp - inclusive scans along an axis ---------------------===//
//
// A scan runs in the levels the layout spreads its axis over, lowest first:
// each thread scans its chunk of consecutive registers; lanes scan their
// chunk totals with shfl.up (Hillis-Steele) and fold in the exclusive prefix
// of the lanes before them; warps exchange their totals through shared
// memory; and when the block repeats along the axis in more registers, each
// repetition folds in the carry of those before it. Every step applies the
// combine region as combine(earlier, later), so it only needs associativity.
//
// This needs the axis's bases ordered chunk < lanes < warps < repetitions
// with the lanes on consecutive lane bits; a block in another layout moves
// first (through shared memory) to a blocked layout that has that shape.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include <map>
#include <optional>

using namespace mlir;

namespace kiln::lowering {

using gpu::Coord;
using gpu::HwDim;
using gpu::LinearLayout;

namespace {

/// How a layout spreads the scanned axis over registers, lanes and warps.
struct ScanPlan {
  int64_t chunk = 1;    ///< consecutive elements per thread (register bits)
  int64_t lanes = 1;    ///< lanes along the axis
  int laneShift = 0;    ///< the lowest lane bit along the axis
  int64_t warps = 1;    ///< warps along the axis
  int64_t repeats = 1;  ///< repetitions of the whole (chunk, lanes, warps) tile

  /// The plan for `layout`, or none when its axis bases are not ordered as
  /// the file comment requires.
  static std::optional<ScanPlan> of(const LinearLayout &layout, int axis) {
    auto single = [&](const Coord &basis) {
      for (int d = 0; d < layout.rank(); ++d)
        if (d != axis && basis[d])
          return false;
      return true;
    };
    // Every basis must map into one dimension.
    for (HwDim h : {HwDim::Register, HwDim::Lane, HwDim::Warp})
      for (const Coord &basis : layout.bases(h))
        if (basis[axis] && !single(basis))
          return std::nullopt;
    ScanPlan plan;
    int64_t next = 1; // the axis value the next level must start at
    // Chunk: register bases 1, 2, 4, ... from register bit 0 up.
    for (int bit = 0; bit < layout.bits(HwDim::Register) && layout.basis(HwDim::Register, bit)[axis] == next; ++bit)
      next *= 2;
    plan.chunk = next;
    // Lanes: consecutive lane bits continuing the sequence.
    int firstLane = -1;
    for (int bit = 0; bit < layout.bits(HwDim::Lane); ++bit) {
      int32_t value = layout.basis(HwDim::Lane, bit)[axis];
      if (!value)
        continue;
      if (value != next || (firstLane >= 0 && bit != firstLane + log2(plan.lanes)))
        return std::nullopt;
      if (firstLane < 0)
        firstLane = bit;
      plan.lanes *= 2;
      next *= 2;
    }
    plan.laneShift = std::max(firstLane, 0);
    // Warps: any warp bits continuing the sequence, in order.
    for (int bit = 0; bit < layout.bits(HwDim::Warp); ++bit) {
      int32_t value = layout.basis(HwDim::Warp, bit)[axis];
      if (!value)
        continue;
      if (value != next)
        return std::nullopt;
      plan.warps *= 2;
      next *= 2;
    }
    // Repetitions: the remaining register bases, continuing the sequence.
    int64_t chunkBits = log2(plan.chunk);
    for (int bit = 0; bit < layout.bits(HwDim::Register); ++bit) {
      int32_t value = layout.basis(HwDim::Register, bit)[axis];
      if (!value || bit < chunkBits)
        continue;
      if (value != next)
        return std::nullopt;
      plan.repeats *= 2;
      next *= 2;
    }
    if (next != layout.shape()[axis])
      return std::nullopt;
    return plan;
  }

  static int log2(int64_t v) {
    int bits = 0;
    while ((int64_t(1) << bits) < v)
      ++bits;
    return bits;
  }
};

/// A blocked layout whose plan exists: up to 16 consecutive elements per
/// thread along the axis, then lanes along it, warps on the other
/// dimensions first (their exchange needs shared memory).
LinearLayout scanLayout(ArrayRef<int64_t> shape, int axis, int numWarps, int threadsPerWarp) {
  size_t rank = shape.size();
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  std::vector<unsigned> spt(rank, 1), tpw(rank, 1), wpc(rank, 1), order{static_cast<unsigned>(axis)};
  for (size_t i = rank; i-- > 0;)
    if (static_cast<int>(i) != axis)
      order.push_back(i);
  int64_t perThread = std::max<int64_t>(1, elements / (int64_t(numWarps) * threadsPerWarp));
  spt[axis] = static_cast<unsigned>(std::min<int64_t>({shape[axis], perThread, 16}));
  int64_t lanes = threadsPerWarp, warps = numWarps;
  for (unsigned d : order)
    while (lanes > 1 && int64_t(tpw[d]) * spt[d] < shape[d]) {
      tpw[d] *= 2;
      lanes /= 2;
    }
  tpw[order.back()] *= lanes; // broadcast over what is left
  std::vector<unsigned> warpOrder(order.begin() + 1, order.end());
  warpOrder.push_back(axis);
  for (unsigned d : warpOrder)
    while (warps > 1 && int64_t(tpw[d]) * spt[d] * wpc[d] < shape[d]) {
      wpc[d] *= 2;
      warps /= 2;
    }
  wpc[warpOrder.front()] *= warps;
  return LinearLayout::blocked(std::vector<int64_t>(shape.begin(), shape.end()), spt, tpw, wpc, order);
}

/// The layout a scan runs in: the operand's own when it can.
LinearLayout workingLayout(tile::ScanOp op, int numWarps, int threadsPerWarp) {
  auto type = cast<RankedTensorType>(op.getSrcs().front().getType());
  int axis = static_cast<int32_t>(op.getAxis());
  LinearLayout layout = layoutOf(type);
  if (ScanPlan::of(layout, axis))
    return layout;
  return scanLayout(type.getShape(), axis, numWarps, threadsPerWarp);
}

int64_t slotBytes(Type element) {
  if (isa<tile::PointerType>(element))
    return 8;
  return std::max<int64_t>(4, element.getIntOrFloatBitWidth() / 8);
}

/// Partial results travel through shared memory as at least 32 bits.
Type slotType(Type t) {
  if (isa<IntegerType>(t) && t.getIntOrFloatBitWidth() < 32)
    return IntegerType::get(t.getContext(), 32);
  return t;
}

Value toSlot(OpBuilder &b, Location loc, Value v, Type slot) {
  return v.getType() == slot ? v : LLVM::ZExtOp::create(b, loc, slot, v).getResult();
}

Value fromSlot(OpBuilder &b, Location loc, Value v, Type element) {
  return v.getType() == element ? v : LLVM::TruncOp::create(b, loc, element, v).getResult();
}

Value select(OpBuilder &b, Location loc, Value condition, Value a, Value other) {
  return LLVM::SelectOp::create(b, loc, condition, a, other);
}

struct ScanLowering : KilnPattern<tile::ScanOp> {
  using KilnPattern::KilnPattern;

  LogicalResult matchAndRewrite(tile::ScanOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    int axis = static_cast<int32_t>(op.getAxis());
    bool reverse = op.getReverse();
    auto type = cast<RankedTensorType>(op.getSrcs().front().getType());
    LinearLayout layout = layoutOf(type);
    LinearLayout work = workingLayout(op, ctx.numWarps, ctx.threadsPerWarp);
    ScanPlan plan = *ScanPlan::of(work, axis);
    size_t n = op.getSrcs().size();

    SmallVector<SmallVector<Value>> values;
    SmallVector<Type> elements;
    for (auto [src, lowered] : llvm::zip(op.getSrcs(), adaptor.getSrcs())) {
      elements.push_back(ctx.types.elementType(src.getType()));
      values.push_back(convertRegisters(b, loc, op, unpack(b, loc, lowered), elements.back(), layout, work,
                                        ctx.threadsPerWarp));
    }
    auto combine = [&](ArrayRef<Value> earlier, ArrayRef<Value> later) {
      return combineWith(b, op.getCombineOp(), earlier, later);
    };
    auto gather = [&](int r) {
      SmallVector<Value> v;
      for (size_t k = 0; k < n; ++k)
        v.push_back(values[k][r]);
      return v;
    };
    auto scatter = [&](int r, ArrayRef<Value> v) {
      for (size_t k = 0; k < n; ++k)
        values[k][r] = v[k];
    };
    auto choose = [&](Value condition, ArrayRef<Value> a, ArrayRef<Value> other) {
      SmallVector<Value> v;
      for (size_t k = 0; k < n; ++k)
        v.push_back(select(b, loc, condition, a[k], other[k]));
      return v;
    };

    // Registers by line (the coordinate off the axis), repetition and
    // position in the chunk.
    int64_t tile = plan.chunk * plan.lanes * plan.warps;
    std::map<Coord, std::vector<std::vector<int>>> lines;
    for (int r = 0; r < work.registers(); ++r) {
      Coord c = work.applyOne(HwDim::Register, r);
      int64_t position = c[axis];
      c[axis] = 0;
      auto &line = lines[c];
      line.resize(plan.repeats, std::vector<int>(plan.chunk, -1));
      line[position / tile][position % plan.chunk] = r;
    }

    ThreadIds ids = threadIds(b, loc, ctx.threadsPerWarp);
    SmallVector<Value> thread = threadCoords(b, loc, work, ids);
    // This thread's lane and warp positions along the axis, in scan order
    // (reversed for a reverse scan, so that "earlier" is always lower).
    Value along = thread[axis];
    auto positionOf = [&](int64_t unit, int64_t count) {
      Value p = LLVM::URemOp::create(b, loc, LLVM::UDivOp::create(b, loc, along, i32Const(b, loc, unit)),
                                     i32Const(b, loc, count));
      return reverse ? LLVM::SubOp::create(b, loc, i32Const(b, loc, count - 1), p).getResult() : p;
    };
    Value lanePos = positionOf(plan.chunk, plan.lanes);
    Value warpPos = positionOf(plan.chunk * plan.lanes, plan.warps);
    auto atLeast = [&](Value position, int64_t d) {
      return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::uge, position, i32Const(b, loc, d)).getResult();
    };
    NVVM::ShflKind towardLater = reverse ? NVVM::ShflKind::down : NVVM::ShflKind::up;

    // 1-2. Per line and repetition: the thread's chunk in order, then the
    // lanes' inclusive scan of chunk totals; each chunk takes the prefix of
    // the lanes before it. `totals` ends with each (line, repetition)'s
    // total over the warp, in every lane.
    struct Piece {
      std::vector<int> chunk;  ///< registers, in scan order
      SmallVector<Value> total;
    };
    std::vector<std::vector<Piece>> pieces; // [line][repetition in scan order]
    for (auto &[key, line] : lines) {
      auto &row = pieces.emplace_back();
      for (int64_t step = 0; step < plan.repeats; ++step) {
        Piece piece{line[reverse ? plan.repeats - 1 - step : step], {}};
        if (reverse)
          std::reverse(piece.chunk.begin(), piece.chunk.end());
        SmallVector<Value> acc = gather(piece.chunk[0]);
        for (size_t i = 1; i < piece.chunk.size(); ++i) {
          acc = combine(acc, gather(piece.chunk[i]));
          scatter(piece.chunk[i], acc);
        }
        piece.total = acc;
        if (plan.lanes > 1) {
          SmallVector<Value> &total = piece.total;
          for (int64_t d = 1; d < plan.lanes; d *= 2) {
            SmallVector<Value> earlier;
            for (Value v : total)
              earlier.push_back(shuffle(b, loc, v, towardLater, static_cast<int>(d << plan.laneShift)));
            total = choose(atLeast(lanePos, d), combine(earlier, total), total);
          }
          SmallVector<Value> prefix;
          for (Value v : total)
            prefix.push_back(shuffle(b, loc, v, towardLater, 1 << plan.laneShift));
          Value hasPrefix = atLeast(lanePos, 1);
          for (int r : piece.chunk)
            scatter(r, choose(hasPrefix, combine(prefix, gather(r)), gather(r)));
          // The warp's total sits in its last lane (in scan order).
          int64_t lastLane = reverse ? 0 : plan.lanes - 1;
          Value others = LLVM::AndOp::create(b, loc, ids.lane,
                                             i32Const(b, loc, ~((plan.lanes - 1) << plan.laneShift)));
          Value source = LLVM::OrOp::create(b, loc, others, i32Const(b, loc, lastLane << plan.laneShift));
          for (Value &v : total)
            v = shuffleIndex(b, loc, v, source);
        }
        row.push_back(std::move(piece));
      }
    }

    // 3. Warps: every (line, repetition) total through shared memory in one
    // exchange; each warp takes the prefix of the warps before it, and the
    // total becomes the whole repetition's.
    if (plan.warps > 1) {
      SmallVector<int64_t> outShape(type.getShape());
      outShape.erase(outShape.begin() + axis);
      int64_t lineCount = 1;
      for (int64_t d : outShape)
        lineCount *= d;
      Value base = sharedBase(b, loc, op);
      SmallVector<int64_t> offsets;
      int64_t offset = 0;
      for (size_t k = 0; k < n; ++k) {
        offsets.push_back(offset);
        offset += lineCount * plan.repeats * plan.warps * slotBytes(getElementTypeOrSelf(op.getSrcs()[k].getType()));
      }
      auto slotAddress = [&](size_t k, Value index) {
        Type stored = slotType(elements[k]);
        return gep(b, loc, gep(b, loc, base, b.getI8Type(), i32Const(b, loc, offsets[k])), stored, index);
      };
      // The first slot of each (line, repetition): (line * repeats + step) * warps.
      std::vector<std::vector<Value>> firstSlot;
      for (auto &[key, line] : lines) {
        SmallVector<Value> coord;
        for (int d = 0; d < work.rank(); ++d)
          if (d != axis)
            coord.push_back(key[d] ? LLVM::XOrOp::create(b, loc, thread[d], i32Const(b, loc, key[d])).getResult()
                                   : thread[d]);
        Value lineIndex = outShape.empty() ? i32Const(b, loc, 0) : linearize(b, loc, coord, outShape);
        auto &row = firstSlot.emplace_back();
        for (int64_t step = 0; step < plan.repeats; ++step) {
          Value index = LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, lineIndex, i32Const(b, loc, plan.repeats)),
                                            i32Const(b, loc, step));
          row.push_back(LLVM::MulOp::create(b, loc, index, i32Const(b, loc, plan.warps)));
        }
      }
      barrier(b, loc); // earlier users of the scratch are done
      for (size_t l = 0; l < pieces.size(); ++l)
        for (size_t step = 0; step < pieces[l].size(); ++step) {
          Value slot = LLVM::AddOp::create(b, loc, firstSlot[l][step], warpPos);
          for (size_t k = 0; k < n; ++k) // threads holding the same line store the same value
            LLVM::StoreOp::create(b, loc, toSlot(b, loc, pieces[l][step].total[k], slotType(elements[k])),
                                  slotAddress(k, slot));
        }
      barrier(b, loc);
      Value hasPrefix = atLeast(warpPos, 1);
      for (size_t l = 0; l < pieces.size(); ++l)
        for (size_t step = 0; step < pieces[l].size(); ++step) {
          Piece &piece = pieces[l][step];
          SmallVector<Value> prefix, whole;
          for (int64_t w = 0; w < plan.warps; ++w) {
            SmallVector<Value> part;
            Value at = LLVM::AddOp::create(b, loc, firstSlot[l][step], i32Const(b, loc, w));
            for (size_t k = 0; k < n; ++k) {
              Type stored = slotType(elements[k]);
              part.push_back(fromSlot(b, loc, LLVM::LoadOp::create(b, loc, stored, slotAddress(k, at)), elements[k]));
            }
            if (w == 0) {
              prefix = whole = part;
              continue;
            }
            // Warp w precedes this one when w < warpPos (in scan order).
            prefix = choose(atLeast(warpPos, w + 1), combine(prefix, part), prefix);
            whole = combine(whole, part);
          }
          for (int r : piece.chunk)
            scatter(r, choose(hasPrefix, combine(prefix, gather(r)), gather(r)));
          piece.total = whole;
        }
    }

    // 4. Repetitions: each takes the carry of those before it.
    for (auto &row : pieces) {
      SmallVector<Value> carry = row[0].total;
      for (size_t step = 1; step < row.size(); ++step) {
        for (int r : row[step].chunk)
          scatter(r, combine(carry, gather(r)));
        carry = combine(carry, row[step].total);
      }
    }

    SmallVector<Value> results;
    for (size_t k = 0; k < n; ++k) {
      SmallVector<Value> back = convertRegisters(b, loc, op, values[k], elements[k], work,
                                                 layoutOf(op.getResult(k).getType()), ctx.threadsPerWarp);
      results.push_back(pack(b, loc, getTypeConverter()->convertType(op.getResult(k).getType()), back));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

int64_t scanScratchBytes(tile::ScanOp op, int numWarps, int threadsPerWarp) {
  auto type = cast<RankedTensorType>(op.getSrcs().front().getType());
  int axis = static_cast<int32_t>(op.getAxis());
  LinearLayout work = workingLayout(op, numWarps, threadsPerWarp);
  ScanPlan plan = *ScanPlan::of(work, axis);
  int64_t lines = type.getNumElements() / type.getShape()[axis];
  int64_t exchange = 0, conversion = 0;
  for (Value src : op.getSrcs()) {
    Type element = cast<RankedTensorType>(src.getType()).getElementType();
    if (plan.warps > 1)
      exchange += lines * plan.repeats * plan.warps * slotBytes(element);
    if (work != layoutOf(type)) // through shared memory and back, one operand at a time
      conversion = std::max(conversion, gpu::stagingBytes(type.getShape(), std::max<int64_t>(1, slotBytes(element))));
  }
  return std::max(exchange, conversion);
}

void populateScanPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<ScanLowering>(context);
}

} // namespace kiln::lowering
