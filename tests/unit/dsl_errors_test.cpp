// Every trace-time error names the user's file and line, and the shapes and
// dtypes involved.
#include "TraceTestSupport.h"

#include <kiln/compiler.h>

#include <cstdlib>
#include <functional>

using namespace kiln;
using kiln::testing::trace_error;

TEST(DslErrors, ShapesThatDoNotBroadcast) {
  int line = 0;
  auto e = trace_error([&](Ptr<i32> p) {
    Tensor a = arange(0, 4), b = arange(0, 8);
    line = __LINE__; store(p + arange(0, 4), a + b);
  });
  EXPECT_ERROR_AT(e, line, "'+': shapes 4 and 8 do not broadcast (dimension 0: 4 vs 8)");
}

TEST(DslErrors, SignedMeetsUnsigned) {
  int line = 0;
  auto e = trace_error([&](Ptr<i32> s, Ptr<u32> u) {
    Tensor offs = arange(0, 8);
    line = __LINE__; Tensor x = load(s + offs) * load(u + offs);
  });
  EXPECT_ERROR_AT(e, line, "'*' mixes i32 and u32: signed and unsigned integers do not mix");
}

TEST(DslErrors, BooleanMeetsInteger) {
  int line = 0;
  auto e = trace_error([&](Ptr<i32> s) {
    Tensor offs = arange(0, 8);
    line = __LINE__; Tensor x = (offs < 4) + offs;
  });
  EXPECT_ERROR_AT(e, line, "'+' mixes i1 and i32");
}

TEST(DslErrors, Float8NeedsExplicitConversion) {
  int line = 0;
  auto e = trace_error([&](Ptr<f8e4m3> a, Ptr<f16> b) {
    Tensor offs = arange(0, 8);
    line = __LINE__; Tensor x = load(a + offs) + load(b + offs);
  });
  EXPECT_ERROR_AT(e, line, "mixes f8e4m3 and f16: 8-bit floats only combine with their own dtype");
}

TEST(DslErrors, LiteralThatDoesNotFit) {
  int line = 0;
  auto e = trace_error([&](Ptr<u8> p) {
    line = __LINE__; store(p + arange(0, 8), load(p + arange(0, 8)) + 300);
  });
  EXPECT_ERROR_AT(e, line, "the literal 300 in '+' does not fit u8");
}

TEST(DslErrors, FloatLiteralMeetsIntegers) {
  int line = 0;
  auto e = trace_error([&](Ptr<i32> p) {
    line = __LINE__; Tensor x = arange(0, 8) * 0.5;
  });
  EXPECT_ERROR_AT(e, line, "the floating literal 0.5 in '*' meets i32 values");
}

TEST(DslErrors, LiteralBeyondTheDtypesRange) {
  int line = 0;
  auto e = trace_error([&](Ptr<f16> p) {
    line = __LINE__; store(p + arange(0, 8), load(p + arange(0, 8)) * 1e6);
  });
  EXPECT_ERROR_AT(e, line, "the literal 1e+06 in '*' is beyond the range of f16");
}

TEST(DslErrors, ArangeOfNonPowerOfTwoLength) {
  int line = 0;
  auto e = trace_error([&](Ptr<i32> p) {
    line = __LINE__; Tensor r = arange(0, 100);
  });
  EXPECT_ERROR_AT(e, line, "arange(0, 100) has 100 elements; block sizes must be powers of two");
}

TEST(DslErrors, ArangeBackwards) {
  int line = 0;
  auto e = trace_error([&](Ptr<i32> p) {
    line = __LINE__; Tensor r = arange(8, 8);
  });
  EXPECT_ERROR_AT(e, line, "end must be greater than start");
}

TEST(DslErrors, AxisOutOfRange) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    Tensor x = load(p + arange(0, 8));
    line = __LINE__; Tensor s = sum(x, 1);
  });
  EXPECT_ERROR_AT(e, line, "reduce: axis 1 is out of range for rank 1 (valid: -1..0)");
  e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor x = expand_dims(arange(0, 8), 3);
  });
  EXPECT_ERROR_AT(e, line, "expand_dims: axis 3 is out of range for rank 1");
}

TEST(DslErrors, LoadThroughNumbers) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor x = load(arange(0, 8));
  });
  EXPECT_ERROR_AT(e, line, "load needs pointers, got an 8 i32 block");
}

TEST(DslErrors, OtherWithoutMask) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor x = load(p + arange(0, 8), {}, 0.0);
  });
  EXPECT_ERROR_AT(e, line, "'other' is the value of masked-off elements and needs a mask");
}

TEST(DslErrors, MaskMustBeBoolean) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor x = load(p + arange(0, 8), arange(0, 8));
  });
  EXPECT_ERROR_AT(e, line, "load: the mask must be i1, got an 8 i32 block");
}

TEST(DslErrors, StoreThroughConstPointer) {
  int line = 0;
  auto e = trace_error([&](ConstPtr<f32> p) {
    line = __LINE__; store(p + arange(0, 8), 1.0);
  });
  EXPECT_ERROR_AT(e, line, "store through an 8 *const f32 block: the kernel parameter is a ConstPtr");
}

TEST(DslErrors, StoreOfTheWrongDtype) {
  int line = 0;
  auto e = trace_error([&](Ptr<f16> p, Ptr<f32> q) {
    Tensor x = load(q + arange(0, 8));
    line = __LINE__; store(p + arange(0, 8), x);
  });
  EXPECT_ERROR_AT(e, line, "store: an 8 f32 block through an 8 *f16 block; convert the value with .to<f16>()");
}

TEST(DslErrors, StoreOfABlockThroughOnePointer) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p, Ptr<f32> q) {
    Tensor x = load(q + arange(0, 8));
    line = __LINE__; store(p, x);
  });
  EXPECT_ERROR_AT(e, line, "the values do not fit the pointers' shape scalar");
}

TEST(DslErrors, AtomicOnAnUnsupportedDtype) {
  int line = 0;
  auto e = trace_error([&](Ptr<i8> p) {
    line = __LINE__; atomic_add(p + arange(0, 8), 1);
  });
  EXPECT_ERROR_AT(e, line, "atomic add does not support 'i8'");
}

TEST(DslErrors, DotShapes) {
  int line = 0;
  auto e = trace_error([&](Ptr<f16> p) {
    Tensor a = load(p + expand_dims(arange(0, 16), 1) * 32 + expand_dims(arange(0, 32), 0));
    line = __LINE__; Tensor c = dot(a, a);
  });
  EXPECT_ERROR_AT(e, line, "dot: inner dimensions differ: a is a 16x32 f16 block (K = 32), b is a 16x32 f16 block (K = 16)");
}

TEST(DslErrors, DotDtypes) {
  int line = 0;
  auto e = trace_error([&](Ptr<f16> p, Ptr<f32> q) {
    Tensor idx = expand_dims(arange(0, 16), 1) * 16 + expand_dims(arange(0, 16), 0);
    line = __LINE__; Tensor c = dot(load(p + idx), load(q + idx));
  });
  EXPECT_ERROR_AT(e, line, "dot: operand dtypes differ (a 16x16 f16 block and a 16x16 f32 block)");
}

TEST(DslErrors, DotAccumulator) {
  int line = 0;
  auto e = trace_error([&](Ptr<bf16> p) {
    Tensor idx = expand_dims(arange(0, 16), 1) * 16 + expand_dims(arange(0, 16), 0);
    Tensor a = load(p + idx);
    line = __LINE__; Tensor c = dot(a, a, zeros({16, 16}, f16));
  });
  EXPECT_ERROR_AT(e, line, "cannot accumulate 'bf16' products in 'f16'");
}

TEST(DslErrors, MissingConfigEntry) {
  int line = 0;
  auto e = trace_error([&](const Config &cfg, Ptr<f32> p) {
    line = __LINE__; int64_t block = cfg["BLOCK"];
    (void)block;
  });
  EXPECT_ERROR_AT(e, line, "the config has no entry 'BLOCK'");
}

TEST(DslErrors, ValueEscapingALoopBody) {
  int line = 0, made = 0;
  auto e = trace_error([&](Ptr<f32> p, Int n) {
    Tensor escaped;
    for_range(0, n, 1, [&](const Tensor &i) {
      made = __LINE__; escaped = load(p + i);
    });
    line = __LINE__; store(p, escaped);
  });
  EXPECT_ERROR_AT(e, line, "(an f32 scalar made at " + std::string(__FILE__) + ":" + std::to_string(made) +
                               " inside the for_range body");
  EXPECT_TRUE(kiln::testing::contains(e.what(), "carry it out with a Var or the body's return value"));
}

TEST(DslErrors, VarKeepsItsType) {
  int line = 0, declared = 0;
  auto e = trace_error([&](Ptr<f32> p, Ptr<f16> h) {
    declared = __LINE__; Var acc(zeros({8}, f32));
    line = __LINE__; acc = load(h + arange(0, 8));
  });
  EXPECT_ERROR_AT(e, line, "assigning an 8 f16 block to the Var declared at " + std::string(__FILE__) +
                               ":" + std::to_string(declared) + ", which holds an 8 f32 block");
}

TEST(DslErrors, BranchOnABlock) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; if_(arange(0, 8) < 4, [&] { store(p, 1.0); });
  });
  EXPECT_ERROR_AT(e, line, "if_ needs a scalar i1 condition, got an 8 i1 block; to choose per element use where()");
}

TEST(DslErrors, LoopBoundsMustBeIntegers) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p, Float x) {
    line = __LINE__; for_range(0, x, 1, [&](const Tensor &) {});
  });
  EXPECT_ERROR_AT(e, line, "for_range's end must be a signed integer scalar (or literal), got an f32 scalar");
  e = trace_error([&](Ptr<f32> p, Int n) {
    line = __LINE__; for_range(0, n, 0, [&](const Tensor &) {});
  });
  EXPECT_ERROR_AT(e, line, "for_range's step must be positive, got 0");
}

TEST(DslErrors, CarriedValuesKeepTheirTypes) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p, Int n) {
    line = __LINE__; Tensor r = for_range(0, n, 1, carry(zeros({8}, f32)), [&](const Tensor &, const Tensor &acc) {
      return acc.to(f16);
    });
  });
  EXPECT_ERROR_AT(e, line, "for_range's body: carried value #0 starts as an 8 f32 block but the body returns an 8 f16 block");
}

TEST(DslErrors, BranchesReturnDifferentValues) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p, Int n) {
    line = __LINE__; Tensor r = if_(n > 0, [&] { return zeros({8}, f32); }, [&] { return zeros({16}, f32); });
  });
  EXPECT_ERROR_AT(e, line, "if_'s branches return different values for result #0: an 8 f32 block and a 16 f32 block");
}

TEST(DslErrors, CombineFunctionReturnsTheWrongType) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    Tensor x = load(p + arange(0, 8));
    line = __LINE__; Tensor r = reduce(x, 0, [](const Tensor &a, const Tensor &b) { return (a + b).to(f16); });
  });
  EXPECT_ERROR_AT(e, line, "reduce's combine function must return an f32 scalar for operand #0, got an f16 scalar");
}

TEST(DslErrors, CombineFunctionCapturesAValue) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p, Float scale) {
    Tensor x = load(p + arange(0, 8));
    Tensor r = reduce(x, 0, [&](const Tensor &a, const Tensor &b) {
      line = __LINE__; return a + b * scale;
    });
  });
  EXPECT_ERROR_AT(e, line, "comes from outside the reduce's combine function");
}

TEST(DslErrors, ShapeOperations) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor r = reshape(arange(0, 8), {4, 4});
  });
  EXPECT_ERROR_AT(e, line, "reshape of an 8 i32 block (8 elements) to 4x4 (16 elements)");
  e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor r = trans(reshape(arange(0, 8), {2, 4}), {0, 0});
  });
  EXPECT_ERROR_AT(e, line, "order {0, 0} is not a permutation of 0..1");
  e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; auto halves = split(reshape(arange(0, 8), {2, 4}));
  });
  EXPECT_ERROR_AT(e, line, "split needs a block whose last dimension is 2, got a 2x4 i32 block");
  e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor j = join(arange(0, 8), arange(0, 4));
  });
  EXPECT_ERROR_AT(e, line, "join needs two blocks of one shape and type");
  e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor b = broadcast_to(arange(0, 8), {4, 4});
  });
  EXPECT_ERROR_AT(e, line, "broadcast_to: shapes 8 and 4x4 do not broadcast");
}

TEST(DslErrors, BitcastWidths) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor b = load(p + arange(0, 8)).bitcast(i64);
  });
  EXPECT_ERROR_AT(e, line, "bitcast of an 8 f32 block to i64: the bit widths differ (32 vs 64)");
}

TEST(DslErrors, MathOnIntegers) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor y = exp(arange(0, 8));
  });
  EXPECT_ERROR_AT(e, line, "exp takes floats, got an 8 i32 block; convert with .to<f32>()");
}

TEST(DslErrors, BitwiseOnFloats) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    Tensor x = load(p + arange(0, 8));
    line = __LINE__; Tensor y = x & x;
  });
  EXPECT_ERROR_AT(e, line, "'&' takes integers, got an 8 f32 block");
}

TEST(DslErrors, PointerArithmetic) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p, Ptr<f32> q) {
    line = __LINE__; Tensor r = p + q;
  });
  EXPECT_ERROR_AT(e, line, "pointer '+': both operands are pointers");
  e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor r = p * 2;
  });
  EXPECT_ERROR_AT(e, line, "'*' takes numbers, not pointers");
  e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor r = p + 0.5;
  });
  EXPECT_ERROR_AT(e, line, "pointer '+'");
}

TEST(DslErrors, WhereNeedsABooleanCondition) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor r = where(arange(0, 8), 1.0, 2.0);
  });
  EXPECT_ERROR_AT(e, line, "where's condition must be i1, got an 8 i32 block");
}

TEST(DslErrors, EmptyTensor) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    Tensor never;
    line = __LINE__; store(p, never);
  });
  EXPECT_ERROR_AT(e, line, "store is an empty Tensor (it was never given a value)");
}

TEST(DslErrors, HintArity) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor r = multiple_of(arange(0, 8), {16, 16});
  });
  EXPECT_ERROR_AT(e, line, "multiple_of on an 8 i32 block needs 1 value(s), one per dimension, got 2");
}

TEST(DslErrors, HandlesDoNotOutliveTheirTrace) {
  Tensor kept;
  int line = 0;
  Kernel first = jit([&](Ptr<f32> p) { kept = load(p); }, "first");
  first.trace();
  auto e = trace_error([&](Ptr<f32> p) {
    line = __LINE__; store(p, kept);
  });
  EXPECT_ERROR_AT(e, line, "belongs to another trace; handles cannot be kept between traces");
}

TEST(DslErrors, OperationsOutsideATrace) {
  int line = __LINE__ + 2;
  try {
    Tensor r = arange(0, 8);
    FAIL() << "arange outside a trace should throw";
  } catch (const TraceError &e) {
    EXPECT_ERROR_AT(e, line, "can only run while one is traced");
  }
}

TEST(DslErrors, InvalidConfigsAreRejectedWithAReason) {
  Kernel kernel = jit([](Ptr<f32> p) { store(p, 1.0); }, "configured");
  EXPECT_THROW(
      {
        try {
          kernel.trace({{"num_warps", 3}});
        } catch (const Error &e) {
          EXPECT_TRUE(kiln::testing::contains(e.what(), "num_warps must be a power of two from 1 to 32, got 3"));
          throw;
        }
      },
      Error);
  try {
    kernel.trace({{"ping_pong", 2}});
    FAIL() << "ping_pong=2 traced";
  } catch (const Error &e) {
    EXPECT_TRUE(kiln::testing::contains(e.what(), "ping_pong must be 0 or 1, got 2")) << e.what();
  }
  kernel.space(ConfigSpace().axis("BLOCK", {64, 128}).constraint("BLOCK must be at least 128",
                                                                   [](const Config &c) { return c.get("BLOCK", 0) >= 128; }));
  try {
    kernel.trace({{"BLOCK", 64}});
    FAIL() << "expected a rejected config";
  } catch (const Error &e) {
    EXPECT_TRUE(kiln::testing::contains(e.what(), "config BLOCK=64 is invalid for kernel 'configured': BLOCK must be at least 128"));
  }
}

TEST(DslErrors, BlocksHoldAtMost2To20Elements) {
  int line = 0;
  auto range = trace_error([&](Ptr<f32> p) {
    line = __LINE__; Tensor r = arange(0, int64_t(1) << 30);
  });
  EXPECT_ERROR_AT(range, line,
                  "this makes a 1073741824 i32 block, more than the 1048576 (2^20) elements a block may hold");
  auto filled = trace_error([&](Ptr<f32> p) { // (the product passes 2^63)
    line = __LINE__; Tensor z = zeros({int64_t(1) << 40, int64_t(1) << 40}, f32);
  });
  EXPECT_ERROR_AT(filled, line, "more than the 1048576 (2^20) elements a block may hold");
  auto product = trace_error([&](Ptr<f16> p) {
    Tensor a = zeros({2048, 16}, f16), b = zeros({16, 1024}, f16);
    line = __LINE__; Tensor c = dot(a, b);
  });
  EXPECT_ERROR_AT(product, line, "this makes a 2048x1024 f32 block, more than the 1048576 (2^20) elements");
}

TEST(DslErrors, RegionBodiesNestAtMost64Deep) {
  int line = 0;
  auto e = trace_error([&](Ptr<i32> p) {
    std::function<void(int)> nest = [&](int depth) {
      if (depth == 65) {
        store(p, 1);
        return;
      }
      line = __LINE__; for_range(0, 2, 1, [&](const Tensor &) { nest(depth + 1); });
    };
    nest(0);
  });
  EXPECT_ERROR_AT(e, line, "this for_range would nest region bodies 65 deep; kernels may nest loops, branches "
                           "and combine functions at most 64 deep");
}

TEST(DslErrors, DeepExpressionsTraceCompileAndRun) {
  // Each operation is built as it is called, and every walk after tracing
  // (passes, lowering, the interpreter) goes op by op: no recursion along
  // the chain of operands to overflow the stack.
  Kernel deep = jit(
      [](Ptr<f32> p) {
        Tensor x = load(p + arange(0, 32));
        for (int i = 0; i < 10000; ++i)
          x = abs(x);
        for (int i = 0; i < 100000; ++i)
          x = x + 1.0;
        store(p + arange(0, 32), x);
      },
      "deep_expressions");
  std::vector<float> data(32, -1.0f);
  deep.launch(Grid(1), {}, Stream(Device::interp()), data);
  EXPECT_EQ(data[0], 100001.0f);
  EXPECT_NE(emit(deep.trace(), Stage::llvm).find("llvm.fadd"), std::string::npos);
}

namespace {
/// A function a library offers for use inside kernels.
Tensor add_eight_wide(const Tensor &x, Loc loc = Loc::current()) {
  LibraryScope library(loc);
  return x + arange(0, 8);
}
} // namespace

TEST(DslErrors, LibraryFunctionsNameTheirCallersLine) {
  int line = 0;
  auto e = trace_error([&](Ptr<f32> p) {
    Tensor x = load(p + arange(0, 4));
    line = __LINE__; Tensor y = add_eight_wide(x);
  });
  EXPECT_ERROR_AT(e, line, "'+': shapes 4 and 8 do not broadcast");
}

TEST(DslErrors, LibraryKernelsNameTheCallNotTheLibrarysLines) {
  Kernel copy = jit([](Ptr<f32> p) { store(p + arange(0, 4), load(p + arange(0, 8))); }, "library_copy")
                    .library("ops::copy");
  try {
    copy.trace();
    FAIL() << "the trace should fail";
  } catch (const TraceError &e) {
    EXPECT_STREQ(e.file(), "");
    EXPECT_EQ(std::string(e.what()).rfind("ops::copy: ", 0), 0u) << e.what();
  }
  Kernel missing = jit([](const Config &cfg, Ptr<f32> p) { store(p + arange(0, cfg["BLOCK"]), 1.0); }, "library_config")
                       .library("ops::fill");
  try {
    missing.trace();
    FAIL() << "the trace should fail";
  } catch (const TraceError &e) {
    EXPECT_EQ(std::string(e.what()).rfind("ops::fill: the config has no entry 'BLOCK'", 0), 0u) << e.what();
  }
}

TEST(DslErrors, TargetsFromTheEnvironmentAreChecked) {
  Kernel kernel = jit([](Ptr<f32> p) { store(p + arange(0, 4), 1.0); }, "environment_targets");
  std::vector<float> data(4);
  setenv("KILN_CHECK_PTX", "sm_90a,sm_bogus", 1);
  try {
    kernel.launch(Grid(1), {}, Stream(Device::interp()), data);
    ADD_FAILURE() << "the launch should fail";
  } catch (const Error &e) {
    EXPECT_TRUE(kiln::testing::contains(e.what(), "KILN_CHECK_PTX: 'sm_bogus' is not a GPU target"));
  }
  unsetenv("KILN_CHECK_PTX");
  // An AMD target names what a HIP device compiles for (a CUDA device
  // refuses it: GpuRuntime.OwnStreamsAndDeviceCopies).
  setenv("KILN_TARGET", "gfx90a", 1);
  EXPECT_EQ(target_for(Device::interp()), "gfx90a");
  setenv("KILN_TARGET", "gfx1030", 1);
  try {
    target_for(Device::interp());
    ADD_FAILURE() << "KILN_TARGET=gfx1030 should be refused";
  } catch (const Error &e) {
    EXPECT_TRUE(kiln::testing::contains(e.what(), "KILN_TARGET: gfx1030 is an AMD GPU Kiln does not compile for"))
        << e.what();
  }
  unsetenv("KILN_TARGET");
  // An AMD target is compiled for (CI's check), not launched; a build
  // without the AMD back end says so.
  setenv("KILN_CHECK_PTX", "gfx942", 1);
  if (has_amd_back_end()) {
    EXPECT_NO_THROW(kernel.launch(Grid(1), {}, Stream(Device::interp()), data));
    EXPECT_FALSE(kernel.compile({}, {}, "gfx942").amdgcn.empty());
  } else {
    try {
      kernel.launch(Grid(1), {}, Stream(Device::interp()), data);
      ADD_FAILURE() << "a build without the AMD back end compiled for gfx942";
    } catch (const Error &e) {
      EXPECT_TRUE(kiln::testing::contains(e.what(), "this build of Kiln has no AMD back end")) << e.what();
    }
  }
  unsetenv("KILN_CHECK_PTX");
  try {
    kernel.compile({}, {}, "sm_20");
    ADD_FAILURE() << "sm_20 should be refused";
  } catch (const Error &e) {
    EXPECT_TRUE(kiln::testing::contains(e.what(), "sm_20 (compute capability 2.0) is older than Kiln supports"));
  }
}

TEST(DslErrors, LLVMFatalErrorsBecomeErrors) {
  // A cluster barrier does not exist on sm_80: LLVM's instruction selection
  // reports that as a fatal error, which would end the process.
  Module module = Module::parse("tile.func @cluster_barrier() {\n  nvvm.cluster.arrive\n  tile.return\n}\n");
  CompileOptions ampere;
  ampere.arch = "sm_80";
  try {
    emit(module, Stage::ptx, ampere);
    ADD_FAILURE() << "LLVM should fail for sm_80";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "compiling the kernel for sm_80, LLVM failed: "
                           "Cannot select: intrinsic %llvm.nvvm.barrier.cluster.arrive");
  }
  // The process, and LLVM in it, carry on.
  CompileOptions hopper;
  hopper.arch = "sm_90a";
  EXPECT_NE(emit(module, Stage::ptx, hopper).find("barrier.cluster.arrive"), std::string::npos);
}
