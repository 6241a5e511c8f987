// Loops and branches become scf operations carrying explicit values and Vars.
#include "TraceTestSupport.h"

using namespace kiln;
using kiln::testing::contains;
using kiln::testing::occurrences;
using kiln::testing::trace_ir;

TEST(DslControlFlow, ForRangeCarriesVars) {
  std::string ir = trace_ir([](Ptr<f32> p, Int n) {
    Var acc(zeros({16}, f32));
    Var count(constant(0, i32));
    for_range(0, n, 16, [&](const Tensor &start) {
      acc += load(p + start + arange(0, 16));
      count = count + 1;
    });
    store(p + arange(0, 16), acc.get() + count.get());
  });
  EXPECT_TRUE(contains(ir, "scf.for %arg2 = %") && contains(ir, " to %arg1 step %"));
  EXPECT_TRUE(contains(ir, "iter_args("));
  EXPECT_TRUE(contains(ir, "-> (tensor<16xf32>, i32)"));
  EXPECT_TRUE(contains(ir, "scf.yield %"));
}

TEST(DslControlFlow, ForRangeWithExplicitCarry) {
  std::string ir = trace_ir([](Ptr<f32> p, Long n) {
    auto [total, largest] =
        for_range(0, n, 1, carry(constant(0.0, f32), constant(-1.0, f32)),
                  [&](const Tensor &i, const Tensor &total, const Tensor &largest) {
                    Tensor x = load(p + i);
                    return std::array{total + x, maximum(largest, x)};
                  });
    store(p, total + largest);
  });
  // An i64 bound makes the loop count in i64.
  EXPECT_TRUE(contains(ir, "iter_args(") && contains(ir, "-> (f32, f32)  : i64"));
}

TEST(DslControlFlow, IfWithVarsAndWithoutElse) {
  std::string ir = trace_ir([](Ptr<f32> p, Int n) {
    Var x(load(p));
    if_(n > 0, [&] { x = x * 2.0; });
    store(p, x.get());
  });
  EXPECT_TRUE(contains(ir, "scf.if %"));
  EXPECT_TRUE(contains(ir, "-> (f32)"));
  EXPECT_TRUE(contains(ir, "} else {"));
}

TEST(DslControlFlow, IfElseReturningValues) {
  std::string ir = trace_ir([](Ptr<f32> p, Int n) {
    auto [a, b] = if_(
        n > 0, [&] { return std::tuple{load(p), constant(1, i32)}; },
        [&] { return std::tuple{constant(0.0, f32), constant(2, i32)}; });
    store(p, a + b);
  });
  EXPECT_TRUE(contains(ir, "scf.if %") && contains(ir, "-> (f32, i32)"));
}

TEST(DslControlFlow, IfElseWithVars) {
  std::string ir = trace_ir([](Ptr<f32> p, Int n) {
    Var x(constant(0.0, f32));
    if_(n > 0, [&] { x = load(p); }, [&] { x = 1.0; });
    store(p, x.get());
  });
  EXPECT_TRUE(contains(ir, "scf.if %") && contains(ir, "-> (f32)"));
}

TEST(DslControlFlow, WhileWithVars) {
  std::string ir = trace_ir([](Ptr<i32> p, Int n) {
    Var i(constant(0, i32));
    Var total(constant(0, i32));
    while_([&] { return i.get() < n; },
           [&] {
             total += load(p + i.get());
             i += 1;
           });
    store(p, total.get());
  });
  EXPECT_TRUE(contains(ir, "scf.while (%"));
  EXPECT_TRUE(contains(ir, "scf.condition(%"));
  EXPECT_TRUE(contains(ir, "} do {"));
}

TEST(DslControlFlow, WhileWithExplicitCarry) {
  std::string ir = trace_ir([](Ptr<i32> p, Int n) {
    Tensor steps = while_(
        carry(constant(1, i32)), [&](const Tensor &v) { return v < n; },
        [&](const Tensor &v) { return v * 2; });
    store(p, steps);
  });
  EXPECT_TRUE(contains(ir, "scf.while (%") && contains(ir, "arith.muli"));
}

TEST(DslControlFlow, NestedLoopsAndBranches) {
  std::string ir = trace_ir([](Ptr<f32> p, Int n, Int m) {
    Var acc(constant(0.0, f32));
    for_range(0, n, 1, [&](const Tensor &i) {
      for_range(0, m, 1, [&](const Tensor &j) {
        if_(i < j, [&] { acc += load(p + i * m + j); });
      });
    });
    store(p, acc.get());
  });
  EXPECT_EQ(occurrences(ir, "scf.for"), 2u);
  EXPECT_TRUE(contains(ir, "scf.if"));
}

TEST(DslControlFlow, CppLoopsOverConfigValuesUnroll) {
  std::string ir = trace_ir(
      [](const Config &cfg, Ptr<f32> p) {
        Tensor x = load(p + arange(0, 8));
        for (int64_t i = 0; i < cfg["REPEAT"]; ++i)
          x = x * 2.0;
        store(p + arange(0, 8), x);
      },
      {{"REPEAT", 3}});
  EXPECT_EQ(occurrences(ir, "arith.mulf"), 3u);
  EXPECT_FALSE(contains(ir, "scf.for"));
}

TEST(DslControlFlow, VarsDeclaredInsideABodyStayThere) {
  std::string ir = trace_ir([](Ptr<f32> p, Int n) {
    Var outer(constant(0.0, f32));
    for_range(0, n, 1, [&](const Tensor &i) {
      Var inner(load(p + i));
      inner *= 2.0;
      outer += inner;
    });
    store(p, outer.get());
  });
  // Only `outer` is carried.
  EXPECT_TRUE(contains(ir, "-> (f32)  : i32"));
}
