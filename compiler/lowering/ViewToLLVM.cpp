//===- ViewToLLVM.cpp - operations that only move elements ----------------===//
//
// broadcast, expand_dims, reshape, trans, join, split and convert_layout
// change which register holds which element, never a value. Each maps a
// result coordinate to the source coordinate it comes from (a linear map);
// when lanes and warps agree under that map each result register is a
// source register found by its coordinate, otherwise the source first moves
// to an agreeing layout through shared memory.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

using namespace mlir;

namespace kiln::lowering {

using gpu::Coord;
using gpu::HwDim;
using gpu::LinearLayout;

namespace {

using CoordMap = std::function<Coord(const Coord &)>;

/// The registers of a result of layout `to` whose coordinate c holds the
/// source element g(c), from source registers of layout `from`.
SmallVector<Value> remap(OpBuilder &b, Location loc, Operation *op, ArrayRef<Value> source, Type element,
                         const LinearLayout &from, const LinearLayout &to, const CoordMap &g,
                         int threadsPerWarp) {
  // The layout a source must have for a pure register remapping.
  LinearLayout agreeing = to.mapped(g, from.shape());
  SmallVector<Value> values(source.begin(), source.end());
  bool moved = !agreeing.sameThreads(from);
  if (moved)
    values = convertRegisters(b, loc, op, values, element, from, agreeing, threadsPerWarp);
  const LinearLayout &holder = moved ? agreeing : from; // whose register order `values` follow
  SmallVector<Value> result;
  for (int r = 0; r < to.registers(); ++r) {
    int s = holder.findRegister(g(to.applyOne(HwDim::Register, r)));
    assert(s >= 0 && "an agreeing layout holds every mapped element");
    result.push_back(values[s]);
  }
  return result;
}

template <class Op> struct ViewLowering : KilnPattern<Op> {
  using KilnPattern<Op>::KilnPattern;
  virtual CoordMap map(Op op) const = 0;
  LogicalResult matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type srcType = op->getOperand(0).getType(), dstType = op->getResult(0).getType();
    SmallVector<Value> values = unpack(rewriter, loc, adaptor.getOperands()[0]);
    SmallVector<Value> result = remap(rewriter, loc, op, values, this->ctx.types.elementType(dstType),
                                      layoutOf(srcType), layoutOf(dstType), map(op), this->ctx.threadsPerWarp);
    rewriter.replaceOp(op, pack(rewriter, loc, this->getTypeConverter()->convertType(dstType), result));
    return success();
  }
};

struct BroadcastLowering : ViewLowering<tile::BroadcastOp> {
  using ViewLowering::ViewLowering;
  CoordMap map(tile::BroadcastOp op) const override {
    SmallVector<int64_t> shape(op.getSrc().getType().getShape());
    return [shape](const Coord &c) {
      Coord out = c;
      for (size_t d = 0; d < out.size(); ++d)
        if (shape[d] == 1)
          out[d] = 0;
      return out;
    };
  }
};

struct ExpandDimsLowering : ViewLowering<tile::ExpandDimsOp> {
  using ViewLowering::ViewLowering;
  CoordMap map(tile::ExpandDimsOp op) const override {
    unsigned axis = op.getAxis();
    return [axis](const Coord &c) {
      Coord out = c;
      out.erase(out.begin() + axis);
      return out;
    };
  }
};

struct ReshapeLowering : ViewLowering<tile::ReshapeOp> {
  using ViewLowering::ViewLowering;
  CoordMap map(tile::ReshapeOp op) const override {
    auto srcShape = op.getSrc().getType().getShape(), dstShape = op.getType().getShape();
    std::vector<int64_t> from(srcShape.begin(), srcShape.end()), to(dstShape.begin(), dstShape.end());
    return [from, to](const Coord &c) { return gpu::delinearize(gpu::linearIndex(c, to), from); };
  }
};

struct TransLowering : ViewLowering<tile::TransOp> {
  using ViewLowering::ViewLowering;
  CoordMap map(tile::TransOp op) const override {
    SmallVector<int32_t> order(op.getOrder());
    return [order](const Coord &c) {
      Coord out(c.size());
      for (size_t i = 0; i < c.size(); ++i)
        out[order[i]] = c[i]; // result dimension i is source dimension order[i]
      return out;
    };
  }
};

struct ConvertLayoutLowering : KilnPattern<gpu::ConvertLayoutOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(gpu::ConvertLayoutOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> values = unpack(rewriter, loc, adaptor.getSrc());
    SmallVector<Value> result =
        convertRegisters(rewriter, loc, op, values, ctx.types.elementType(op.getType()),
                         layoutOf(op.getSrc().getType()), layoutOf(op.getType()), ctx.threadsPerWarp);
    rewriter.replaceOp(op, pack(rewriter, loc, getTypeConverter()->convertType(op.getType()), result));
    return success();
  }
};

/// join: result[..., k] from lhs (k = 0) or rhs (k = 1); the new last
/// dimension must live in registers.
struct JoinLowering : KilnPattern<tile::JoinOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::JoinOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LinearLayout to = layoutOf(op.getType()), from = layoutOf(op.getLhs().getType());
    Type element = ctx.types.elementType(op.getType());
    CoordMap dropLast = [](const Coord &c) { return Coord(c.begin(), c.end() - 1); };
    for (HwDim h : {HwDim::Lane, HwDim::Warp})
      for (const Coord &basis : to.bases(h))
        if (basis.back() != 0)
          return rewriter.notifyMatchFailure(op, "join's new dimension must live in registers");
    SmallVector<Value> lhs = unpack(rewriter, loc, adaptor.getLhs()), rhs = unpack(rewriter, loc, adaptor.getRhs());
    // Each half, remapped onto the registers of the result that hold it.
    SmallVector<Value> result(to.registers());
    LinearLayout agreeing = to.mapped(dropLast, from.shape());
    bool moved = !agreeing.sameThreads(from);
    if (moved) {
      lhs = convertRegisters(rewriter, loc, op, lhs, element, from, agreeing, ctx.threadsPerWarp);
      rhs = convertRegisters(rewriter, loc, op, rhs, element, from, agreeing, ctx.threadsPerWarp);
    }
    const LinearLayout &holder = moved ? agreeing : from;
    for (int r = 0; r < to.registers(); ++r) {
      Coord c = to.applyOne(HwDim::Register, r);
      int s = holder.findRegister(dropLast(c));
      result[r] = c.back() ? rhs[s] : lhs[s];
    }
    rewriter.replaceOp(op, pack(rewriter, loc, getTypeConverter()->convertType(op.getType()), result));
    return success();
  }
};

struct SplitLowering : KilnPattern<tile::SplitOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::SplitOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LinearLayout from = layoutOf(op.getSrc().getType()), to = layoutOf(op.getLhs().getType());
    Type element = ctx.types.elementType(op.getSrc().getType());
    SmallVector<Value> values = unpack(rewriter, loc, adaptor.getSrc());
    // The source must hold both halves of each pair in one thread.
    LinearLayout agreeing = to.mapped([](const Coord &c) { Coord o = c; o.push_back(0); return o; },
                                      from.shape());
    {
      auto bases = std::array<std::vector<Coord>, gpu::kHwDims>{
          agreeing.bases(HwDim::Register), agreeing.bases(HwDim::Lane), agreeing.bases(HwDim::Warp)};
      Coord last(from.rank(), 0);
      last.back() = 1;
      bases[0].insert(bases[0].begin(), last);
      agreeing = LinearLayout(bases, from.shape());
    }
    bool moved = !agreeing.sameThreads(from);
    if (moved)
      values = convertRegisters(rewriter, loc, op, values, element, from, agreeing, ctx.threadsPerWarp);
    const LinearLayout &holder = moved ? agreeing : from;
    SmallVector<Value> halves[2];
    for (int k = 0; k < 2; ++k)
      for (int r = 0; r < to.registers(); ++r) {
        Coord c = to.applyOne(HwDim::Register, r);
        c.push_back(k);
        halves[k].push_back(values[holder.findRegister(c)]);
      }
    Type structType = getTypeConverter()->convertType(op.getLhs().getType());
    rewriter.replaceOp(op, ValueRange{pack(rewriter, loc, structType, halves[0]),
                                      pack(rewriter, loc, structType, halves[1])});
    return success();
  }
};

} // namespace

void populateViewPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<BroadcastLowering, ExpandDimsLowering, ReshapeLowering, TransLowering,
               ConvertLayoutLowering, JoinLowering, SplitLowering>(context);
}

} // namespace kiln::lowering
