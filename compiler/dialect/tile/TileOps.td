//===- TileOps.td - operations of the tile dialect --------*- tablegen -*-===//
//
// Each operation's description states its semantics exactly (shapes,
// masking, rounding, overflow): the CPU interpreter and every GPU lowering
// implement what is written here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TILE_OPS
#define KILN_TILE_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "compiler/dialect/tile/TileDialect.td"
include "compiler/dialect/tile/TileTypes.td"
include "compiler/dialect/tile/TileAttrs.td"

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

// Memory reached through tile pointers (global memory of the device).
def Tile_GlobalMemory : Resource<"::kiln::tile::GlobalMemory">;

//===----------------------------------------------------------------------===//
// Kernel functions
//===----------------------------------------------------------------------===//

def Tile_FuncOp : Tile_Op<"func", [
    AutomaticAllocationScope, FunctionOpInterface, IsolatedFromAbove]> {
  let summary = "A kernel: the body of one program instance of a grid";
  let description = [{
    The body runs once per program instance (`tile.program_id` tells which).
    Arguments are scalars (integers, floats, pointers) and tensor maps (of
    descriptors, `!tile.tensormap`); kernels return nothing and communicate
    through memory. Argument attributes carry the
    specialization the kernel was compiled for:
    `tile.divisibility = 16` (an integer or address divisible by 16) or
    `tile.divisibility = 8` (an integer divisible by 8, not 16).

    ```mlir
    tile.func @add(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32) {
      tile.return
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<StrAttr>:$sym_visibility,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region AnyRegion:$body);
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
                                 "::mlir::FunctionType":$type)>];
  let extraClassDeclaration = [{
    ::mlir::Region *getCallableRegion() {
      return isExternal() ? nullptr : &getBody();
    }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    bool isDeclaration() { return isExternal(); }
  }];
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def Tile_ReturnOp : Tile_Op<"return", [
    Pure, HasParent<"FuncOp">, ReturnLike, Terminator]> {
  let summary = "Ends a kernel";
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Program grid
//===----------------------------------------------------------------------===//

def Tile_ProgramIdOp : Tile_Op<"program_id", [Pure]> {
  let summary = "Index of this program instance along a grid axis";
  let description = [{
    In `[0, tile.num_programs axis)`. `%p = tile.program_id x : i32`
  }];
  let arguments = (ins Tile_GridDimAttr:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

def Tile_NumProgramsOp : Tile_Op<"num_programs", [Pure]> {
  let summary = "Number of program instances along a grid axis";
  let arguments = (ins Tile_GridDimAttr:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

def Tile_ClusterIdOp : Tile_Op<"cluster_id", [Pure]> {
  let summary = "Index of this program's cluster along grid axis x";
  let description = [{
    Programs are launched in clusters of the module's `tile.cluster_size`
    (default 1) consecutive programs along axis x: the cluster is
    `program_id x / cluster_size`, the same in every program of it.
    `%c = tile.cluster_id : i32`
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tile_ClusterRankOp : Tile_Op<"cluster_rank", [Pure]> {
  let summary = "This program's position in its cluster";
  let description = [{
    `program_id x % cluster_size`, in `[0, tile.cluster_size)`.
    `%r = tile.cluster_rank : i32`
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Making and reshaping blocks
//===----------------------------------------------------------------------===//

def Tile_RangeOp : Tile_Op<"range", [Pure]> {
  let summary = "The block [start, start+1, ..., end-1] of i32";
  let description = [{
    A 1-D block of `end - start` consecutive i32 values. Its length must be a
    power of two (block shapes map onto threads and lanes):
    `%r = tile.range 0, 128 : tensor<128xi32>`.
  }];
  let arguments = (ins I32Attr:$start, I32Attr:$end);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = "$start `,` $end attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_SplatOp : Tile_Op<"splat", [Pure, SameOperandsAndResultElementType]> {
  let summary = "A block with every element equal to a scalar";
  let arguments = (ins Tile_Scalar:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
}

def Tile_BroadcastOp : Tile_Op<"broadcast", [
    Pure, SameOperandsAndResultElementType]> {
  let summary = "Repeat a block along its dimensions of size 1";
  let description = [{
    Source and result have the same rank; every source dimension is either
    equal to the result's or 1, in which case it is repeated:
    `tile.broadcast %x : tensor<1x64xf32> -> tensor<32x64xf32>`.
  }];
  let arguments = (ins Tile_Tensor:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_ExpandDimsOp : Tile_Op<"expand_dims", [
    Pure, SameOperandsAndResultElementType]> {
  let summary = "Insert a dimension of size 1 at `axis`";
  let description = [{
    `tile.expand_dims %x {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>`;
    `axis` is in `[0, rank]`.
  }];
  let arguments = (ins Tile_Tensor:$src, I32Attr:$axis);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_ReshapeOp : Tile_Op<"reshape", [
    Pure, SameOperandsAndResultElementType]> {
  let summary = "Reinterpret a block's shape, keeping row-major element order";
  let arguments = (ins Tile_Tensor:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_TransOp : Tile_Op<"trans", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Permute a block's dimensions";
  let description = [{
    Result dimension `i` is source dimension `order[i]`:
    `tile.trans %x {order = array<i32: 1, 0>} : tensor<16x32xf16> -> tensor<32x16xf16>`.
  }];
  let arguments = (ins Tile_Tensor:$src, DenseI32ArrayAttr:$order);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_JoinOp : Tile_Op<"join", [Pure, SameTypeOperands]> {
  let summary = "Interleave two blocks along a new last dimension of size 2";
  let description = [{
    `result[..., 0] = lhs[...]`, `result[..., 1] = rhs[...]`:
    `tile.join %a, %b : tensor<64xf32> -> tensor<64x2xf32>`.
  }];
  let arguments = (ins Tile_Tensor:$lhs, Tile_Tensor:$rhs);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_SplitOp : Tile_Op<"split", [Pure, AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "Split a block along its last dimension, which must be 2";
  let description = [{
    The inverse of `tile.join`:
    `%a, %b = tile.split %x : tensor<64x2xf32> -> tensor<64xf32>`.
  }];
  let arguments = (ins Tile_Tensor:$src);
  let results = (outs Tile_Tensor:$lhs, Tile_Tensor:$rhs);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($lhs)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointers and memory
//===----------------------------------------------------------------------===//

def Tile_AddPtrOp : Tile_Op<"addptr", [Pure, AllTypesMatch<["ptr", "result"]>]> {
  let summary = "Advance pointers by a number of elements";
  let description = [{
    `result = ptr + offset * sizeof(pointee)`, elementwise; the offset is a
    signed integer of any width (sign-extended to 64 bits). Pointer and
    offset are both scalars or blocks of the same shape:
    `tile.addptr %p, %o : tensor<128x!tile.ptr<f32>>, tensor<128xi32>`.
  }];
  let arguments = (ins Tile_PtrLike:$ptr, Tile_IntLike:$offset);
  let results = (outs Tile_PtrLike:$result);
  let assemblyFormat =
      "$ptr `,` $offset attr-dict `:` type($result) `,` type($offset)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_IntToPtrOp : Tile_Op<"int_to_ptr", [Pure]> {
  let summary = "Make pointers from 64-bit addresses";
  let arguments = (ins Tile_IntLike:$src);
  let results = (outs Tile_PtrLike:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_PtrToIntOp : Tile_Op<"ptr_to_int", [Pure]> {
  let summary = "The 64-bit addresses of pointers";
  let arguments = (ins Tile_PtrLike:$src);
  let results = (outs Tile_IntLike:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_LoadOp : Tile_Op<"load", [
    AttrSizedOperandSegments,
    MemoryEffects<[MemRead<Tile_GlobalMemory>]>,
    TypesMatchWith<"result is the pointee of ptr", "ptr", "result",
                   "::kiln::tile::getPointeeTypeLike($_self)">,
    OptionalTypesMatchWith<"mask has the shape of ptr", "ptr", "mask",
                           "::kiln::tile::getI1TypeLike($_self)">,
    OptionalTypesMatchWith<"other is the pointee of ptr", "ptr", "other",
                           "::kiln::tile::getPointeeTypeLike($_self)">]> {
  let summary = "Read memory through (blocks of) pointers under a mask";
  let description = [{
    Each element where `mask` is true (or every element without a mask) is
    read from its pointer. Where `mask` is false nothing is read and the
    result is `other`; without `other` such elements are undefined (the
    interpreter gives zero). `other` requires `mask`.

    `cache`, `evict` and `volatile` pass cache hints to the hardware and do
    not change the value read.

    `%v = tile.load %p, %m, %zero : tensor<128x!tile.ptr<f32>>`
  }];
  let arguments = (ins
      Tile_PtrLike:$ptr,
      Optional<Tile_BoolLike>:$mask,
      Optional<Tile_Value>:$other,
      DefaultValuedAttr<Tile_CacheModifierAttr,
                        "::kiln::tile::CacheModifier::none">:$cache,
      DefaultValuedAttr<Tile_EvictionPolicyAttr,
                        "::kiln::tile::EvictionPolicy::normal">:$evict,
      UnitAttr:$isVolatile);
  let results = (outs Tile_Value:$result);
  let assemblyFormat = [{
    $ptr (`,` $mask^)? (`,` $other^)?
    (`cache` `=` $cache^)? (`evict` `=` $evict^)? (`volatile` $isVolatile^)?
    attr-dict `:` type($ptr)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$ptr, "::mlir::Value":$mask,
                   "::mlir::Value":$other)>
  ];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tile_DescriptorLoadOp : Tile_Op<"descriptor_load", [
    AttrSizedOperandSegments,
    MemoryEffects<[MemRead<Tile_GlobalMemory>]>]> {
  let summary = "Read a box of a tensor described by its base, sizes and strides";
  let description = [{
    The block at `offsets` of the tensor whose elements are
    `base[sum_d i_d * strides[d]]` for `0 <= i_d < sizes[d]`: element `j`
    of the result is the tensor's element `offsets + j` where that lies
    inside `sizes` in every dimension, and zero elsewhere (reading nothing
    there). Sizes and strides count elements; offsets may be negative.

    `map` is the tensor map of the same tensor (a kernel parameter): on
    Hopper, a descriptor load that feeds a tensor-core dot in a pipelined
    loop becomes a copy-engine (TMA) copy through it; elsewhere the load is
    the masked pointer load its definition describes.

    `%a = tile.descriptor_load %base[%i, %k] sizes[%m, %n] strides[%s, %one] map %map : !tile.ptr<bf16> -> tensor<128x64xbf16>`
  }];
  let arguments = (ins Tile_TensorMap:$map, Tile_Ptr:$base, Variadic<I64>:$sizes,
                       Variadic<I64>:$strides, Variadic<I32>:$offsets);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = [{
    $base `[` $offsets `]` `sizes` `[` $sizes `]` `strides` `[` $strides `]` `map` $map
    attr-dict `:` qualified(type($base)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_DescriptorStoreOp : Tile_Op<"descriptor_store", [
    AttrSizedOperandSegments,
    MemoryEffects<[MemWrite<Tile_GlobalMemory>]>]> {
  let summary = "Write a box of a tensor described by its base, sizes and strides";
  let description = [{
    Writes `value` to the block at `offsets` of the tensor described as in
    `tile.descriptor_load`; elements that fall outside `sizes` in any
    dimension are not written.

    On Hopper, a 2-d block store whose `map` describes the tensor is a
    copy-engine (TMA) store from a staging buffer in shared memory;
    elsewhere it is the masked pointer store its definition describes.

    `tile.descriptor_store %base[%i, %j] sizes[%m, %n] strides[%s, %one] map %map, %v : !tile.ptr<f16>, tensor<64x64xf16>`
  }];
  let arguments = (ins Tile_TensorMap:$map, Tile_Ptr:$base, Variadic<I64>:$sizes,
                       Variadic<I64>:$strides, Variadic<I32>:$offsets, Tile_Tensor:$value);
  let assemblyFormat = [{
    $base `[` $offsets `]` `sizes` `[` $sizes `]` `strides` `[` $strides `]` `map` $map `,` $value
    attr-dict `:` qualified(type($base)) `,` type($value)
  }];
  let hasVerifier = 1;
}

def Tile_StoreOp : Tile_Op<"store", [
    MemoryEffects<[MemWrite<Tile_GlobalMemory>]>,
    TypesMatchWith<"value is the pointee of ptr", "ptr", "value",
                   "::kiln::tile::getPointeeTypeLike($_self)">,
    OptionalTypesMatchWith<"mask has the shape of ptr", "ptr", "mask",
                           "::kiln::tile::getI1TypeLike($_self)">]> {
  let summary = "Write memory through (blocks of) pointers under a mask";
  let description = [{
    Each element of `value` where `mask` is true (or every element without a
    mask) is written to its pointer; elements where it is false write
    nothing. When two elements of one block store to the same address, one
    of them wins (which one is unspecified).

    `tile.store %p, %v, %m : tensor<128x!tile.ptr<f32>>`
  }];
  let arguments = (ins
      Tile_PtrLike:$ptr,
      Tile_Value:$value,
      Optional<Tile_BoolLike>:$mask,
      DefaultValuedAttr<Tile_CacheModifierAttr,
                        "::kiln::tile::CacheModifier::none">:$cache,
      DefaultValuedAttr<Tile_EvictionPolicyAttr,
                        "::kiln::tile::EvictionPolicy::normal">:$evict);
  let assemblyFormat = [{
    $ptr `,` $value (`,` $mask^)?
    (`cache` `=` $cache^)? (`evict` `=` $evict^)?
    attr-dict `:` type($ptr)
  }];
  let hasCanonicalizer = 1;
}

def Tile_AtomicRMWOp : Tile_Op<"atomic_rmw", [
    MemoryEffects<[MemRead<Tile_GlobalMemory>, MemWrite<Tile_GlobalMemory>]>,
    TypesMatchWith<"val is the pointee of ptr", "ptr", "val",
                   "::kiln::tile::getPointeeTypeLike($_self)">,
    TypesMatchWith<"result is the pointee of ptr", "ptr", "result",
                   "::kiln::tile::getPointeeTypeLike($_self)">,
    OptionalTypesMatchWith<"mask has the shape of ptr", "ptr", "mask",
                           "::kiln::tile::getI1TypeLike($_self)">]> {
  let summary = "Atomic read-modify-write; returns the old values";
  let description = [{
    For every element where `mask` is true, atomically replaces `*ptr` by
    `kind(*ptr, val)` and returns the value it held before; masked-off
    elements touch nothing and return undefined values. Elements of one block
    that share an address are applied one after another in unspecified
    order.

    `add`, `and`, `or`, `xor`, `umax`, `umin` take integers (wrapping);
    `max`/`min` take signed integers or floats (IEEE maxNum/minNum, NaN loses);
    `fadd` takes f16, bf16, f32 or f64; `xchg` any 16-, 32- or 64-bit value.

    `%old = tile.atomic_rmw add, %p, %v, %m : tensor<64x!tile.ptr<i32>>`
  }];
  let arguments = (ins
      Tile_AtomicRMWKindAttr:$kind,
      Tile_PtrLike:$ptr,
      Tile_Value:$val,
      Optional<Tile_BoolLike>:$mask,
      DefaultValuedAttr<Tile_MemSemanticAttr,
                        "::kiln::tile::MemSemantic::acq_rel">:$sem,
      DefaultValuedAttr<Tile_MemScopeAttr,
                        "::kiln::tile::MemScope::gpu">:$scope);
  let results = (outs Tile_Value:$result);
  let assemblyFormat = [{
    $kind `,` $ptr `,` $val (`,` $mask^)?
    (`sem` `=` $sem^)? (`scope` `=` $scope^)?
    attr-dict `:` type($ptr)
  }];
  let hasVerifier = 1;
}

def Tile_AtomicCASOp : Tile_Op<"atomic_cas", [
    MemoryEffects<[MemRead<Tile_GlobalMemory>, MemWrite<Tile_GlobalMemory>]>,
    TypesMatchWith<"cmp is the pointee of ptr", "ptr", "cmp",
                   "::kiln::tile::getPointeeTypeLike($_self)">,
    TypesMatchWith<"val is the pointee of ptr", "ptr", "val",
                   "::kiln::tile::getPointeeTypeLike($_self)">,
    TypesMatchWith<"result is the pointee of ptr", "ptr", "result",
                   "::kiln::tile::getPointeeTypeLike($_self)">]> {
  let summary = "Atomic compare-and-swap; returns the old values";
  let description = [{
    For every element, atomically: `old = *ptr; if (old == cmp) *ptr = val;`
    and returns `old` (bitwise comparison; 16-, 32- or 64-bit values).
  }];
  let arguments = (ins
      Tile_PtrLike:$ptr,
      Tile_Value:$cmp,
      Tile_Value:$val,
      DefaultValuedAttr<Tile_MemSemanticAttr,
                        "::kiln::tile::MemSemantic::acq_rel">:$sem,
      DefaultValuedAttr<Tile_MemScopeAttr,
                        "::kiln::tile::MemScope::gpu">:$scope);
  let results = (outs Tile_Value:$result);
  let assemblyFormat = [{
    $ptr `,` $cmp `,` $val (`sem` `=` $sem^)? (`scope` `=` $scope^)?
    attr-dict `:` type($ptr)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Casts
//===----------------------------------------------------------------------===//

def Tile_BitcastOp : Tile_Op<"bitcast", [Pure]> {
  let summary = "Reinterpret bits as another type of the same width";
  let description = [{
    Elementwise; both sides are numbers of equal bit width, or both are
    pointers (to any pointee): `tile.bitcast %x : tensor<8xf32> -> tensor<8xi32>`.
  }];
  let arguments = (ins Tile_Value:$src);
  let results = (outs Tile_Value:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_FpToFpOp : Tile_Op<"fp_to_fp", [Pure]> {
  let summary = "Convert to or from 8-bit floats";
  let description = [{
    Elementwise conversion where one side is `f8E4M3FN` or `f8E5M2` (other
    float conversions use `arith.extf` / `arith.truncf`). Widening is exact.
    Narrowing rounds by `rounding` (required) and saturates: values beyond
    the largest finite value of the result (448 for e4m3, 57344 for e5m2),
    infinities included, become that value with their sign; NaN stays NaN.

    `tile.fp_to_fp %x, rounding = rtne : tensor<8xf32> -> tensor<8xf8E4M3FN>`
  }];
  let arguments = (ins Tile_FloatLike:$src,
                       OptionalAttr<Tile_RoundingModeAttr>:$rounding);
  let results = (outs Tile_FloatLike:$result);
  let assemblyFormat = [{
    $src (`,` `rounding` `=` $rounding^)? attr-dict `:` type($src) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions, scans and matrix products
//===----------------------------------------------------------------------===//

def Tile_ReduceOp : Tile_Op<"reduce", [
    Pure, SameOperandsShape, SingleBlock]> {
  let summary = "Combine the elements of blocks along an axis";
  let description = [{
    Reduces N blocks of one shape together along `axis` with the combine
    region, which takes (accumulated..., next...) as 2N scalars and yields N
    scalars. The region must be associative and commutative: the order in
    which elements are combined is unspecified. Results have the operands'
    shape without `axis` (scalars when the operands are 1-D).

    ```mlir
    %s = tile.reduce(%x) axis = 0 : (tensor<128xf32>) -> f32 {
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      tile.reduce.return %c : f32
    }
    ```
  }];
  let arguments = (ins Variadic<Tile_Tensor>:$srcs, I32Attr:$axis);
  let results = (outs Variadic<Tile_Value>:$results);
  let regions = (region SizedRegion<1>:$combineOp);
  let assemblyFormat = [{
    `(` $srcs `)` `axis` `=` $axis attr-dict `:`
    functional-type($srcs, $results) $combineOp
  }];
  let hasRegionVerifier = 1;
}

def Tile_ReduceReturnOp : Tile_Op<"reduce.return", [
    Pure, HasParent<"ReduceOp">, ReturnLike, Terminator]> {
  let summary = "Yields the combined values of a reduce region";
  let arguments = (ins Variadic<Tile_Scalar>:$results);
  let assemblyFormat = "$results attr-dict `:` type($results)";
}

def Tile_ScanOp : Tile_Op<"scan", [
    Pure, SameOperandsAndResultShape,
    SingleBlock]> {
  let summary = "Inclusive prefix combination of blocks along an axis";
  let description = [{
    `result[i] = combine(result[i-1], src[i])` along `axis` (from the end
    when `reverse`), with `result[0] = src[0]`. The combine region takes
    (accumulated..., next...) as 2N scalars and yields N; it must be
    associative (it is evaluated as a parallel scan).

    ```mlir
    %c = tile.scan(%x) axis = 0 : (tensor<128xi32>) -> tensor<128xi32> {
    ^bb0(%a: i32, %b: i32):
      %s = arith.addi %a, %b : i32
      tile.scan.return %s : i32
    }
    ```
  }];
  let arguments = (ins Variadic<Tile_Tensor>:$srcs, I32Attr:$axis,
                       UnitAttr:$reverse);
  let results = (outs Variadic<Tile_Tensor>:$results);
  let regions = (region SizedRegion<1>:$combineOp);
  let assemblyFormat = [{
    `(` $srcs `)` `axis` `=` $axis (`reverse` $reverse^)? attr-dict `:`
    functional-type($srcs, $results) $combineOp
  }];
  let hasRegionVerifier = 1;
}

def Tile_ScanReturnOp : Tile_Op<"scan.return", [
    Pure, HasParent<"ScanOp">, ReturnLike, Terminator]> {
  let summary = "Yields the combined values of a scan region";
  let arguments = (ins Variadic<Tile_Scalar>:$results);
  let assemblyFormat = "$results attr-dict `:` type($results)";
}

def Tile_DotOp : Tile_Op<"dot", [Pure, AllTypesMatch<["c", "result"]>]> {
  let summary = "Matrix product with accumulation: result = a * b + c";
  let description = [{
    `a` is MxK, `b` KxN, `c` and the result MxN; with a leading batch
    dimension (rank 3) each batch is multiplied on its own. Operands:

    | a, b                       | c, result |
    | -------------------------- | --------- |
    | f16, bf16                  | f32 (or f16 for f16 operands) |
    | f8E4M3FN, f8E5M2           | f32       |
    | f32 (see `precision`)      | f32       |
    | f64                        | f64       |
    | i8                         | i32 (wrapping) |

    Products are summed in the accumulator's type, in unspecified order.
    With `precision = tf32` f32 operands are first rounded to tf32 (10-bit
    mantissa, round to nearest, ties away from zero), as the tensor cores do;
    `tf32x3` splits each into two tf32 parts for near-f32 accuracy; `ieee`
    (the default) multiplies in full f32.

    `%d = tile.dot %a, %b, %c : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>`
  }];
  let arguments = (ins
      Tile_Tensor:$a,
      Tile_Tensor:$b,
      Tile_Tensor:$c,
      DefaultValuedAttr<Tile_InputPrecisionAttr,
                        "::kiln::tile::InputPrecision::ieee">:$precision);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $c (`precision` `=` $precision^)? attr-dict `:`
    type($a) `*` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Hints and debugging
//===----------------------------------------------------------------------===//

def Tile_HintOp : Tile_Op<"hint", [Pure, AllTypesMatch<["src", "result"]>]> {
  let summary = "Promise facts about a value's elements to the compiler";
  let description = [{
    Returns `src` unchanged. `multiple_of[d] = k`: along dimension `d`, the
    first element of every run of `max_contiguous[d]` is a multiple of `k`.
    `max_contiguous[d] = c`: along `d`, elements come in runs of `c`
    consecutive integers (addresses, for pointers). Axis analysis uses these
    to vectorize memory accesses; a false promise gives wrong results.
    Scalars take one entry per array.

    `%o = tile.hint %x {multiple_of = array<i32: 16>} : tensor<128xi32>`
  }];
  let arguments = (ins Tile_Value:$src,
                       OptionalAttr<DenseI32ArrayAttr>:$multiple_of,
                       OptionalAttr<DenseI32ArrayAttr>:$max_contiguous);
  let results = (outs Tile_Value:$result);
  let assemblyFormat = "$src attr-dict `:` type($src)";
  let hasVerifier = 1;
}

def Tile_PrintOp : Tile_Op<"print", [
    MemoryEffects<[MemWrite<Tile_GlobalMemory>]>]> {
  let summary = "Print values from every program instance (debugging)";
  let description = [{
    Each program instance prints `prefix`, its program ids and each element
    of each operand (in hexadecimal with `hex`). Output order across program
    instances is unspecified.
  }];
  let arguments = (ins StrAttr:$prefix, UnitAttr:$hex,
                       Variadic<Tile_Value>:$args);
  let assemblyFormat = [{
    $prefix (`hex` $hex^)? (`,` $args^ `:` type($args))? attr-dict
  }];
}

def Tile_AssertOp : Tile_Op<"assert", [
    MemoryEffects<[MemWrite<Tile_GlobalMemory>]>]> {
  let summary = "Abort the kernel when a condition is false (debugging)";
  let description = [{
    If any element of `condition` is false, reports `message` with the
    program ids and the source location, and stops the kernel.
  }];
  let arguments = (ins Tile_BoolLike:$condition, StrAttr:$message);
  let assemblyFormat = "$condition `,` $message attr-dict `:` type($condition)";
}

#endif // KILN_TILE_OPS
