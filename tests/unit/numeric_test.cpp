// Rounding to the narrow float formats: nearest-even ties, subnormals,
// overflow to infinity, fp8 saturation, and the bit encodings.
#include <kiln/numeric.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace kiln;

TEST(Numeric, F16RoundsToNearestEven) {
  EXPECT_EQ(round_to(f16, 1.0 + std::ldexp(1.0, -11)), 1.0);                               // tie -> even
  EXPECT_EQ(round_to(f16, 1.0 + 3 * std::ldexp(1.0, -11)), 1.0 + std::ldexp(1.0, -9));       // tie -> even (up)
  EXPECT_EQ(round_to(f16, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -20)), 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(round_to(f16, 65504.0), 65504.0);
  EXPECT_EQ(round_to(f16, 65519.0), 65504.0);
  EXPECT_TRUE(std::isinf(round_to(f16, 65520.0)));                                         // overflow
  EXPECT_EQ(round_to(f16, std::ldexp(1.0, -24)), std::ldexp(1.0, -24));                     // smallest subnormal
  EXPECT_EQ(round_to(f16, std::ldexp(1.0, -25)), 0.0);                                      // tie -> 0
  EXPECT_EQ(round_to(f16, 1.5 * std::ldexp(1.0, -25)), std::ldexp(1.0, -24));
  EXPECT_EQ(round_to(f16, 1.0 + std::ldexp(1.0, -10) * 0.9, Rounding::toward_zero), 1.0);
  EXPECT_TRUE(std::isnan(round_to(f16, std::nan(""))));
}

TEST(Numeric, Bf16AndTf32) {
  EXPECT_EQ(round_to(bf16, 1.0 + std::ldexp(1.0, -8)), 1.0);
  EXPECT_EQ(round_to(bf16, 1.0 + 3 * std::ldexp(1.0, -8)), 1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(round_to(bf16, 3.3895313892515355e38), 3.3895313892515355e38); // largest finite
  EXPECT_TRUE(std::isinf(round_to(bf16, 3.4e38)));
  EXPECT_EQ(round_to_tf32(1.0f + std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -10)); // ties away
  EXPECT_EQ(round_to_tf32(1.0f + std::ldexp(1.0f, -12)), 1.0f);
}

TEST(Numeric, Float8SaturatesWhenAsked) {
  EXPECT_EQ(round_to(f8e4m3, 448.0), 448.0);
  EXPECT_EQ(round_to(f8e4m3, 464.0), 448.0);                  // tie -> even (448)
  EXPECT_TRUE(std::isnan(round_to(f8e4m3, 480.0)));           // no infinity in e4m3fn
  EXPECT_EQ(round_to(f8e4m3, 1000.0, Rounding::nearest_even, true), 448.0);
  EXPECT_EQ(round_to(f8e4m3, -std::numeric_limits<double>::infinity(), Rounding::nearest_even, true), -448.0);
  EXPECT_EQ(round_to(f8e5m2, 57344.0), 57344.0);
  EXPECT_TRUE(std::isinf(round_to(f8e5m2, 65536.0)));
  EXPECT_EQ(round_to(f8e5m2, 1e6, Rounding::nearest_even, true), 57344.0);
  EXPECT_EQ(round_to(f8e4m3, 1.0625), 1.0);                   // tie -> even
  EXPECT_EQ(round_to(f8e4m3, std::ldexp(1.0, -9)), std::ldexp(1.0, -9)); // smallest subnormal
}

TEST(Numeric, EncodingsRoundTrip) {
  EXPECT_EQ(to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(to_f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(to_f16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(to_f16_bits(INFINITY), 0x7C00);
  EXPECT_EQ(to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(to_f8e4m3_bits(448.0f), 0x7E);
  EXPECT_EQ(to_f8e4m3_bits(-1.0f), 0xB8);
  EXPECT_EQ(to_f8e5m2_bits(1.0f), 0x3C);
  EXPECT_TRUE(std::isnan(from_f8e4m3_bits(0x7F)));
  EXPECT_TRUE(std::isinf(from_f8e5m2_bits(0x7C)));
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float v = from_f16_bits(static_cast<uint16_t>(bits));
    if (!std::isnan(v)) {
      ASSERT_EQ(to_f16_bits(v), bits) << bits;
    }
    float w = from_bf16_bits(static_cast<uint16_t>(bits));
    if (!std::isnan(w)) {
      ASSERT_EQ(to_bf16_bits(w), bits) << bits;
    }
  }
  for (uint32_t bits = 0; bits < 0x100; ++bits) {
    float v = from_f8e4m3_bits(static_cast<uint8_t>(bits));
    if (!std::isnan(v)) {
      ASSERT_EQ(to_f8e4m3_bits(v), bits) << bits;
    }
    float w = from_f8e5m2_bits(static_cast<uint8_t>(bits));
    if (!std::isnan(w) && !std::isinf(w)) {
      ASSERT_EQ(to_f8e5m2_bits(w), bits) << bits;
    }
  }
}
