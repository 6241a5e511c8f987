// Config, ConfigSpace, the kernel registry and GPU target names.
#include <kiln/compiler.h>
#include <kiln/kiln.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace kiln;

TEST(Config, LookupParseAndPrint) {
  Config config = Config::parse("BLOCK=128,num_warps=8");
  EXPECT_EQ(config["BLOCK"], 128);
  EXPECT_EQ(config.num_warps(), 8);
  EXPECT_EQ(config.num_stages(), 3);
  EXPECT_EQ(config.get("MISSING", 7), 7);
  EXPECT_EQ(config.str(), "BLOCK=128,num_warps=8");
  EXPECT_EQ(Config::parse("A=1 B=-2"), (Config{{"A", 1}, {"B", -2}}));
  EXPECT_EQ(Config({{"A", 1}}).merged({{"A", 2}, {"B", 3}}).str(), "A=2,B=3");
}

TEST(Config, ParseRejectsBadText) {
  EXPECT_THROW(Config::parse("BLOCK"), Error);
  EXPECT_THROW(Config::parse("BLOCK=12x"), Error);
  EXPECT_THROW(Config::parse("=3"), Error);
}

TEST(ConfigSpace, EnumeratesAndPrunesWithReasons) {
  ConfigSpace space;
  space.axis("BLOCK_M", {32, 64, 128})
      .axis("num_warps", {4, 8})
      .constraint("BLOCK_M >= 32 * num_warps / 4",
                  [](const Config &c) { return c.get("BLOCK_M", 0) * 4 >= 32 * c.num_warps(); });
  std::vector<ConfigSpace::Rejected> rejected;
  std::vector<Config> valid = space.valid({}, &rejected);
  EXPECT_EQ(valid.size(), 5u);
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].config.str(), "BLOCK_M=32,num_warps=8");
  EXPECT_EQ(rejected[0].reason, "BLOCK_M >= 32 * num_warps / 4");
  // Fixed entries are not enumerated.
  EXPECT_EQ(space.valid({{"num_warps", 4}}).size(), 3u);
  EXPECT_EQ(space.check({{"BLOCK_M", 32}, {"num_warps", 8}}), "BLOCK_M >= 32 * num_warps / 4");
  EXPECT_THROW(ConfigSpace().axis("EMPTY", {}), Error);
}

TEST(Registry, FindsRegisteredKernelsAndRefusesDuplicates) {
  register_kernel(jit([](Ptr<f32> p) { store(p, 1.0); }, "registry_test_kernel"), "a test");
  const RegisteredKernel *found = find_kernel("registry_test_kernel");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->description, "a test");
  EXPECT_EQ(find_kernel("no_such_kernel"), nullptr);
  EXPECT_THROW(register_kernel(jit([](Ptr<f32> p) {}, "registry_test_kernel"), "again"), Error);
}

TEST(Kernel, NamesMustBeIdentifiers) {
  EXPECT_THROW(jit([](Ptr<f32> p) {}, "bad name"), Error);
  EXPECT_THROW(jit([](Ptr<f32> p) {}, "1st"), Error);
}

TEST(Kernel, SignatureComesFromTheParameterTypes) {
  Kernel kernel = jit([](const Config &, ConstPtr<f16> a, Ptr<u8> b, Scalar<i64> n, Float x) {},
                      "signature");
  ASSERT_EQ(kernel.signature().size(), 4u);
  EXPECT_EQ(to_string(kernel.signature()[0]), "*const f16");
  EXPECT_EQ(to_string(kernel.signature()[1]), "*u8");
  EXPECT_EQ(to_string(kernel.signature()[2]), "i64");
  EXPECT_EQ(to_string(kernel.signature()[3]), "f32");
}

TEST(Kernel, TracingTellsWhichConfigNamesItRead) {
  Kernel kernel = jit(
      [](const Config &cfg, Ptr<f32> p) {
        const int64_t scale = cfg.has("UNROLL") ? 2 : cfg.get("SCALE", 1);
        store(p + arange(0, cfg["BLOCK"]), static_cast<double>(scale));
      },
      "config_keys");
  std::vector<std::string> read;
  kernel.trace({{"BLOCK", 16}, {"BLOK", 32}}, {}, &read);
  EXPECT_EQ(read, (std::vector<std::string>{"BLOCK", "SCALE", "UNROLL", "approx_div", "cluster_size", "copy_engine",
                                            "fp_fusion", "min_blocks_per_sm", "num_stages", "num_warps",
                                            "overlap_chain", "ping_pong", "warp_specialize"}));
  EXPECT_EQ(Config::compiler_keys(),
            (std::vector<std::string>{"approx_div", "cluster_size", "copy_engine", "fp_fusion", "min_blocks_per_sm",
                                      "num_stages", "num_warps", "overlap_chain", "ping_pong",
                                      "warp_specialize"}));
}

TEST(Target, ParsesNvidiaAndAmdNames) {
  std::optional<Target> hopper = parse_target("sm_90a");
  ASSERT_TRUE(hopper);
  EXPECT_EQ(hopper->vendor, GpuVendor::nvidia);
  EXPECT_EQ(hopper->compute_capability(), 90);
  EXPECT_EQ(hopper->suffix, 'a');
  EXPECT_EQ(parse_target("sm_100")->compute_capability(), 100);
  EXPECT_EQ(parse_target("sm_121")->minor, 1);
  EXPECT_EQ(parse_target("sm_100f")->suffix, 'f');
  std::optional<Target> mi250 = parse_target("gfx90a");
  ASSERT_TRUE(mi250);
  EXPECT_EQ(mi250->vendor, GpuVendor::amd);
  EXPECT_EQ(mi250->major, 9);
  EXPECT_EQ(mi250->minor, 0);
  EXPECT_EQ(mi250->stepping, 10);
  EXPECT_EQ(parse_target("gfx1100")->major, 11);
  for (const char *name : {"", "sm_", "sm_9", "sm_bogus", "sm_90b", "sm_1000", "sm_080", "gfx", "gfx9", "gfx90g",
                           "gfx12345", "compute_90", "SM_90", "sm_90 "})
    EXPECT_FALSE(parse_target(name)) << "'" << name << "'";
}

TEST(Target, CheckingSaysWhyKilnCannotCompileForATarget) {
  auto refusal = [](const std::string &name) {
    try {
      check_target(name);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal("sm_75"), "accepted");
  EXPECT_EQ(refusal("sm_90a"), "accepted");
  EXPECT_EQ(refusal("sm_bogus"), "'sm_bogus' is not a GPU target (NVIDIA targets read sm_XY with an optional 'a' or "
                                 "'f', as sm_80 or sm_90a; AMD ones gfxNNN, as gfx90a)");
  EXPECT_EQ(refusal("sm_20"),
            "sm_20 (compute capability 2.0) is older than Kiln supports: its NVIDIA lowering needs sm_75 or newer");
  EXPECT_EQ(refusal("gfx90a"), "accepted");
  EXPECT_EQ(refusal("gfx1030"), "gfx1030 is an AMD GPU Kiln does not compile for (it compiles for gfx90a, gfx942, "
                                "gfx1100)");
}

TEST(Target, AmdTargetsAreCompiledForWithTheirWavefronts) {
  for (const char *name : {"gfx90a", "gfx942"}) {
    EXPECT_EQ(check_target(name).name, name);
    EXPECT_EQ(threads_per_warp(*parse_target(name)), 64) << name;
  }
  EXPECT_EQ(threads_per_warp(check_target("gfx1100")), 32);
  EXPECT_EQ(threads_per_warp(check_target("sm_90a")), 32);
  EXPECT_TRUE(targets_amd("gfx942"));
  EXPECT_TRUE(targets_amd("gfx1030")); // AMD's, though Kiln does not compile for it
  EXPECT_FALSE(targets_amd("sm_90a"));
  EXPECT_FALSE(targets_amd("gfx"));
  EXPECT_FALSE(targets_amd(""));
}

TEST(Target, ComparesComputeCapabilities) {
  EXPECT_EQ(compute_capability_of("sm_90a"), 90);
  EXPECT_EQ(compute_capability_of("sm_80"), 80);
  EXPECT_EQ(compute_capability_of("gfx90a"), 0);
  EXPECT_EQ(compute_capability_of("bogus"), 0);
  EXPECT_TRUE(cubin_runs_on(*parse_target("sm_80"), 86));   // a newer minor version
  EXPECT_FALSE(cubin_runs_on(*parse_target("sm_86"), 80));  // an older one
  EXPECT_FALSE(cubin_runs_on(*parse_target("sm_80"), 90));  // another generation: PTX instead
  EXPECT_TRUE(cubin_runs_on(*parse_target("sm_90a"), 90));
  EXPECT_FALSE(cubin_runs_on(*parse_target("sm_90a"), 100)); // 'a': exactly its GPU
  EXPECT_EQ(max_shared_memory_per_program(90), 227 * 1024);
  EXPECT_EQ(max_shared_memory_per_program(80), 163 * 1024);
  EXPECT_EQ(max_shared_memory_per_program(86), 99 * 1024);
  EXPECT_EQ(max_shared_memory_per_program(120), 99 * 1024);
  EXPECT_EQ(max_shared_memory_per_program(75), 64 * 1024);
}
