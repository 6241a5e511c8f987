//===- InterpretedProgram.cpp - the interpreter behind Program ------------===//

#include "runtime/Arguments.h"
#include "runtime/interp/Interpreter.h"

#include "compiler/ModuleImpl.h"
#include "compiler/dialect/tile/Tile.h"

#include <kiln/compiler.h>
#include <kiln/error.h>
#include <kiln/interpreter.h>

#include "mlir/IR/BuiltinOps.h"

#include <iostream>

namespace kiln {

namespace {

class InterpretedProgram final : public Program {
public:
  InterpretedProgram(std::shared_ptr<const interp::Program> program, std::string name,
                     std::span<const ElementType> parameters, int clusterSize)
      : program_(std::move(program)), name_(std::move(name)), parameters_(parameters.begin(), parameters.end()),
        clusterSize_(clusterSize) {}

  void launch(const Grid &grid, const Stream &stream, std::span<const Arg> args) const override {
    check_arguments(name_, parameters_, args);
    if (grid.size() == 0)
      return; // an empty grid runs nothing
    if (stream.device().kind() != DeviceKind::interp)
      throw Error("kernel '" + name_ + "' is loaded on the interpreter, the launch's stream is on " +
                  stream.device().name());
    check_whole_clusters(name_, grid, clusterSize_);
    program_->run(grid, args, std::cout);
  }

  int cluster_size() const override { return clusterSize_; }
  /// The interpreter runs one program at a time.
  int resident_clusters() const override { return 1; }

private:
  std::shared_ptr<const interp::Program> program_;
  std::string name_;
  std::vector<ElementType> parameters_;
  int clusterSize_;
};

} // namespace

std::shared_ptr<const Program> interpret(const Module &traced, std::span<const ElementType> parameters) {
  Module module(traced.impl().clone()); // lowered here: the caller's module stays as it is
  lower(module, Stage::tile);
  const int clusterSize = tile::clusterSizeOf(module.impl().module->getOperation());
  return std::make_shared<const InterpretedProgram>(interp::Program::compile(module), module.kernel_name(), parameters,
                                                    clusterSize);
}

} // namespace kiln
