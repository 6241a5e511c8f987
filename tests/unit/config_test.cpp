// Config, ConfigSpace and the kernel registry.
#include <kiln/kiln.h>

#include <gtest/gtest.h>

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
