//===- Tile.h - the tile dialect: types, attributes, operations -*- C++ -*-===//
//
// Internal to the compiler and the front end: includes MLIR. Public Kiln
// headers never include this file.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "compiler/dialect/tile/TileDialect.h.inc"
#include "compiler/dialect/tile/TileEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "compiler/dialect/tile/TileTypes.h.inc"

namespace kiln::tile {

/// The memory reached through tile pointers; loads, stores and atomics
/// declare their effects on it.
struct GlobalMemory : mlir::SideEffects::Resource::Base<GlobalMemory> {
  llvm::StringRef getName() override { return "<GlobalMemory>"; }
};

/// `ptr<T>` -> `T`; `tensor<S x ptr<T>>` -> `tensor<S x T>` (same encoding).
/// Returns a null type for anything else.
mlir::Type getPointeeTypeLike(mlir::Type ptrLike);

/// A scalar or tensor type -> `i1` or `tensor<S x i1>` of the same shape.
mlir::Type getI1TypeLike(mlir::Type type);

/// Replaces the element type of a tensor (keeping shape and encoding), or
/// returns `element` for scalars.
mlir::Type withElementType(mlir::Type type, mlir::Type element);

/// True for f8E4M3FN and f8E5M2.
bool isFloat8(mlir::Type type);

/// The module attribute (i32) naming how many consecutive programs along
/// grid axis x form a cluster (the config's `cluster_size`); absent: 1.
constexpr const char *kClusterSizeAttr = "tile.cluster_size";
/// The module's cluster size (1 when it has none). `op`: any operation in it.
int clusterSizeOf(mlir::Operation *op);

} // namespace kiln::tile

#define GET_OP_CLASSES
#include "compiler/dialect/tile/TileOps.h.inc"
