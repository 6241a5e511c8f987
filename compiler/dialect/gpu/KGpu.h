//===- KGpu.h - Kiln's GPU dialect: layouts and operations -----*- C++ -*-===//

#pragma once

#include "compiler/dialect/gpu/LinearLayout.h"
#include "compiler/dialect/gpu/Occupancy.h"
#include "compiler/dialect/tile/Tile.h"
#include <kiln/target.h> // compute_capability_of, for passes that read the target

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TensorEncoding.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "compiler/dialect/gpu/KGpuAttrInterfaces.h.inc"
#include "compiler/dialect/gpu/KGpuDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "compiler/dialect/gpu/KGpuAttrs.h.inc"

#define GET_OP_CLASSES
#include "compiler/dialect/gpu/KGpuOps.h.inc"

namespace kiln::gpu {

/// Module attributes of the GPU level.
constexpr const char *kNumWarpsAttr = "kgpu.num_warps";
constexpr const char *kThreadsPerWarpAttr = "kgpu.threads_per_warp";
constexpr const char *kTargetAttr = "kgpu.target"; ///< e.g. "sm_90a"
/// On tile.dot: layout assignment chose wgmma for it (the pipeliner and the
/// lowering follow that decision rather than guess it from the layout).
constexpr const char *kWgmmaAttr = "kgpu.wgmma";
/// On a tile.dot left in flight that reads A from registers: the pipeliner
/// proved nothing rewrites them before the wait that completes its group.
constexpr const char *kInFlightRegisterA = "kgpu.in_flight_register_a";
/// On the module: the descriptors the copy engine reads, an array of
/// {parameter (the tensor map's argument number), box (elements per
/// dimension, outermost first), swizzle (bytes)}; the runtime builds their
/// tensor maps at launch.
constexpr const char *kTensorMapsAttr = "kgpu.tensor_maps";
/// On a tensor-map parameter: one the compiler added for pointer loads it
/// moved to the copy engine (RaisePointerLoads), not the user's.
constexpr const char *kAddedMapAttr = "kgpu.added_map";
/// On the module: warps the program runs past its num_warps, as the
/// producer of a warp-specialized loop (kgpu.producer); absent: none.
constexpr const char *kProducerWarpsAttr = "kgpu.producer_warps";
/// On a loop: give it a producer warpgroup (LowerDescriptors decided so for
/// a loop that chains dots, whose operands it moved to the copy engine).
constexpr const char *kWarpSpecializeAttr = "kgpu.warp_specialize";
/// The producer's warps: one warpgroup.
constexpr int kProducerWarps = 4;
/// The first named barrier of the consumer warpgroups' turns (wait_turn,
/// pass_turn): one a warpgroup from here; barrier 0 is the program's.
constexpr int kFirstTurnBarrier = 1;
/// Named barriers a program has (PTX's bar.sync ids 0..15).
constexpr int kNamedBarriers = 16;

/// Shared memory the pipelining rings of one program may take (of Hopper's
/// 227 KB a program; the rest is left to scratch and the copy engine's
/// stores).
constexpr int64_t kRingBudgetBytes = 192 * 1024;
/// The LDS an AMD workgroup may take (gfx90a, gfx942; gfx1100 has as much
/// a workgroup).
constexpr int64_t kAmdLdsBytes = 64 * 1024;

int getNumWarps(mlir::ModuleOp module);
/// kgpu.producer_warps, or 0.
int getProducerWarps(mlir::ModuleOp module);
int getThreadsPerWarp(mlir::ModuleOp module);

/// The linear layout of a tensor type with a layout encoding.
LinearLayout linearLayoutOf(mlir::RankedTensorType type);

/// The blocked layout Kiln gives a tensor of `shape` by default: one
/// element per thread, lanes then warps along the fastest (last) dimension
/// first.
BlockedEncodingAttr defaultBlockedEncoding(mlir::MLIRContext *context,
                                           llvm::ArrayRef<int64_t> shape, int numWarps,
                                           int threadsPerWarp);

/// `type` with `encoding` (scalars are returned unchanged).
mlir::Type withEncoding(mlir::Type type, mlir::Attribute encoding);

/// arith and math operations other than constants: their tensor operands
/// and results share one layout.
bool isElementwiseArith(mlir::Operation *op);

} // namespace kiln::gpu
