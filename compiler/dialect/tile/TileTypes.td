//===- TileTypes.td - types and type constraints ----------*- tablegen -*-===//

#ifndef KILN_TILE_TYPES
#define KILN_TILE_TYPES

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"
include "compiler/dialect/tile/TileDialect.td"

class Tile_TypeDef<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Tile_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Tile_PointerType : Tile_TypeDef<"Pointer", "ptr"> {
  let summary = "Pointer to a scalar in an address space";
  let description = [{
    `!tile.ptr<f32>` points into global memory (address space 1, the
    default); `!tile.ptr<f16, 3>` into shared memory. Adding an integer `n`
    with `tile.addptr` advances it by `n` elements of the pointee type.
    Pointees are integers, floats, or pointers.
  }];
  let parameters = (ins "::mlir::Type":$pointeeType,
                        DefaultValuedParameter<"int", "1">:$addressSpace);
  let assemblyFormat = "`<` $pointeeType (`,` $addressSpace^)? `>`";
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilderWithInferredContext<(ins "::mlir::Type":$pointeeType,
                                        CArg<"int", "1">:$addressSpace), [{
      return $_get(pointeeType.getContext(), pointeeType, addressSpace);
    }]>
  ];
  let skipDefaultBuilders = 1;
}

def Tile_TensorMapType : Tile_TypeDef<"TensorMap", "tensormap"> {
  let summary = "The copy engine's description of a tensor (a TMA tensor map)";
  let description = [{
    A kernel parameter of this type is the 128-byte tensor map (CUDA's
    `CUtensorMap`) with which Hopper's copy engine (TMA) moves boxes of a
    tensor between global and shared memory. It describes the tensor whose
    base, sizes and strides are the kernel parameters right after it; the
    runtime builds it at launch for the box and swizzle the compiler chose
    (the module's `kgpu.tensor_maps`). Only `tile.descriptor_load` and
    `tile.descriptor_store` take it, and code that does not use the copy
    engine never reads it (the interpreter ignores it).
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints used by the operations.
//===----------------------------------------------------------------------===//

def Tile_Float : AnyTypeOf<[F8E4M3FN, F8E5M2, F16, BF16, F32, F64], "float">;
def Tile_Int : AnyTypeOf<[I1, I8, I16, I32, I64], "integer">;
def Tile_Ptr : DialectType<Tile_Dialect,
    CPred<"::llvm::isa<::kiln::tile::PointerType>($_self)">, "tile pointer",
    "::kiln::tile::PointerType">;
def Tile_TensorMap : DialectType<Tile_Dialect,
    CPred<"::llvm::isa<::kiln::tile::TensorMapType>($_self)">, "tensor map",
    "::kiln::tile::TensorMapType">,
    BuildableType<"::kiln::tile::TensorMapType::get($_builder.getContext())">;
def Tile_Scalar : AnyTypeOf<[Tile_Float, Tile_Int, Tile_Ptr], "tile scalar">;
def Tile_Tensor : RankedTensorOf<[Tile_Scalar]>;
def Tile_Value : AnyTypeOf<[Tile_Scalar, Tile_Tensor], "tile scalar or block">;

def Tile_FloatLike : AnyTypeOf<[Tile_Float, RankedTensorOf<[Tile_Float]>],
                               "float or block of floats">;
def Tile_IntLike : AnyTypeOf<[Tile_Int, RankedTensorOf<[Tile_Int]>],
                             "integer or block of integers">;
def Tile_BoolLike : AnyTypeOf<[I1, RankedTensorOf<[I1]>],
                              "i1 or block of i1">;
def Tile_PtrLike : AnyTypeOf<[Tile_Ptr, RankedTensorOf<[Tile_Ptr]>],
                             "pointer or block of pointers">;
def Tile_NumericLike : AnyTypeOf<[Tile_FloatLike, Tile_IntLike],
                                 "number or block of numbers">;

#endif // KILN_TILE_TYPES
