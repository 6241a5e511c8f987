// Built without any MLIR or LLVM include directory: if a public header of
// the DSL included one, this file would not compile. The one-header promise
// of DESIGN.md §2, kept by the build.
#include <kiln/kiln.h>

#include <gtest/gtest.h>

#if defined(MLIR_IR_MLIRCONTEXT_H) || defined(LLVM_SUPPORT_COMPILER_H)
#error "a public Kiln header pulled in MLIR or LLVM"
#endif

TEST(PublicHeaders, CompileWithoutMlirOrLlvm) {
  kiln::Config config{{"BLOCK", 64}};
  EXPECT_EQ(config.str(), "BLOCK=64");
}
