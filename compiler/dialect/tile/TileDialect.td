//===- TileDialect.td - the tile dialect ------------------*- tablegen -*-===//
//
// Kiln's kernel-level IR: whole-block operations on ranked tensors of scalars
// and pointers, one program instance at a time (the level of Triton's `tt`).
// Elementwise arithmetic and math come from upstream `arith` and `math`
// applied to tensors; structured control flow from upstream `scf`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TILE_DIALECT
#define KILN_TILE_DIALECT

include "mlir/IR/OpBase.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::kiln::tile";
  let summary = "Block-level kernel IR of Kiln";
  let description = [{
    A `tile.func` is one program instance of a kernel grid. Its values are
    scalars (integers, floats, `!tile.ptr`) or ranked tensors ("blocks") of
    them whose shapes are compile-time constants. Operations act on whole
    blocks: `tile.load`/`tile.store` read and write memory through tensors of
    pointers under an optional mask; `tile.reduce`/`tile.scan` combine along
    an axis with a user region; `tile.dot` multiplies blocks. Elementwise
    arithmetic uses `arith`/`math` on tensors; loops and branches use `scf`.

    Integers are signless, as in LLVM: the front end picks signed or unsigned
    arithmetic (`arith.divsi` / `arith.divui`) from its own types.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect"
  ];
  let useDefaultTypePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    void registerTypes();
  }];
}

#endif // KILN_TILE_DIALECT
