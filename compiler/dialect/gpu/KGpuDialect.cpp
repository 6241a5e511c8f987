//===- KGpuDialect.cpp - layouts: syntax, verification, linear maps -------===//

#include "compiler/dialect/gpu/KGpu.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln::gpu;

#include "compiler/dialect/gpu/KGpuAttrInterfaces.cpp.inc"
#include "compiler/dialect/gpu/KGpuDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "compiler/dialect/gpu/KGpuAttrs.cpp.inc"

#define GET_OP_CLASSES
#include "compiler/dialect/gpu/KGpuOps.cpp.inc"

namespace {
/// Dumps name layouts #blocked, #slice, #linear, #mma_operand instead of
/// spelling them out at every use.
struct KGpuAsmInterface : OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (isa<BlockedEncodingAttr>(attr))
      os << "blocked";
    else if (isa<SliceEncodingAttr>(attr))
      os << "slice";
    else if (isa<LinearEncodingAttr>(attr))
      os << "linear";
    else if (isa<MmaOperandEncodingAttr>(attr))
      os << "mma_operand";
    else
      return AliasResult::NoAlias;
    return AliasResult::FinalAlias;
  }
};
} // namespace

void KGpuDialect::initialize() {
  addInterfaces<KGpuAsmInterface>();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "compiler/dialect/gpu/KGpuAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "compiler/dialect/gpu/KGpuOps.cpp.inc"
      >();
}

namespace {

bool isPowerOf2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/// Reads `name = [a, b, ...]` from a parsed dictionary.
ParseResult readInts(AsmParser &parser, DictionaryAttr dict, StringRef name,
                     SmallVectorImpl<int64_t> &out) {
  auto array = dyn_cast_or_null<ArrayAttr>(dict.get(name));
  if (!array)
    return parser.emitError(parser.getNameLoc(), "expected '") << name << " = [...]'";
  for (Attribute a : array) {
    auto i = dyn_cast<IntegerAttr>(a);
    if (!i)
      return parser.emitError(parser.getNameLoc(), "'") << name << "' must hold integers";
    out.push_back(i.getInt());
  }
  return success();
}

template <class T> void printList(AsmPrinter &p, ArrayRef<T> values) {
  p << "[";
  llvm::interleaveComma(values, p);
  p << "]";
}

/// Flattened bases -> list of coordinates.
std::vector<Coord> unflatten(ArrayRef<int32_t> flat, unsigned rank) {
  std::vector<Coord> bases;
  for (size_t i = 0; rank && i + rank <= flat.size(); i += rank)
    bases.emplace_back(flat.begin() + i, flat.begin() + i + rank);
  return bases;
}

} // namespace

//===----------------------------------------------------------------------===//
// Blocked
//===----------------------------------------------------------------------===//

Attribute BlockedEncodingAttr::parse(AsmParser &parser, Type) {
  DictionaryAttr dict;
  if (parser.parseLess() || parser.parseAttribute(dict) || parser.parseGreater())
    return {};
  SmallVector<int64_t> spt, tpw, wpc, order;
  if (readInts(parser, dict, "sizePerThread", spt) || readInts(parser, dict, "threadsPerWarp", tpw) ||
      readInts(parser, dict, "warpsPerCTA", wpc) || readInts(parser, dict, "order", order))
    return {};
  auto toUnsigned = [](ArrayRef<int64_t> v) { return SmallVector<unsigned>(v.begin(), v.end()); };
  return parser.getChecked<BlockedEncodingAttr>(parser.getContext(), toUnsigned(spt),
                                                toUnsigned(tpw), toUnsigned(wpc), toUnsigned(order));
}

void BlockedEncodingAttr::print(AsmPrinter &p) const {
  p << "<{sizePerThread = ";
  printList(p, getSizePerThread());
  p << ", threadsPerWarp = ";
  printList(p, getThreadsPerWarp());
  p << ", warpsPerCTA = ";
  printList(p, getWarpsPerCTA());
  p << ", order = ";
  printList(p, getOrder());
  p << "}>";
}

LogicalResult BlockedEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                          ArrayRef<unsigned> spt, ArrayRef<unsigned> tpw,
                                          ArrayRef<unsigned> wpc, ArrayRef<unsigned> order) {
  size_t rank = spt.size();
  if (tpw.size() != rank || wpc.size() != rank || order.size() != rank)
    return emitError() << "blocked layout: sizePerThread, threadsPerWarp, warpsPerCTA and order "
                          "must have one entry per dimension";
  SmallVector<bool> seen(rank, false);
  for (unsigned d : order) {
    if (d >= rank || seen[d])
      return emitError() << "blocked layout: order must be a permutation of 0.." << rank - 1;
    seen[d] = true;
  }
  for (size_t d = 0; d < rank; ++d)
    if (!isPowerOf2(spt[d]) || !isPowerOf2(tpw[d]) || !isPowerOf2(wpc[d]))
      return emitError() << "blocked layout: sizes must be powers of two";
  return success();
}

LinearLayout BlockedEncodingAttr::toLinearLayout(ArrayRef<int64_t> shape) const {
  return LinearLayout::blocked(std::vector<int64_t>(shape.begin(), shape.end()),
                               std::vector<unsigned>(getSizePerThread().begin(), getSizePerThread().end()),
                               std::vector<unsigned>(getThreadsPerWarp().begin(), getThreadsPerWarp().end()),
                               std::vector<unsigned>(getWarpsPerCTA().begin(), getWarpsPerCTA().end()),
                               std::vector<unsigned>(getOrder().begin(), getOrder().end()));
}

unsigned BlockedEncodingAttr::getRank() const { return getOrder().size(); }

LogicalResult BlockedEncodingAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                                                  function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.size() != getRank())
    return emitError() << "a rank-" << getRank() << " blocked layout on a rank-" << shape.size()
                       << " tensor";
  return success();
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

Attribute SliceEncodingAttr::parse(AsmParser &parser, Type) {
  DictionaryAttr dict;
  if (parser.parseLess() || parser.parseAttribute(dict) || parser.parseGreater())
    return {};
  auto dim = dyn_cast_or_null<IntegerAttr>(dict.get("dim"));
  Attribute parent = dict.get("parent");
  if (!dim || !parent) {
    parser.emitError(parser.getNameLoc(), "expected '{dim = D, parent = #layout}'");
    return {};
  }
  return parser.getChecked<SliceEncodingAttr>(parser.getContext(),
                                              static_cast<unsigned>(dim.getInt()), parent);
}

void SliceEncodingAttr::print(AsmPrinter &p) const {
  p << "<{dim = " << getDim() << ", parent = " << getParent() << "}>";
}

LogicalResult SliceEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError, unsigned dim,
                                        Attribute parent) {
  auto layout = dyn_cast<LayoutEncodingAttr>(parent);
  if (!layout)
    return emitError() << "slice layout: the parent must be a layout, got " << parent;
  if (dim >= layout.getRank())
    return emitError() << "slice layout: dim " << dim << " is out of range for a rank-"
                       << layout.getRank() << " parent";
  return success();
}

unsigned SliceEncodingAttr::getRank() const {
  return cast<LayoutEncodingAttr>(getParent()).getRank() - 1;
}

LinearLayout SliceEncodingAttr::toLinearLayout(ArrayRef<int64_t> shape) const {
  SmallVector<int64_t> parentShape(shape);
  parentShape.insert(parentShape.begin() + getDim(), 1);
  return cast<LayoutEncodingAttr>(getParent()).toLinearLayout(parentShape).sliced(getDim());
}

LogicalResult SliceEncodingAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                                                function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.size() != getRank())
    return emitError() << "a rank-" << getRank() << " slice layout on a rank-" << shape.size()
                       << " tensor";
  return success();
}

//===----------------------------------------------------------------------===//
// Linear
//===----------------------------------------------------------------------===//

LinearEncodingAttr LinearEncodingAttr::get(MLIRContext *context, const LinearLayout &layout) {
  SmallVector<int32_t> flat[kHwDims];
  for (int h = 0; h < kHwDims; ++h)
    for (const Coord &c : layout.bases(static_cast<HwDim>(h)))
      flat[h].append(c.begin(), c.end());
  return get(context, layout.rank(), flat[0], flat[1], flat[2]);
}

Attribute LinearEncodingAttr::parse(AsmParser &parser, Type) {
  DictionaryAttr dict;
  if (parser.parseLess() || parser.parseAttribute(dict) || parser.parseGreater())
    return {};
  SmallVector<int32_t> flat[kHwDims];
  int64_t rank = -1;
  const char *names[] = {"register", "lane", "warp"};
  for (int h = 0; h < kHwDims; ++h) {
    auto list = dyn_cast_or_null<ArrayAttr>(dict.get(names[h]));
    if (!list) {
      parser.emitError(parser.getNameLoc(), "expected '") << names[h] << " = [[...], ...]'";
      return {};
    }
    for (Attribute basis : list) {
      auto coords = dyn_cast<ArrayAttr>(basis);
      if (!coords || (rank >= 0 && static_cast<int64_t>(coords.size()) != rank)) {
        parser.emitError(parser.getNameLoc(), "linear layout: every basis needs one integer per dimension");
        return {};
      }
      rank = coords.size();
      for (Attribute c : coords)
        flat[h].push_back(static_cast<int32_t>(cast<IntegerAttr>(c).getInt()));
    }
  }
  auto rankAttr = dyn_cast_or_null<IntegerAttr>(dict.get("rank"));
  if (rank < 0) {
    if (!rankAttr) {
      parser.emitError(parser.getNameLoc(), "linear layout without bases needs 'rank = R'");
      return {};
    }
    rank = rankAttr.getInt();
  }
  return parser.getChecked<LinearEncodingAttr>(parser.getContext(), static_cast<unsigned>(rank),
                                               flat[0], flat[1], flat[2]);
}

void LinearEncodingAttr::print(AsmPrinter &p) const {
  ArrayRef<int32_t> flat[] = {getRegisterBases(), getLaneBases(), getWarpBases()};
  const char *names[] = {"register", "lane", "warp"};
  p << "<{";
  for (int h = 0; h < kHwDims; ++h) {
    p << (h ? ", " : "") << names[h] << " = [";
    for (size_t i = 0; i < flat[h].size(); i += getRank()) {
      p << (i ? ", " : "");
      printList(p, flat[h].slice(i, getRank()));
    }
    p << "]";
  }
  if (flat[0].empty() && flat[1].empty() && flat[2].empty())
    p << ", rank = " << getRank();
  p << "}>";
}

LogicalResult LinearEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError, unsigned rank,
                                         ArrayRef<int32_t> registers, ArrayRef<int32_t> lanes,
                                         ArrayRef<int32_t> warps) {
  if (rank == 0)
    return emitError() << "linear layout: rank must be positive";
  for (ArrayRef<int32_t> flat : {registers, lanes, warps}) {
    if (flat.size() % rank)
      return emitError() << "linear layout: bases must have " << rank << " coordinates each";
    for (int32_t c : flat)
      if (c < 0)
        return emitError() << "linear layout: coordinates must be non-negative";
  }
  return success();
}

LinearLayout LinearEncodingAttr::toLinearLayout(ArrayRef<int64_t> shape) const {
  return LinearLayout({unflatten(getRegisterBases(), getRank()), unflatten(getLaneBases(), getRank()),
                       unflatten(getWarpBases(), getRank())},
                      std::vector<int64_t>(shape.begin(), shape.end()));
}

LogicalResult LinearEncodingAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                                                 function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.size() != getRank())
    return emitError() << "a rank-" << getRank() << " linear layout on a rank-" << shape.size()
                       << " tensor";
  for (ArrayRef<int32_t> flat : {getRegisterBases(), getLaneBases(), getWarpBases()})
    for (size_t i = 0; i < flat.size(); ++i)
      if (flat[i] >= shape[i % getRank()])
        return emitError() << "linear layout: a basis reaches " << flat[i] << " in dimension "
                           << i % getRank() << " of size " << shape[i % getRank()];
  if (!toLinearLayout(shape).coversShape())
    return emitError() << "linear layout: some elements of the shape are held by no thread";
  return success();
}

//===----------------------------------------------------------------------===//
// MMA operand
//===----------------------------------------------------------------------===//

LogicalResult MmaOperandEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError, unsigned operand,
                                             unsigned warpsM, unsigned warpsN, unsigned numWarps, unsigned bits) {
  if (operand > 1)
    return emitError() << "mma operand layout: operand must be 0 (A) or 1 (B)";
  if (bits != 16 && bits != 32)
    return emitError() << "mma operand layout: bits must be 16 (f16/bf16) or 32 (tf32)";
  if (!isPowerOf2(warpsM) || !isPowerOf2(warpsN) || !isPowerOf2(numWarps) || warpsM * warpsN > numWarps)
    return emitError() << "mma operand layout: warpsM x warpsN must be powers of two within numWarps";
  return success();
}

unsigned MmaOperandEncodingAttr::getRank() const { return 2; }

LinearLayout MmaOperandEncodingAttr::toLinearLayout(ArrayRef<int64_t> shape) const {
  const bool a = getOperand() == 0;
  const int32_t kStep = static_cast<int32_t>(getKStep());
  const int kDim = a ? 1 : 0, outerDim = 1 - kDim;
  auto at = [&](int32_t k, int32_t outer) {
    Coord c(2);
    c[kDim] = k;
    c[outerDim] = outer;
    return c;
  };
  std::array<std::vector<Coord>, kHwDims> bases;
  auto &regs = bases[0], &lanes = bases[1], &warps = bases[2];
  // Within a piece (A: 16 rows, B: 8 columns, by one K step): lane l holds
  // outer index l/4 (A also l/4 + 8), K index 2 * (l % 4) and the next
  // (16-bit) or l % 4 (tf32); the register halves and quarters add 8 rows
  // (A) and half a step of K, in the instruction's order.
  const int32_t laneK = getBits() == 16 ? 2 : 1;
  if (getBits() == 16)
    regs.push_back(at(1, 0));
  if (a) {
    regs.push_back(at(0, 8));
    regs.push_back(at(kStep / 2, 0));
  } else {
    regs.push_back(at(kStep / 2, 0));
  }
  lanes = {at(laneK, 0), at(2 * laneK, 0), at(0, 1), at(0, 2), at(0, 4)};
  // Pieces repeat along the outer dimension past the warps', then K steps.
  const int64_t piece = a ? 16 : 8, warpsOuter = a ? getWarpsM() : getWarpsN();
  for (int64_t o = piece * warpsOuter; o < shape[outerDim]; o *= 2)
    regs.push_back(at(0, static_cast<int32_t>(o)));
  for (int64_t k = kStep; k < shape[kDim]; k *= 2)
    regs.push_back(at(static_cast<int32_t>(k), 0));
  // Warps: N first, then M (as the accumulator's); the other operand's
  // dimension and spare warps hold copies.
  for (unsigned w = 1; w < getWarpsN(); w *= 2)
    warps.push_back(a ? at(0, 0) : at(0, static_cast<int32_t>(8 * w)));
  for (unsigned w = 1; w < getWarpsM(); w *= 2)
    warps.push_back(a ? at(0, static_cast<int32_t>(16 * w)) : at(0, 0));
  for (unsigned w = getWarpsM() * getWarpsN(); w < getNumWarps(); w *= 2)
    warps.push_back(at(0, 0));
  return LinearLayout(bases, std::vector<int64_t>(shape.begin(), shape.end()));
}

LogicalResult MmaOperandEncodingAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                                                     function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.size() != 2)
    return emitError() << "mma operand layout on a rank-" << shape.size() << " tensor";
  const bool a = getOperand() == 0;
  const int64_t k = a ? shape[1] : shape[0], outer = a ? shape[0] : shape[1];
  const int64_t kStep = getKStep();
  // B's pieces come in pairs (one ldmatrix.x4 reads two).
  const int64_t outerUnit = a ? 16 * getWarpsM() : 16 * getWarpsN();
  if (!isPowerOf2(k) || k < kStep || !isPowerOf2(outer) || outer < outerUnit)
    return emitError() << "mma operand layout: " << (a ? "A" : "B") << " of " << shape[0] << "x" << shape[1]
                       << " does not split into whole K steps of " << kStep << " and " << outerUnit
                       << (a ? " rows" : " columns");
  return success();
}

//===----------------------------------------------------------------------===//
// convert_layout
//===----------------------------------------------------------------------===//

OpFoldResult ConvertLayoutOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getSrc()))
    return SplatElementsAttr::get(getType(), splat.getSplatValue<Attribute>());
  return {};
}

namespace {
/// convert(convert(x)) -> convert(x); convert(splat(s)) -> splat(s).
struct FoldConvertChains : OpRewritePattern<ConvertLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvertLayoutOp op, PatternRewriter &rewriter) const override {
    Operation *def = op.getSrc().getDefiningOp();
    if (auto inner = dyn_cast_or_null<ConvertLayoutOp>(def)) {
      rewriter.replaceOpWithNewOp<ConvertLayoutOp>(op, op.getType(), inner.getSrc());
      return success();
    }
    if (auto splat = dyn_cast_or_null<kiln::tile::SplatOp>(def)) {
      rewriter.replaceOpWithNewOp<kiln::tile::SplatOp>(op, op.getType(), splat.getSrc());
      return success();
    }
    return failure();
  }
};
} // namespace

void ConvertLayoutOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *context) {
  patterns.add<FoldConvertChains>(context);
}

//===----------------------------------------------------------------------===//
// Shared-memory buffers
//===----------------------------------------------------------------------===//

namespace {
/// A buffer's tile shape (its shape without the slot dimension) must be
/// `shape` with the buffer's element type.
LogicalResult checkTile(Operation *op, RankedTensorType buffer, RankedTensorType tile, StringRef what) {
  if (buffer.getShape().drop_front() != tile.getShape())
    return op->emitOpError() << what << " shape does not match the buffer's tile shape";
  return success();
}
} // namespace

LogicalResult AsyncCopyOp::verify() {
  auto ptr = cast<RankedTensorType>(getPtr().getType());
  if (failed(checkTile(*this, getBuffer().getType(), ptr, "pointer")))
    return failure();
  auto pointee = cast<kiln::tile::PointerType>(ptr.getElementType()).getPointeeType();
  if (pointee != getBuffer().getType().getElementType())
    return emitOpError("pointers and buffer hold different element types");
  if (getMask() && cast<RankedTensorType>(getMask().getType()).getShape() != ptr.getShape())
    return emitOpError("mask and pointers have different shapes");
  return success();
}

LogicalResult LocalStoreOp::verify() {
  auto value = cast<RankedTensorType>(getValue().getType());
  if (value.getElementType() != getBuffer().getType().getElementType())
    return emitOpError("value and buffer hold different element types");
  return checkTile(*this, getBuffer().getType(), value, "value");
}

LogicalResult LocalLoadOp::verify() {
  if (getBuffer().getType().getElementType() != getType().getElementType())
    return emitOpError("result and buffer hold different element types");
  std::optional<ArrayRef<int64_t>> offsets = getOffsets();
  if (!offsets)
    return checkTile(*this, getBuffer().getType(), getType(), "result");
  ArrayRef<int64_t> tile = getBuffer().getType().getShape().drop_front(), window = getType().getShape();
  if (offsets->size() != tile.size() || window.size() != tile.size())
    return emitOpError("needs one offset per dimension of a slot");
  for (size_t d = 0; d < tile.size(); ++d)
    if ((*offsets)[d] < 0 || (*offsets)[d] + window[d] > tile[d])
      return emitOpError("window at offset ") << (*offsets)[d] << " of " << window[d]
                                              << " elements leaves the slot's " << tile[d] << " in dimension " << d;
  return success();
}

LogicalResult TmaLoadOp::verify() {
  auto buffer = getBuffer().getType();
  if (static_cast<int64_t>(getCoords().size()) + 1 != buffer.getRank())
    return emitOpError("needs one coordinate per dimension of a slot, got ") << getCoords().size() << " for "
                                                                             << buffer.getRank() - 1;
  if (!getBarriers().getType().getElementType().isInteger(64) || getBarriers().getType().getRank() != 1 ||
      getBarriers().getType().getShape()[0] != buffer.getShape()[0])
    return emitOpError("needs one i64 barrier per slot of its buffer");
  if (getMulticast() < 1)
    return emitOpError("multicasts to a cluster of at least 1 program, got ") << getMulticast();
  return success();
}

/// Whether named barriers `barrier` on are free for the turns of the
/// module's consumer warpgroups: past the program's barrier 0 and within
/// the 16 a program has.
static LogicalResult checkTurnBarriers(Operation *op, int32_t barrier) {
  auto module = op->getParentOfType<ModuleOp>();
  const int warpgroups = module ? std::max(1, getNumWarps(module) / 4) : 1;
  if (barrier < kFirstTurnBarrier || barrier + warpgroups > kNamedBarriers)
    return op->emitOpError("needs named barriers ") << barrier << ".." << barrier + warpgroups - 1
                                                    << " within " << kFirstTurnBarrier << ".." << kNamedBarriers - 1;
  return success();
}

LogicalResult WaitTurnOp::verify() { return checkTurnBarriers(*this, getBarrier()); }

LogicalResult PassTurnOp::verify() {
  if (getOnlyLast() && getExceptLast())
    return emitOpError("cannot pass the turn from only the last warpgroup and from all but the last at once");
  return checkTurnBarriers(*this, getBarrier());
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace kiln::gpu {

static int intAttr(ModuleOp module, const char *name, int fallback) {
  if (auto a = module->getAttrOfType<IntegerAttr>(name))
    return static_cast<int>(a.getInt());
  return fallback;
}

int getNumWarps(ModuleOp module) { return intAttr(module, kNumWarpsAttr, 4); }
int getProducerWarps(ModuleOp module) { return intAttr(module, kProducerWarpsAttr, 0); }
int getThreadsPerWarp(ModuleOp module) { return intAttr(module, kThreadsPerWarpAttr, 32); }

LinearLayout linearLayoutOf(RankedTensorType type) {
  auto layout = dyn_cast_or_null<LayoutEncodingAttr>(type.getEncoding());
  assert(layout && "tensor without a layout");
  return layout.toLinearLayout(type.getShape());
}

BlockedEncodingAttr defaultBlockedEncoding(MLIRContext *context, ArrayRef<int64_t> shape,
                                           int numWarps, int threadsPerWarp) {
  size_t rank = shape.size();
  SmallVector<unsigned> spt(rank, 1), tpw(rank, 1), wpc(rank, 1), order;
  for (size_t i = 0; i < rank; ++i)
    order.push_back(rank - 1 - i);
  // Lanes fill the fastest dimension first, then the next; so do warps over
  // what the lanes leave.
  int64_t lanes = threadsPerWarp, warps = numWarps;
  for (unsigned d : order)
    while (lanes > 1 && tpw[d] < shape[d]) {
      tpw[d] *= 2;
      lanes /= 2;
    }
  for (unsigned d : order)
    while (warps > 1 && int64_t(tpw[d]) * wpc[d] < shape[d]) {
      wpc[d] *= 2;
      warps /= 2;
    }
  // Threads left over (tensors smaller than the program) go to the slowest
  // dimension, where they broadcast.
  tpw[order.back()] *= lanes;
  wpc[order.back()] *= warps;
  return BlockedEncodingAttr::get(context, spt, tpw, wpc, order);
}

Type withEncoding(Type type, Attribute encoding) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return RankedTensorType::get(tensor.getShape(), tensor.getElementType(), encoding);
  return type;
}

bool isElementwiseArith(Operation *op) {
  StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
  return (dialect == "arith" || dialect == "math") && !op->hasTrait<OpTrait::ConstantLike>();
}

} // namespace kiln::gpu
