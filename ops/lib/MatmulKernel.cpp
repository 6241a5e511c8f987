//===- MatmulKernel.cpp - the matmul op's generated kernels ---------------===//
//
// Each program computes a BLOCK_M x BLOCK_N tile of one batch, tiles
// ordered in groups of GROUP_M rows so that neighbours share L2; rows and
// columns past the edges wrap around (x % M) for loading and are never
// stored, so only K needs masks, and only when BLOCK_K does not divide it.
//
// Descriptors: A and B are read through tensor descriptors, whose blocks
// the compiler loads with the copy engine (TMA) and which zero-fill past
// the edges, so no wrap is needed. An operand stored transposed (A [K][M],
// B [N][K]) is described as stored and its block transposed in the kernel.
// The output through a descriptor is written by the copy engine from
// shared memory, clipped at the edges, while the program goes on.
//
// Four schedules: one program a tile over its whole K range, or over one
// K chunk (split-K's partial sums); the sum of the chunks; and persistent
// programs walking the tiles (PersistentWalk).
//
//===----------------------------------------------------------------------===//

#include "ops/lib/MatmulKernel.h"

#include <kiln/cache.h>

#include <algorithm>
#include <tuple>
#include <utility>

namespace kiln::ops::matmul_kernel {

namespace {

const char *name(Phase p) { return p == Phase::whole ? "whole" : p == Phase::partial ? "partial" : "combine"; }

/// A tile's block row and column; in a grouped product also its group and
/// the range [first, end) of its rows (from the tile table).
struct Tile {
  Tensor pid_m, pid_n;
  Tensor group = {}, first = {}, end = {};
};
/// Its rows and columns, and which of its elements lie inside out (formed
/// where used: in a loop over tiles, only the epilogue needs them).
struct Span {
  Tensor rm, rn, inside;
};
/// Pointer loads: the tile's operand pointers at K offset 0.
struct Pointers {
  Tensor a, b;
};

/// What every schedule's program does with a tile: find its rows and
/// operands, multiply one BLOCK_K step, apply the epilogue and store.
class TileProgram {
public:
  TileProgram(const Structure &s, const Params &q, const Config &cfg, const std::vector<Tensor> &args)
      : s(s), q(q), cfg(cfg), args(args), BM(cfg["BLOCK_M"]), BN(cfg["BLOCK_N"]), GROUP(cfg["GROUP_M"]),
        index(s.wide ? DType::i64 : DType::i32), M(args[q.M]), N(args[q.N]),
        batch(s.batched ? program_id(1).to(index) : Tensor()) {}

  const Structure &s;
  const Params &q;
  const Config &cfg;
  const std::vector<Tensor> &args;
  const int64_t BM, BN, GROUP;
  const DType index;
  const Tensor M, N;

  Tensor at(int position) const { return position >= 0 ? args[position] : Tensor(); }
  Tensor stride(int o, int d) const { return at(q.strides[o][d]); }
  /// Where operand o's matrix for tile t starts: its batch's, or (grouped)
  /// B's and SCALE_B's that of the tile's group.
  Tensor base(int o, const Tile &t) const {
    Tensor p = args[q.pointers[o]];
    Tensor which = s.grouped ? (o == B || o == SCALE_B ? t.group.to(index) : Tensor()) : batch;
    return which.valid() && q.strides[o][0] >= 0 ? p + which * stride(o, 0) : p;
  }

  /// (grouped) The number of tile rows the table lists.
  Tensor tableRows() const { return load(args[q.pointers[TILES]]); }

  /// (grouped) Tile t with its group and rows from the table; a tile row
  /// past the listed ones (programs past the end, a persistent program's
  /// copies past its last tile) gets group 0 and no rows.
  Tile withGroup(Tile t, const Tensor &rows) const {
    Tensor listed = (t.pid_m >= 0) & (t.pid_m < rows);
    Tensor entry = args[q.pointers[TILES]] + 1 + where(listed, t.pid_m, 0).to(DType::i32) * 3;
    t.group = where(listed, load(entry), 0);
    t.first = where(listed, load(entry + 1), 0);
    t.end = where(listed, load(entry + 2), 0);
    return t;
  }

  /// Tile `pid` in grouped order.
  Tile tileOf(const Tensor &pid) const {
    Tensor tiles_n = cdiv(N, BN), tiles_m = s.grouped ? tableRows().to(pid.dtype()) : cdiv(M, BM);
    Tensor first_m = pid / (GROUP * tiles_n) * GROUP;
    Tensor group_rows = minimum(tiles_m - first_m, GROUP);
    if (s.grouped) // (programs past the listed tiles have no band)
      group_rows = maximum(group_rows, 1);
    Tile t{first_m + pid % group_rows, (pid % (GROUP * tiles_n)) / group_rows};
    return s.grouped ? withGroup(t, tiles_m) : t;
  }

  /// Whether tile t has rows to compute (grouped products' may not).
  Tensor hasRows(const Tile &t) const { return t.end > t.first; }

  Span spanOf(const Tile &t) const {
    Tensor rm = (s.grouped ? t.first + arange(0, BM) : t.pid_m * BM + arange(0, BM)).to(index);
    Tensor rn = (t.pid_n * BN + arange(0, BN)).to(index);
    return Span{rm, rn, expand_dims(rm < (s.grouped ? t.end.to(index) : M), 1) & expand_dims(rn < N, 0)};
  }

  /// A chunk's partial tile: plane chunk * batches + batch.
  Tensor partialTile(const Span &t, const Tensor &chunk) const {
    Tensor plane = (chunk * num_programs(1) + program_id(1)).to(index);
    return args[q.pointers[WORK]] + plane * stride(WORK, 0) + expand_dims(t.rm, 1) * stride(WORK, 1) +
           expand_dims(t.rn, 0) * stride(WORK, 2);
  }

  Pointers pointersOf(const Tile &tile) const {
    if (s.descriptors)
      return Pointers{};
    Span t = spanOf(tile);
    Tensor rk = arange(0, cfg["BLOCK_K"]).to(index);
    // A persistent program forms these in its loop (every K step, or at
    // each tile's last one with carriedPointers), where a remainder by a
    // runtime size costs ~20 instructions a row: its tiles start inside
    // and are no larger than the product (the plan sees to it), so one
    // conditional subtraction wraps.
    // A grouped tile's rows run at most BLOCK_M - 1 past the last row.
    auto wrap = [&](const Tensor &r, const Tensor &size) { return s.persistent ? where(r >= size, r - size, r) : r % size; };
    Tensor rows = s.grouped ? minimum(t.rm, M - 1) : wrap(t.rm, M);
    return Pointers{base(A, tile) + expand_dims(rows, 1) * stride(A, 1) + expand_dims(rk, 0) * stride(A, 2),
                    base(B, tile) + expand_dims(rk, 1) * stride(B, 1) + expand_dims(wrap(t.rn, N), 0) * stride(B, 2)};
  }

  /// One BLOCK_K step at K offset k (index type): acc + A[rows, k:] B[k:, columns].
  Tensor kStep(const Tile &t, const Pointers &p, const Tensor &k, const Tensor &acc) const {
    auto [a, b] = operandsAt(t, p, k);
    DotOptions options{.precision = s.precision};
    if (!s.blockScales && !s.promote)
      return dot(a, b, acc, options);
    // (The step's own sum, joining acc in f32 registers: fp8 wgmma keeps
    // fewer bits than f32 in its running sums. Block scales scale it first.)
    Tensor step = dot(a, b, zeros({BM, BN}, DType::f32), options);
    return acc + (s.blockScales ? step * blockScalesAt(t, k) : step);
  }

  /// The epilogue, in f32, and the store.
  void epilogue(const Tile &tile, const Tensor &acc) const {
    Span t = spanOf(tile);
    Tensor v = s.scaled ? acc * args[q.alpha] : acc;
    // (fp8 products: each row's and column's scales, or the tensors'; block
    // scales were the K steps'.)
    if (s.present[SCALE_A] && !s.blockScales)
      v = v * (s.scaleRows ? expand_dims(load(args[q.pointers[SCALE_A]] + (t.rm % M) * stride(SCALE_A, 2)), 1)
                           : load(args[q.pointers[SCALE_A]]));
    if (s.present[SCALE_B] && !s.blockScales)
      v = v * (s.scaleColumns ? expand_dims(load(base(SCALE_B, tile) + (t.rn % N) * stride(SCALE_B, 2)), 0)
                              : load(args[q.pointers[SCALE_B]]));
    if (s.present[BIAS])
      v = v + expand_dims(load(args[q.pointers[BIAS]] + (t.rn % N) * stride(BIAS, 2)).to(DType::f32), 0);
    switch (s.activation) {
    case Activation::none: break;
    case Activation::relu: v = maximum(v, 0.0); break;
    case Activation::gelu: v = v * (erfc(v * -0.7071067811865476) * 0.5); break;
    case Activation::silu: v = v * sigmoid(v); break;
    }
    if (s.present[RESIDUAL]) {
      Tensor r = base(RESIDUAL, tile) + expand_dims(t.rm, 1) * stride(RESIDUAL, 1) + expand_dims(t.rn, 0) * stride(RESIDUAL, 2);
      v = v + load(r, t.inside, 0.0).to(DType::f32);
    }
    if (s.outDescriptor) {
      described(OUT).store({(tile.pid_m * BM).to(DType::i32), (tile.pid_n * BN).to(DType::i32)}, v.to(s.dtypes[OUT]));
      return;
    }
    Tensor o = base(OUT, tile) + expand_dims(t.rm, 1) * stride(OUT, 1) + expand_dims(t.rn, 0) * stride(OUT, 2);
    store(o, v.to(s.dtypes[OUT]), t.inside);
  }

private:
  Tensor batch;

  /// A's and B's blocks for K step k.
  std::pair<Tensor, Tensor> operandsAt(const Tile &t, const Pointers &p, const Tensor &k) const {
    const int64_t BK = cfg["BLOCK_K"];
    if (s.descriptors) {
      Descriptor da = described(A), db = described(B);
      // The copy engine's coordinates are i32 (each size is below 2^31),
      // also where offsets past 2^31 make the index type i64. A grouped
      // product's B is described as its groups' matrices one below the
      // other.
      Tensor row = (s.grouped ? t.first : t.pid_m * BM).to(DType::i32), column = (t.pid_n * BN).to(DType::i32),
             k32 = k.to(DType::i32);
      Tensor bRow = k32, bColumn = column;
      if (s.grouped && s.bNContiguous)
        bRow = k32 + t.group * args[q.K].to(DType::i32);
      else if (s.grouped)
        bColumn = column + t.group * N.to(DType::i32);
      return {s.aKContiguous ? da.load({row, k32}, {BM, BK}) : da.load({k32, row}, {BK, BM}).trans(),
              s.bNContiguous ? db.load({bRow, column}, {BK, BN}) : db.load({bColumn, k32}, {BN, BK}).trans()};
    }
    Tensor a_at = p.a + k * stride(A, 2), b_at = p.b + k * stride(B, 1);
    if (s.evenK)
      return {load(a_at), load(b_at)};
    Tensor in_k = k + arange(0, BK).to(index) < args[q.K];
    return {load(a_at, expand_dims(in_k, 0), 0.0), load(b_at, expand_dims(in_k, 1), 0.0)};
  }

  /// The scales of K step k's blocks (BLOCK_K divides kScaleBlock): each
  /// row's of A times each column's block's of B. Rows and columns past
  /// the edges, never stored, take the last one's. A tile no wider than a
  /// block lies in one block of columns: one scale of B, not one a column
  /// (a load each of a thread's columns every step).
  Tensor blockScalesAt(const Tile &t, const Tensor &k) const {
    Tensor block = k / kScaleBlock;
    Tensor rm = minimum((t.pid_m * BM + arange(0, BM)).to(index), M - 1);
    Tensor sa = expand_dims(load(args[q.pointers[SCALE_A]] + rm * stride(SCALE_A, 1) + block * stride(SCALE_A, 2)), 1);
    Tensor bBlocks = args[q.pointers[SCALE_B]] + block * stride(SCALE_B, 1);
    if (BN <= kScaleBlock)
      return sa * load(bBlocks + (t.pid_n * BN).to(index) / kScaleBlock * stride(SCALE_B, 2));
    Tensor columnBlock = minimum((t.pid_n * BN + arange(0, BN)).to(index), N - 1) / kScaleBlock;
    return sa * expand_dims(load(bBlocks + columnBlock * stride(SCALE_B, 2)), 0);
  }

  Descriptor described(int o) const {
    return Descriptor(std::span<const Tensor>(args).subspan(q.descriptors[o], 6));
  }
};

/// One program a tile: over the whole K range (the product and its
/// epilogue), or over the K chunk program_id(2) (its partial sums).
void tileProduct(const TileProgram &p) {
  Tile t = p.tileOf(program_id(0));
  Operand begin = 0, end = p.s.grouped ? where(p.hasRows(t), p.args[p.q.K], 0) : p.args[p.q.K];
  if (p.s.phase == Phase::partial) {
    Tensor first = program_id(2).to(p.index) * p.args[p.q.chunk];
    begin = first;
    end = minimum(p.args[p.q.K], first + p.args[p.q.chunk]);
  }
  Pointers pointers = p.pointersOf(t);
  Tensor acc = for_range(begin, end, p.cfg["BLOCK_K"], carry(zeros({p.BM, p.BN}, DType::f32)),
                         [&](const Tensor &k, const Tensor &acc) { return p.kStep(t, pointers, k, acc); });
  if (p.s.phase == Phase::partial) {
    Span span = p.spanOf(t);
    store(p.partialTile(span, program_id(2)), acc, span.inside);
  } else {
    p.epilogue(t, acc);
  }
}

/// Split-K's second kernel: a tile's chunks summed in order, then the epilogue.
void combineChunks(const TileProgram &p) {
  Tile t = p.tileOf(program_id(0));
  Span span = p.spanOf(t);
  Tensor acc = for_range(0, p.args[p.q.splits], 1, carry(zeros({p.BM, p.BN}, DType::f32)),
                         [&](const Tensor &chunk, const Tensor &sum) {
                           return sum + load(p.partialTile(span, chunk), span.inside, 0.0);
                         });
  p.epilogue(t, acc);
}

/// Persistent programs (PERSISTENT=p > 0: p programs a multiprocessor):
/// each walks the tiles a grid's size apart in one loop over all of its
/// tiles' K steps, so the copies of a tile's first steps are issued while
/// the previous tile's last ones multiply and it stores: step i is K step
/// ki of the program's tile `pid`; the first step of a tile starts from
/// zero (a wgmma drops the accumulator there instead of selecting; on
/// mma.sync a branch around that step's first instructions), the last one
/// stores the tile.
///
/// The tile's coordinates are formed every step (the copies run ahead by
/// steps, across tiles), where integer divisions by runtime values (~25
/// instructions each) would slow every step: quotients come from f32
/// reciprocals instead, exact for the tile numbers below 2^20 that the
/// launch allows (floor((n + 0.5) / d): the error stays below 0.5 / d). A
/// band of GROUP rows has GROUP rows, the last one tiles_m - first_m; pids
/// past the end (only their copies, which are off, use them) may get any
/// coordinates.
///
/// In clusters of C programs (cluster_size, with descriptors), the
/// clusters walk tiles of C x 1 tiles (bands of GROUP / C of them), and
/// each program takes the one of its rank: the programs of a cluster then
/// read the same B blocks at the same steps, which the compiler copies once
/// for all of them (multicast). A program whose tile lies past M's edge
/// computes zeros there and stores nothing.
class PersistentWalk {
public:
  explicit PersistentWalk(const TileProgram &p)
      : p(p), BK(p.cfg["BLOCK_K"]), C(p.cfg.cluster_size()), band(std::max<int64_t>(1, p.GROUP / C)) {
    tiles_n = cdiv(p.N, p.BN).to(DType::i32);
    tiles_m = p.s.grouped ? p.tableRows() : cdiv(p.M, p.BM).to(DType::i32);
    if (C > 1)
      tiles_m = cdiv(tiles_m, C);
    Tensor tiles = tiles_m * tiles_n;
    first = C > 1 ? cluster_id() : program_id(0);
    stride_tiles = C > 1 ? num_programs(0) / C : num_programs(0);
    mine = cdiv(tiles - first, stride_tiles).to(p.index);
    steps = cdiv(p.args[p.q.K], BK);
    group_tiles = band * tiles_n;
    last_rows = tiles_m - (tiles_m - 1) / band * band;
    inv_group_tiles = 1.0 / group_tiles.to(DType::f32);
    inv_last_rows = 1.0 / last_rows.to(DType::f32);
  }

  void run() const {
    if (p.s.carriedPointers)
      runCarryingPointers();
    else
      runFormingPointers();
  }

private:
  const TileProgram &p;
  const int64_t BK, C, band;
  Tensor tiles_n, tiles_m, first, stride_tiles, mine, steps, group_tiles, last_rows, inv_group_tiles, inv_last_rows;

  static Tensor quotient(const Tensor &n, const Tensor &inv) { return ((n.to(DType::f32) + 0.5) * inv).to(DType::i32); }

  Tile tileAt(const Tensor &pid) const {
    Tensor which = quotient(pid, inv_group_tiles);
    Tensor first_m = which * band, local = pid - which * group_tiles;
    Tensor full = first_m + band <= tiles_m;
    Tensor rows = where(full, band, last_rows);
    Tensor column = quotient(local, where(full, 1.0 / band, inv_last_rows));
    Tensor row = first_m + local - column * rows;
    if (p.s.grouped)
      return p.withGroup(Tile{row, column}, tiles_m);
    return Tile{C > 1 ? row * C + cluster_rank() : row, column};
  }

  /// Every step forms its tile and operand pointers.
  void runFormingPointers() const {
    for_range(constant(0, p.index), mine * steps, 1, carry(zeros({p.BM, p.BN}, DType::f32), constant(0, p.index), first),
              [&](const Tensor &, const Tensor &acc, const Tensor &ki, const Tensor &pid) {
                Tile t = tileAt(pid);
                Tensor sum = p.kStep(t, p.pointersOf(t), ki * BK, where(ki == 0, 0.0, acc));
                Tensor last = ki == steps - 1;
                if_(last, [&] { p.epilogue(t, sum); });
                return std::tuple{sum, where(last, 0, ki + 1), where(last, pid + stride_tiles, pid)};
              });
  }

  /// Pointer loads on mma.sync: forming a tile's 12 operand pointers every
  /// K step (the copies run ahead across tiles) cost ~170 instructions a
  /// step. They are carried instead, formed for the next tile at a tile's
  /// last step only: a branch, which the pipeliner runs ahead like the rest
  /// of the address arithmetic. (It must not be the epilogue's branch:
  /// stores cannot run ahead.)
  void runCarryingPointers() const {
    Pointers start = p.pointersOf(tileAt(first));
    for_range(constant(0, p.index), mine * steps, 1,
              carry(zeros({p.BM, p.BN}, DType::f32), constant(0, p.index), first, start.a, start.b),
              [&](const Tensor &, const Tensor &acc, const Tensor &ki, const Tensor &pid, const Tensor &pa,
                  const Tensor &pb) {
                Tensor last = ki == steps - 1, following = pid + stride_tiles;
                auto [na, nb] = if_(
                    last,
                    [&] {
                      Pointers n = p.pointersOf(tileAt(following));
                      return std::tuple{n.a, n.b};
                    },
                    [&] { return std::tuple{pa, pb}; });
                Tensor sum = p.kStep(Tile{}, Pointers{pa, pb}, ki * BK, where(ki == 0, 0.0, acc));
                if_(last, [&] { p.epilogue(tileAt(pid), sum); });
                return std::tuple{sum, where(last, 0, ki + 1), where(last, following, pid), na, nb};
              });
  }
};

} // namespace

std::string Structure::key() const {
  std::string k = std::string("matmul|") + name(phase);
  for (int o = 0; o < OPERANDS; ++o)
    k += "|" + (present[o] ? std::string(kiln::name(dtypes[o])) : std::string("-"));
  k += std::string("|") + ops::name(activation);
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
  k += present[SCALE_A] ? (scaleRows ? "|scale-rows" : "|scale-a") : "";
  k += present[SCALE_B] ? (scaleColumns ? "|scale-columns" : "|scale-b") : "";
  k += blockScales ? "|block-scales" : "";
  k += promote ? "|promote" : "";
  k += grouped ? "|grouped" : "";
  return k;
}

Params parameters(const Structure &s) {
  Params q;
  DType index = s.wide ? DType::i64 : DType::i32;
  for (int o = 0; o < OPERANDS; ++o) {
    // (TILES: the table another kernel of the launch wrote; this one reads it.)
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
  // The strides a kernel steps each operand by: batch (or group, or WORK's
  // plane), rows, columns.
  auto takesStride = [&](int o, int d) {
    if (!s.present[o] || o == TILES || (o <= OUT && q.descriptors[o] >= 0))
      return false;
    if (d == 0 && !(s.batched || o == WORK || (s.grouped && (o == B || o == SCALE_B))))
      return false;
    switch (o) {
    case BIAS: return d == 2;
    case SCALE_A: return s.blockScales ? d > 0 : s.scaleRows && d == 2;
    case SCALE_B: return s.blockScales ? d > 0 : s.scaleColumns && d != 1;
    default: return true;
    }
  };
  for (int o = 0; o < OPERANDS; ++o)
    for (int d = 0; d < 3; ++d)
      q.strides[o][d] = takesStride(o, d) ? q.signature.scalar(index) : -1;
  return q;
}

Kernel make_kernel(const std::string &key, const Structure &s, const Params &q) {
  auto body = [s, q](const Config &cfg, const std::vector<Tensor> &args) {
    TileProgram program(s, q, cfg, args);
    if (s.persistent)
      PersistentWalk(program).run();
    else if (s.phase == Phase::combine)
      combineChunks(program);
    else
      tileProduct(program);
  };
  return Kernel("kiln_matmul_" + sha256_hex(key).substr(0, 10), q.signature.types(), body).library("matmul");
}

} // namespace kiln::ops::matmul_kernel
