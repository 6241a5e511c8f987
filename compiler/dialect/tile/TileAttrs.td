//===- TileAttrs.td - enumerated attributes ---------------*- tablegen -*-===//

#ifndef KILN_TILE_ATTRS
#define KILN_TILE_ATTRS

include "mlir/IR/EnumAttr.td"

def Tile_GridDimAttr : I32EnumAttr<"GridDim", "axis of the program grid", [
    I32EnumAttrCase<"x", 0>, I32EnumAttrCase<"y", 1>, I32EnumAttrCase<"z", 2>
  ]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_CacheModifierAttr : I32EnumAttr<"CacheModifier",
    "cache operator of a load or store (PTX .ca/.cg/.cs/.cv/.wb/.wt)", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"ca", 1>,
    I32EnumAttrCase<"cg", 2>, I32EnumAttrCase<"cs", 3>,
    I32EnumAttrCase<"cv", 4>, I32EnumAttrCase<"wb", 5>,
    I32EnumAttrCase<"wt", 6>
  ]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_EvictionPolicyAttr : I32EnumAttr<"EvictionPolicy",
    "L2 eviction priority of a load or store", [
    I32EnumAttrCase<"normal", 0>, I32EnumAttrCase<"evict_first", 1>,
    I32EnumAttrCase<"evict_last", 2>
  ]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_InputPrecisionAttr : I32EnumAttr<"InputPrecision",
    "how a dot treats f32 operands", [
    I32EnumAttrCase<"ieee", 0>, I32EnumAttrCase<"tf32", 1>,
    I32EnumAttrCase<"tf32x3", 2>
  ]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_AtomicRMWKindAttr : I32EnumAttr<"AtomicRMWKind",
    "read-modify-write operation of an atomic", [
    I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"fadd", 1>,
    I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>,
    I32EnumAttrCase<"umax", 4>, I32EnumAttrCase<"umin", 5>,
    I32EnumAttrCase<"and_", 6, "and">, I32EnumAttrCase<"or_", 7, "or">,
    I32EnumAttrCase<"xor_", 8, "xor">, I32EnumAttrCase<"xchg", 9>
  ]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_MemSemanticAttr : I32EnumAttr<"MemSemantic",
    "memory ordering of an atomic", [
    I32EnumAttrCase<"relaxed", 0>, I32EnumAttrCase<"acquire", 1>,
    I32EnumAttrCase<"release", 2>, I32EnumAttrCase<"acq_rel", 3>
  ]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_MemScopeAttr : I32EnumAttr<"MemScope",
    "which threads an atomic is ordered with", [
    I32EnumAttrCase<"cta", 0>, I32EnumAttrCase<"gpu", 1>,
    I32EnumAttrCase<"sys", 2>
  ]> {
  let cppNamespace = "::kiln::tile";
}

def Tile_RoundingModeAttr : I32EnumAttr<"RoundingMode",
    "rounding of a narrowing float conversion", [
    I32EnumAttrCase<"rtne", 0>, I32EnumAttrCase<"rtz", 1>
  ]> {
  let cppNamespace = "::kiln::tile";
}

#endif // KILN_TILE_ATTRS
