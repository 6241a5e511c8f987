//===- TileOps.cpp - verifiers, folders and builders of tile ops ----------===//
//
// Verifier messages name the shapes and types involved: they are what a user
// sees when hand-written IR, or a front-end bug, produces a bad operation.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/tile/Tile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln::tile;

namespace {

/// "64x128xf32" for tensors, the type itself for scalars: the form used in
/// every message below.
std::string describe(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    for (int64_t d : tensor.getShape())
      os << d << "x";
    os << tensor.getElementType();
  } else {
    os << type;
  }
  return text;
}

std::string describeShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(shape, os, "x");
  return text;
}

ArrayRef<int64_t> shapeOf(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.getShape();
  return {};
}

/// A constant splat attribute re-typed to `type`, for folding shape ops of
/// constants.
OpFoldResult foldSplatConstant(Attribute operand, Type type) {
  auto splat = dyn_cast_if_present<SplatElementsAttr>(operand);
  if (!splat)
    return {};
  return SplatElementsAttr::get(cast<ShapedType>(type),
                                splat.getSplatValue<Attribute>());
}

} // namespace

//===----------------------------------------------------------------------===//
// FuncOp
//===----------------------------------------------------------------------===//

void FuncOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   FunctionType type) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  state.addRegion();
}

ParseResult FuncOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildFuncType = [](Builder &builder, ArrayRef<Type> argTypes,
                          ArrayRef<Type> results,
                          function_interface_impl::VariadicFlag,
                          std::string &) {
    return builder.getFunctionType(argTypes, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildFuncType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void FuncOp::print(OpAsmPrinter &printer) {
  function_interface_impl::printFunctionOp(
      printer, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

LogicalResult FuncOp::verify() {
  if (!getFunctionType().getResults().empty())
    return emitOpError("kernels return nothing (write results through "
                       "pointers), but the signature has ")
           << getFunctionType().getResults().size() << " result(s)";
  for (auto [index, type] : llvm::enumerate(getArgumentTypes())) {
    if (!isa<IntegerType, FloatType, PointerType, TensorMapType>(type))
      return emitOpError("argument #")
             << index
             << " must be a scalar (integer, float or !tile.ptr) or a "
                "!tile.tensormap, got "
             << type;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Making and reshaping blocks
//===----------------------------------------------------------------------===//

LogicalResult RangeOp::verify() {
  int64_t start = static_cast<int32_t>(getStart());
  int64_t end = static_cast<int32_t>(getEnd());
  auto type = getType();
  if (type.getRank() != 1)
    return emitOpError("result must be 1-D, got ") << describe(type);
  if (end <= start)
    return emitOpError("end (") << end << ") must be greater than start ("
                                << start << ")";
  int64_t length = end - start;
  if (!llvm::isPowerOf2_64(length))
    return emitOpError("length end - start = ")
           << length << " must be a power of two";
  if (type.getDimSize(0) != length)
    return emitOpError("result has ")
           << type.getDimSize(0) << " elements but the range [" << start
           << ", " << end << ") has " << length;
  return success();
}

OpFoldResult SplatOp::fold(FoldAdaptor adaptor) {
  auto value = adaptor.getSrc();
  if (!isa_and_present<IntegerAttr, FloatAttr>(value))
    return {};
  return SplatElementsAttr::get(cast<ShapedType>(getType()), value);
}

LogicalResult BroadcastOp::verify() {
  auto srcShape = getSrc().getType().getShape();
  auto resultShape = getType().getShape();
  if (srcShape.size() != resultShape.size())
    return emitOpError("source and result must have the same rank, got ")
           << describe(getSrc().getType()) << " -> " << describe(getType())
           << " (use tile.expand_dims to add dimensions)";
  for (auto [dim, pair] : llvm::enumerate(llvm::zip(srcShape, resultShape))) {
    auto [from, to] = pair;
    if (from != to && from != 1)
      return emitOpError("dimension ")
             << dim << " of size " << from << " cannot broadcast to " << to
             << " (" << describe(getSrc().getType()) << " -> "
             << describe(getType()) << ")";
  }
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  return foldSplatConstant(adaptor.getSrc(), getType());
}

LogicalResult ExpandDimsOp::verify() {
  auto srcShape = getSrc().getType().getShape();
  int64_t axis = static_cast<int32_t>(getAxis());
  if (axis < 0 || axis > static_cast<int64_t>(srcShape.size()))
    return emitOpError("axis ")
           << axis << " is out of range for a block of rank "
           << srcShape.size() << " (expected 0.." << srcShape.size() << ")";
  SmallVector<int64_t> expected(srcShape);
  expected.insert(expected.begin() + axis, 1);
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape ")
           << describeShape(getType().getShape()) << " should be "
           << describeShape(expected);
  return success();
}

OpFoldResult ExpandDimsOp::fold(FoldAdaptor adaptor) {
  return foldSplatConstant(adaptor.getSrc(), getType());
}

LogicalResult ReshapeOp::verify() {
  auto src = getSrc().getType();
  if (src.getNumElements() != getType().getNumElements())
    return emitOpError("cannot reshape ")
           << describe(src) << " (" << src.getNumElements() << " elements) to "
           << describe(getType()) << " (" << getType().getNumElements()
           << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  return foldSplatConstant(adaptor.getSrc(), getType());
}

LogicalResult TransOp::verify() {
  auto srcShape = getSrc().getType().getShape();
  auto order = getOrder();
  if (order.size() != srcShape.size())
    return emitOpError("order has ")
           << order.size() << " entries but the block has rank "
           << srcShape.size();
  SmallVector<bool> seen(order.size(), false);
  for (int32_t dim : order) {
    if (dim < 0 || dim >= static_cast<int32_t>(order.size()) || seen[dim])
      return emitOpError("order must be a permutation of 0..")
             << order.size() - 1;
    seen[dim] = true;
  }
  SmallVector<int64_t> expected;
  for (int32_t dim : order)
    expected.push_back(srcShape[dim]);
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape ")
           << describeShape(getType().getShape()) << " should be "
           << describeShape(expected);
  return success();
}

OpFoldResult TransOp::fold(FoldAdaptor adaptor) {
  if (llvm::equal(getOrder(), llvm::seq<int32_t>(0, getOrder().size())))
    return getSrc();
  return foldSplatConstant(adaptor.getSrc(), getType());
}

LogicalResult JoinOp::verify() {
  SmallVector<int64_t> expected(getLhs().getType().getShape());
  expected.push_back(2);
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape ")
           << describeShape(getType().getShape()) << " should be "
           << describeShape(expected);
  if (getType().getElementType() != getLhs().getType().getElementType())
    return emitOpError("result element type ")
           << getType().getElementType() << " should be "
           << getLhs().getType().getElementType();
  return success();
}

LogicalResult SplitOp::verify() {
  auto srcShape = getSrc().getType().getShape();
  if (srcShape.empty() || srcShape.back() != 2)
    return emitOpError("the last dimension must be 2, got ")
           << describe(getSrc().getType());
  if (getLhs().getType().getShape() != srcShape.drop_back())
    return emitOpError("result shape ")
           << describeShape(getLhs().getType().getShape()) << " should be "
           << describeShape(srcShape.drop_back());
  if (getLhs().getType().getElementType() !=
      getSrc().getType().getElementType())
    return emitOpError("result element type ")
           << getLhs().getType().getElementType() << " should be "
           << getSrc().getType().getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// Pointers and memory
//===----------------------------------------------------------------------===//

LogicalResult AddPtrOp::verify() {
  if (shapeOf(getPtr().getType()) != shapeOf(getOffset().getType()))
    return emitOpError("pointer and offset must have the same shape, got ")
           << describe(getPtr().getType()) << " and "
           << describe(getOffset().getType());
  return success();
}

OpFoldResult AddPtrOp::fold(FoldAdaptor adaptor) {
  if (matchPattern(adaptor.getOffset(), m_Zero()))
    return getPtr();
  return {};
}

static LogicalResult verifyPtrIntCast(Operation *op, Type ptrLike,
                                      Type intLike) {
  if (shapeOf(ptrLike) != shapeOf(intLike))
    return op->emitOpError("source and result must have the same shape, got ")
           << describe(op->getOperand(0).getType()) << " and "
           << describe(op->getResult(0).getType());
  if (!getElementTypeOrSelf(intLike).isInteger(64))
    return op->emitOpError("addresses are i64, got ") << describe(intLike);
  return success();
}

LogicalResult IntToPtrOp::verify() {
  return verifyPtrIntCast(*this, getType(), getSrc().getType());
}

LogicalResult PtrToIntOp::verify() {
  return verifyPtrIntCast(*this, getSrc().getType(), getType());
}

void LoadOp::build(OpBuilder &builder, OperationState &state, Value ptr,
                   Value mask, Value other) {
  build(builder, state, getPointeeTypeLike(ptr.getType()), ptr, mask, other,
        CacheModifier::none, EvictionPolicy::normal, /*isVolatile=*/false);
}

/// A descriptor access names one size, stride and offset per dimension of
/// its block, whose elements are what the base points to.
static LogicalResult verifyDescriptorAccess(Operation *op, Value base, ValueRange sizes, ValueRange strides,
                                            ValueRange offsets, RankedTensorType block) {
  int64_t rank = block.getRank();
  if (rank < 1 || rank > 5)
    return op->emitOpError("descriptor blocks have 1 to 5 dimensions, got ") << rank;
  if (static_cast<int64_t>(sizes.size()) != rank || static_cast<int64_t>(strides.size()) != rank ||
      static_cast<int64_t>(offsets.size()) != rank)
    return op->emitOpError("needs one size, stride and offset per dimension of its ")
           << rank << "-d block, got " << sizes.size() << ", " << strides.size() << " and " << offsets.size();
  Type pointee = cast<PointerType>(base.getType()).getPointeeType();
  if (pointee != block.getElementType())
    return op->emitOpError("block elements ") << block.getElementType() << " are not what the base points to ("
                                              << pointee << ")";
  return success();
}

LogicalResult DescriptorLoadOp::verify() {
  return verifyDescriptorAccess(*this, getBase(), getSizes(), getStrides(), getOffsets(),
                                cast<RankedTensorType>(getType()));
}

LogicalResult DescriptorStoreOp::verify() {
  return verifyDescriptorAccess(*this, getBase(), getSizes(), getStrides(), getOffsets(),
                                cast<RankedTensorType>(getValue().getType()));
}

LogicalResult LoadOp::verify() {
  if (getOther() && !getMask())
    return emitOpError("'other' is the value of masked-off elements and "
                       "needs a mask");
  return success();
}

/// A mask that is true everywhere (a constant): the access needs none.
/// Kernels specialized for full blocks build such masks.
static bool isAllTrue(Value mask) { return mask && matchPattern(mask, m_One()); }

namespace {
struct DropTrueLoadMask : OpRewritePattern<LoadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LoadOp op, PatternRewriter &rewriter) const override {
    if (!isAllTrue(op.getMask()))
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getMaskMutable().clear();
      op.getOtherMutable().clear();
    });
    return success();
  }
};

struct DropTrueStoreMask : OpRewritePattern<StoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(StoreOp op, PatternRewriter &rewriter) const override {
    if (!isAllTrue(op.getMask()))
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.getMaskMutable().clear(); });
    return success();
  }
};
} // namespace

void LoadOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *context) {
  patterns.add<DropTrueLoadMask>(context);
}

void StoreOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *context) {
  patterns.add<DropTrueStoreMask>(context);
}

/// Which element types an atomic read-modify-write accepts.
static bool isValidRMWElement(AtomicRMWKind kind, Type element) {
  unsigned width = element.getIntOrFloatBitWidth();
  bool isInt = isa<IntegerType>(element) && (width == 32 || width == 64);
  switch (kind) {
  case AtomicRMWKind::add:
  case AtomicRMWKind::umax:
  case AtomicRMWKind::umin:
  case AtomicRMWKind::and_:
  case AtomicRMWKind::or_:
  case AtomicRMWKind::xor_:
    return isInt;
  case AtomicRMWKind::max:
  case AtomicRMWKind::min:
    return isInt || element.isF32() || element.isF64();
  case AtomicRMWKind::fadd:
    return element.isF16() || element.isBF16() || element.isF32() ||
           element.isF64();
  case AtomicRMWKind::xchg:
    return width == 16 || width == 32 || width == 64;
  }
  return false;
}

LogicalResult AtomicRMWOp::verify() {
  Type element = getElementTypeOrSelf(getVal().getType());
  if (isa<PointerType>(element) || !isValidRMWElement(getKind(), element))
    return emitOpError("atomic ")
           << stringifyAtomicRMWKind(getKind()) << " does not support "
           << element
           << " (add/and/or/xor/umax/umin: i32/i64; max/min: i32/i64/f32/f64;"
              " fadd: f16/bf16/f32/f64; xchg: 16/32/64-bit)";
  return success();
}

LogicalResult AtomicCASOp::verify() {
  Type element = getElementTypeOrSelf(getVal().getType());
  if (isa<PointerType>(element))
    return emitOpError("compare-and-swap takes numbers, not pointers");
  unsigned width = element.getIntOrFloatBitWidth();
  if (width != 16 && width != 32 && width != 64)
    return emitOpError("compare-and-swap takes 16-, 32- or 64-bit values, "
                       "got ")
           << element;
  return success();
}

//===----------------------------------------------------------------------===//
// Casts
//===----------------------------------------------------------------------===//

LogicalResult BitcastOp::verify() {
  Type src = getSrc().getType(), dst = getType();
  if (shapeOf(src) != shapeOf(dst) ||
      isa<RankedTensorType>(src) != isa<RankedTensorType>(dst))
    return emitOpError("source and result must have the same shape, got ")
           << describe(src) << " -> " << describe(dst);
  Type from = getElementTypeOrSelf(src), to = getElementTypeOrSelf(dst);
  bool fromPtr = isa<PointerType>(from), toPtr = isa<PointerType>(to);
  if (fromPtr != toPtr)
    return emitOpError("cannot bitcast between pointers and numbers (")
           << from << " -> " << to << "); use tile.ptr_to_int/int_to_ptr";
  if (!fromPtr && from.getIntOrFloatBitWidth() != to.getIntOrFloatBitWidth())
    return emitOpError("bit widths differ: ")
           << from << " has " << from.getIntOrFloatBitWidth() << " bits, "
           << to << " has " << to.getIntOrFloatBitWidth();
  return success();
}

OpFoldResult BitcastOp::fold(FoldAdaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  return {};
}

LogicalResult FpToFpOp::verify() {
  Type src = getSrc().getType(), dst = getType();
  if (shapeOf(src) != shapeOf(dst) ||
      isa<RankedTensorType>(src) != isa<RankedTensorType>(dst))
    return emitOpError("source and result must have the same shape, got ")
           << describe(src) << " -> " << describe(dst);
  Type from = getElementTypeOrSelf(src), to = getElementTypeOrSelf(dst);
  if (!isFloat8(from) && !isFloat8(to))
    return emitOpError("converts to or from f8E4M3FN/f8E5M2; use "
                       "arith.extf/arith.truncf for ")
           << from << " -> " << to;
  if (from == to)
    return emitOpError("source and result are both ") << from;
  if (isFloat8(to) && !getRounding())
    return emitOpError("conversion to ")
           << to << " needs a rounding mode (rounding = rtne|rtz)";
  if (!isFloat8(to) && getRounding())
    return emitOpError("conversion from ")
           << from << " to " << to << " is exact and takes no rounding mode";
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions, scans and matrix products
//===----------------------------------------------------------------------===//

/// Checks a reduce/scan combine region: one block taking (acc..., next...)
/// of the operands' element types and yielding one value per operand.
static LogicalResult verifyCombineRegion(Operation *op, Region &region,
                                         ValueRange srcs) {
  Block &block = region.front();
  SmallVector<Type> elements;
  for (Value src : srcs)
    elements.push_back(getElementTypeOrSelf(src.getType()));
  size_t n = elements.size();
  if (block.getNumArguments() != 2 * n)
    return op->emitOpError("combine region must take ")
           << 2 * n << " arguments (accumulated and next value of each of "
           << n << " operand(s)), got " << block.getNumArguments();
  for (size_t i = 0; i < 2 * n; ++i) {
    if (block.getArgument(i).getType() != elements[i % n])
      return op->emitOpError("combine region argument #")
             << i << " has type " << block.getArgument(i).getType()
             << ", expected " << elements[i % n];
  }
  Operation *terminator = block.getTerminator();
  if (terminator->getNumOperands() != n)
    return op->emitOpError("combine region must yield ")
           << n << " value(s), got " << terminator->getNumOperands();
  for (size_t i = 0; i < n; ++i) {
    if (terminator->getOperand(i).getType() != elements[i])
      return op->emitOpError("combine region yields ")
             << terminator->getOperand(i).getType() << " for operand #" << i
             << ", expected " << elements[i];
  }
  return success();
}

LogicalResult ReduceOp::verifyRegions() {
  if (getSrcs().empty())
    return emitOpError("needs at least one operand");
  auto shape = cast<RankedTensorType>(getSrcs().front().getType()).getShape();
  int64_t axis = static_cast<int32_t>(getAxis());
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    return emitOpError("axis ")
           << axis << " is out of range for a block of rank " << shape.size();
  if (getResults().size() != getSrcs().size())
    return emitOpError("has ")
           << getSrcs().size() << " operand(s) but " << getResults().size()
           << " result(s)";
  SmallVector<int64_t> expected(shape);
  expected.erase(expected.begin() + axis);
  for (auto [src, result] : llvm::zip(getSrcs(), getResults())) {
    Type element = getElementTypeOrSelf(src.getType());
    if (getElementTypeOrSelf(result.getType()) != element ||
        shapeOf(result.getType()) != ArrayRef<int64_t>(expected) ||
        (expected.empty() && isa<RankedTensorType>(result.getType())))
      return emitOpError("reducing ")
             << describe(src.getType()) << " along axis " << axis
             << " gives " << (expected.empty() ? "a scalar" : "a block")
             << " of shape " << describeShape(expected) << " and type "
             << element << ", but the result is "
             << describe(result.getType());
  }
  return verifyCombineRegion(*this, getCombineOp(), getSrcs());
}

LogicalResult ScanOp::verifyRegions() {
  if (getSrcs().empty())
    return emitOpError("needs at least one operand");
  int64_t rank = cast<RankedTensorType>(getSrcs().front().getType()).getRank();
  int64_t axis = static_cast<int32_t>(getAxis());
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ")
           << axis << " is out of range for a block of rank " << rank;
  if (getResults().size() != getSrcs().size())
    return emitOpError("has ")
           << getSrcs().size() << " operand(s) but " << getResults().size()
           << " result(s)";
  for (auto [src, result] : llvm::zip(getSrcs(), getResults())) {
    if (getElementTypeOrSelf(src.getType()) !=
        getElementTypeOrSelf(result.getType()))
      return emitOpError("result ")
             << describe(result.getType()) << " should have the type of "
             << describe(src.getType());
  }
  return verifyCombineRegion(*this, getCombineOp(), getSrcs());
}

/// The accumulator types a dot allows for an operand element type.
static bool isValidDotAccumulator(Type operand, Type acc) {
  if (operand.isF16())
    return acc.isF32() || acc.isF16();
  if (operand.isBF16() || isFloat8(operand) || operand.isF32())
    return acc.isF32();
  if (operand.isF64())
    return acc.isF64();
  if (operand.isInteger(8))
    return acc.isInteger(32);
  return false;
}

LogicalResult DotOp::verify() {
  auto a = getA().getType(), b = getB().getType(), c = getC().getType();
  int64_t rank = a.getRank();
  if ((rank != 2 && rank != 3) || b.getRank() != rank || c.getRank() != rank)
    return emitOpError("operands must all be 2-D (or 3-D with a batch "
                       "dimension), got ")
           << describe(a) << ", " << describe(b) << ", " << describe(c);
  int64_t batch = rank - 2;
  int64_t m = a.getDimSize(batch), k = a.getDimSize(batch + 1);
  int64_t kb = b.getDimSize(batch), n = b.getDimSize(batch + 1);
  if (k != kb)
    return emitOpError("inner dimensions differ: a is ")
           << describe(a) << " (K = " << k << "), b is " << describe(b)
           << " (K = " << kb << ")";
  if (c.getDimSize(batch) != m || c.getDimSize(batch + 1) != n)
    return emitOpError("accumulator ")
           << describe(c) << " should be " << m << "x" << n;
  if (rank == 3 && (a.getDimSize(0) != b.getDimSize(0) ||
                    a.getDimSize(0) != c.getDimSize(0)))
    return emitOpError("batch dimensions differ: ")
           << describe(a) << ", " << describe(b) << ", " << describe(c);
  Type ea = a.getElementType(), eb = b.getElementType();
  bool bothFp8 = isFloat8(ea) && isFloat8(eb);
  if (ea != eb && !bothFp8)
    return emitOpError("operand element types differ: ")
           << ea << " and " << eb;
  if (!isValidDotAccumulator(ea, c.getElementType()))
    return emitOpError("cannot accumulate ")
           << ea << " products in " << c.getElementType()
           << " (f16/bf16/fp8/f32 -> f32, f16 -> f16, f64 -> f64, i8 -> i32)";
  if (getPrecision() != InputPrecision::ieee && !ea.isF32())
    return emitOpError("precision = ")
           << stringifyInputPrecision(getPrecision())
           << " applies to f32 operands only, got " << ea;
  return success();
}

//===----------------------------------------------------------------------===//
// Hints
//===----------------------------------------------------------------------===//

LogicalResult HintOp::verify() {
  size_t entries = std::max<size_t>(1, shapeOf(getSrc().getType()).size());
  for (auto [name, values] :
       {std::pair{"multiple_of", getMultipleOf()},
        std::pair{"max_contiguous", getMaxContiguous()}}) {
    if (!values)
      continue;
    if (values->size() != entries)
      return emitOpError(name) << " needs " << entries
                               << " entries (one per dimension), got "
                               << values->size();
    for (int32_t value : *values)
      if (value < 1)
        return emitOpError(name) << " entries must be positive, got "
                                 << value;
  }
  if (!getMultipleOf() && !getMaxContiguous())
    return emitOpError("states nothing: give multiple_of or max_contiguous");
  return success();
}

#define GET_OP_CLASSES
#include "compiler/dialect/tile/TileOps.cpp.inc"
