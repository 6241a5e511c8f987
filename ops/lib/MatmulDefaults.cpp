//===- MatmulDefaults.cpp - the tile and schedule a matmul gets untuned ---===//
//
// The defaults follow the fastest of the measured tiles and schedules
// (docs/ops.md, "Matrix products"); the autotuner may pick others.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/MatmulPlan.h"

namespace kiln::ops {

bool on_tensor_cores(DType operands, Precision precision) {
  return operands != DType::f32 || precision != Precision::ieee;
}

bool stores_b_k_major(const TensorView &b) {
  return b.rank() >= 2 && b.effective_strides()[b.rank() - 2] == 1 && b.shape[b.rank() - 1] > 1;
}

Config fma_matmul_config() {
  return Config{{"BLOCK_M", 32}, {"BLOCK_N", 32}, {"BLOCK_K", 16}, {"GROUP_M", 8}, {"num_warps", 4}, {"num_stages", 1}};
}

/// The default tile for a problem, the fastest of the measured ones
/// (docs/ops.md, "Matrix products"): 16-row tiles with long K steps
/// for M <= 16; up to M = 128, 64x128 tiles while they make at most ~one
/// wave (128 programs), else 128x128. For 64 < M <= 128 the copy engine
/// feeds the tiles on Hopper: 64x64 (eight stages, a producer warpgroup)
/// while those make a wave, else 128x64 (six stages), both ahead of 64x128
/// with pointer loads. 128x256 (two warpgroups) for larger products
/// (128x128 when N < 256); small FMA tiles for ieee f32; for tf32 (operands
/// twice as wide) 128x256x32 with B stored [N][K] (wgmma), else 128x128x32
/// (mma.sync); 128x64x32 for M <= 128, split while chunks keep 1024
/// elements of K.
/// Tensor-core products with few tiles and a long K split it until about
/// 128 programs run, each chunk keeping at least 8 BLOCK_K steps and 4096
/// elements of K (8192 for 16-row tiles: their whole product is so short
/// that the combining launch costs about what a second wave of programs
/// gains).
Config default_matmul_config(DType operands, Precision precision, bool kMajorB, int64_t batches, int64_t M,
                             int64_t N, int64_t K) {
  if (!on_tensor_cores(operands, precision))
    return fma_matmul_config();
  constexpr int64_t kWave = 128; // programs that about fill a Hopper GPU (132 multiprocessors) once
  auto tile = [](int64_t bm, int64_t bn, int64_t bk, int64_t warps, int64_t stages) {
    return Config{{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"GROUP_M", 8}, {"num_warps", warps},
                  {"num_stages", stages}};
  };
  Config c;
  if (operands == DType::f32) // two warpgroups of wgmma need B K-major; mma.sync wants fewer registers
    c = M <= 128 ? tile(128, 64, 32, 8, 3) : kMajorB ? tile(128, 256, 32, 8, 3) : tile(128, 128, 32, 4, 3);
  else if (M <= 16)
    c = tile(16, 64, 128, 4, 5);
  else if (M <= 128 && batches * cdiv(M, 64) * cdiv(N, 128) <= kWave)
    c = M <= 64                                           ? tile(64, 128, 64, 4, 4)
        : batches * cdiv(M, 64) * cdiv(N, 64) <= kWave ? tile(64, 64, 64, 4, 8)
                                                        : tile(128, 64, 64, 4, 6);
  else if (M <= 128 || N < 256)
    c = tile(128, 128, 64, 4, 5);
  else
    c = tile(128, 256, 64, 8, 3);
  // (fp8: K steps of as many bytes as 16-bit operands take, up to the
  // 128-byte rows of the widest swizzle fp8 wgmma reads.)
  if (is_float8(operands))
    c.set("BLOCK_K", std::min<int64_t>(128, 2 * c["BLOCK_K"]));
  const int64_t tiles = batches * cdiv(M, c["BLOCK_M"]) * cdiv(N, c["BLOCK_N"]), steps = cdiv(K, c["BLOCK_K"]);
  const int64_t minChunk = operands == DType::f32 ? 1024 : c["BLOCK_M"] <= 16 ? 8192 : 4096;
  int64_t split = 1;
  while (tiles * split * 2 <= kWave && steps / (split * 2) >= 8 && K / (split * 2) >= minChunk)
    split *= 2;
  if (split > 1)
    c.set("SPLIT_K", split);
  return c;
}

bool on_amd_matrix_cores(DType operands, Precision precision, std::string_view arch) {
  const std::optional<Target> target = parse_target(arch);
  if (!target || target->vendor != GpuVendor::amd || target->major != 9)
    return false;
  const bool cdna2 = target->minor == 0 && target->stepping == 0xa, cdna3 = target->minor == 4;
  return operands == DType::f32 ? cdna3 && precision != Precision::ieee : cdna2 || cdna3;
}

Config default_amd_matmul_config(DType operands, Precision precision, std::string_view arch, int64_t M, int64_t K) {
  if (!on_amd_matrix_cores(operands, precision, arch))
    return fma_matmul_config();
  const int64_t rows = M <= 64 ? std::max<int64_t>(16, next_pow2(M)) : 128;
  // (f32 K steps half as long: the same bytes of LDS a stage.)
  const int64_t longest = operands == DType::f32 ? 16 : 32;
  const int64_t steps = std::min<int64_t>(longest, std::max<int64_t>(16, next_pow2(K)));
  // (Two stages: the K loop loads the next step's tiles while this step's
  // products run, through two LDS slots: kgpu-prefetch-operands.)
  return Config{{"BLOCK_M", rows}, {"BLOCK_N", 128}, {"BLOCK_K", steps}, {"GROUP_M", 8},
                {"num_warps", 4},  {"num_stages", 2}};
}

bool has_block_scales(const MatmulArgs &args) { return args.scale_a.rank() == 2 || args.scale_b.rank() == 2; }

bool promotes_sums(const MatmulArgs &args) {
  return has_block_scales(args) || (is_float8(args.a.dtype) && !args.fast_accumulation);
}

Config with_promoted_sums(Config tile) {
  // Each K step's sum sits in registers beside the accumulator until it
  // joins it: at most 64 accumulators a thread (the 128x256 tile's
  // 128 would spill), so the 128x256 tile becomes 128x128 on the same two
  // warpgroups, with five 32 KB stages.
  const int64_t threads = 32 * tile.get("num_warps", 4);
  if (tile.get("BLOCK_M", 0) == 128 && tile.get("BLOCK_N", 0) == 256)
    tile.set("BLOCK_N", 128).set("num_stages", 5);
  while (tile.get("BLOCK_M", 0) * tile.get("BLOCK_N", 0) > 64 * threads && tile.get("BLOCK_N", 0) > 32)
    tile.set("BLOCK_N", tile.get("BLOCK_N", 0) / 2);
  return tile;
}

bool copy_engine_tile(int64_t blockM, int64_t M) {
  // (docs/ops.md, "Matrix products": skinny tiles stream their weights as
  // fast by pointer loads; 64-row tiles of taller products gain.)
  return blockM >= 128 || (blockM >= 64 && M > 64);
}

Config with_copy_engine_schedule(Config tile) {
  // With the output stored by the copy engine (OUT_DESCRIPTOR), a producer
  // warpgroup keeps the copies running across a persistent program's tiles
  // (while a tile's output is stored); the 128x64 and 64x64 tiles of
  // 128-row products (a wave or less: one program a tile) take a producer
  // alone. Both measured ahead of one program a tile without one
  // (docs/ops.md).
  if (tile.get("SPLIT_K", 1) != 1)
    return tile;
  const int64_t BM = tile.get("BLOCK_M", 0), BN = tile.get("BLOCK_N", 0);
  // The 128x256 tile's persistent programs walk bands of 16 tile rows (the
  // default is 8): a wave of 132 tiles then spans 16 rows by about 8
  // columns instead of 8 by 16, which shares more of A and B in L2 and
  // reads less from DRAM. So do the 128x128 tiles on the same two
  // warpgroups of products that promote their sums (with_promoted_sums),
  // without a producer (no dot of theirs stays in flight: each K step's
  // sum joins the accumulator as soon as it completes).
  const bool promoting = BM == 128 && BN == 128 && tile.get("num_warps", 4) == 8;
  if (((BM == 128 && BN == 256) || promoting) && !tile.has("PERSISTENT")) {
    tile.set("PERSISTENT", 1);
    tile.set("GROUP_M", 16);
  }
  if (((BM == 128 && (BN == 256 || BN == 64)) || (BM == 64 && BN == 64)) && !tile.has("warp_specialize"))
    tile.set("warp_specialize", 1);
  return tile;
}

Config with_grouped_schedule(Config tile) {
  // A persistent program would read each tile's group from the table
  // inside its K loop, where the copies issued steps ahead cannot follow:
  // its copy-engine loads would become pointer loads. One program a tile
  // reads its tile before the loop.
  return tile.set("PERSISTENT", 0);
}

const char *name(Precision p) {
  switch (p) {
  case Precision::ieee: return "ieee";
  case Precision::tf32: return "tf32";
  case Precision::tf32x3: return "tf32x3";
  }
  return "?";
}

const char *name(Activation a) {
  switch (a) {
  case Activation::none: return "none";
  case Activation::relu: return "relu";
  case Activation::gelu: return "gelu";
  case Activation::silu: return "silu";
  }
  return "?";
}

} // namespace kiln::ops
