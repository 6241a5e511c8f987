//===- GroupedMatmul.cpp - one launch for many products of ragged rows ----===//
//
// A mixture-of-experts layer multiplies each expert's tokens (a group of
// a's rows, its size known only on the device) by that expert's weights.
// Two kernels on the stream, no host synchronization:
//
//  1. The tile table (one program a group): each group's rows cut into
//     tiles of BLOCK_M rows, listed one after another in the workspace:
//     the number of tile rows, then each tile row's group, first row and
//     end row. Offsets are clamped to [0, M] and made non-decreasing
//     first, so the groups never overlap and the table never holds more
//     than cdiv(M, BLOCK_M) + G tile rows.
//  2. The product: the matmul op's kernel (MatmulKernel.cpp, grouped) over
//     that many tile rows times N's tiles, each tile reading its group,
//     rows and B from the table; programs past the listed tiles compute
//     nothing. Persistent programs walk the listed tiles alone.
//
//===----------------------------------------------------------------------===//

#include "ops/lib/GeneratedKernel.h"
#include "ops/lib/MatmulProblem.h"
#include "ops/lib/RecentPlans.h"
#include "ops/lib/Views.h"

namespace kiln::ops {

using namespace matmul_kernel;

namespace {

const std::string kOp = "grouped_matmul";

/// The most groups a launch takes (the tile table's programs each read
/// every group's offset).
constexpr int64_t kMaxGroups = 4096;

/// Rows of a group a tile-table program lists at once.
constexpr int64_t kListed = 128;

bool isMatmulFloat(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

/// The tile table's kernel for up to `lanes` groups (a power of two):
/// parameters offsets, its stride, the table, M, G; BLOCK_M from the config.
Kernel tileTableKernel(int64_t lanes) {
  Signature sig;
  sig.pointer(DType::i32, true);
  sig.scalar(DType::i32);
  sig.pointer(DType::i32, false);
  sig.scalar(DType::i32);
  sig.scalar(DType::i32);
  auto body = [lanes](const Config &cfg, const std::vector<Tensor> &args) {
    const Tensor &offsets = args[0], &stride = args[1], &table = args[2], &M = args[3], &G = args[4];
    const int64_t BM = cfg["BLOCK_M"];
    Tensor g = program_id(0), lane = arange(0, lanes);
    Tensor ends = clamp(load(offsets + lane * stride, lane < G, 0), 0, M);
    Tensor previous = clamp(load(offsets + maximum(lane - 1, 0) * stride, (lane >= 1) & (lane < G), 0), 0, M);
    // Each group starts where the ones before it end, at the latest.
    Tensor starts = scan(previous, 0, [](const Tensor &x, const Tensor &y) { return maximum(x, y); });
    ends = maximum(ends, starts);
    Tensor tiles = cdiv(ends - starts, BM);
    Tensor before = sum(where(lane < g, tiles, 0)), mine = sum(where(lane == g, tiles, 0));
    Tensor first = sum(where(lane == g, starts, 0)), end = sum(where(lane == g, ends, 0));
    for_range(0, mine, kListed, [&](const Tensor &chunk) {
      Tensor i = chunk + arange(0, kListed), listed = i < mine;
      Tensor entry = table + 1 + (before + i) * 3;
      store(entry, broadcast_to(g, {kListed}), listed);
      store(entry + 1, first + i * BM, listed);
      store(entry + 2, broadcast_to(end, {kListed}), listed);
    });
    if_(g == G - 1, [&] { store(table, before + mine); });
  };
  return Kernel("kiln_grouped_tiles_" + std::to_string(lanes), sig.types(), body).library("matmul");
}

/// A group's matrix of b ([G, K, N]) as a 2-D view: what the planner
/// reads of b's layout.
TensorView firstGroup(const TensorView &b) {
  TensorView v = b;
  const std::vector<int64_t> st = b.effective_strides();
  v.shape = {b.shape[1], b.shape[2]};
  v.strides = {st[1], st[2]};
  return v;
}

/// The call's product; throws kiln::Error naming what does not fit.
MatmulProblem checkedProblem(const GroupedMatmulArgs &g, const Stream &stream) {
  check_view(g.a, kOp, "a");
  check_view(g.b, kOp, "b");
  check_view(g.offsets, kOp, "offsets");
  check_view(g.out, kOp, "out");
  if (g.a.rank() != 2 || g.b.rank() != 3 || g.out.rank() != 2 || g.offsets.rank() != 1)
    throw Error(kOp + ": a " + g.a.describe() + " must be [M, K], b " + g.b.describe() + " [G, K, N], offsets " +
                g.offsets.describe() + " [G], out " + g.out.describe() + " [M, N]");
  MatmulProblem p;
  p.M = g.a.shape[0], p.K = g.a.shape[1], p.groups = g.b.shape[0], p.N = g.b.shape[2];
  if (g.b.shape[1] != p.K || g.out.shape != std::vector<int64_t>{p.M, p.N} || g.offsets.shape[0] != p.groups)
    throw Error(kOp + ": shapes do not fit: a " + g.a.describe() + ", b " + g.b.describe() + ", offsets " +
                g.offsets.describe() + ", out " + g.out.describe());
  if (p.groups < 1 || p.groups > kMaxGroups)
    throw Error(kOp + ": between 1 and " + std::to_string(kMaxGroups) + " groups, got " + std::to_string(p.groups));
  if (g.offsets.dtype != DType::i32)
    throw Error(kOp + ": offsets must be int32, not " + std::string(name(g.offsets.dtype)));
  // (The tile table holds rows as int32.)
  if (p.M >= (int64_t(1) << 31) - 256)
    throw Error(kOp + ": at most 2^31 - 256 rows, got " + std::to_string(p.M));
  const bool fp8 = is_float8(g.a.dtype) && is_float8(g.b.dtype);
  if (!fp8 && (!isMatmulFloat(g.a.dtype) || g.b.dtype != g.a.dtype))
    throw Error(kOp + ": a and b must both be f16, bf16 or f32, or both fp8 (f8e4m3, f8e5m2); a is " +
                std::string(name(g.a.dtype)) + ", b " + std::string(name(g.b.dtype)));
  if (!isMatmulFloat(g.out.dtype))
    throw Error(kOp + ": out must be f32, f16 or bf16, not " + std::string(name(g.out.dtype)));
  const std::vector<int64_t> sa = g.a.effective_strides(), sb = g.b.effective_strides(),
                             so = g.out.effective_strides();
  if (fp8 && p.K > 1 && (sa[1] != 1 || (p.N > 1 && sb[1] != 1)))
    throw Error(kOp + ": fp8 operands must be K-major: a " + g.a.describe() + " with contiguous rows, b " +
                g.b.describe() + " with K contiguous (each group the transpose of an [N, K] matrix)");
  std::vector<const TensorView *> views{&g.a, &g.b, &g.offsets, &g.out};
  Structure &s = p.s;
  s.grouped = true;
  s.dtypes[A] = g.a.dtype, s.dtypes[B] = g.b.dtype, s.dtypes[OUT] = g.out.dtype;
  s.present[TILES] = true, s.dtypes[TILES] = DType::i32;
  p.strides[A][1] = sa[0], p.strides[A][2] = sa[1];
  p.strides[B][0] = sb[0], p.strides[B][1] = sb[1], p.strides[B][2] = sb[2];
  p.strides[OUT][1] = so[0], p.strides[OUT][2] = so[1];
  // Scales: one element, a's rows, each group's columns.
  for (auto [role, view, what, lines] : {std::tuple{SCALE_A, &g.scale_a, "scale_a", std::vector<int64_t>{p.M}},
                                         std::tuple{SCALE_B, &g.scale_b, "scale_b", std::vector<int64_t>{p.groups, p.N}}}) {
    if (!view->address)
      continue;
    check_view(*view, kOp, what);
    const bool one = view->numel() == 1 && view->rank() <= 1, each = view->shape == lines;
    if (view->dtype != DType::f32 || !(one || each))
      throw Error(kOp + ": " + what + " " + view->describe() + " must be f32 of one element or " +
                  (role == SCALE_A ? "[M]" : "[G, N]"));
    s.present[role] = true, s.dtypes[role] = DType::f32;
    (role == SCALE_A ? s.scaleRows : s.scaleColumns) = each && !one;
    const std::vector<int64_t> st = view->effective_strides();
    if (each && !one) {
      p.strides[role][2] = st.back();
      p.strides[role][0] = role == SCALE_B ? st[0] : 0;
    }
    views.push_back(view);
  }
  check_devices(views, stream, kOp);
  check_no_overlap(g.out, kOp, "out");
  const TensorView *of[OPERANDS] = {&g.a, &g.b, &g.out, nullptr, nullptr, &g.scale_a, &g.scale_b};
  std::copy(of, of + OPERANDS, p.views);
  s.precision = g.a.dtype == DType::f32 ? g.precision : Precision::ieee;
  s.activation = g.activation;
  s.scaled = g.alpha != 1.0;
  // The copy engine reads B as its groups' matrices one below the other:
  // group stride = a matrix's rows as stored x their stride.
  const bool kMajor = sb[1] == 1 && p.N > 1;
  p.groupsStacked = p.groups == 1 || (kMajor ? sb[0] == p.N * sb[2] : sb[0] == p.K * sb[1]);
  return p;
}

/// The tile table's launch for the product's tiles of `blockM` rows: its
/// workspace argument (the table), the offsets' slot numbered after the
/// matmul roles (OPERANDS).
MatmulLaunch::Step tileTableStep(const GroupedMatmulArgs &g, int64_t groups, int64_t blockM) {
  const int64_t lanes = std::max<int64_t>(16, next_pow2(groups));
  MatmulLaunch::Step step{cached_kernel("grouped-tiles|" + std::to_string(lanes), [&] { return tileTableKernel(lanes); }),
                          Config{{"BLOCK_M", blockM}, {"num_warps", 4}, {"num_stages", 1}},
                          Grid(static_cast<uint32_t>(groups)),
                          {arg_of(g.offsets), Arg(static_cast<int32_t>(g.offsets.effective_strides()[0])), Arg(0),
                           Arg(static_cast<int32_t>(g.a.shape[0])), Arg(static_cast<int32_t>(groups))},
                          {{2, 0}},
                          {},
                          -1};
  step.tensors.slots.emplace_back(0, OPERANDS);
  return step;
}

/// A grouped product's launches: the tile table, then the product.
struct GroupedMatmulLaunch {
  MatmulLaunch launch;
  void rebind(const GroupedMatmulArgs &g) {
    for (MatmulLaunch::Step &step : launch.steps) {
      step.tensors.rebind(step.args, {&g.a, &g.b, &g.out, nullptr, nullptr, &g.scale_a, &g.scale_b, nullptr, nullptr,
                                      &g.offsets});
      if (step.alpha >= 0)
        step.args[step.alpha] = Arg(static_cast<float>(g.alpha));
    }
  }
};

static_assert(OPERANDS == 9, "rebind's views: the roles, then offsets");

/// What, besides the views, a grouped product's plan depends on.
int32_t grouped_matmul_plan_choices(const GroupedMatmulArgs &g) {
  return (g.alpha != 1.0 ? 256 : 0) + static_cast<int32_t>(g.activation) * 16 + static_cast<int32_t>(g.precision);
}

} // namespace

MatmulLaunch prepare_grouped_matmul(const GroupedMatmulArgs &g, const Stream &stream, const Config &config) {
  const MatmulProblem p = checkedProblem(g, stream);
  if (g.out.numel() == 0)
    return {};
  MatmulLaunch product = plan_matmul(p, grouped_matmul_shape(g), stream, config);
  const int64_t blockM = product.steps.at(0).config["BLOCK_M"];
  const int64_t tableRows = cdiv(p.M, blockM) + p.groups;
  MatmulLaunch launch;
  launch.steps.push_back(tileTableStep(g, p.groups, blockM));
  launch.steps.push_back(std::move(product.steps.at(0)));
  launch.workspace_bytes = static_cast<size_t>(1 + 3 * tableRows) * sizeof(int32_t);
  return launch;
}

MatmulArgs grouped_matmul_shape(const GroupedMatmulArgs &g) {
  MatmulArgs m;
  m.a = g.a, m.b = g.b.rank() == 3 ? firstGroup(g.b) : g.b, m.out = g.out;
  m.alpha = g.alpha, m.activation = g.activation, m.precision = g.precision;
  m.scale_a = g.scale_a;
  return m;
}

void grouped_matmul(const GroupedMatmulArgs &args, const Stream &stream, const Config &config) {
  thread_local RecentPlans<GroupedMatmulLaunch> recent;
  PlanKey key;
  const bool keyed = key.make({&args.a, &args.b, &args.offsets, &args.out, &args.scale_a, &args.scale_b},
                              grouped_matmul_plan_choices(args), stream);
  if (const GroupedMatmulLaunch *plan = keyed ? recent.find(key, config, args) : nullptr) {
    plan->launch.queue(stream);
    return;
  }
  check_present_views({{&args.a, "a"}, {&args.b, "b"}, {&args.offsets, "offsets"}, {&args.out, "out"},
                       {&args.scale_a, "scale_a"}, {&args.scale_b, "scale_b"}},
                      kOp);
  GroupedMatmulLaunch plan{
      prepare_grouped_matmul(args, stream, config.values().empty() ? chosen_grouped_matmul_config(args, stream) : config)};
  plan.launch.queue(stream);
  if (keyed)
    recent.keep(key, config, std::move(plan));
}

} // namespace kiln::ops
