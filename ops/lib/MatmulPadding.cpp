//===- MatmulPadding.cpp - operands copied where the copy engine reads them ===//
//
// The copy engine reads a 2-D operand only with one dimension contiguous,
// the other's stride a multiple of 16 bytes and a 16-byte aligned base. An
// odd K (or a K a multiple of 4 but not 8, in 16-bit types) breaks that,
// and pointer loads of such rows go element by element: a few percent of
// the tensor cores. A copy of the operand with its rows padded to 16 bytes
// costs a read and a write of it, far less than the product it unlocks,
// and the product then runs as on aligned operands.
//
// The copy keeps the operand's contiguous dimension (K where none is);
// the padded copy is described with the operand's true sizes, so nothing
// reads the padding (the copy engine fills past the edges with zeros).
//
//===----------------------------------------------------------------------===//

#include "ops/lib/GeneratedKernel.h"
#include "ops/lib/MatmulProblem.h"
#include "ops/lib/Views.h"
#include "ops/lib/Workspace.h"

namespace kiln::ops {

using namespace matmul_kernel;

namespace {

constexpr int64_t kCopyRows = 32, kCopyColumns = 128;

/// The copy kernel of `dtype`: source, rows, columns, the source's row
/// and column strides, destination, its row stride (columns contiguous).
Kernel copyKernel(DType dtype) {
  Signature sig;
  sig.pointer(dtype, true);
  for (int i = 0; i < 4; ++i)
    sig.scalar(DType::i64);
  sig.pointer(dtype, false);
  sig.scalar(DType::i64);
  auto body = [](const Config &, const std::vector<Tensor> &args) {
    const Tensor &src = args[0], &rows = args[1], &columns = args[2], &rowStride = args[3], &columnStride = args[4],
                 &dst = args[5], &dstRowStride = args[6];
    Tensor r = (program_id(0).to(DType::i64) * kCopyRows + arange(0, kCopyRows).to(DType::i64));
    Tensor c = (program_id(1).to(DType::i64) * kCopyColumns + arange(0, kCopyColumns).to(DType::i64));
    Tensor inside = expand_dims(r < rows, 1) & expand_dims(c < columns, 0);
    Tensor v = load(src + expand_dims(r * rowStride, 1) + expand_dims(c * columnStride, 0), inside);
    store(dst + expand_dims(r * dstRowStride, 1) + expand_dims(c, 0), v, inside);
  };
  return Kernel("kiln_matmul_pad_" + std::string(kiln::name(dtype)), sig.types(), body).library("matmul");
}

} // namespace

PaddedOperands::PaddedOperands(const MatmulProblem &p, const MatmulArgs &m, bool padA, bool padB,
                               const Stream &stream)
    : problem_(p), shape_(m) {
  for (int o : {A, B}) {
    if (!(o == A ? padA : padB))
      continue;
    const TensorView &view = o == A ? m.a : m.b;
    const std::vector<int64_t> st = view.effective_strides();
    // (The copy's rows run along the other dimension than its contiguous
    // one: the operand's contiguous dimension, else K.)
    const int kDim = o == A ? 1 : 0;
    const int contiguous = st[1] == 1 ? 1 : st[0] == 1 ? 0 : kDim;
    const int64_t rows = view.shape[1 - contiguous], columns = view.shape[contiguous];
    const int64_t perChunk = 16 / static_cast<int64_t>(size_in_bytes(view.dtype));
    const int64_t rowStride = cdiv(columns, perChunk) * perChunk;
    const size_t offset = bytes;
    bytes += static_cast<size_t>(cdiv(static_cast<int64_t>(rows * rowStride * size_in_bytes(view.dtype)),
                                      static_cast<int64_t>(kWorkspaceAlignment)) *
                                 kWorkspaceAlignment);
    // The copy as the product sees it: the operand's sizes, strides of the
    // padded rows, at a placeholder address as aligned as the workspace.
    TensorView &copy = copies_[o];
    copy = view;
    copy.address = kWorkspaceAlignment + offset;
    copy.device = stream.device().kind();
    copy.strides = contiguous == 1 ? std::vector<int64_t>{rowStride, 1} : std::vector<int64_t>{1, rowStride};
    (o == A ? shape_.a : shape_.b) = copy;
    problem_.views[o] = &copies_[o];
    problem_.strides[o][0] = 0;
    problem_.strides[o][1] = copy.strides[0];
    problem_.strides[o][2] = copy.strides[1];
    offsets_[o] = offset;
    padded_[o] = true;

    const std::string key = "matmul-pad|" + std::string(kiln::name(view.dtype));
    MatmulLaunch::Step step{cached_kernel(key, [&] { return copyKernel(view.dtype); }),
                            Config{{"num_warps", 4}, {"num_stages", 1}},
                            Grid(static_cast<uint32_t>(cdiv(rows, kCopyRows)),
                                 static_cast<uint32_t>(cdiv(columns, kCopyColumns))),
                            {arg_of(view), Arg(rows), Arg(columns), Arg(st[1 - contiguous]), Arg(st[contiguous]),
                             Arg(0), Arg(rowStride)},
                            {{5, offset}},
                            {},
                            -1};
    step.tensors.slots.emplace_back(0, o);
    steps.push_back(std::move(step));
  }
}

void PaddedOperands::redirect(MatmulLaunch::Step &step) const {
  auto &slots = step.tensors.slots;
  for (auto slot = slots.begin(); slot != slots.end();) {
    if ((slot->second == A || slot->second == B) && padded_[slot->second]) {
      step.workspace.push_back({slot->first, offsets_[slot->second]});
      slot = slots.erase(slot);
    } else {
      ++slot;
    }
  }
}

} // namespace kiln::ops
