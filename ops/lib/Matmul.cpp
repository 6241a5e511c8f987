//===- Matmul.cpp - matrix products with fused epilogues ------------------===//
//
// One DSL kernel per structure (dtypes, which epilogue inputs exist, the
// activation, f32 operands' precision, batched or not, whether BLOCK_K
// divides K, 32- or 64-bit offsets); sizes and strides are runtime arguments, so unit strides and
// sizes divisible by 16 specialize at launch (vectorized, pipelined loads).
// Each program computes a BLOCK_M x BLOCK_N tile of one batch, tiles
// ordered in groups of GROUP_M rows so that neighbours share L2; rows and
// columns past the edges wrap around (x % M) for loading and are never
// stored, so only K needs masks, and only when BLOCK_K does not divide it.
//
// Descriptors (DESCRIPTORS=1, the default on Hopper where the operands
// allow): A and B are read through tensor descriptors, whose blocks the
// compiler loads with the copy engine (TMA) and which zero-fill past the
// edges, so no wrap is needed. An operand stored transposed (A [K][M], B
// [N][K]) is described as stored and its block transposed in the kernel.
//
// The output through a descriptor (OUT_DESCRIPTOR=1, the default where A
// and B are and out allows): the tile is written by the copy engine from
// shared memory, clipped at the edges, while the program goes on.
//
// Persistent (PERSISTENT=p > 0): p programs a multiprocessor, each walking
// the tiles a grid's size apart in one loop over all of its tiles' K steps,
// so that the copies for a tile's first steps are in flight while the
// previous tile finishes and stores (the accumulator restarts from zero at
// each tile's first step: wgmma's scale-d, no extra work; on mma.sync a
// branch around that step's first instructions).
//
// Split-K (SPLIT_K > 1), for products with too few tiles to fill the GPU:
// the K range is cut into SPLIT_K chunks of whole BLOCK_K steps; one kernel
// writes each chunk's f32 partial tile to the stream's workspace (a third
// grid dimension over the chunks), a second sums the chunks in order and
// applies the epilogue. Deterministic: no atomics.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/MatmulPlan.h"
#include "ops/lib/Space.h"
#include "ops/lib/Workspace.h"

#include <kiln/cache.h>

namespace kiln::ops {

namespace {

/// The parameters of a generated kernel, by role. WORK: the split-K
/// partial tiles, f32 planes [chunk * batches + batch][M][N].
enum Role { A, B, OUT, BIAS, RESIDUAL, WORK, OPERANDS };

/// What a kernel computes: the whole product with its epilogue; or, with
/// split-K, one K chunk's partial sums, or the sum of the chunks with the
/// epilogue.
enum class Phase { whole, partial, combine };

const char *name(Phase p) { return p == Phase::whole ? "whole" : p == Phase::partial ? "partial" : "combine"; }

struct Structure {
  DType dtypes[OPERANDS] = {};
  bool present[OPERANDS] = {true, true, true, false, false, false};
  Phase phase = Phase::whole;
  Activation activation = Activation::none;
  Precision precision = Precision::ieee; ///< f32 operands only
  bool batched = false, evenK = true, wide = false;
  bool descriptors = false;    ///< A and B through tensor descriptors
  bool aKContiguous = true;    ///< (descriptors) A stored [M][K], else [K][M]
  bool bNContiguous = true;    ///< (descriptors) B stored [K][N], else [N][K]
  bool outDescriptor = false;  ///< out written through a tensor descriptor
  bool persistent = false;     ///< programs walk the tiles (PERSISTENT)
  /// (persistent with pointer loads, not on Hopper) the operand pointers
  /// are carried from step to step and formed afresh only for a new tile
  bool carriedPointers = false;
  /// alpha is not 1: the epilogue multiplies by it (else no alpha
  /// parameter, and none of the 128 multiplies a thread a 128x256 tile
  /// would take between two tiles' dots)
  bool scaled = false;

  std::string key() const {
    std::string k = std::string("matmul|") + name(phase);
    for (int o = 0; o < OPERANDS; ++o)
      k += "|" + (present[o] ? std::string(name(dtypes[o])) : std::string("-"));
    k += std::string("|") + name(activation);
    k += std::string("|") + ops::name(precision);
    k += batched ? "|batched" : "";
    k += evenK ? "|evenK" : "|maskK";
    k += wide ? "|i64" : "|i32";
    if (descriptors)
      k += std::string("|desc-") + (aKContiguous ? "a" : "at") + (bNContiguous ? "b" : "bt");
    k += outDescriptor ? "|desc-out" : "";
    k += persistent ? "|persistent" : "";
    k += carriedPointers ? "|carried-pointers" : "";
    k += scaled ? "|scaled" : "";
    return k;
  }
};

/// Positions in the signature.
struct Params {
  Signature signature;
  int pointers[OPERANDS] = {-1, -1, -1, -1, -1, -1};
  int descriptors[3] = {-1, -1, -1}; ///< A, B and OUT's descriptors (their first parameter), if accessed through them
  int M = -1, N = -1, K = -1, alpha = -1;
  int chunk = -1;  ///< partial: K elements per chunk
  int splits = -1; ///< combine: the number of chunks
  int strides[OPERANDS][3] = {}; ///< batch (WORK: plane), rows, columns (bias: columns only)
};

Params parameters(const Structure &s) {
  Params q;
  DType index = s.wide ? DType::i64 : DType::i32;
  for (int o = 0; o < OPERANDS; ++o) {
    bool written = o == OUT || (o == WORK && s.phase == Phase::partial);
    if (s.present[o] && ((s.descriptors && (o == A || o == B)) || (s.outDescriptor && o == OUT)))
      q.descriptors[o] = q.signature.descriptor(s.dtypes[o], 2);
    else
      q.pointers[o] = s.present[o] ? q.signature.pointer(s.dtypes[o], !written) : -1;
  }
  q.M = q.signature.scalar(index);
  q.N = q.signature.scalar(index);
  if (s.phase != Phase::combine)
    q.K = q.signature.scalar(index);
  if (s.phase != Phase::partial && s.scaled)
    q.alpha = q.signature.scalar(DType::f32);
  if (s.phase == Phase::partial)
    q.chunk = q.signature.scalar(index);
  if (s.phase == Phase::combine)
    q.splits = q.signature.scalar(DType::i32);
  for (int o = 0; o < OPERANDS; ++o)
    for (int d = 0; d < 3; ++d)
      q.strides[o][d] = s.present[o] && (o != BIAS || d == 2) && (s.batched || d > 0 || o == WORK) &&
                                !(o <= OUT && q.descriptors[o] >= 0)
                            ? q.signature.scalar(index)
                            : -1;
  return q;
}

Kernel makeKernel(const std::string &key, const Structure &s, const Params &q) {
  auto body = [s, q](const Config &cfg, const std::vector<Tensor> &args) {
    const int64_t BM = cfg["BLOCK_M"], BN = cfg["BLOCK_N"], GROUP = cfg["GROUP_M"];
    DType index = s.wide ? DType::i64 : DType::i32;
    auto at = [&](int position) { return position >= 0 ? args[position] : Tensor(); };
    Tensor M = args[q.M], N = args[q.N];
    auto stride = [&](int o, int d) { return at(q.strides[o][d]); };

    Tensor batch = s.batched ? program_id(1).to(index) : Tensor();
    auto base = [&](int o) {
      Tensor p = args[q.pointers[o]];
      return s.batched ? p + batch * stride(o, 0) : p;
    };

    // Tile `pid` in grouped order: its block row and column.
    struct Tile {
      Tensor pid_m, pid_n;
    };
    auto tileOf = [&](const Tensor &pid) {
      Tensor tiles_n = cdiv(N, BN), tiles_m = cdiv(M, BM);
      Tensor first_m = pid / (GROUP * tiles_n) * GROUP;
      Tensor group_rows = minimum(tiles_m - first_m, GROUP);
      return Tile{first_m + pid % group_rows, (pid % (GROUP * tiles_n)) / group_rows};
    };
    // Its rows and columns, and which of its elements lie inside out
    // (formed where used: in a loop over tiles, only the epilogue needs them).
    struct Span {
      Tensor rm, rn, inside;
    };
    auto spanOf = [&](const Tile &t) {
      Tensor rm = (t.pid_m * BM + arange(0, BM)).to(index), rn = (t.pid_n * BN + arange(0, BN)).to(index);
      return Span{rm, rn, expand_dims(rm < M, 1) & expand_dims(rn < N, 0)};
    };
    // A chunk's partial tile: plane chunk * batches + batch.
    auto partialTile = [&](const Span &t, const Tensor &chunk) {
      Tensor plane = (chunk * num_programs(1) + program_id(1)).to(index);
      return args[q.pointers[WORK]] + plane * stride(WORK, 0) + expand_dims(t.rm, 1) * stride(WORK, 1) +
             expand_dims(t.rn, 0) * stride(WORK, 2);
    };
    // Pointer loads: the tile's operand pointers at K offset 0.
    struct Pointers {
      Tensor a, b;
    };
    auto pointersOf = [&](const Tile &tile) {
      if (s.descriptors)
        return Pointers{};
      Span t = spanOf(tile);
      Tensor rk = arange(0, cfg["BLOCK_K"]).to(index);
      // A persistent program forms these in its loop (every K step, or at
      // each tile's last one with carriedPointers), where a remainder by a
      // runtime size costs ~20 instructions a row: its tiles start
      // inside and are no larger than the product (the plan sees to it),
      // so one conditional subtraction wraps.
      auto wrap = [&](const Tensor &r, const Tensor &size) {
        return s.persistent ? where(r >= size, r - size, r) : r % size;
      };
      return Pointers{base(A) + expand_dims(wrap(t.rm, M), 1) * stride(A, 1) + expand_dims(rk, 0) * stride(A, 2),
                      base(B) + expand_dims(rk, 1) * stride(B, 1) + expand_dims(wrap(t.rn, N), 0) * stride(B, 2)};
    };
    // One BLOCK_K step at K offset k (index type): acc + A[rows, k:] B[k:, columns].
    auto kStep = [&](const Tile &t, const Pointers &p, const Tensor &k, const Tensor &acc) {
      const int64_t BK = cfg["BLOCK_K"];
      DotOptions options{.precision = s.precision};
      if (s.descriptors) {
        auto described = [&](int o) { return Descriptor(std::span<const Tensor>(args).subspan(q.descriptors[o], 6)); };
        Descriptor da = described(A), db = described(B);
        // The copy engine's coordinates are i32 (each size is below 2^31),
        // also where offsets past 2^31 make the index type i64.
        Tensor row = (t.pid_m * BM).to(DType::i32), column = (t.pid_n * BN).to(DType::i32), k32 = k.to(DType::i32);
        Tensor a = s.aKContiguous ? da.load({row, k32}, {BM, BK}) : da.load({k32, row}, {BK, BM}).trans();
        Tensor b = s.bNContiguous ? db.load({k32, column}, {BK, BN}) : db.load({column, k32}, {BN, BK}).trans();
        return dot(a, b, acc, options);
      }
      Tensor a_at = p.a + k * stride(A, 2), b_at = p.b + k * stride(B, 1);
      if (s.evenK)
        return dot(load(a_at), load(b_at), acc, options);
      Tensor in_k = k + arange(0, BK).to(index) < args[q.K];
      return dot(load(a_at, expand_dims(in_k, 0), 0.0), load(b_at, expand_dims(in_k, 1), 0.0), acc, options);
    };
    // The epilogue, in f32, and the store.
    auto epilogue = [&](const Tile &tile, const Tensor &acc) {
      Span t = spanOf(tile);
      Tensor v = s.scaled ? acc * args[q.alpha] : acc;
      if (s.present[BIAS])
        v = v + expand_dims(load(args[q.pointers[BIAS]] + (t.rn % N) * stride(BIAS, 2)).to(DType::f32), 0);
      switch (s.activation) {
      case Activation::none: break;
      case Activation::relu: v = maximum(v, 0.0); break;
      case Activation::gelu: v = v * (erfc(v * -0.7071067811865476) * 0.5); break;
      case Activation::silu: v = v * sigmoid(v); break;
      }
      if (s.present[RESIDUAL]) {
        Tensor r = base(RESIDUAL) + expand_dims(t.rm, 1) * stride(RESIDUAL, 1) + expand_dims(t.rn, 0) * stride(RESIDUAL, 2);
        v = v + load(r, t.inside, 0.0).to(DType::f32);
      }
      if (s.outDescriptor) {
        Descriptor(std::span<const Tensor>(args).subspan(q.descriptors[OUT], 6))
            .store({(tile.pid_m * BM).to(DType::i32), (tile.pid_n * BN).to(DType::i32)}, v.to(s.dtypes[OUT]));
        return;
      }
      Tensor o = base(OUT) + expand_dims(t.rm, 1) * stride(OUT, 1) + expand_dims(t.rn, 0) * stride(OUT, 2);
      store(o, v.to(s.dtypes[OUT]), t.inside);
    };

    if (s.persistent) {
      // One loop over all of this program's K steps, tile after tile, so
      // the copies of a tile's first steps are issued while the previous
      // tile's last ones multiply: step i is K step ki of the program's
      // tile `pid`; the first step of a tile starts from zero (a wgmma
      // drops the accumulator there instead of selecting), the last one
      // stores the tile.
      //
      // The tile's coordinates are formed every step (the copies run ahead
      // by steps, across tiles), where integer divisions by runtime values
      // (~25 instructions each) would slow every step: quotients come from
      // f32 reciprocals instead, exact for the tile numbers below 2^20 that
      // the launch allows (floor((n + 0.5) / d): the error stays below
      // 0.5 / d). A band of GROUP rows has GROUP rows, the last one
      // tiles_m - first_m; pids past the end (only their copies, which are
      // off, use them) may get any coordinates.
      //
      // In clusters of C programs (cluster_size, with descriptors), the
      // clusters walk tiles of C x 1 tiles (bands of GROUP / C of them), and
      // each program takes the one of its rank: the programs of a cluster
      // then read the same B blocks at the same steps, which the compiler
      // copies once for all of them (multicast). A program whose tile lies
      // past M's edge computes zeros there and stores nothing.
      const int64_t BK = cfg["BLOCK_K"], C = cfg.cluster_size();
      const int64_t band = std::max<int64_t>(1, GROUP / C);
      Tensor tiles_n = cdiv(N, BN).to(DType::i32), tiles_m = cdiv(M, BM).to(DType::i32);
      if (C > 1)
        tiles_m = cdiv(tiles_m, C);
      Tensor tiles = tiles_m * tiles_n;
      Tensor first = C > 1 ? cluster_id() : program_id(0);
      Tensor stride_tiles = C > 1 ? num_programs(0) / C : num_programs(0);
      Tensor mine = cdiv(tiles - first, stride_tiles).to(index);
      Tensor steps = cdiv(args[q.K], BK);
      Tensor group_tiles = band * tiles_n;
      Tensor last_rows = tiles_m - (tiles_m - 1) / band * band;
      Tensor inv_group_tiles = 1.0 / group_tiles.to(DType::f32), inv_last_rows = 1.0 / last_rows.to(DType::f32);
      auto quotient = [](const Tensor &n, const Tensor &inv) { return ((n.to(DType::f32) + 0.5) * inv).to(DType::i32); };
      auto tileAt = [&](const Tensor &pid) {
        Tensor which = quotient(pid, inv_group_tiles);
        Tensor first_m = which * band, local = pid - which * group_tiles;
        Tensor full = first_m + band <= tiles_m;
        Tensor rows = where(full, band, last_rows);
        Tensor column = quotient(local, where(full, 1.0 / band, inv_last_rows));
        Tensor row = first_m + local - column * rows;
        return Tile{C > 1 ? row * C + cluster_rank() : row, column};
      };
      if (s.carriedPointers) {
        // Pointer loads on mma.sync: forming a tile's 12 operand pointers
        // every K step (the copies run ahead across tiles) cost ~170
        // instructions a step. They are carried instead, formed
        // for the next tile at a tile's last step only: a branch, which the
        // pipeliner runs ahead like the rest of the address arithmetic. (It
        // must not be the epilogue's branch: stores cannot run ahead.)
        Pointers p = pointersOf(tileAt(first));
        for_range(constant(0, index), mine * steps, 1,
                  carry(zeros({BM, BN}, DType::f32), constant(0, index), first, p.a, p.b),
                  [&](const Tensor &, const Tensor &acc, const Tensor &ki, const Tensor &pid, const Tensor &pa,
                      const Tensor &pb) {
                    Tensor last = ki == steps - 1, following = pid + stride_tiles;
                    auto [na, nb] = if_(
                        last,
                        [&] {
                          Pointers n = pointersOf(tileAt(following));
                          return std::tuple{n.a, n.b};
                        },
                        [&] { return std::tuple{pa, pb}; });
                    Tensor sum = kStep(Tile{}, Pointers{pa, pb}, ki * BK, where(ki == 0, 0.0, acc));
                    if_(last, [&] { epilogue(tileAt(pid), sum); });
                    return std::tuple{sum, where(last, 0, ki + 1), where(last, following, pid), na, nb};
                  });
        return;
      }
      for_range(constant(0, index), mine * steps, 1, carry(zeros({BM, BN}, DType::f32), constant(0, index), first),
                [&](const Tensor &, const Tensor &acc, const Tensor &ki, const Tensor &pid) {
                  Tile t = tileAt(pid);
                  Tensor sum = kStep(t, pointersOf(t), ki * BK, where(ki == 0, 0.0, acc));
                  Tensor last = ki == steps - 1;
                  if_(last, [&] { epilogue(t, sum); });
                  return std::tuple{sum, where(last, 0, ki + 1), where(last, pid + stride_tiles, pid)};
                });
      return;
    }

    Tile t = tileOf(program_id(0));
    if (s.phase == Phase::combine) {
      Span span = spanOf(t);
      Tensor acc = for_range(0, args[q.splits], 1, carry(zeros({BM, BN}, DType::f32)), [&](const Tensor &chunk, const Tensor &sum) {
        return sum + load(partialTile(span, chunk), span.inside, 0.0);
      });
      epilogue(t, acc);
      return;
    }
    Operand begin = 0, end = args[q.K];
    if (s.phase == Phase::partial) {
      Tensor first = program_id(2).to(index) * args[q.chunk];
      begin = first;
      end = minimum(args[q.K], first + args[q.chunk]);
    }
    Pointers p = pointersOf(t);
    Tensor acc = for_range(begin, end, cfg["BLOCK_K"], carry(zeros({BM, BN}, DType::f32)),
                           [&](const Tensor &k, const Tensor &acc) { return kStep(t, p, k, acc); });
    if (s.phase == Phase::partial) {
      Span span = spanOf(t);
      store(partialTile(span, program_id(2)), acc, span.inside);
    } else {
      epilogue(t, acc);
    }
  };
  return Kernel("kiln_matmul_" + sha256_hex(key).substr(0, 10), q.signature.types(), body).library("matmul");
}

/// The most K chunks split-K makes (each adds an f32 plane of out's size).
constexpr int64_t kMaxSplits = 64;
/// What every workspace allocation's address is a multiple of.
constexpr uint64_t kWorkspaceAlignment = 256;

/// Whether the epilogue multiplies by alpha: a kernel for alpha 1 has no
/// alpha (a structure, and a plan, of its own).
bool scales(const MatmulArgs &m) { return m.alpha != 1.0; }

bool isMatmulFloat(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

/// Whether the copy engine can read a 2-D operand as stored: one of its
/// dimensions contiguous, the other's stride a multiple of 16 bytes, the
/// base 16-byte aligned.
bool copyEngineReads(const TensorView &v) {
  if (v.rank() != 2 || v.address % 16 != 0)
    return false;
  std::vector<int64_t> st = v.effective_strides();
  int64_t bytes = static_cast<int64_t>(size_in_bytes(v.dtype));
  return (st[1] == 1 && st[0] * bytes % 16 == 0) || (st[0] == 1 && st[1] * bytes % 16 == 0);
}

} // namespace

bool on_tensor_cores(DType operands, Precision precision) {
  return operands != DType::f32 || precision != Precision::ieee;
}

bool stores_b_k_major(const TensorView &b) {
  return b.rank() >= 2 && b.effective_strides()[b.rank() - 2] == 1 && b.shape[b.rank() - 1] > 1;
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
    return Config{{"BLOCK_M", 32}, {"BLOCK_N", 32}, {"BLOCK_K", 16}, {"GROUP_M", 8}, {"num_warps", 4}, {"num_stages", 1}};
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
  const int64_t tiles = batches * cdiv(M, c["BLOCK_M"]) * cdiv(N, c["BLOCK_N"]), steps = cdiv(K, c["BLOCK_K"]);
  const int64_t minChunk = operands == DType::f32 ? 1024 : c["BLOCK_M"] <= 16 ? 8192 : 4096;
  int64_t split = 1;
  while (tiles * split * 2 <= kWave && steps / (split * 2) >= 8 && K / (split * 2) >= minChunk)
    split *= 2;
  if (split > 1)
    c.set("SPLIT_K", split);
  return c;
}

bool copy_engine_tile(int64_t blockM, int64_t M) {
  // (bench/results/2026-11-24-h100-matmul-tma.md: skinny tiles;
  // 2026-11-25-h100-matmul-64x64-plan-cache.md: 64-row tiles of 128-row products.)
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
  // reads less from DRAM.
  if (BM == 128 && BN == 256 && !tile.has("PERSISTENT")) {
    tile.set("PERSISTENT", 1);
    tile.set("GROUP_M", 16);
  }
  if (((BM == 128 && (BN == 256 || BN == 64)) || (BM == 64 && BN == 64)) && !tile.has("warp_specialize"))
    tile.set("warp_specialize", 1);
  return tile;
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

MatmulLaunch prepare_matmul(const MatmulArgs &m, const Stream &stream, const Config &overrides) {
  const std::string op = "matmul";
  check_view(m.a, op, "a");
  check_view(m.b, op, "b");
  check_view(m.out, op, "out");
  const int rank = m.out.rank();
  if (rank != 2 && rank != 3)
    throw Error(op + ": out " + m.out.describe() + " must be [M, N] or [batch, M, N]");
  if (m.a.rank() != rank || m.b.rank() != rank)
    throw Error(op + ": a " + m.a.describe() + " and b " + m.b.describe() + " must have out's rank (" +
                std::to_string(rank) + ")");
  if (!isMatmulFloat(m.a.dtype) || m.b.dtype != m.a.dtype)
    throw Error(op + ": a and b must both be f16, bf16 or f32 (a is " + std::string(name(m.a.dtype)) + ", b " +
                std::string(name(m.b.dtype)) + ")");
  if (!isMatmulFloat(m.out.dtype))
    throw Error(op + ": out must be f32, f16 or bf16, not " + std::string(name(m.out.dtype)));
  const int64_t M = m.out.shape[rank - 2], N = m.out.shape[rank - 1], K = m.a.shape[rank - 1];
  if (m.a.shape[rank - 2] != M || m.b.shape[rank - 2] != K || m.b.shape[rank - 1] != N)
    throw Error(op + ": shapes do not multiply: a " + m.a.describe() + " x b " + m.b.describe() + " -> out " +
                m.out.describe());
  const int64_t batches = rank == 3 ? m.out.shape[0] : 1;
  for (const TensorView *v : {&m.a, &m.b})
    if (rank == 3 && v->shape[0] != batches && v->shape[0] != 1)
      throw Error(op + ": batch of " + v->describe() + " must be out's (" + std::to_string(batches) + ") or 1");
  std::vector<const TensorView *> views{&m.a, &m.b, &m.out};
  Structure s;
  s.dtypes[A] = m.a.dtype;
  s.dtypes[B] = m.b.dtype;
  s.dtypes[OUT] = m.out.dtype;
  if (m.bias.address) {
    check_view(m.bias, op, "bias");
    if (m.bias.shape != std::vector<int64_t>{N} || !isMatmulFloat(m.bias.dtype))
      throw Error(op + ": bias " + m.bias.describe() + " must be 1-D f32, f16 or bf16 of out's last size " +
                  std::to_string(N));
    s.present[BIAS] = true;
    s.dtypes[BIAS] = m.bias.dtype;
    views.push_back(&m.bias);
  }
  if (m.residual.address) {
    check_view(m.residual, op, "residual");
    if (m.residual.shape != m.out.shape || !isMatmulFloat(m.residual.dtype))
      throw Error(op + ": residual " + m.residual.describe() + " must be f32, f16 or bf16 of out's shape " +
                  m.out.describe());
    s.present[RESIDUAL] = true;
    s.dtypes[RESIDUAL] = m.residual.dtype;
    views.push_back(&m.residual);
  }
  check_devices(views, stream, op);
  check_no_overlap(m.out, op, "out");
  if (batches > 65535)
    throw Error(op + ": at most 65535 batches, got " + std::to_string(batches));
  if (m.out.numel() == 0)
    return {};

  // Precision says how f32 operands multiply; 16-bit ones are exact.
  s.precision = m.a.dtype == DType::f32 ? m.precision : Precision::ieee;
  Config config = default_matmul_config(m.a.dtype, s.precision, stores_b_k_major(m.b), batches, M, N, K);
  // A given tile (a user's, a tuned one) runs unsplit unless it says
  // otherwise: the default split belongs to the default tile. So do
  // persistent programs, which compute whole tiles.
  const bool givesTile = std::any_of(overrides.values().begin(), overrides.values().end(), [](const auto &entry) {
    return entry.first != "DESCRIPTORS" && entry.first != "OUT_DESCRIPTOR" && entry.first != "PERSISTENT" &&
           entry.first != "warp_specialize" && entry.first != "cluster_size";
  });
  if ((givesTile || overrides.get("PERSISTENT", 0) > 0) && !overrides.has("SPLIT_K"))
    config.set("SPLIT_K", 1);
  for (const auto &[k, v] : overrides.values())
    config.set(k, v);
  // Descriptors by default where the copy engine can serve them (Hopper,
  // tensor cores, pipelined loops, 2-D operands it can read) and where it
  // measured faster (copy_engine_tile).
  // (Sizes below 2^31: the copy engine's coordinates are 32-bit.)
  const bool describable = rank == 2 && on_tensor_cores(m.a.dtype, s.precision) && copyEngineReads(m.a) &&
                           copyEngineReads(m.b) && K > 0 && std::max({M, N, K}) < (int64_t(1) << 31);
  // The target compiled for (KILN_TARGET may name an older one than the
  // device's, e.g. sm_80 on a Hopper GPU), not the device itself.
  const bool hopper =
      stream.device().kind() == DeviceKind::cuda && compute_capability_of(target_for(stream.device())) >= 90;
  const bool defaultDescriptors = hopper && describable && config.num_stages() >= 2 &&
                                  copy_engine_tile(config["BLOCK_M"], M);
  if (!givesTile && config.get("DESCRIPTORS", defaultDescriptors) == 1 && defaultDescriptors)
    config = with_copy_engine_schedule(config);
  const int64_t BM = config["BLOCK_M"], BN = config["BLOCK_N"], BK = config["BLOCK_K"];
  for (auto [what, size] : {std::pair{"BLOCK_M", BM}, {"BLOCK_N", BN}, {"BLOCK_K", BK}})
    if (size < 16 || (size & (size - 1)))
      throw Error(op + ": " + what + " must be a power of two of at least 16, got " + std::to_string(size));
  if (config["GROUP_M"] < 1)
    throw Error(op + ": GROUP_M must be at least 1");
  const int64_t requestedSplits = config.get("SPLIT_K", 1);
  if (requestedSplits < 1 || requestedSplits > kMaxSplits)
    throw Error(op + ": SPLIT_K must be between 1 and " + std::to_string(kMaxSplits) + ", got " +
                std::to_string(requestedSplits));
  // K chunks of whole BLOCK_K steps; chunks that would start past K are not made.
  const int64_t chunk = std::max<int64_t>(1, cdiv(cdiv(K, BK), requestedSplits)) * BK;
  const int64_t splits = std::max<int64_t>(1, cdiv(K, chunk));
  Config tile; // what the kernels see (SPLIT_K, DESCRIPTORS, OUT_DESCRIPTOR and PERSISTENT change launches and structures)
  for (const auto &[k, v] : config.values())
    if (k != "SPLIT_K" && k != "DESCRIPTORS" && k != "OUT_DESCRIPTOR" && k != "PERSISTENT")
      tile.set(k, v);
  const int64_t persistent = config.get("PERSISTENT", 0);
  if (persistent < 0 || persistent > 32)
    throw Error(op + ": PERSISTENT must be between 0 (off) and 32 programs a multiprocessor, got " +
                std::to_string(persistent));
  if (persistent > 0 && splits > 1)
    throw Error(op + ": PERSISTENT programs compute whole tiles; it needs SPLIT_K=1, got " + std::to_string(splits) +
                " chunks");

  // Strides per operand: batch (0 where it broadcasts), rows, columns.
  int64_t strides[OPERANDS][3] = {};
  const TensorView *of[OPERANDS] = {&m.a, &m.b, &m.out, &m.bias, &m.residual};
  for (int o = 0; o < OPERANDS; ++o) {
    if (!s.present[o])
      continue;
    std::vector<int64_t> st = of[o]->effective_strides();
    if (o == BIAS) {
      strides[o][2] = st[0];
      continue;
    }
    strides[o][0] = rank == 3 && of[o]->shape[0] > 1 ? st[0] : 0;
    strides[o][1] = st[rank - 2];
    strides[o][2] = st[rank - 1];
  }
  s.batched = rank == 3 && batches > 1;
  s.evenK = K % BK == 0;
  s.activation = m.activation;
  s.scaled = scales(m);
  const int64_t wantDescriptors = config.get("DESCRIPTORS", defaultDescriptors);
  if (wantDescriptors != 0 && wantDescriptors != 1)
    throw Error(op + ": DESCRIPTORS must be 0 or 1, got " + std::to_string(wantDescriptors));
  if (wantDescriptors && !describable)
    throw Error(op + ": DESCRIPTORS=1 needs 2-D f16/bf16 (or tf32) operands with one dimension contiguous, the "
                     "other's stride a multiple of 16 bytes, 16-byte aligned addresses, and 0 < M, N, K < 2^31");
  s.descriptors = wantDescriptors == 1;
  // The output through a descriptor where A and B are read through them
  // and out is a row-major matrix the copy engine can write.
  const bool outDescribable = rank == 2 && copyEngineReads(m.out) && m.out.effective_strides()[1] == 1 &&
                              std::max(M, N) < (int64_t(1) << 31);
  const int64_t wantOutDescriptor = config.get("OUT_DESCRIPTOR", s.descriptors && outDescribable && splits == 1);
  if (wantOutDescriptor != 0 && wantOutDescriptor != 1)
    throw Error(op + ": OUT_DESCRIPTOR must be 0 or 1, got " + std::to_string(wantOutDescriptor));
  if (wantOutDescriptor && !(outDescribable && splits == 1))
    throw Error(op + ": OUT_DESCRIPTOR=1 needs an unsplit product (SPLIT_K=1) and a 2-D out with contiguous rows, "
                     "its row stride a multiple of 16 bytes, a 16-byte aligned address, and M, N < 2^31");
  s.outDescriptor = wantOutDescriptor == 1;
  s.aKContiguous = m.a.effective_strides()[1] == 1;
  s.bNContiguous = m.b.effective_strides()[1] == 1;
  // 64-bit offsets when an offset a program forms (rows and columns up to
  // the edge tiles' ends) or a coordinate could pass 2^31.
  const int64_t rowsEnd = cdiv(M, BM) * BM, colsEnd = cdiv(N, BN) * BN, kEnd = cdiv(K, BK) * BK;
  auto reach = [&](int o, int64_t rows, int64_t cols) {
    return (batches - 1) * std::abs(strides[o][0]) + rows * std::abs(strides[o][1]) + cols * std::abs(strides[o][2]);
  };
  const int64_t farthest = std::max({reach(A, rowsEnd, kEnd), reach(B, kEnd, colsEnd), reach(OUT, rowsEnd, colsEnd),
                                     reach(RESIDUAL, rowsEnd, colsEnd), colsEnd * std::abs(strides[BIAS][2]),
                                     rowsEnd, colsEnd, kEnd});
  const int64_t planes = splits * batches;
  const int64_t workReach = (planes - 1) * M * N + rowsEnd * N + colsEnd;
  // (The last chunk's loop bound, first + chunk, may pass K.)
  s.wide = std::max({farthest, splits > 1 ? workReach : 0, splits * chunk}) >= (int64_t(1) << 31);

  const Grid tiles(static_cast<uint32_t>(cdiv(M, BM) * cdiv(N, BN)), static_cast<uint32_t>(s.batched ? batches : 1));
  // Persistent: `persistent` programs a multiprocessor (never more than
  // tiles), each computing every num_programs-th tile in grouped order.
  // (With K = 0 there are no K steps to carry the tiles: one program a tile
  // stores the epilogue of zero. The loop's tile arithmetic is exact below
  // 2^20 tiles; more run one program a tile too.)
  // With pointer loads, rows and columns past the edges wrap by one
  // subtraction, which needs tiles no larger than the product.
  s.persistent = persistent > 0 && K > 0 && cdiv(M, BM) * cdiv(N, BN) < (int64_t(1) << 20) &&
                 (s.descriptors || (M >= BM && N >= BN));
  // (On Hopper, pointer loads into wgmma keep forming their pointers every
  // step, the form measured with the dot left in flight.)
  s.carriedPointers = s.persistent && !s.descriptors && !hopper;
  // Clusters of persistent programs sharing B's copies (cluster_size).
  const int64_t cluster = config.get("cluster_size", 1);
  if (cluster > 1 && (persistent == 0 || !s.descriptors))
    throw Error(op + ": cluster_size " + std::to_string(cluster) +
                " shares B's copies among persistent programs: it needs PERSISTENT > 0 and DESCRIPTORS=1");
  if (cluster > 1 && !s.persistent) // (2^20 tiles or more run one program a tile: no copies to share)
    tile.set("cluster_size", 1);
  const int64_t clusterTiles = cdiv(cdiv(M, BM), cluster) * cdiv(N, BN);
  const Grid programs(static_cast<uint32_t>(std::min<int64_t>(
                          tiles.x, std::max<int64_t>(1, persistent * stream.device().multiprocessors()))),
                      tiles.y);
  MatmulLaunch launch;
  auto add = [&](const Structure &st, const Config &cfg, Grid grid) {
    Params q = parameters(st);
    std::string key = st.key();
    MatmulLaunch::Step step{cached_kernel(key, [&] { return makeKernel(key, st, q); }), cfg, grid,
                            std::vector<Arg>(q.signature.types().size(), Arg(0)), q.pointers[WORK]};
    std::vector<Arg> &args = step.args;
    for (int o = 0; o < WORK; ++o)
      if (q.pointers[o] >= 0) {
        args[q.pointers[o]] = arg_of(*of[o]);
        step.tensors.slots.emplace_back(q.pointers[o], o);
      }
    for (int o : {A, B, OUT}) // as stored: [rows][contiguous columns]
      if (int first = q.descriptors[o]; first >= 0) {
        bool asLaid = o == A ? st.aKContiguous : o == B ? st.bNContiguous : true;
        int64_t rows = o == A ? (asLaid ? M : K) : o == B ? (asLaid ? K : N) : M;
        int64_t cols = o == A ? (asLaid ? K : M) : o == B ? (asLaid ? N : K) : N;
        int64_t rowStride = asLaid ? strides[o][1] : strides[o][2];
        std::vector<Arg> parts;
        TensorArg(arg_of(*of[o]), {rows, cols}, {rowStride, 1}).append_to(parts);
        std::copy(parts.begin(), parts.end(), args.begin() + first);
        step.tensors.slots.emplace_back(first + 1, o); // (after the tensor map's placeholder)
      }
    args[q.M] = Arg(M);
    args[q.N] = Arg(N);
    if (q.K >= 0)
      args[q.K] = Arg(K);
    if (q.alpha >= 0)
      args[q.alpha] = Arg(static_cast<float>(m.alpha));
    step.alpha = q.alpha;
    if (q.chunk >= 0)
      args[q.chunk] = Arg(chunk);
    if (q.splits >= 0)
      args[q.splits] = Arg(static_cast<int32_t>(splits));
    for (int o = 0; o < OPERANDS; ++o)
      for (int d = 0; d < 3; ++d)
        if (q.strides[o][d] >= 0)
          args[q.strides[o][d]] = Arg(o == WORK ? (d == 0 ? M * N : d == 1 ? N : 1) : strides[o][d]);
    // Persistent clusters: as many as run at once (clusters need
    // multiprocessors of one GPC, so fewer than multiprocessors / size may
    // fit), each taking every so many cluster tiles.
    if (st.persistent && cfg.cluster_size() > 1) {
      const int64_t resident = step.kernel.resident_clusters(cfg, stream, args);
      const int64_t clusters = std::min({clusterTiles, std::max<int64_t>(1, resident),
                                         std::max<int64_t>(1, persistent * stream.device().multiprocessors() / cluster)});
      step.grid = Grid(static_cast<uint32_t>(clusters * cluster), grid.y);
    }
    launch.steps.push_back(std::move(step));
  };
  if (splits == 1) {
    add(s, tile, s.persistent ? programs : tiles);
    return launch;
  }
  // Partial sums of each K chunk, then their sum and the epilogue, over
  // tiles no larger than the product's (so the offsets above bound them).
  Structure partial = s, combine = s;
  partial.phase = Phase::partial;
  partial.present[OUT] = partial.present[BIAS] = partial.present[RESIDUAL] = false;
  partial.present[WORK] = combine.present[WORK] = true;
  partial.dtypes[WORK] = combine.dtypes[WORK] = DType::f32;
  partial.activation = Activation::none;
  partial.scaled = false;
  combine.phase = Phase::combine;
  combine.present[A] = combine.present[B] = false;
  combine.evenK = true;
  combine.descriptors = false; // (it reads no operands)
  combine.outDescriptor = false;
  add(partial, tile, Grid(tiles.x, tiles.y, static_cast<uint32_t>(splits)));
  const int64_t CBM = std::min<int64_t>(BM, 32), CBN = std::min<int64_t>(BN, 128);
  add(combine, Config{{"BLOCK_M", CBM}, {"BLOCK_N", CBN}, {"GROUP_M", 1}, {"num_warps", 4}, {"num_stages", 1}},
      Grid(static_cast<uint32_t>(cdiv(M, CBM) * cdiv(N, CBN)), tiles.y));
  launch.workspace_bytes = static_cast<size_t>(planes * M * N) * sizeof(float);
  return launch;
}

int32_t matmul_plan_choices(const MatmulArgs &args) {
  return (scales(args) ? 256 : 0) + static_cast<int32_t>(args.activation) * 16 + static_cast<int32_t>(args.precision);
}

void MatmulLaunch::rebind(const MatmulArgs &m) {
  static_assert(A == 0 && B == 1 && OUT == 2 && BIAS == 3 && RESIDUAL == 4, "views numbered as MatmulArgs orders them");
  for (Step &step : steps) {
    step.tensors.rebind(step.args, {&m.a, &m.b, &m.out, &m.bias, &m.residual});
    if (step.alpha >= 0)
      step.args[step.alpha] = Arg(static_cast<float>(m.alpha));
  }
}

void MatmulLaunch::queue(const Stream &stream) const {
  Buffer space = workspace_bytes ? workspace(stream, workspace_bytes) : Buffer();
  for (const Step &step : steps) {
    if (step.workspace < 0) {
      step.kernel.launch_with(step.grid, step.config, stream, step.args);
      continue;
    }
    std::vector<Arg> args = step.args;
    if (step.workspace >= 0)
      args[step.workspace] = Arg::device_pointer(space.address(), workspace_bytes, space.device().kind());
    step.kernel.launch_with(step.grid, step.config, stream, args);
  }
}

CompiledKernel MatmulLaunch::compile(const std::string &arch) const {
  CompiledKernel largest;
  for (const Step &step : steps) {
    std::vector<Arg> args = step.args;
    // Only the workspace's alignment shapes the code; workspaces are
    // allocations, aligned at least this much.
    if (step.workspace >= 0)
      args[step.workspace] = Arg::device_pointer(kWorkspaceAlignment, workspace_bytes);
    CompiledKernel compiled = step.kernel.compile(step.config, step.kernel.specialize(args), arch);
    if (compiled.registers >= largest.registers)
      largest = std::move(compiled);
  }
  return largest;
}

void matmul(const MatmulArgs &args, const Stream &stream, const Config &config) {
  thread_local RecentPlans<MatmulLaunch> recent;
  PlanKey key;
  const bool keyed = key.make({&args.a, &args.b, &args.out, &args.bias, &args.residual},
                              matmul_plan_choices(args), stream);
  if (const MatmulLaunch *plan = keyed ? recent.find(key, config, args) : nullptr) {
    plan->queue(stream);
    return;
  }
  check_present_views({{&args.a, "a"}, {&args.b, "b"}, {&args.out, "out"}, {&args.bias, "bias"},
                       {&args.residual, "residual"}},
                      "matmul");
  MatmulLaunch plan =
      prepare_matmul(args, stream, config.values().empty() ? chosen_matmul_config(args, stream) : config);
  plan.queue(stream);
  if (keyed)
    recent.keep(key, config, std::move(plan));
}

} // namespace kiln::ops
