// Every DSL operation traces to the IR documented in docs/dsl.md.
#include "TraceTestSupport.h"

#include <cmath>

using namespace kiln;
using kiln::testing::contains;
using kiln::testing::trace_ir;

TEST(DslOps, GridAndRanges) {
  std::string ir = trace_ir([](Ptr<i32> out) {
    Tensor p = program_id(0) + program_id(1) + program_id(2) + num_programs(0);
    store(out + arange(0, 16), p + arange(0, 16));
  });
  EXPECT_TRUE(contains(ir, "tile.program_id x : i32"));
  EXPECT_TRUE(contains(ir, "tile.program_id y : i32"));
  EXPECT_TRUE(contains(ir, "tile.program_id z : i32"));
  EXPECT_TRUE(contains(ir, "tile.num_programs x : i32"));
  EXPECT_TRUE(contains(ir, "tile.range 0, 16 : tensor<16xi32>"));
  EXPECT_TRUE(contains(ir, "tile.splat %"));
}

TEST(DslOps, FullZerosConstant) {
  std::string ir = trace_ir([](Ptr<f16> out) {
    Tensor a = full({4, 8}, 1.5, f16) + zeros({4, 8}, f16) + constant(2, f16);
    store(out + expand_dims(arange(0, 4), 1) * 8 + expand_dims(arange(0, 8), 0), a);
  });
  EXPECT_TRUE(contains(ir, "arith.constant 1.500000e+00 : f16"));
  EXPECT_TRUE(contains(ir, "tile.splat %cst : f16 -> tensor<4x8xf16>") ||
              contains(ir, "-> tensor<4x8xf16>"));
  EXPECT_TRUE(contains(ir, "arith.addf"));
}

TEST(DslOps, ArithmeticPicksSignedness) {
  std::string ir = trace_ir([](Ptr<i32> si, Ptr<u32> ui, Ptr<f32> f) {
    Tensor offs = arange(0, 32);
    Tensor a = load(si + offs), b = load(ui + offs), c = load(f + offs);
    store(si + offs, (a / 3) % 5 + (a >> 1) - (a << 2) * ((a & 7) | (a ^ 2)));
    store(ui + offs, (b / 3u) % 5u + (b >> 1u));
    store(f + offs, c / 2.0 - c * c % 3.0);
  });
  for (const char *op : {"arith.divsi", "arith.remsi", "arith.shrsi", "arith.shli", "arith.andi",
                         "arith.ori", "arith.xori", "arith.divui", "arith.remui", "arith.shrui",
                         "arith.divf", "arith.remf", "arith.subf", "arith.mulf"})
    EXPECT_TRUE(contains(ir, op));
}

TEST(DslOps, Comparisons) {
  std::string ir = trace_ir([](Ptr<i32> si, Ptr<u8> ub, Ptr<f32> f, Ptr<i1> out) {
    Tensor offs = arange(0, 16);
    Tensor a = load(si + offs), b = load(ub + offs), c = load(f + offs);
    store(out + offs, (a < 1) & (a <= 2) & (a > 3) & (a >= 4) & (a == 5) & (a != 6));
    store(out + offs, (b < 1) & (b >= 2));
    store(out + offs, (c < 1.0) | (c != c) | (c == 0.5));
  });
  for (const char *p : {"cmpi slt", "cmpi sle", "cmpi sgt", "cmpi sge", "cmpi eq", "cmpi ne",
                        "cmpi ult", "cmpi uge", "cmpf olt", "cmpf une", "cmpf oeq"})
    EXPECT_TRUE(contains(ir, p));
}

TEST(DslOps, UnaryOperators) {
  std::string ir = trace_ir([](Ptr<i32> si, Ptr<f32> f, Ptr<i1> b) {
    Tensor offs = arange(0, 16);
    store(si + offs, -load(si + offs) + ~load(si + offs));
    store(f + offs, -load(f + offs));
    store(b + offs, !load(b + offs));
  });
  EXPECT_TRUE(contains(ir, "arith.negf"));
  EXPECT_TRUE(contains(ir, "arith.subi"));
  EXPECT_TRUE(contains(ir, "arith.constant -1 : i32"));
  EXPECT_TRUE(contains(ir, "arith.constant true"));
}

TEST(DslOps, LiteralsTakeTheHandlesDtype) {
  std::string ir = trace_ir([](Ptr<f16> h, Ptr<i8> c) {
    Tensor offs = arange(0, 8);
    store(h + offs, load(h + offs) * 2 + 0.25);
    store(c + offs, load(c + offs) + 100);
  });
  EXPECT_TRUE(contains(ir, "arith.constant 2.000000e+00 : f16"));
  EXPECT_TRUE(contains(ir, "arith.constant 2.500000e-01 : f16"));
  EXPECT_TRUE(contains(ir, "arith.constant 100 : i8"));
  EXPECT_TRUE(contains(ir, "tile.splat %") && contains(ir, ": f16 -> tensor<8xf16>"));
}

TEST(DslOps, PromotionAndBroadcasting) {
  std::string ir = trace_ir([](Ptr<f16> h, Ptr<f32> f, Ptr<i64> l, Int n) {
    Tensor row = arange(0, 8), col = arange(0, 4);
    Tensor wide = load(h + row) + load(f + row);             // f16 + f32 -> f32
    Tensor idx = expand_dims(col, 1) * n + expand_dims(row, 0); // 4x1 * scalar + 1x8 -> 4x8
    Tensor big = idx + load(l + idx);                        // i32 + i64 -> i64
    store(f + row, wide + n);                                // int scalar meets f32 -> f32
    store(l + idx, big);
  });
  EXPECT_TRUE(contains(ir, "arith.extf"));
  EXPECT_TRUE(contains(ir, "tile.broadcast %"));
  EXPECT_TRUE(contains(ir, "-> tensor<4x8xi32>"));
  EXPECT_TRUE(contains(ir, "arith.extsi"));
  EXPECT_TRUE(contains(ir, "arith.sitofp"));
}

TEST(DslOps, CeilingDivision) {
  static_assert(cdiv(1000, 128) == 8);
  std::string ir = trace_ir([](Ptr<i32> p, Int n) { store(p, cdiv(n, 16)); });
  EXPECT_TRUE(contains(ir, "arith.addi %arg1, %"));
  EXPECT_TRUE(contains(ir, "arith.subi"));
  EXPECT_TRUE(contains(ir, "arith.divsi"));
}

TEST(DslOps, WhereMaximumMinimumClampAbs) {
  std::string ir = trace_ir([](Ptr<f32> f, Ptr<i32> si, Ptr<u16> us) {
    Tensor offs = arange(0, 16);
    Tensor x = load(f + offs);
    store(f + offs, where(x > 0.0, x, 0.0) + maximum(x, 1.0) + minimum(x, 2.0) +
                        clamp(x, -1.0, 1.0) + abs(x));
    Tensor i = load(si + offs);
    store(si + offs, maximum(i, 0) + minimum(i, 5) + abs(i));
    Tensor u = load(us + offs);
    store(us + offs, maximum(u, 1) + minimum(u, 2));
  });
  for (const char *op : {"arith.select", "arith.maximumf", "arith.minimumf", "math.absf",
                         "arith.maxsi", "arith.minsi", "math.absi", "arith.maxui", "arith.minui"})
    EXPECT_TRUE(contains(ir, op));
}

TEST(DslOps, MathComputesHalfTypesInF32) {
  std::string ir = trace_ir([](Ptr<f32> f, Ptr<bf16> b) {
    Tensor offs = arange(0, 16);
    Tensor x = load(f + offs);
    store(f + offs, exp(x) + exp2(x) + log(x) + log2(x) + sqrt(x) + rsqrt(x) + sin(x) + cos(x) +
                        tanh(x) + sigmoid(x) + erf(x) + erfc(x) + floor(x) + ceil(x) + pow(x, 2.0) +
                        fma(x, x, x));
    store(b + offs, exp(load(b + offs)));
  });
  for (const char *op : {"math.exp ", "math.exp2", "math.log ", "math.log2", "math.sqrt",
                         "math.rsqrt", "math.sin", "math.cos", "math.tanh", "math.erf ", "math.erfc",
                         "math.floor", "math.ceil", "math.powf", "math.fma"})
    EXPECT_TRUE(contains(ir, op));
  EXPECT_TRUE(contains(ir, "arith.extf %") || contains(ir, "bf16> to tensor<16xf32>"));
  std::string fast = trace_ir([](Ptr<bf16> b) {
    Tensor offs = arange(0, 16);
    store(b + offs, fast_erfc(load(b + offs)));
  });
  EXPECT_TRUE(contains(fast, "math.erfc") && contains(fast, "fastmath<afn>")) << fast;
  EXPECT_TRUE(contains(ir, "math.exp %") && contains(ir, "arith.truncf"));
}

TEST(DslOps, Conversions) {
  std::string ir = trace_ir([](Ptr<f32> f, Ptr<f8e4m3> f8, Ptr<u8> u, Ptr<i64> l, Ptr<i1> b) {
    Tensor offs = arange(0, 16);
    Tensor x = load(f + offs);
    store(f8 + offs, x.to<f8e4m3>());
    store(f + offs, load(f8 + offs).to(f32));
    store(u + offs, x.to(u8));
    store(l + offs, load(u + offs).to(i64));
    store(b + offs, x.to(i1));
    store(f + offs, load(u + offs).to(f32) + cast(load(l + offs), f32));
    store(l + offs, x.to(f64).bitcast(i64));
  });
  EXPECT_TRUE(contains(ir, "tile.fp_to_fp %") && contains(ir, "rounding = rtne"));
  EXPECT_TRUE(contains(ir, "arith.fptoui"));
  EXPECT_TRUE(contains(ir, "arith.extui"));
  EXPECT_TRUE(contains(ir, "arith.cmpf une"));
  EXPECT_TRUE(contains(ir, "arith.uitofp"));
  EXPECT_TRUE(contains(ir, "arith.sitofp"));
  EXPECT_TRUE(contains(ir, "tile.bitcast %"));
}

TEST(DslOps, ShapeOperations) {
  std::string ir = trace_ir([](Ptr<f32> f) {
    Tensor x = load(f + arange(0, 32));
    Tensor m = reshape(x, {4, 8});
    Tensor t = trans(m);
    Tensor e = expand_dims(arange(0, 8), 0).to(f32);
    Tensor b = broadcast_to(e, {4, 8});
    auto [p, q] = broadcast(expand_dims(arange(0, 4), 1), expand_dims(arange(0, 8), 0));
    Tensor j = join(m, b);
    auto [lo, hi] = split(j);
    store(f + reshape(p * 8 + q, {32}), reshape(trans(t) + lo + hi, {32}));
  });
  EXPECT_TRUE(contains(ir, "tile.reshape %"));
  EXPECT_TRUE(contains(ir, "tile.trans %") && contains(ir, "order = array<i32: 1, 0>"));
  EXPECT_TRUE(contains(ir, "tile.expand_dims %"));
  EXPECT_TRUE(contains(ir, "tile.broadcast %"));
  EXPECT_TRUE(contains(ir, "tile.join %"));
  EXPECT_TRUE(contains(ir, "tile.split %"));
}

TEST(DslOps, LoadStoreWithMaskOtherAndHints) {
  std::string ir = trace_ir([](ConstPtr<f32> in, Ptr<f32> out, Int n) {
    Tensor offs = multiple_of(max_contiguous(arange(0, 64), {64}), {64});
    Tensor mask = offs < n;
    LoadOptions options;
    options.cache = CacheModifier::cg;
    options.evict = EvictionPolicy::evict_first;
    Tensor x = load(in + offs, mask, 1.0, options);
    StoreOptions store_options;
    store_options.cache = CacheModifier::cs;
    store(out + offs, x, mask, store_options);
    store(out, 7.0); // a scalar store through a scalar pointer
  });
  EXPECT_TRUE(contains(ir, "tile.hint %") && contains(ir, "max_contiguous = array<i32: 64>") &&
              contains(ir, "multiple_of = array<i32: 64>"));
  EXPECT_TRUE(contains(ir, "cache = cg evict = evict_first : tensor<64x!tile.ptr<f32>>"));
  EXPECT_TRUE(contains(ir, "cache = cs : tensor<64x!tile.ptr<f32>>"));
  EXPECT_TRUE(contains(ir, "tile.store %arg1, %") && contains(ir, ": !tile.ptr<f32>"));
}

TEST(DslOps, PointerArithmetic) {
  std::string ir = trace_ir([](Ptr<f32> p, Long stride) {
    Tensor offs = arange(0, 16);
    Tensor ptrs = p + program_id(0) * stride + offs; // i64 scalar offset, then i32 block
    store(ptrs - 1, 0.0);
    store(4 + ptrs, 1.0);
  });
  EXPECT_TRUE(contains(ir, "tile.addptr %arg0, %") && contains(ir, ": !tile.ptr<f32>, i64"));
  EXPECT_TRUE(contains(ir, ": tensor<16x!tile.ptr<f32>>, tensor<16xi32>"));
}

TEST(DslOps, Atomics) {
  std::string ir = trace_ir([](Ptr<f32> f, Ptr<i32> i, Ptr<u32> u) {
    Tensor offs = arange(0, 8);
    Tensor mask = offs < 4;
    Tensor a = atomic_add(f + offs, 1.0, mask);
    Tensor b = atomic_max(f + offs, a) + atomic_min(f + offs, a);
    atomic_add(i + offs, 1);
    atomic_and(i + offs, 1);
    atomic_or(i + offs, 2);
    atomic_xor(i + offs, 3);
    atomic_xchg(i + offs, 4);
    atomic_cas(i + offs, 0, 1, {MemSemantic::acquire, MemScope::cta});
    atomic_max(u + offs, 1u, {}, {MemSemantic::relaxed, MemScope::sys});
    atomic_min(u + offs, 1u);
    store(f + offs, b);
  });
  for (const char *op : {"tile.atomic_rmw fadd", "tile.atomic_rmw max", "tile.atomic_rmw min",
                         "tile.atomic_rmw add", "tile.atomic_rmw and", "tile.atomic_rmw or",
                         "tile.atomic_rmw xor", "tile.atomic_rmw xchg", "tile.atomic_rmw umax",
                         "tile.atomic_rmw umin", "sem = relaxed scope = sys",
                         "tile.atomic_cas %", "sem = acquire scope = cta"})
    EXPECT_TRUE(contains(ir, op));
}

TEST(DslOps, Reductions) {
  std::string ir = trace_ir([](Ptr<f32> f, Ptr<i32> i, Ptr<f16> h) {
    Tensor x = load(f + expand_dims(arange(0, 4), 1) * 16 + expand_dims(arange(0, 16), 0));
    store(f + arange(0, 4), sum(x, 1) + max(x, 1) + min(x, -1));
    store(f + arange(0, 16), sum(x, 0, /*keep_dims=*/true).reshape({16}).broadcast_to({16}) * 0.0 +
                                sum(x));
    store(i + arange(0, 16), argmax(x, 0) + argmin(x, 0));
    store(f, max(x) + min(x) + sum(load(h + arange(0, 8)))); // f16 sums in f32
  });
  EXPECT_TRUE(contains(ir, "tile.reduce(%") && contains(ir, "axis = 1"));
  EXPECT_TRUE(contains(ir, "tile.reduce.return"));
  EXPECT_TRUE(contains(ir, "arith.maximumf"));
  EXPECT_TRUE(contains(ir, "arith.minimumf"));
  EXPECT_TRUE(contains(ir, "(tensor<4x16xf32>, tensor<4x16xi32>) -> (tensor<16xf32>, tensor<16xi32>)"));
  EXPECT_TRUE(contains(ir, "(tensor<8xf32>) -> f32"));
}

TEST(DslOps, CustomReduceAndScan) {
  std::string ir = trace_ir([](Ptr<i32> p) {
    Tensor x = load(p + arange(0, 32));
    Tensor product = reduce(x, 0, [](const Tensor &a, const Tensor &b) { return a * b; });
    Tensor running = scan(x, 0, [](const Tensor &a, const Tensor &b) { return maximum(a, b); });
    store(p + arange(0, 32), running + cumsum(x, 0) + cumprod(x, 0, /*reverse=*/true) + product);
  });
  EXPECT_TRUE(contains(ir, "tile.reduce(%"));
  EXPECT_TRUE(contains(ir, "arith.muli"));
  EXPECT_TRUE(contains(ir, "tile.scan(%") && contains(ir, "tile.scan.return"));
  EXPECT_TRUE(contains(ir, "axis = 0 reverse"));
  EXPECT_TRUE(contains(ir, "arith.maxsi"));
}

TEST(DslOps, Dot) {
  std::string ir = trace_ir([](Ptr<f16> a, Ptr<f32> f, Ptr<i8> q, Ptr<i32> qi) {
    Tensor idx = expand_dims(arange(0, 16), 1) * 16 + expand_dims(arange(0, 16), 0);
    Tensor x = load(a + idx);
    store(f + idx, dot(x, x) + dot(load(f + idx), load(f + idx)) +
                       dot(load(f + idx), load(f + idx), {}, {Precision::ieee}));
    store(qi + idx, dot(load(q + idx), load(q + idx)));
    store(f + idx, dot(x, x, zeros({16, 16}, f32)));
  });
  EXPECT_TRUE(contains(ir, "tile.dot %") &&
              contains(ir, ": tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>"));
  EXPECT_TRUE(contains(ir, "precision = tf32 : tensor<16x16xf32>"));
  EXPECT_TRUE(contains(ir, ": tensor<16x16xi8> * tensor<16x16xi8> -> tensor<16x16xi32>"));
}

TEST(DslOps, PrintAndAssert) {
  std::string ir = trace_ir([](Ptr<i32> p) {
    Tensor x = load(p + arange(0, 8));
    print("x = ", {x, program_id(0)});
    print("bits ", {x}, /*hex=*/true);
    device_assert(x >= 0, "x must be non-negative");
  });
  EXPECT_TRUE(contains(ir, "tile.print \"x = \", %"));
  EXPECT_TRUE(contains(ir, "tile.print \"bits \" hex, %"));
  EXPECT_TRUE(contains(ir, "tile.assert %") && contains(ir, "\"x must be non-negative\""));
}

TEST(DslOps, ConfigValuesAreTraceTimeConstants) {
  Kernel kernel = jit(
      [](const Config &cfg, Ptr<f32> p) {
        const int64_t BLOCK = cfg["BLOCK"];
        if (cfg["DOUBLE"])
          store(p + arange(0, BLOCK), 2.0);
        else
          store(p + arange(0, BLOCK), 1.0);
      },
      "configured");
  kernel.defaults({{"BLOCK", 64}, {"DOUBLE", 0}});
  std::string a = kernel.trace().str(), b = kernel.trace({{"BLOCK", 128}, {"DOUBLE", 1}}).str();
  EXPECT_TRUE(contains(a, "tile.range 0, 64") && contains(a, "1.000000e+00"));
  EXPECT_TRUE(contains(b, "tile.range 0, 128") && contains(b, "2.000000e+00"));
}

TEST(DslOps, SpecializationMarksArguments) {
  Kernel kernel = jit([](Ptr<f32> p, Int n, Int stride) { store(p + n * stride, 1.0); }, "spec");
  Specialization spec;
  spec.args = {{true, false}, {true, false}, {false, true}};
  EXPECT_EQ(spec.str(), "dd1");
  std::string ir = kernel.trace({}, spec).str();
  EXPECT_TRUE(contains(ir, "%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}"));
  EXPECT_TRUE(contains(ir, "%arg1: i32 {tile.divisibility = 16 : i32, tile.positive}"));
  // stride == 1 became a constant: no multiplication by %arg2.
  EXPECT_FALSE(contains(ir, "arith.muli %arg1, %arg2"));

  // What launches see: 4040 is a multiple of 8, not of 16.
  std::vector<Arg> args{Arg::device_pointer(4096, 64), Arg(int32_t(4040)), Arg(int32_t(48))};
  Specialization seen = kernel.specialize(args);
  EXPECT_EQ(seen.str(), "d8d");
  EXPECT_TRUE(contains(kernel.trace({}, seen).str(), "%arg1: i32 {tile.divisibility = 8 : i32, tile.positive}"));
  args[1] = Arg(int32_t(4044));
  EXPECT_EQ(kernel.specialize(args).str(), "d.d");
  // Zero and negative integers are told apart as nonpositive, with their
  // divisibility (zero's is everything's: a zero stride keeps alignment).
  args[1] = Arg(int32_t(0));
  args[2] = Arg(int32_t(-40));
  seen = kernel.specialize(args);
  EXPECT_EQ(seen.str(), "dzy");
  ir = kernel.trace({}, seen).str();
  EXPECT_TRUE(contains(ir, "%arg1: i32 {tile.divisibility = 16 : i32}, %arg2: i32 {tile.divisibility = 8 : i32})"));
  args[2] = Arg(int32_t(-5));
  EXPECT_EQ(kernel.specialize(args).str(), "dzn");
}

TEST(DslOps, LocationsAreTheUsersLines) {
  Kernel kernel = jit([](Ptr<f32> p) { store(p, 1.0); }, "located");
  int line = __LINE__ - 1;
  std::string ir = kernel.trace().str(/*locations=*/true);
  EXPECT_TRUE(contains(ir, std::string(__FILE__) + ":" + std::to_string(line)));
}
