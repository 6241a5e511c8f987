//===- KGpuDialect.td - Kiln's GPU dialect -----------------*- tablegen -*-===//
//
// The GPU level of Kiln's IR: the tile dialect's operations on tensors
// whose types carry a *layout* (an encoding saying which thread holds which
// element), plus the operations that only exist at this level (layout
// conversions). Every layout is a LinearLayout underneath
// (LinearLayout.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KGPU_DIALECT
#define KILN_KGPU_DIALECT

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/TensorEncoding.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def KGpu_Dialect : Dialect {
  let name = "kgpu";
  let cppNamespace = "::kiln::gpu";
  let summary = "Layouts of blocks over the threads of a GPU program";
  let description = [{
    A module at this level carries `kgpu.num_warps` (warps per program) and
    `kgpu.threads_per_warp` (32 on NVIDIA). Tensor types carry a layout
    encoding: `#kgpu.blocked`, `#kgpu.slice` or `#kgpu.linear`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::kiln::tile::TileDialect"];
}

def KGpu_LayoutEncodingAttrInterface : AttrInterface<"LayoutEncodingAttr"> {
  let cppNamespace = "::kiln::gpu";
  let description = [{
    A layout of a tensor over registers, lanes and warps.
  }];
  let methods = [
    InterfaceMethod<"The linear layout of a tensor of `shape` in this layout.",
      "::kiln::gpu::LinearLayout", "toLinearLayout",
      (ins "::llvm::ArrayRef<int64_t>":$shape)>,
    InterfaceMethod<"The tensor rank this layout applies to.", "unsigned", "getRank">
  ];
}

class KGpu_Layout<string name, string attrMnemonic>
    : AttrDef<KGpu_Dialect, name, [
        DeclareAttrInterfaceMethods<KGpu_LayoutEncodingAttrInterface>,
        DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = attrMnemonic;
  let hasCustomAssemblyFormat = 1;
}

def KGpu_BlockedEncodingAttr : KGpu_Layout<"BlockedEncoding", "blocked"> {
  let summary = "Each thread holds a small contiguous block; the blocks tile the tensor";
  let description = [{
    Thread t of warp w holds `sizePerThread` consecutive elements; the lanes
    of a warp tile `threadsPerWarp` such blocks and the warps tile
    `warpsPerCTA` warp tiles, walking dimensions fastest first in `order`.
    The tile repeats over larger tensors (more registers per thread) and is
    broadcast over smaller ones (threads hold the same elements).

    `#kgpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>`
  }];
  let parameters = (ins
    ArrayRefParameter<"unsigned">:$sizePerThread,
    ArrayRefParameter<"unsigned">:$threadsPerWarp,
    ArrayRefParameter<"unsigned">:$warpsPerCTA,
    ArrayRefParameter<"unsigned">:$order);
  let genVerifyDecl = 1;
}

def KGpu_SliceEncodingAttr : KGpu_Layout<"SliceEncoding", "slice"> {
  let summary = "A parent layout with one dimension removed";
  let description = [{
    The layout of a reduction's result (or of an operand about to gain a
    dimension through `tile.expand_dims`): the parent layout of the tensor
    with dimension `dim` inserted, that dimension then dropped.

    `#kgpu.slice<{dim = 1, parent = #kgpu.blocked<...>}>`
  }];
  let parameters = (ins "unsigned":$dim, "::mlir::Attribute":$parent);
  let genVerifyDecl = 1;
}

def KGpu_LinearEncodingAttr : KGpu_Layout<"LinearEncoding", "linear"> {
  let summary = "A layout given by its bases";
  let description = [{
    Register bit b maps to coordinate `register[b]`, and likewise for lanes
    and warps; an index maps to the XOR of the bases of its bits. Layouts of
    reshaped and transposed values, which no named layout expresses.

    `#kgpu.linear<{register = [[1, 0]], lane = [[2, 0], [0, 1]], warp = [[0, 2]]}>`
  }];
  let parameters = (ins
    "unsigned":$rank,
    ArrayRefParameter<"int32_t">:$registerBases,
    ArrayRefParameter<"int32_t">:$laneBases,
    ArrayRefParameter<"int32_t">:$warpBases);
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The linear encoding of `layout`'s bases.
    static LinearEncodingAttr get(::mlir::MLIRContext *context, const ::kiln::gpu::LinearLayout &layout);
  }];
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

class KGpu_Op<string mnemonic, list<Trait> traits = []>
    : Op<KGpu_Dialect, mnemonic, traits>;

def KGpu_ConvertLayoutOp : KGpu_Op<"convert_layout", [
    Pure, SameOperandsAndResultElementType, SameOperandsAndResultShape]> {
  let summary = "Move a block's elements to another layout";
  let description = [{
    The same values, held by other threads and registers. Lowered to a
    permutation of registers when lanes and warps agree, otherwise through
    shared memory.
  }];
  let arguments = (ins AnyRankedTensor:$src);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

#endif // KILN_KGPU_DIALECT
