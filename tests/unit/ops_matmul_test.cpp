// The matmul op on the interpreter: both operand orders, ragged sizes (K
// not a multiple of BLOCK_K), batches with a broadcast operand, every
// epilogue (alpha, bias, activations, residual, in place), f32/f16/bf16,
// split-K, descriptors (the output's too), persistent programs, the tuning task's space, and
// argument errors; against double-precision references.
#include "TraceTestSupport.h"
#include "tests/common/OpsTestSupport.h"

#include <kiln/ops/library.h>

#include "ops/lib/MatmulPlan.h"
#include "ops/lib/MatmulProblem.h"
#include "ops/lib/Workspace.h"

using namespace kiln;
using namespace kiln::ops;
using kiln::testing::HostTensor;
using kiln::testing::occurrences;

namespace {

Stream cpu() { return Stream(Device::interp()); }

/// A small tile, so that the interpreter's tests stay quick and cover edges.
Config small() {
  return {{"BLOCK_M", 16}, {"BLOCK_N", 32}, {"BLOCK_K", 16}, {"GROUP_M", 2}, {"num_warps", 4}, {"num_stages", 2}};
}

/// The large tile the compile-only tests check: 128x256x64 on two
/// warpgroups, three stages.
Config large() {
  return {{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"num_warps", 8}, {"num_stages", 3}};
}

/// A 512x512x256 bf16 product's tuning task for `arch`, with the tensors
/// its views point at: what the compile-only tests compile configs of.
struct Bf16Product {
  HostTensor a = HostTensor::random(DType::bf16, {512, 256}, 43), b = HostTensor::random(DType::bf16, {256, 512}, 44);
  HostTensor out = HostTensor::poisoned(DType::bf16, {512, 512});
  autotune::Task task;
  explicit Bf16Product(const std::string &arch)
      : task(tuning_task({a.view(), b.view(), out.view(), {}, {}, 1.0, Activation::none}, cpu(), arch)) {}
};

/// View `t` as its transpose's storage: t holds [cols, rows] row-major, the
/// view is [rows, cols] with strides [1, rows].
TensorView transposed(HostTensor &t) {
  TensorView v = t.view();
  v.shape = {t.shape()[1], t.shape()[0]};
  v.strides = {1, t.shape()[1]};
  return v;
}

double activate(Activation act, double v) {
  switch (act) {
  case Activation::none: return v;
  case Activation::relu: return std::max(v, 0.0);
  case Activation::gelu: return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  case Activation::silu: return v / (1 + std::exp(-v));
  }
  return v;
}

/// Multiplies random [M, K] and [K, N] operands of type `t`, each stored
/// as is or transposed (`aT`, `bT`), with `config`, and checks the f32
/// product against double-precision sums.
void expectProduct(DType t, int64_t M, int64_t N, int64_t K, bool aT, bool bT, const Config &config) {
  HostTensor a = aT ? HostTensor::random(t, {K, M}, 11) : HostTensor::random(t, {M, K}, 11);
  HostTensor b = bT ? HostTensor::random(t, {N, K}, 12) : HostTensor::random(t, {K, N}, 12);
  HostTensor out = HostTensor::poisoned(DType::f32, {M, N});
  TensorView av = aT ? transposed(a) : a.view(), bv = bT ? transposed(b) : b.view();
  matmul({av, bv, out.view(), {}, {}, 1.0, Activation::none}, cpu(), config);
  out.expect_near(
      [&](const std::vector<int64_t> &at) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += (aT ? a.at({k, at[0]}) : a.at({at[0], k})) * (bT ? b.at({at[1], k}) : b.at({k, at[1]}));
        return s;
      },
      1e-4);
}

} // namespace

TEST(OpsMatmul, BothOperandOrdersAndRaggedSizes) {
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (auto [M, N, K] : std::vector<std::array<int64_t, 3>>{{16, 32, 16}, {37, 45, 29}, {64, 96, 80}})
      for (bool aT : {false, true})
        for (bool bT : {false, true})
          expectProduct(t, M, N, K, aT, bT, small());
}

TEST(OpsMatmul, DescriptorsReadBothOperandOrders) {
  // Sizes whose row strides are multiples of 16 bytes (what descriptors
  // need), ragged against the tile; SPLIT_K splits the descriptor kernel's K
  // loop too.
  const int64_t M = 40, N = 48, K = 56;
  for (DType t : {DType::f16, DType::bf16})
    for (bool aT : {false, true})
      for (bool bT : {false, true})
        for (int64_t splits : {1, 2})
          expectProduct(t, M, N, K, aT, bT, Config(small()).set("DESCRIPTORS", 1).set("SPLIT_K", splits));
}

TEST(OpsMatmul, DescriptorsNeedOperandsTheCopyEngineCanRead) {
  HostTensor a = HostTensor::random(DType::f16, {16, 20}, 1), b = HostTensor::random(DType::f16, {20, 32}, 2);
  HostTensor out = HostTensor::poisoned(DType::f32, {16, 32});
  // A's rows are 40 bytes apart: not a multiple of 16.
  EXPECT_THROW(matmul({a.view(), b.view(), out.view()}, cpu(), Config(small()).set("DESCRIPTORS", 1)), Error);
  EXPECT_THROW(matmul({a.view(), b.view(), out.view()}, cpu(), Config(small()).set("DESCRIPTORS", 2)), Error);
}

TEST(OpsMatmul, OutputThroughADescriptor) {
  // OUT_DESCRIPTOR=1 (the default with descriptors, unsplit) writes the
  // tile through out's descriptor, clipped at the ragged edges; it also
  // goes with pointer loads. Out must be a row-major matrix the copy engine
  // can write, and the product unsplit.
  const int64_t M = 40, N = 48, K = 56;
  for (DType t : {DType::f16, DType::bf16})
    for (bool bT : {false, true}) {
      expectProduct(t, M, N, K, false, bT, Config(small()).set("DESCRIPTORS", 1).set("OUT_DESCRIPTOR", 1));
      expectProduct(t, M, N, K, false, bT, Config(small()).set("DESCRIPTORS", 0).set("OUT_DESCRIPTOR", 1));
    }
  HostTensor a = HostTensor::random(DType::f16, {16, 32}, 1), b = HostTensor::random(DType::f16, {32, 18}, 2);
  HostTensor narrow = HostTensor::poisoned(DType::f32, {16, 18}); // rows 72 bytes apart
  EXPECT_THROW(matmul({a.view(), b.view(), narrow.view()}, cpu(), Config(small()).set("OUT_DESCRIPTOR", 1)), Error);
  HostTensor c = HostTensor::random(DType::f16, {32, 32}, 3), out = HostTensor::poisoned(DType::f32, {16, 32});
  EXPECT_THROW(matmul({a.view(), c.view(), out.view()}, cpu(), Config(small()).set("OUT_DESCRIPTOR", 2)), Error);
  EXPECT_THROW(
      matmul({a.view(), c.view(), out.view()}, cpu(), Config(small()).set("OUT_DESCRIPTOR", 1).set("SPLIT_K", 2)),
      Error);
}

TEST(OpsMatmul, CopyEngineStoresStageTheTileBesideTheRings) {
  // On sm_90a the default tile (128x256, three stages: 192 KB of rings)
  // stores its bf16 output through the copy engine: the rest of shared
  // memory stages 128 columns at a time, so two rounds of two boxes, each
  // fenced for the async proxy and committed as a bulk group; the program
  // stays within 227 KB and ptxas assembles it without spilling. With
  // OUT_DESCRIPTOR=0 the stores are the threads' own.
  Bf16Product product("sm_90a");
  autotune::Task &task = product.task;
  Config tile = large().set("DESCRIPTORS", 1);
  for (int64_t specialized : {0, 1}) {
    SCOPED_TRACE("PERSISTENT=warp_specialize=" + std::to_string(specialized));
    CompiledKernel kernel = task.compile(Config(tile).set("PERSISTENT", specialized).set("warp_specialize", specialized));
    EXPECT_EQ(occurrences(kernel.ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"), 4);
    EXPECT_EQ(occurrences(kernel.ptx, "cp.async.bulk.commit_group;"), 2);
    EXPECT_GE(occurrences(kernel.ptx, "fence.proxy.async.shared::cta;"), 2);
    EXPECT_GE(occurrences(kernel.ptx, "cp.async.bulk.wait_group.read 0;"), 3);
    EXPECT_LE(kernel.shared_memory, 227 * 1024);
    EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
  }
  // Two programs a multiprocessor: each stages within its half of the
  // multiprocessor's 228 KB (less the 1 KB the hardware keeps of each).
  Config two{{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64},      {"GROUP_M", 8},
             {"num_warps", 4},  {"num_stages", 2}, {"DESCRIPTORS", 1}, {"min_blocks_per_sm", 2}};
  CompiledKernel halves = task.compile(two);
  EXPECT_EQ(occurrences(halves.ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"), 2);
  EXPECT_LE(halves.shared_memory, 114 * 1024 - 1024);
  CompiledKernel threads = task.compile(Config(tile).set("OUT_DESCRIPTOR", 0));
  EXPECT_EQ(occurrences(threads.ptx, ".global.shared::cta.bulk_group"), 0);
  EXPECT_LT(threads.shared_memory, 200 * 1024);
}

TEST(OpsMatmul, PersistentProgramsWalkEveryTileWithTheirEpilogues) {
  // The interpreter has one multiprocessor: PERSISTENT=1 makes one program
  // walk all 3x2 ragged tiles, PERSISTENT=4 four programs (some with two
  // tiles, the grid capped at the tile count by PERSISTENT=8); pointer
  // loads and descriptors, with a batch on the grid's second axis.
  const int64_t M = 40, N = 48, K = 56;
  for (int64_t programs : {1, 4, 8})
    for (int64_t descriptors : {0, 1})
      for (int64_t batches : {1, 2}) {
        if (descriptors && batches > 1)
          continue; // descriptors describe 2-D operands
        std::vector<int64_t> as{M, K}, bs{K, N}, os{M, N};
        if (batches > 1) {
          as.insert(as.begin(), batches);
          bs.insert(bs.begin(), batches);
          os.insert(os.begin(), batches);
        }
        HostTensor a = HostTensor::random(DType::bf16, as, 13), b = HostTensor::random(DType::bf16, bs, 14);
        HostTensor bias = HostTensor::random(DType::f32, {N}, 15);
        HostTensor out = HostTensor::poisoned(DType::f32, os);
        matmul({a.view(), b.view(), out.view(), bias.view(), {}, 0.5, Activation::relu}, cpu(),
               Config(small()).set("PERSISTENT", programs).set("DESCRIPTORS", descriptors));
        out.expect_near(
            [&](const std::vector<int64_t> &at) {
              double sum = 0;
              for (int64_t k = 0; k < K; ++k) {
                std::vector<int64_t> ai = at, bi = at; // [.., row, k] and [.., k, col]
                ai.back() = k;
                bi[bi.size() - 2] = k;
                sum += a.at(ai) * b.at(bi);
              }
              return std::max(0.5 * sum + bias.at({at.back()}), 0.0);
            },
            1e-4);
      }
}

TEST(OpsMatmul, PersistentCopyEngineKernelKeepsItsDotInFlightAcrossTiles) {
  // On sm_90a the persistent loop over several tiles' K steps, with
  // copy-engine loads, keeps each wgmma in flight into the next step
  // (wait_group 1), the tile's epilogue waits for the last one
  // (wait_group 0), the first step of a tile restarts the accumulator
  // through wgmma's scale-d (no select of the accumulator's registers),
  // and ptxas assembles it.
  Bf16Product product("sm_90a");
  autotune::Task &task = product.task;
  CompiledKernel persistent = task.compile(large().set("DESCRIPTORS", 1).set("PERSISTENT", 1));
  EXPECT_NE(persistent.ptx.find("cp.async.bulk.tensor"), std::string::npos);
  EXPECT_NE(persistent.ptx.find("wgmma.wait_group.sync.aligned 1;"), std::string::npos);
  EXPECT_NE(persistent.ptx.find("wgmma.wait_group.sync.aligned 0;"), std::string::npos);
  // (A few selects pick the tile arithmetic's reciprocals; one per accumulator register would be 128.)
  EXPECT_LT(occurrences(persistent.ptx, "selp.f32"), 16u) << "the accumulator is reset by selects";
  EXPECT_GT(persistent.registers, 0);
}

TEST(OpsMatmul, PersistentMmaSyncKernelCarriesItsPointersAndRestartsByABranch) {
  // On sm_80 the persistent loop with pointer loads forms a tile's operand
  // pointers only at the previous tile's last step (a branch the pipeliner
  // runs ahead: the loads stay cp.async copies), wraps rows and columns by
  // a subtraction (no runtime remainders), and restarts the accumulator by
  // a branch whose first mma.sync of each piece reads a zero register (no
  // select of the accumulator's 128 registers).
  Bf16Product product("sm_80");
  autotune::Task &task = product.task;
  CompiledKernel persistent = task.compile(large().set("PERSISTENT", 1));
  EXPECT_EQ(occurrences(persistent.ptx, "cp.async.cg.shared.global"), 36u) << "12 copies a step: two prologue steps and the loop's";
  EXPECT_EQ(occurrences(persistent.ptx, "rem.s32"), 0u);
  EXPECT_EQ(occurrences(persistent.ptx, "{z, z, z, z}"), 32u) << "the first K step from zero: one per 16x8 piece";
  EXPECT_LT(occurrences(persistent.ptx, "selp.f32"), 16u) << "the accumulator is reset by selects";
  EXPECT_GT(persistent.registers, 0);
}

TEST(OpsMatmul, WarpSpecializedCopyEngineKernelsHaveAProducerWarpgroup) {
  // warp_specialize=1 on sm_90a: the copy-engine kernels (one tile a
  // program, and persistent) run a producer warpgroup past the two
  // consumer warpgroups: 384 threads, the producer gives registers up
  // (setmaxnreg.dec 40) and its first thread issues the copies and exits,
  // the consumers take them (setmaxnreg.inc 232) and hand slots back with
  // mbarrier.arrive; ptxas honours setmaxnreg and assembles them without
  // spilling.
  Bf16Product product("sm_90a");
  autotune::Task &task = product.task;
  Config tile = large().set("DESCRIPTORS", 1).set("warp_specialize", 1);
  for (int64_t persistent : {0, 1}) {
    SCOPED_TRACE("PERSISTENT=" + std::to_string(persistent));
    CompiledKernel kernel = task.compile(Config(tile).set("PERSISTENT", persistent));
    EXPECT_EQ(kernel.num_warps, 12);
    EXPECT_NE(kernel.ptx.find(".maxntid 384, 1, 1"), std::string::npos);
    EXPECT_NE(kernel.ptx.find("setmaxnreg.dec.sync.aligned.u32 40;"), std::string::npos);
    EXPECT_NE(kernel.ptx.find("setmaxnreg.inc.sync.aligned.u32 232;"), std::string::npos);
    EXPECT_EQ(kernel.ptxas_log.find("setmaxnreg"), std::string::npos) << kernel.ptxas_log;
    EXPECT_NE(kernel.ptx.find("exit;"), std::string::npos);
    EXPECT_NE(kernel.ptx.find("mbarrier.arrive.shared::cta.b64"), std::string::npos);
    EXPECT_NE(kernel.ptx.find("cp.async.bulk.tensor"), std::string::npos);
    EXPECT_NE(kernel.ptx.find("wgmma.wait_group.sync.aligned 1;"), std::string::npos);
    EXPECT_GT(kernel.registers, 0);
    EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
  }
  // The 64x64 tile (128-row products' default): one consumer warpgroup of
  // m64 wgmma beside the producer, eight stages, the copy engine storing.
  Config tile64{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"BLOCK_K", 64}, {"GROUP_M", 8},          {"num_warps", 4},
                {"num_stages", 8}, {"DESCRIPTORS", 1}, {"warp_specialize", 1}, {"OUT_DESCRIPTOR", 1}};
  CompiledKernel kernel64 = task.compile(tile64);
  EXPECT_EQ(kernel64.num_warps, 8);
  EXPECT_NE(kernel64.ptx.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"), std::string::npos);
  EXPECT_NE(kernel64.ptx.find("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"), std::string::npos);
  EXPECT_EQ(kernel64.spill_stores, 0) << kernel64.ptxas_log;
  // Two programs a multiprocessor, one consumer warpgroup each: 256
  // threads a program, 128 registers at entry, the consumers grow to 216.
  // (Their stores are the threads' own: staging the tile for the copy
  // engine keeps the converted tile live beside the carried accumulator,
  // which spills there.)
  Config two{{"BLOCK_M", 128},   {"BLOCK_N", 128},       {"BLOCK_K", 64},           {"GROUP_M", 8},
             {"num_warps", 4},   {"num_stages", 2},      {"DESCRIPTORS", 1},        {"warp_specialize", 1},
             {"min_blocks_per_sm", 2}, {"OUT_DESCRIPTOR", 0}};
  CompiledKernel kernel = task.compile(Config(two).set("PERSISTENT", 2));
  EXPECT_EQ(kernel.num_warps, 8);
  EXPECT_NE(kernel.ptx.find(".minnctapersm 2"), std::string::npos);
  EXPECT_NE(kernel.ptx.find("setmaxnreg.inc.sync.aligned.u32 216;"), std::string::npos);
  EXPECT_EQ(kernel.ptxas_log.find("setmaxnreg"), std::string::npos) << kernel.ptxas_log;
  EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
  // A producer warpgroup must fit: 32 warps a program, 2048 threads a multiprocessor.
  EXPECT_THROW(task.compile(Config(two).set("num_warps", 32)), Error);
  try {
    task.compile(Config(two).set("num_warps", 16).set("min_blocks_per_sm", 4));
    ADD_FAILURE() << "four programs of 16 + 4 warps accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("producer warpgroup"), std::string::npos) << e.what();
  }
}

TEST(OpsMatmul, PersistentNeedsWholeTilesAndASensibleCount) {
  HostTensor a = HostTensor::random(DType::f16, {16, 64}, 1), b = HostTensor::random(DType::f16, {64, 32}, 2);
  HostTensor out = HostTensor::poisoned(DType::f32, {16, 32});
  EXPECT_THROW(matmul({a.view(), b.view(), out.view()}, cpu(), Config(small()).set("PERSISTENT", 1).set("SPLIT_K", 2)),
               Error);
  EXPECT_THROW(matmul({a.view(), b.view(), out.view()}, cpu(), Config(small()).set("PERSISTENT", -1)), Error);
  EXPECT_THROW(matmul({a.view(), b.view(), out.view()}, cpu(), Config(small()).set("PERSISTENT", 33)), Error);
  // A product whose default tile splits K (16x64x16384, see
  // SkinnyProductsSplitKByDefault) runs unsplit when asked for persistent
  // programs alone.
  HostTensor x = HostTensor::random(DType::f16, {16, 16384}, 3), y = HostTensor::random(DType::f16, {16384, 64}, 4);
  HostTensor product = HostTensor::poisoned(DType::f32, {16, 64});
  matmul({x.view(), y.view(), product.view()}, cpu(), Config{{"PERSISTENT", 1}});
  product.expect_near(
      [&](const std::vector<int64_t> &at) {
        double s = 0;
        for (int64_t k = 0; k < 16384; ++k)
          s += x.at({at[0], k}) * y.at({k, at[1]});
        return s;
      },
      5e-4);
}

TEST(OpsMatmul, Fp8OperandsWithTheirScales) {
  // fp8 operands, K-major (a row-major, b the transpose of an [N][K]
  // tensor), either kind on each side; scales of the tensors, of a's rows
  // and b's columns; ragged sizes, descriptors, split-K and persistent
  // programs; against double sums of the fp8 values (whose products f32
  // holds exactly) times the scales.
  struct Case {
    DType ta, tb, out;
    int64_t M, N, K;
    bool rows, columns;
    Config config;
  };
  const Config tile = Config(small()).set("BLOCK_K", 32);
  for (const Case &c : {Case{DType::f8e4m3, DType::f8e4m3, DType::f32, 32, 64, 64, false, false, tile},
                        Case{DType::f8e4m3, DType::f8e5m2, DType::bf16, 37, 45, 80, true, true, tile},
                        Case{DType::f8e5m2, DType::f8e4m3, DType::f16, 40, 48, 96, true, false,
                             Config(tile).set("DESCRIPTORS", 1).set("SPLIT_K", 2)},
                        Case{DType::f8e4m3, DType::f8e4m3, DType::f32, 48, 64, 64, false, true,
                             Config(tile).set("DESCRIPTORS", 1).set("PERSISTENT", 1)}}) {
    SCOPED_TRACE(std::string(name(c.ta)) + " x " + std::string(name(c.tb)) + " -> " + std::string(name(c.out)) + ", " + std::to_string(c.M) +
                 "x" + std::to_string(c.N) + "x" + std::to_string(c.K));
    HostTensor a = HostTensor::random(c.ta, {c.M, c.K}, 21), b = HostTensor::random(c.tb, {c.N, c.K}, 22);
    HostTensor sa = HostTensor::random(DType::f32, {c.rows ? c.M : 1}, 23, 0.25, 2);
    HostTensor sb = HostTensor::random(DType::f32, {c.columns ? c.N : 1}, 24, 0.25, 2);
    HostTensor out = HostTensor::poisoned(c.out, {c.M, c.N});
    MatmulArgs args{a.view(), transposed(b), out.view()};
    args.scale_a = sa.view();
    args.scale_b = sb.view();
    matmul(args, cpu(), c.config);
    out.expect_near(
        [&](const std::vector<int64_t> &at) {
          double sum = 0;
          for (int64_t k = 0; k < c.K; ++k)
            sum += a.at({at[0], k}) * b.at({at[1], k});
          return sum * sa.at({c.rows ? at[0] : 0}) * sb.at({c.columns ? at[1] : 0});
        },
        c.out == DType::f32 ? 1e-5 : c.out == DType::bf16 ? 1e-2 : 2e-3);
  }
  // Scales of 16-bit operands too (an epilogue's multiply): the same sums.
  HostTensor a = HostTensor::random(DType::bf16, {16, 32}, 25), b = HostTensor::random(DType::bf16, {32, 32}, 26);
  HostTensor sa = HostTensor::random(DType::f32, {16}, 27), out = HostTensor::poisoned(DType::f32, {16, 32});
  MatmulArgs args{a.view(), b.view(), out.view()};
  args.scale_a = sa.view();
  matmul(args, cpu(), small());
  out.expect_near(
      [&](const std::vector<int64_t> &at) {
        double sum = 0;
        for (int64_t k = 0; k < 32; ++k)
          sum += a.at({at[0], k}) * b.at({k, at[1]});
        return sum * sa.at({at[0]});
      },
      1e-5);
}

TEST(OpsMatmul, Fp8BlockScales) {
  // DeepSeek-style block scales: a's one a row and 128 K elements ([M,
  // ceil(K / 128)]), b's one a 128 x 128 block ([ceil(K / 128), ceil(N /
  // 128)], here the transpose of an [N / 128, K / 128] tensor, as b is of
  // its [N, K] one); each K step's product scaled before it joins the sum.
  // K and N not multiples of 128 (partial last blocks), steps of 32 and
  // 64 elements, pointer loads and descriptors, split-K (its chunks scaled
  // as they are summed), persistent programs, tiles in one block of
  // columns and across two; against double sums.
  struct Case {
    DType out;
    int64_t M, N, K;
    Config config;
  };
  const Config tile = Config(small()).set("BLOCK_K", 32);
  for (const Case &c : {Case{DType::f32, 37, 200, 300, tile},
                        Case{DType::bf16, 40, 160, 384, Config(tile).set("BLOCK_K", 64).set("DESCRIPTORS", 1)},
                        Case{DType::f32, 33, 136, 320, Config(tile).set("SPLIT_K", 3)},
                        Case{DType::f32, 48, 256, 256, Config(tile).set("DESCRIPTORS", 1).set("PERSISTENT", 1)},
                        Case{DType::f32, 48, 256, 256, Config(tile).set("PERSISTENT", 1)},
                        Case{DType::f32, 20, 300, 200, Config(tile).set("BLOCK_N", 256)}}) {
    SCOPED_TRACE(std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) + " " + c.config.str());
    const int64_t kBlocks = (c.K + 127) / 128, nBlocks = (c.N + 127) / 128;
    HostTensor a = HostTensor::random(DType::f8e4m3, {c.M, c.K}, 41), b = HostTensor::random(DType::f8e4m3, {c.N, c.K}, 42);
    HostTensor sa = HostTensor::random(DType::f32, {c.M, kBlocks}, 43, 0.25, 2);
    HostTensor sbT = HostTensor::random(DType::f32, {nBlocks, kBlocks}, 44, 0.25, 2);
    HostTensor out = HostTensor::poisoned(c.out, {c.M, c.N});
    MatmulArgs args{a.view(), transposed(b), out.view()};
    args.scale_a = sa.view();
    args.scale_b = transposed(sbT);
    matmul(args, cpu(), c.config);
    out.expect_near(
        [&](const std::vector<int64_t> &at) {
          double sum = 0;
          for (int64_t k = 0; k < c.K; ++k)
            sum += a.at({at[0], k}) * b.at({at[1], k}) * sa.at({at[0], k / 128}) * sbT.at({at[1] / 128, k / 128});
          return sum;
        },
        c.out == DType::f32 ? 1e-5 : 1e-2);
  }
}

TEST(OpsMatmul, Fp8SumsPromotedWithoutFastAccumulation) {
  // fast_accumulation = false: each K step's sum joins the f32 accumulator
  // (per-tensor and row scales; pointer loads, descriptors, persistent),
  // on the interpreter against double sums; on sm_90a the 128x128 tile of
  // two warpgroups, each step's wgmma sum from zero, no spills.
  const Config tile = Config(small()).set("BLOCK_K", 32);
  for (const Config &config : {tile, Config(tile).set("DESCRIPTORS", 1), Config(tile).set("PERSISTENT", 1)}) {
    SCOPED_TRACE(config.str());
    HostTensor a = HostTensor::random(DType::f8e4m3, {37, 96}, 71), b = HostTensor::random(DType::f8e4m3, {40, 96}, 72);
    HostTensor sa = HostTensor::random(DType::f32, {37}, 73, 0.25, 2), sb = HostTensor::random(DType::f32, {1}, 74, 0.25, 2);
    HostTensor out = HostTensor::poisoned(DType::f32, {37, 40});
    MatmulArgs args{a.view(), transposed(b), out.view()};
    args.scale_a = sa.view(), args.scale_b = sb.view(), args.fast_accumulation = false;
    matmul(args, cpu(), config);
    out.expect_near(
        [&](const std::vector<int64_t> &at) {
          double sum = 0;
          for (int64_t k = 0; k < 96; ++k)
            sum += a.at({at[0], k}) * b.at({at[1], k});
          return sum * sa.at({at[0]}) * sb.at({0});
        },
        1e-5);
  }
  HostTensor a = HostTensor::random(DType::f8e4m3, {2048, 1024}, 75), b = HostTensor::random(DType::f8e4m3, {2048, 1024}, 76);
  HostTensor out = HostTensor::poisoned(DType::bf16, {2048, 2048});
  MatmulArgs args{a.view(), transposed(b), out.view()};
  args.fast_accumulation = false;
  autotune::Task task = tuning_task(args, cpu(), "sm_90a");
  const Config seed = task.seeds.at(0);
  EXPECT_EQ(seed["BLOCK_N"], 128) << seed.str();
  EXPECT_NE(task.key.find(",promoted"), std::string::npos) << task.key;
  CompiledKernel kernel = task.compile(Config(seed).set("DESCRIPTORS", 1));
  EXPECT_NE(kernel.ptx.find("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"), std::string::npos);
  EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
}

TEST(OpsMatmul, Fp8DefaultTilesRunOnWgmmaFromTheCopyEngine) {
  // The default plan of a large fp8 product with row and column scales on
  // sm_90a, through the whole compiler and ptxas: both operands by the copy
  // engine (B's [N][K] blocks transposed in the kernel: K-major, as fp8
  // wgmma reads them), k32 e4m3 x e5m2 wgmma, no spills.
  const int64_t M = 2048, N = 2048, K = 1024;
  HostTensor a = HostTensor::random(DType::f8e4m3, {M, K}, 31), b = HostTensor::random(DType::f8e5m2, {N, K}, 32);
  HostTensor sa = HostTensor::random(DType::f32, {M}, 33), sb = HostTensor::random(DType::f32, {N}, 34);
  HostTensor out = HostTensor::poisoned(DType::bf16, {M, N});
  MatmulArgs args{a.view(), transposed(b), out.view()};
  args.scale_a = sa.view();
  args.scale_b = sb.view();
  autotune::Task task = tuning_task(args, cpu(), "sm_90a");
  const Config seed = task.seeds.at(0);
  EXPECT_EQ(seed["BLOCK_K"], 128) << seed.str();
  EXPECT_EQ(seed["warp_specialize"], 1) << seed.str();
  // (Descriptors are the default on a Hopper GPU; a host stream's plan
  // names them.)
  CompiledKernel kernel = task.compile(Config(seed).set("DESCRIPTORS", 1));
  EXPECT_NE(kernel.ptx.find("k32.f32.e4m3.e5m2"), std::string::npos);
  EXPECT_NE(kernel.ptx.find("cp.async.bulk.tensor.2d"), std::string::npos);
  EXPECT_EQ(kernel.ptx.find("cp.async.cg"), std::string::npos);
  // A column's scales take 64 registers a thread of the 128x256 tile's
  // epilogue, beside its 128 accumulators: ptxas parks four registers
  // there, once a tile. With the tensors' scales, none.
  EXPECT_LE(kernel.spill_stores, 16) << kernel.ptxas_log;
  HostTensor one = HostTensor::random(DType::f32, {1}, 35);
  args.scale_a = args.scale_b = one.view();
  autotune::Task perTensor = tuning_task(args, cpu(), "sm_90a");
  kernel = perTensor.compile(Config(perTensor.seeds.at(0)).set("DESCRIPTORS", 1));
  EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
  EXPECT_NE(kernel.ptx.find("k32.f32.e4m3.e5m2"), std::string::npos);
  // Block scales: each 128-deep K step's wgmma sum starts from zero and
  // joins the f32 accumulator scaled by its row's and block's scales, on
  // 128x128 tiles of two warpgroups (64 accumulators a thread and as many
  // for the step's sum), persistent programs walking them.
  HostTensor blocksA = HostTensor::random(DType::f32, {M, K / 128}, 36);
  HostTensor blocksB = HostTensor::random(DType::f32, {K / 128, N / 128}, 37);
  args.scale_a = blocksA.view();
  args.scale_b = blocksB.view();
  autotune::Task blockwise = tuning_task(args, cpu(), "sm_90a");
  const Config blockSeed = blockwise.seeds.at(0);
  EXPECT_EQ(blockSeed["BLOCK_N"], 128) << blockSeed.str();
  EXPECT_EQ(blockSeed["num_warps"], 8) << blockSeed.str();
  EXPECT_EQ(blockSeed["PERSISTENT"], 1) << blockSeed.str();
  EXPECT_EQ(blockwise.space.check(blockSeed), "");
  kernel = blockwise.compile(Config(blockSeed).set("DESCRIPTORS", 1));
  EXPECT_NE(kernel.ptx.find("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2"), std::string::npos);
  EXPECT_NE(kernel.ptx.find("cp.async.bulk.tensor.2d"), std::string::npos);
  EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
}

TEST(OpsMatmul, OperandsTheCopyEngineCannotReadArePaddedFirst) {
  // Odd K (rows of 66 bytes in bf16, 65 in fp8) and an A stored [K][M]
  // with M odd: with PAD_OPERANDS=1 each such operand is copied into the
  // workspace with rows padded to 16 bytes, keeping its contiguous
  // dimension, and the product reads the copies through descriptors; also
  // split-K (its partial tiles after the copies) and fp8 (K-major).
  struct Case {
    DType dtype;
    int64_t M, N, K;
    bool aT, bT;
    Config config;
  };
  const Config padded = Config(small()).set("DESCRIPTORS", 1).set("PAD_OPERANDS", 1);
  for (const Case &c : {Case{DType::bf16, 37, 45, 33, false, false, padded},
                        Case{DType::bf16, 37, 45, 33, true, true, padded},
                        Case{DType::f16, 40, 64, 201, false, true, Config(padded).set("SPLIT_K", 2)},
                        Case{DType::f8e4m3, 33, 48, 65, false, true, Config(padded).set("BLOCK_K", 32)}}) {
    SCOPED_TRACE(std::string(name(c.dtype)) + " " + std::to_string(c.M) + "x" + std::to_string(c.N) + "x" +
                 std::to_string(c.K) + (c.aT ? " aT" : "") + (c.bT ? " bT" : "") + " " + c.config.str());
    HostTensor a = c.aT ? HostTensor::random(c.dtype, {c.K, c.M}, 51) : HostTensor::random(c.dtype, {c.M, c.K}, 51);
    HostTensor b = c.bT ? HostTensor::random(c.dtype, {c.N, c.K}, 52) : HostTensor::random(c.dtype, {c.K, c.N}, 52);
    HostTensor out = HostTensor::poisoned(DType::f32, {c.M, c.N});
    MatmulArgs args{c.aT ? transposed(a) : a.view(), c.bT ? transposed(b) : b.view(), out.view()};
    MatmulLaunch plan = prepare_matmul(args, cpu(), c.config);
    // (The copies of the operands the copy engine cannot read, then the
    // product's one or two steps.)
    const size_t copies = !copy_engine_reads(args.a) + !copy_engine_reads(args.b);
    EXPECT_GT(copies, 0u);
    EXPECT_EQ(plan.steps.size(), copies + (c.config.get("SPLIT_K", 1) > 1 ? 2 : 1));
    EXPECT_GT(plan.workspace_bytes, 0u);
    matmul(args, cpu(), c.config);
    out.expect_near(
        [&](const std::vector<int64_t> &at) {
          double s = 0;
          for (int64_t k = 0; k < c.K; ++k)
            s += (c.aT ? a.at({k, at[0]}) : a.at({at[0], k})) * (c.bT ? b.at({at[1], k}) : b.at({k, at[1]}));
          return s;
        },
        5e-5);
  }
  // A call like the last reuses its plan: the copies read its own operands.
  HostTensor a2 = HostTensor::random(DType::bf16, {37, 33}, 59), b2 = HostTensor::random(DType::bf16, {33, 45}, 60);
  HostTensor out2 = HostTensor::poisoned(DType::f32, {37, 45});
  for (int call = 0; call < 2; ++call) {
    HostTensor a1 = HostTensor::random(DType::bf16, {37, 33}, 61 + call);
    matmul({call ? a2.view() : a1.view(), b2.view(), out2.view()}, cpu(), padded);
    out2.expect_near(
        [&](const std::vector<int64_t> &at) {
          double s = 0;
          for (int64_t k = 0; k < 33; ++k)
            s += (call ? a2 : a1).at({at[0], k}) * b2.at({k, at[1]});
          return s;
        },
        1e-5);
  }
  // Aligned operands have nothing to pad; tensor-core products only.
  HostTensor a = HostTensor::random(DType::bf16, {16, 32}, 53), b = HostTensor::random(DType::bf16, {32, 32}, 54);
  HostTensor out = HostTensor::poisoned(DType::f32, {16, 32});
  EXPECT_EQ(prepare_matmul({a.view(), b.view(), out.view()}, cpu(), padded).steps.size(), 1u);
  HostTensor x = HostTensor::random(DType::f32, {16, 33}, 55), y = HostTensor::random(DType::f32, {33, 32}, 56);
  EXPECT_NE(kiln::testing::error_of([&] { matmul({x.view(), y.view(), out.view()}, cpu(), padded); })
                .find("PAD_OPERANDS=1 copies 2-D tensor-core operands"),
            std::string::npos);
  EXPECT_NE(kiln::testing::error_of([&] {
              matmul({x.view(), y.view(), out.view()}, cpu(), Config(small()).set("PAD_OPERANDS", 2));
            }).find("PAD_OPERANDS must be 0 or 1"),
            std::string::npos);
}

TEST(OpsMatmul, PaddedOperandsFeedWgmmaThroughTheCopyEngineOnHopper) {
  // 4096x4096x4097 bf16 (the odd K that fell to element loads): the Hopper
  // tile with padded copies of both operands, through ptxas for sm_90a:
  // the copies, and the product on the copy engine and wgmma.
  const int64_t M = 1024, N = 1024, K = 4097;
  HostTensor a = HostTensor::random(DType::bf16, {M, K}, 57), b = HostTensor::random(DType::bf16, {N, K}, 58);
  HostTensor out = HostTensor::poisoned(DType::bf16, {M, N});
  MatmulArgs args{a.view(), transposed(b), out.view()};
  autotune::Task task = tuning_task(args, cpu(), "sm_90a");
  const Config tile = Config(task.seeds.at(0)).set("DESCRIPTORS", 1).set("PAD_OPERANDS", 1);
  MatmulLaunch plan = prepare_matmul(args, cpu(), tile);
  ASSERT_EQ(plan.steps.size(), 3u);
  for (const MatmulLaunch::Step &step : plan.steps) {
    std::vector<Arg> specialized = step.args;
    for (const MatmulLaunch::Scratch &s : step.workspace)
      specialized[s.argument] = Arg::device_pointer(kWorkspaceAlignment + s.offset, plan.workspace_bytes - s.offset);
    CompiledKernel kernel = step.kernel.compile(step.config, step.kernel.specialize(specialized), "sm_90a");
    EXPECT_EQ(kernel.spill_stores, 0) << kernel.ptxas_log;
  }
  CompiledKernel product = task.compile(tile);
  EXPECT_NE(product.ptx.find("wgmma.mma_async"), std::string::npos);
  EXPECT_NE(product.ptx.find("cp.async.bulk.tensor.2d"), std::string::npos);
}

TEST(OpsMatmul, EmptySumsGiveTheEpilogueOfZero) {
  // K = 0: out = relu(alpha * 0 + bias); descriptors cannot describe it.
  HostTensor a = HostTensor::random(DType::bf16, {8, 0}, 1), b = HostTensor::random(DType::bf16, {0, 16}, 2);
  HostTensor bias = HostTensor::random(DType::f32, {16}, 3);
  HostTensor out = HostTensor::poisoned(DType::f32, {8, 16});
  MatmulArgs args{a.view(), b.view(), out.view(), bias.view(), {}, 1.0, Activation::relu};
  for (int64_t persistent : {0, 1}) { // persistent programs have no K steps to walk the tiles with
    std::fill(out.bytes().begin(), out.bytes().end(), 0xFF);
    matmul(args, cpu(), Config(small()).set("PERSISTENT", persistent));
    out.expect_near([&](const std::vector<int64_t> &at) { return std::max(bias.at({at[1]}), 0.0); }, 1e-6);
  }
  EXPECT_THROW(matmul(args, cpu(), Config(small()).set("DESCRIPTORS", 1)), Error);
}

TEST(OpsMatmul, EpiloguesAndOutputTypes) {
  const int64_t M = 33, N = 40, K = 48;
  for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::silu})
    for (DType outType : {DType::f32, DType::bf16}) {
      HostTensor a = HostTensor::random(DType::bf16, {M, K}, 3), b = HostTensor::random(DType::bf16, {K, N}, 4);
      HostTensor bias = HostTensor::random(DType::f32, {N}, 5), residual = HostTensor::random(outType, {M, N}, 6);
      HostTensor out = HostTensor::poisoned(outType, {M, N});
      matmul({a.view(), b.view(), out.view(), bias.view(), residual.view(), 0.5, act}, cpu(), small());
      out.expect_near(
          [&](const std::vector<int64_t> &at) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k)
              s += a.at({at[0], k}) * b.at({k, at[1]});
            return activate(act, 0.5 * s + bias.at({at[1]})) + residual.at(at);
          },
          outType == DType::f32 ? 2e-5 : 1e-2);
    }
}

TEST(OpsMatmul, ResidualInPlace) {
  const int64_t M = 20, N = 32, K = 16;
  HostTensor a = HostTensor::random(DType::f16, {M, K}, 7), b = HostTensor::random(DType::f16, {K, N}, 8);
  HostTensor out = HostTensor::random(DType::f32, {M, N}, 9);
  HostTensor before = out;
  matmul({a.view(), b.view(), out.view(), {}, out.view(), 1.0, Activation::none}, cpu(), small());
  out.expect_near(
      [&](const std::vector<int64_t> &at) {
        double s = before.at(at);
        for (int64_t k = 0; k < K; ++k)
          s += a.at({at[0], k}) * b.at({k, at[1]});
        return s;
      },
      1e-5);
}

TEST(OpsMatmul, BatchesWithABroadcastOperand) {
  const int64_t B = 3, M = 24, N = 32, K = 40;
  HostTensor a = HostTensor::random(DType::bf16, {B, M, K}, 10), b = HostTensor::random(DType::bf16, {1, K, N}, 11);
  HostTensor out = HostTensor::poisoned(DType::f32, {B, M, N});
  matmul({a.view(), b.view(), out.view(), {}, {}, 1.0, Activation::none}, cpu(), small());
  out.expect_near(
      [&](const std::vector<int64_t> &at) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a.at({at[0], at[1], k}) * b.at({0, k, at[2]});
        return s;
      },
      1e-4);
}

TEST(OpsMatmul, SplitKMatchesForEveryEpilogueBatchAndRaggedK) {
  // K chunks of whole BLOCK_K steps summed by a second kernel: ragged K
  // (the last chunk masked), more splits than steps (empty chunks dropped),
  // batches with a broadcast operand, the epilogue with an in-place residual.
  for (auto [K, splits] : std::vector<std::array<int64_t, 2>>{{64, 2}, {75, 3}, {40, 64}})
    for (Activation act : {Activation::none, Activation::gelu}) {
      const int64_t B = 2, M = 20, N = 36;
      HostTensor a = HostTensor::random(DType::bf16, {B, M, K}, 21), b = HostTensor::random(DType::bf16, {1, K, N}, 22);
      HostTensor bias = HostTensor::random(DType::bf16, {N}, 23), out = HostTensor::random(DType::f32, {B, M, N}, 24);
      HostTensor before = out;
      Config config = small().set("SPLIT_K", splits);
      matmul({a.view(), b.view(), out.view(), bias.view(), out.view(), 0.5, act}, cpu(), config);
      out.expect_near(
          [&](const std::vector<int64_t> &at) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k)
              s += a.at({at[0], at[1], k}) * b.at({0, k, at[2]});
            return activate(act, 0.5 * s + bias.at({at[2]})) + before.at(at);
          },
          1e-4);
    }
}

TEST(OpsMatmul, SkinnyProductsSplitKByDefault) {
  // 16 rows and 64 columns make one 16x64 tile: the default splits K=16384
  // (128 steps of 128) into 2 chunks of 8192 (a chunk keeps at least 8192
  // elements for 16-row tiles). The result is the same whichever way K is cut.
  const int64_t M = 16, N = 64, K = 16384;
  HostTensor a = HostTensor::random(DType::f16, {M, K}, 25), b = HostTensor::random(DType::f16, {N, K}, 26);
  HostTensor out = HostTensor::poisoned(DType::f32, {M, N});
  MatmulArgs args{a.view(), transposed(b), out.view(), {}, {}, 1.0, Activation::none};
  matmul(args, cpu());
  out.expect_near(
      [&](const std::vector<int64_t> &at) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a.at({at[0], k}) * b.at({at[1], k});
        return s;
      },
      5e-4); // 8192 f32 additions, in another order than the reference's
  autotune::Task task = tuning_task(args, cpu(), "sm_90a");
  ASSERT_EQ(task.seeds.size(), 1u); // the default tile, where pattern search starts
  EXPECT_EQ(task.seeds[0]["SPLIT_K"], 2);
  EXPECT_EQ(task.seeds[0]["BLOCK_M"], 16);
  bool splitValid = false;
  for (const Config &c : task.space.valid({}))
    splitValid |= c["SPLIT_K"] > 1;
  EXPECT_TRUE(splitValid);
  CompiledKernel compiled = task.compile(small().set("SPLIT_K", 4).set("BLOCK_K", 64).set("BLOCK_N", 64));
  EXPECT_NE(compiled.ptx.find(".entry"), std::string::npos);
}

TEST(OpsMatmul, ClustersOfPersistentProgramsShareTilesOfBOnTheInterpreter) {
  // cluster_size=2: clusters walk pairs of tiles stacked along M, each
  // program the one of its rank. 3 rows of tiles (the last pair's second
  // tile lies past M: zeros, nothing stored), ragged N and K, both B orders.
  // The interpreter holds one cluster at a time, so one cluster walks all
  // four pairs whatever PERSISTENT asks (several clusters striding over the
  // pairs: the GPU tests, 72 pairs on 66 clusters).
  const int64_t M = 40, N = 48, K = 56;
  for (bool bT : {false, true})
    for (int64_t programs : {1, 4})
      expectProduct(DType::bf16, M, N, K, false, bT,
                    Config(small()).set("DESCRIPTORS", 1).set("PERSISTENT", programs).set("cluster_size", 2));
  // It needs persistent programs reading A and B through descriptors.
  HostTensor a = HostTensor::random(DType::bf16, {M, K}, 1), b = HostTensor::random(DType::bf16, {K, N}, 2);
  HostTensor out = HostTensor::poisoned(DType::f32, {M, N});
  for (const Config &bad : {Config(small()).set("DESCRIPTORS", 1).set("cluster_size", 2),
                            Config(small()).set("PERSISTENT", 1).set("DESCRIPTORS", 0).set("cluster_size", 2)}) {
    try {
      matmul({a.view(), b.view(), out.view()}, cpu(), bad);
      ADD_FAILURE() << bad.str() << " was accepted";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("it needs PERSISTENT > 0 and DESCRIPTORS=1"), std::string::npos) << e.what();
    }
  }
}

TEST(OpsMatmul, ClusteredHopperKernelMulticastsB) {
  // On sm_90a the clustered kernel asks for clusters of two
  // (.reqnctapercluster), multicasts B's half boxes (the tensor map's box
  // 32 of B's 64 K rows) to both programs, hands slots back to both (each
  // step, and the last slot after the loop), and assembles; A stays each
  // program's own. (The hand-back after the loop needs the trip count past
  // the 232-register consumer loop: ptxas spills a word or two, 8 bytes
  // with ptxas 13.0; bench/results/2026-11-26-h200-matmul-clusters.md, call
  // 8, has its speed.)
  Bf16Product product("sm_90a");
  Config tile = large().set("DESCRIPTORS", 1).set("warp_specialize", 1).set("PERSISTENT", 1).set("OUT_DESCRIPTOR", 1);
  CompiledKernel kernel = product.task.compile(Config(tile).set("cluster_size", 2));
  EXPECT_EQ(kernel.cluster_size, 2);
  EXPECT_NE(kernel.ptx.find(".reqnctapercluster 2, 1, 1"), std::string::npos);
  EXPECT_EQ(occurrences(kernel.ptx, "barrier.cluster.arrive.release.aligned"), 2u);
  EXPECT_EQ(occurrences(kernel.ptx, ".multicast::cluster"), 4u) << "B's four 64-column blocks, half of each";
  EXPECT_EQ(occurrences(kernel.ptx, "mapa.shared::cluster.u32"), 4u) << "each step and after the loop, to both";
  ASSERT_EQ(kernel.tensor_maps.size(), 3u);
  std::vector<std::vector<uint32_t>> boxes;
  for (const TensorMapSpec &map : kernel.tensor_maps)
    boxes.push_back(map.box);
  EXPECT_NE(std::find(boxes.begin(), boxes.end(), std::vector<uint32_t>{32, 64}), boxes.end()) << "B: half of K";
  EXPECT_NE(std::find(boxes.begin(), boxes.end(), std::vector<uint32_t>{128, 64}), boxes.end()) << "A: whole";
  EXPECT_LE(kernel.spill_stores, 8) << kernel.ptxas_log;
  // Without clusters none of it.
  CompiledKernel single = product.task.compile(tile);
  EXPECT_EQ(single.cluster_size, 1);
  EXPECT_EQ(single.ptx.find("reqnctapercluster"), std::string::npos);
  EXPECT_EQ(single.ptx.find("multicast"), std::string::npos);
  // Clusters are Hopper's: sm_80 rejects them.
  Bf16Product ampere("sm_80");
  try {
    ampere.task.compile(Config(tile).set("cluster_size", 2));
    ADD_FAILURE() << "a cluster kernel compiled for sm_80";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("needs thread-block clusters"), std::string::npos) << e.what();
  }
}

TEST(OpsMatmul, DefaultTilesAndTheTuningSpace) {
  // The defaults (no config) on the interpreter, and the tuning task's
  // space: configs pruned with reasons, the defaults among the valid ones.
  const int64_t M = 64, N = 64, K = 64;
  HostTensor a = HostTensor::random(DType::bf16, {M, K}, 12), b = HostTensor::random(DType::bf16, {K, N}, 13);
  HostTensor out = HostTensor::poisoned(DType::bf16, {M, N});
  MatmulArgs args{a.view(), b.view(), out.view(), {}, {}, 1.0, Activation::none};
  matmul(args, cpu());
  out.expect_near(
      [&](const std::vector<int64_t> &at) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a.at({at[0], k}) * b.at({k, at[1]});
        return s;
      },
      1e-2);
  autotune::Task task = tuning_task(args, cpu(), "sm_90a");
  EXPECT_EQ(task.op, "matmul");
  EXPECT_EQ(task.key, "m=64,n=64,k=64,dtype=bf16,out=bf16");
  EXPECT_DOUBLE_EQ(task.flops, 2.0 * M * N * K);
  std::vector<ConfigSpace::Rejected> rejected;
  std::vector<Config> valid = task.space.valid({}, &rejected);
  EXPECT_FALSE(valid.empty());
  EXPECT_FALSE(rejected.empty());
  bool persistent = false;
  for (const Config &c : valid) {
    EXPECT_LE(c["BLOCK_M"], 64); // never taller than the problem
    EXPECT_GE(c["num_stages"], 2);
    if (c["PERSISTENT"] == 1) { // programs walking the tiles compute whole ones
      persistent = true;
      EXPECT_EQ(c["SPLIT_K"], 1);
    }
    EXPECT_EQ(c["warp_specialize"], 0); // 64-row problems take no copy-engine tiles
  }
  EXPECT_TRUE(persistent);
  EXPECT_EQ(task.seeds.at(0)["PERSISTENT"], 0);
  // The seed names every axis (else pattern search cannot start from it).
  for (const char *axis : {"BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages", "GROUP_M", "SPLIT_K", "PERSISTENT",
                           "warp_specialize"})
    EXPECT_TRUE(task.seeds.at(0).has(axis)) << axis;
  EXPECT_EQ(task.space.check(task.seeds.at(0)), "");
  // A 256-row problem: a producer warpgroup with unsplit tiles the copy
  // engine feeds only (64 rows or more there).
  HostTensor tall = HostTensor::random(DType::bf16, {256, K}, 14), tallOut = HostTensor::poisoned(DType::bf16, {256, N});
  bool specialized = false, specialized64 = false;
  for (const Config &c : tuning_task({tall.view(), b.view(), tallOut.view()}, cpu(), "sm_90a").space.valid({}))
    if (c["warp_specialize"] == 1) {
      specialized = true;
      specialized64 |= c["BLOCK_M"] == 64;
      EXPECT_GE(c["BLOCK_M"], 64);
      EXPECT_EQ(c["SPLIT_K"], 1);
    }
  EXPECT_TRUE(specialized);
  EXPECT_TRUE(specialized64);
  // A 512x512 problem takes the 128x256 tile: on Hopper it runs persistent
  // with a producer warpgroup, and the search starts there; before Hopper,
  // one program a tile.
  HostTensor big = HostTensor::random(DType::bf16, {512, K}, 15), wideB = HostTensor::random(DType::bf16, {K, 512}, 16);
  HostTensor bigOut = HostTensor::poisoned(DType::bf16, {512, 512});
  for (const char *arch : {"sm_90a", "sm_80"}) {
    SCOPED_TRACE(arch);
    autotune::Task bigTask = tuning_task({big.view(), wideB.view(), bigOut.view()}, cpu(), arch);
    const Config &seed = bigTask.seeds.at(0);
    EXPECT_EQ(seed["BLOCK_N"], 256);
    EXPECT_EQ(seed["PERSISTENT"], std::string(arch) == "sm_90a" ? 1 : 0);
    EXPECT_EQ(seed["warp_specialize"], std::string(arch) == "sm_90a" ? 1 : 0);
    EXPECT_EQ(seed["GROUP_M"], std::string(arch) == "sm_90a" ? 16 : 8) << "bands of 16 tile rows for the persistent programs";
    EXPECT_EQ(bigTask.space.check(seed), "");
  }
  // A 128-row product whose 64x64 tiles make a wave takes them (eight
  // stages): on Hopper with a producer warpgroup, one program a tile.
  HostTensor rows128 = HostTensor::random(DType::bf16, {128, K}, 17), out128 = HostTensor::poisoned(DType::bf16, {128, 512});
  const Config seed128 = tuning_task({rows128.view(), wideB.view(), out128.view()}, cpu(), "sm_90a").seeds.at(0);
  EXPECT_EQ(seed128["BLOCK_M"], 64);
  EXPECT_EQ(seed128["BLOCK_N"], 64);
  EXPECT_EQ(seed128["num_stages"], 8);
  EXPECT_EQ(seed128["warp_specialize"], 1);
  EXPECT_EQ(seed128["PERSISTENT"], 0);
  EXPECT_EQ(tuning_task({rows128.view(), wideB.view(), out128.view()}, cpu(), "sm_90a").space.check(seed128), "");
  // More of them than a wave (N = 8192: 256 tiles): 128x64 tiles, six stages.
  HostTensor widestB = HostTensor::random(DType::bf16, {K, 8192}, 18);
  HostTensor out8192 = HostTensor::poisoned(DType::bf16, {128, 8192});
  const Config seedWide = tuning_task({rows128.view(), widestB.view(), out8192.view()}, cpu(), "sm_90a").seeds.at(0);
  EXPECT_EQ(seedWide["BLOCK_M"], 128);
  EXPECT_EQ(seedWide["BLOCK_N"], 64);
  EXPECT_EQ(seedWide["num_stages"], 6);
  EXPECT_EQ(seedWide["warp_specialize"], 1);
  // A config's output passes the check against the default tile's; an
  // unwritten (poisoned) output does not.
  Config other{{"BLOCK_M", 32}, {"BLOCK_N", 32}, {"BLOCK_K", 32}, {"GROUP_M", 8}, {"num_warps", 4}, {"num_stages", 2}};
  Config walking = Config(other).set("SPLIT_K", 1).set("PERSISTENT", 1);
  task.run(walking, cpu());
  EXPECT_EQ(task.check(walking), "");
  task.run(other, cpu());
  EXPECT_EQ(task.check(other), "");
  std::fill(out.bytes().begin(), out.bytes().end(), 0xFF);
  EXPECT_NE(task.check(other), "");
  Config wide{{"BLOCK_M", 256}, {"BLOCK_N", 256}, {"BLOCK_K", 128}, {"GROUP_M", 8}, {"num_warps", 4}, {"num_stages", 5}};
  EXPECT_NE(task.space.check(wide), "");
}

TEST(OpsMatmul, AmdPlansRunOnMatrixCoresWithoutSpills) {
  // On gfx942 and gfx90a the plan space has one or two stages and no
  // NVIDIA-only schedule; the default tile (128x128x32, four wavefronts,
  // two stages) compiles to v_mfma with its accumulators in registers (no
  // scratch, no spills) and its K loop pipelined.
  // Nothing of it has run on an AMD GPU (docs/amd.md).
  if (!has_amd_back_end())
    GTEST_SKIP() << "built without the AMD back end";
  HostTensor w = HostTensor::random(DType::f16, {512, 256}, 45); // an [N][K] weight: B is its transpose
  for (const char *arch : {"gfx942", "gfx90a"}) {
    SCOPED_TRACE(arch);
    Bf16Product product(arch);
    HostTensor x = HostTensor::random(DType::f16, {512, 256}, 46), y = HostTensor::poisoned(DType::f32, {512, 512});
    autotune::Task f16Task = tuning_task({x.view(), transposed(w), y.view(), {}, {}, 1.0, Activation::none}, cpu(), arch);
    for (autotune::Task *task : {&product.task, &f16Task}) {
      const Config &seed = task->seeds.at(0);
      EXPECT_EQ(seed["BLOCK_M"], 128);
      EXPECT_EQ(seed["BLOCK_N"], 128);
      EXPECT_EQ(seed["BLOCK_K"], 32);
      EXPECT_EQ(seed["num_warps"], 4);
      EXPECT_EQ(seed["num_stages"], 2);
      EXPECT_EQ(task->space.check(seed), "");
      for (const Config &c : task->space.valid({}))
        EXPECT_TRUE(c["num_stages"] <= 2 && c["PERSISTENT"] == 0 && c["warp_specialize"] == 0 &&
                    c["cluster_size"] == 1)
            << c.str();
      Config oneStage = seed;
      oneStage.set("num_stages", 1);
      EXPECT_EQ(task->space.check(oneStage), "");
      const CompiledKernel kernel = task->compile(seed), unpipelined = task->compile(oneStage);
      EXPECT_GE(occurrences(kernel.amdgcn, "v_mfma_f32_32x32x8"), 4) << kernel.resources;
      EXPECT_EQ(kernel.spill_stores, 0) << kernel.resources;
      EXPECT_EQ(kernel.stack_frame, 0) << kernel.resources;
      // Pipelined, the global loads are waited for after some of a K step's
      // products (they are the next step's); unpipelined, before them all.
      auto waitsAfterProducts = [](const std::string &amdgcn) {
        const size_t products = amdgcn.find("v_mfma");
        return products != std::string::npos && amdgcn.find("vmcnt", products) != std::string::npos;
      };
      EXPECT_TRUE(waitsAfterProducts(kernel.amdgcn));
      EXPECT_FALSE(waitsAfterProducts(unpipelined.amdgcn));
      EXPECT_EQ(unpipelined.spill_stores, 0) << unpipelined.resources;
    }
  }
  // A skinny, short product: as many rows as it has (16, v_mfma 16x16),
  // 16-wide K steps; the seed is a point of the space.
  HostTensor skinny = HostTensor::random(DType::bf16, {8, 16}, 50), wide = HostTensor::random(DType::bf16, {16, 256}, 51);
  HostTensor skinnyOut = HostTensor::poisoned(DType::bf16, {8, 256});
  autotune::Task skinnyTask =
      tuning_task({skinny.view(), wide.view(), skinnyOut.view(), {}, {}, 1.0, Activation::none}, cpu(), "gfx942");
  const Config &skinnySeed = skinnyTask.seeds.at(0);
  EXPECT_EQ(skinnySeed["BLOCK_M"], 16);
  EXPECT_EQ(skinnySeed["BLOCK_K"], 16);
  EXPECT_EQ(skinnyTask.space.check(skinnySeed), "");
  const CompiledKernel skinnyKernel = skinnyTask.compile(skinnySeed);
  EXPECT_GE(occurrences(skinnyKernel.amdgcn, "v_mfma_f32_16x16x16"), 1) << skinnyKernel.resources;
  EXPECT_EQ(skinnyKernel.spill_stores, 0) << skinnyKernel.resources;
  // f32 runs on FMAs there at ieee precision, with the small FMA tiles.
  HostTensor a = HostTensor::random(DType::f32, {256, 64}, 47), b = HostTensor::random(DType::f32, {64, 256}, 48);
  HostTensor out = HostTensor::poisoned(DType::f32, {256, 256});
  const MatmulArgs f32Args{a.view(), b.view(), out.view(), {}, {}, 1.0, Activation::none};
  autotune::Task f32Task = tuning_task(f32Args, cpu(), "gfx942");
  EXPECT_EQ(f32Task.seeds.at(0)["BLOCK_K"], 16);
  const CompiledKernel fma = f32Task.compile(f32Task.seeds.at(0));
  EXPECT_EQ(occurrences(fma.amdgcn, "v_mfma"), 0);
  EXPECT_EQ(fma.spill_stores, 0) << fma.resources;
  // At tf32 (and tf32x3) gfx942 takes them on xf32 matrix cores: 128x128x16
  // in two stages, no spills; gfx90a, without xf32, on FMAs.
  for (Precision precision : {Precision::tf32, Precision::tf32x3}) {
    SCOPED_TRACE(name(precision));
    MatmulArgs args = f32Args;
    args.precision = precision;
    autotune::Task task = tuning_task(args, cpu(), "gfx942");
    const Config &seed = task.seeds.at(0);
    EXPECT_EQ(seed["BLOCK_M"], 128);
    EXPECT_EQ(seed["BLOCK_K"], 16);
    EXPECT_EQ(seed["num_stages"], 2);
    EXPECT_EQ(task.space.check(seed), "");
    const CompiledKernel xf32 = task.compile(seed);
    EXPECT_GE(occurrences(xf32.amdgcn, "v_mfma_f32_32x32x4_xf32"), precision == Precision::tf32 ? 4 : 12)
        << xf32.resources;
    EXPECT_EQ(xf32.spill_stores, 0) << xf32.resources;
    EXPECT_EQ(xf32.stack_frame, 0) << xf32.resources;
    autotune::Task cdna2 = tuning_task(args, cpu(), "gfx90a");
    EXPECT_EQ(cdna2.seeds.at(0)["BLOCK_K"], 16);
    EXPECT_EQ(cdna2.seeds.at(0)["num_stages"], 1);
    EXPECT_EQ(occurrences(cdna2.compile(cdna2.seeds.at(0)).amdgcn, "v_mfma"), 0);
  }
}

TEST(OpsMatmul, F32OperandsAsTf32OrTf32x3) {
  // tf32: the product of tf32-rounded operands (tensor cores on the GPU);
  // tf32x3: close to the f32 product; both operand orders, ragged sizes.
  const int64_t M = 37, N = 45, K = 40;
  HostTensor a = HostTensor::random(DType::f32, {M, K}, 21), b = HostTensor::random(DType::f32, {N, K}, 22);
  auto product = [&](const std::vector<int64_t> &at, bool rounded) {
    double s = 0;
    for (int64_t k = 0; k < K; ++k) {
      float x = static_cast<float>(a.at({at[0], k})), y = static_cast<float>(b.at({at[1], k}));
      s += rounded ? double(round_to_tf32(x)) * round_to_tf32(y) : double(x) * y;
    }
    return s;
  };
  for (Precision p : {Precision::tf32, Precision::tf32x3}) {
    HostTensor out = HostTensor::poisoned(DType::f32, {M, N});
    MatmulArgs args{a.view(), transposed(b), out.view()};
    args.precision = p;
    matmul(args, cpu(), small());
    out.expect_near([&](const std::vector<int64_t> &at) { return product(at, p == Precision::tf32); }, 1e-5);
    autotune::Task task = tuning_task(args, cpu(), "sm_90a");
    EXPECT_EQ(task.key, std::string("m=64,n=64,k=64,dtype=f32,out=f32,") + name(p) + ",bT");
    for (const Config &c : task.space.valid({}))
      EXPECT_GE(c["num_stages"], 2) << "tensor-core tiles are pipelined";
  }
  // The same numbers with full f32 products differ: the test can tell them apart.
  double difference = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      difference = std::max(difference, std::fabs(product({m, n}, true) - product({m, n}, false)));
  EXPECT_GT(difference, 1e-4);
}

TEST(OpsMatmul, RepeatedCallsReusePlansWithTheirOwnTensors) {
  // A call like a recent one takes its plan with the new tensors and alpha:
  // each of these outputs must be its own product.
  const int64_t M = 24, N = 40, K = 56;
  auto reference = [&](HostTensor &a, HostTensor &b, HostTensor &bias, double alpha) {
    return [&, alpha](const std::vector<int64_t> &at) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += a.at({at[0], k}) * b.at({k, at[1]});
      return alpha * s + bias.at({at[1]});
    };
  };
  std::vector<HostTensor> as, bs, biases, outs;
  for (unsigned i = 0; i < 3; ++i) {
    as.push_back(HostTensor::random(DType::f16, {M, K}, 60 + i));
    bs.push_back(HostTensor::random(DType::f16, {K, N}, 70 + i));
    biases.push_back(HostTensor::random(DType::f32, {N}, 80 + i));
    outs.push_back(HostTensor::poisoned(DType::f32, {M, N}));
  }
  for (int i = 0; i < 3; ++i)
    matmul({as[i].view(), bs[i].view(), outs[i].view(), biases[i].view(), {}, 0.5 + i}, cpu());
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    outs[i].expect_near(reference(as[i], bs[i], biases[i], 0.5 + i), 1e-3);
  }

  // What the plans are kept by: the same shapes elsewhere find the plan
  // (rebound there); other strides, a missing epilogue input, another
  // alignment, activation or config do not.
  auto keyOf = [](const MatmulArgs &m) {
    PlanKey key;
    EXPECT_TRUE(key.make({&m.a, &m.b, &m.out, &m.bias, &m.residual}, matmul_plan_choices(m), cpu()));
    return key;
  };
  MatmulArgs args{as[0].view(), bs[0].view(), outs[0].view(), biases[0].view(), {}, 3.0};
  RecentPlans<MatmulLaunch> recent;
  recent.keep(keyOf(args), {}, prepare_matmul(args, cpu(), {}));
  MatmulArgs elsewhere{as[1].view(), bs[1].view(), outs[1].view(), biases[1].view(), {}, 2.0};
  const MatmulLaunch *plan = recent.find(keyOf(elsewhere), {}, elsewhere);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->steps.size(), 1u);
  const TensorView *views[] = {&elsewhere.a, &elsewhere.b, &elsewhere.out, &elsewhere.bias, &elsewhere.residual};
  for (auto [argument, view] : plan->steps[0].tensors.slots)
    EXPECT_EQ(plan->steps[0].args[argument].address(), views[view]->address);
  EXPECT_EQ(plan->steps[0].tensors.slots.size(), 4u); // a, b, out, bias
  ASSERT_GE(plan->steps[0].alpha, 0);
  EXPECT_EQ(plan->steps[0].args[plan->steps[0].alpha].floating(), 2.0);
  MatmulArgs transposed = elsewhere;
  transposed.b.shape = {K, N};
  transposed.b.strides = {1, K};
  MatmulArgs noBias = elsewhere;
  noBias.bias = {};
  MatmulArgs unaligned = elsewhere;
  unaligned.a.address += 2; // (never read: only the key is compared)
  MatmulArgs relu = elsewhere;
  relu.activation = Activation::relu;
  MatmulArgs unscaled = elsewhere; // (alpha 1: a kernel without the multiply, nor an alpha argument)
  unscaled.alpha = 1.0;
  for (const MatmulArgs *other : {&transposed, &noBias, &unaligned, &relu, &unscaled})
    EXPECT_EQ(recent.find(keyOf(*other), {}, *other), nullptr);
  EXPECT_EQ(recent.find(keyOf(elsewhere), small(), elsewhere), nullptr);
  // Views of more dimensions than a key holds are planned every time.
  TensorView deep = elsewhere.a;
  deep.shape = {1, 1, 1, 1, M, K};
  PlanKey none;
  EXPECT_FALSE(none.make({&deep}, 0, cpu()));
  // A call with alpha 1 plans its own kernel, which neither takes alpha
  // nor multiplies by it; it is kept apart from scaled calls' plans.
  MatmulLaunch plain = prepare_matmul(unscaled, cpu(), {});
  ASSERT_EQ(plain.steps.size(), 1u);
  EXPECT_EQ(plain.steps[0].alpha, -1);
  EXPECT_EQ(plain.steps[0].args.size() + 1, plan->steps[0].args.size());
  recent.keep(keyOf(unscaled), {}, std::move(plain));
  EXPECT_EQ(recent.find(keyOf(unscaled), {}, unscaled)->steps[0].alpha, -1);
  EXPECT_GE(recent.find(keyOf(elsewhere), {}, elsewhere)->steps[0].alpha, 0);
}

TEST(OpsMatmul, BadArgumentsAreRejectedWithReasons) {
  HostTensor a = HostTensor::random(DType::f16, {8, 16}, 14), b = HostTensor::random(DType::f16, {12, 8}, 15);
  HostTensor b32 = HostTensor::random(DType::f32, {16, 8}, 16), out = HostTensor::poisoned(DType::f32, {8, 8});
  HostTensor i8 = HostTensor::random(DType::i8, {8, 8}, 17);
  auto fails = [&](MatmulArgs args, const Config &config, const std::string &why) {
    try {
      matmul(args, cpu(), config);
      ADD_FAILURE() << "expected: " << why;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  fails({a.view(), b.view(), out.view()}, {}, "shapes do not multiply");
  fails({a.view(), b32.view(), out.view()}, {}, "a and b must both be f16, bf16 or f32");
  fails({a.view(), b.view(), i8.view()}, {}, "out must be f32, f16 or bf16");
  HostTensor good = HostTensor::random(DType::f16, {16, 8}, 18);
  fails({a.view(), good.view(), out.view()}, {{"BLOCK_K", 24}}, "BLOCK_K must be a power of two of at least 16");
  fails({a.view(), good.view(), out.view()}, {{"SPLIT_K", 0}}, "SPLIT_K must be between 1 and 64");
  fails({a.view(), good.view(), out.view()}, {{"SPLIT_K", 65}}, "SPLIT_K must be between 1 and 64");
  HostTensor bias = HostTensor::random(DType::f32, {7}, 19);
  fails({a.view(), good.view(), out.view(), bias.view()}, {}, "bias");
  HostTensor flat = HostTensor::random(DType::f16, {16}, 20);
  fails({flat.view(), good.view(), out.view()}, {}, "must have out's rank");
  // fp8: both sides, K-major; scales f32 of one element or one a row / column.
  HostTensor a8 = HostTensor::random(DType::f8e4m3, {8, 16}, 21), b8 = HostTensor::random(DType::f8e5m2, {16, 8}, 22);
  HostTensor bT8 = HostTensor::random(DType::f8e4m3, {8, 16}, 23);
  fails({a8.view(), good.view(), out.view()}, {}, "or both fp8");
  fails({a8.view(), b8.view(), out.view()}, {}, "fp8 operands must be K-major");
  MatmulArgs scaled{a8.view(), transposed(bT8), out.view()};
  HostTensor rows = HostTensor::random(DType::f32, {9}, 24), halves = HostTensor::random(DType::f16, {8}, 25);
  scaled.scale_a = rows.view();
  fails(scaled, {}, "scale_a");
  scaled.scale_a = {};
  scaled.scale_b = halves.view();
  fails(scaled, {}, "scale_b");
  // Block scales: both blockwise, of a 2-D product, with BLOCK_K at most their 128.
  HostTensor blocksA = HostTensor::random(DType::f32, {8, 1}, 26), blocksB = HostTensor::random(DType::f32, {1, 1}, 27);
  HostTensor each = HostTensor::random(DType::f32, {8}, 28);
  scaled.scale_a = blocksA.view();
  scaled.scale_b = each.view();
  fails(scaled, {}, "need both scales blockwise");
  scaled.scale_b = blocksB.view();
  fails(scaled, Config(small()).set("BLOCK_K", 256), "BLOCK_K must be at most 128");
  HostTensor wide = HostTensor::random(DType::f32, {8, 2}, 29);
  scaled.scale_a = wide.view();
  fails(scaled, {}, "[M, ceil(K / 128)] block scales");
  HostTensor a3 = HostTensor::random(DType::f8e4m3, {1, 8, 16}, 30), bT3 = HostTensor::random(DType::f8e4m3, {1, 8, 16}, 31);
  HostTensor out3 = HostTensor::poisoned(DType::f32, {1, 8, 8});
  TensorView b3 = bT3.view();
  b3.shape = {1, 16, 8};
  b3.strides = {128, 1, 16};
  MatmulArgs batched{a3.view(), b3, out3.view()};
  batched.scale_a = blocksA.view();
  batched.scale_b = blocksB.view();
  fails(batched, {}, "a 2-D product");
}
