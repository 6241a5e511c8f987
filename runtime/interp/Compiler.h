// Turning operations into interpreter instructions. Internal to
// runtime/interp; one file per family of operations.
#pragma once

#include "runtime/interp/Values.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <vector>

namespace kiln::interp {

/// Compiled straight-line code of one block (without its terminator).
struct Code {
  std::vector<Instr> instrs;
  void run(Exec &exec) const {
    for (const Instr &instr : instrs)
      instr(exec);
  }
};

class Compiler {
public:
  /// The slot holding `value` (assigned on first use).
  unsigned slot(mlir::Value value);
  unsigned slot_count() const { return next_slot_; }

  /// The block's operations, in order; its terminator is left to the parent.
  Code compile_block(mlir::Block &block);
  /// One operation; throws kiln::Error for operations it does not know.
  Instr compile(mlir::Operation *op);

private:
  llvm::DenseMap<mlir::Value, unsigned> slots_;
  unsigned next_slot_ = 0;
};

/// Operation families; each returns an empty Instr when `op` is not its own.
Instr compile_elementwise(Compiler &compiler, mlir::Operation *op);
Instr compile_memory(Compiler &compiler, mlir::Operation *op);
Instr compile_block_op(Compiler &compiler, mlir::Operation *op);
Instr compile_control_flow(Compiler &compiler, mlir::Operation *op);

/// A single-block region compiled to run with given argument values: the
/// bodies of loops and branches, and the combine functions of reductions.
struct CompiledRegion {
  Code code;
  std::vector<unsigned> arguments; ///< slots of the block arguments
  std::vector<unsigned> results;   ///< slots of the terminator's operands
  /// Every operation works elementwise on any number of elements, so a
  /// combine function may run on whole vectors at once.
  bool elementwise = false;

  /// Sets the arguments, runs the code, returns copies of the results.
  std::vector<Data> run(Exec &exec, std::vector<Data> args) const;
};
CompiledRegion compile_region(Compiler &compiler, mlir::Region &region);

/// Whether every operation of `region` is an arith/math operation on
/// scalars (see CompiledRegion::elementwise).
bool is_elementwise_region(mlir::Region &region);

} // namespace kiln::interp
