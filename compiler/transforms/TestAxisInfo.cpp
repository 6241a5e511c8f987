//===- TestAxisInfo.cpp - print axis info as remarks (tests) --------------===//

#include "compiler/transforms/Passes.h"

#include "compiler/analysis/AxisInfo.h"

#include "llvm/ADT/STLExtras.h"

namespace kiln {

#define GEN_PASS_DEF_TESTAXISINFO
#include "compiler/transforms/Passes.h.inc"

namespace {

struct TestAxisInfo : impl::TestAxisInfoBase<TestAxisInfo> {
  void runOnOperation() override {
    gpu::AxisInfoAnalysis analysis(getOperation());
    getOperation()->walk([&](mlir::Operation *op) {
      if (op->getNumResults() != 1)
        return;
      mlir::Type element = mlir::getElementTypeOrSelf(op->getResult(0).getType());
      if (!element.isInteger() && !mlir::isa<tile::PointerType>(element))
        return;
      gpu::AxisInfo info = analysis.get(op->getResult(0));
      auto list = [](llvm::ArrayRef<int64_t> v) {
        std::string text = "[";
        for (size_t i = 0; i < v.size(); ++i)
          text += (i ? ", " : "") + std::to_string(v[i]);
        return text + "]";
      };
      op->emitRemark() << "contiguity = " << list(info.contiguity)
                       << ", divisibility = " << list(info.divisibility)
                       << ", constancy = " << list(info.constancy);
    });
  }
};

} // namespace
} // namespace kiln
