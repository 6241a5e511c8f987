//===- TileDialect.cpp - dialect, types and attributes --------------------===//

#include "compiler/dialect/tile/Tile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln::tile;

#include "compiler/dialect/tile/TileDialect.cpp.inc"
#include "compiler/dialect/tile/TileEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "compiler/dialect/tile/TileTypes.cpp.inc"

void TileDialect::initialize() {
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "compiler/dialect/tile/TileOps.cpp.inc"
      >();
}

void TileDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "compiler/dialect/tile/TileTypes.cpp.inc"
      >();
}

Operation *TileDialect::materializeConstant(OpBuilder &builder,
                                            Attribute value, Type type,
                                            Location loc) {
  return arith::ConstantOp::materialize(builder, value, type, loc);
}

LogicalResult
PointerType::verify(function_ref<InFlightDiagnostic()> emitError,
                    Type pointeeType, int addressSpace) {
  if (!isa<IntegerType, FloatType, PointerType>(pointeeType))
    return emitError() << "pointee must be an integer, float or pointer, got "
                       << pointeeType;
  if (addressSpace < 0)
    return emitError() << "address space must be non-negative, got "
                       << addressSpace;
  return success();
}

namespace kiln::tile {

Type withElementType(Type type, Type element) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.clone(element);
  return element;
}

Type getPointeeTypeLike(Type ptrLike) {
  auto ptr = dyn_cast<PointerType>(getElementTypeOrSelf(ptrLike));
  if (!ptr)
    return {};
  return withElementType(ptrLike, ptr.getPointeeType());
}

Type getI1TypeLike(Type type) {
  return withElementType(type, IntegerType::get(type.getContext(), 1));
}

int clusterSizeOf(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  auto size = module ? module->getAttrOfType<IntegerAttr>(kClusterSizeAttr) : IntegerAttr();
  return size ? static_cast<int>(size.getInt()) : 1;
}

bool isFloat8(Type type) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(type);
}

} // namespace kiln::tile
