//===- DeviceCheck.cpp - a tuned config's output against the default's ---===//

#include "ops/lib/DeviceCheck.h"

#include <kiln/ops/expr.h>
#include <kiln/ops/library.h>

#include <future>
#include <limits>

namespace kiln::ops {

namespace {

std::vector<int64_t> leadingOf(const TensorView &v) { return {v.shape.begin(), v.shape.end() - 1}; }

int64_t rowsOf(const TensorView &v) {
  int64_t n = 1;
  for (int64_t d : leadingOf(v))
    n *= d;
  return n;
}

} // namespace

DeviceCheck::DeviceCheck(const TensorView &out, const Stream &stream, Queue queueReference, Compile compileReference)
    : out_(out), stream_(stream), queue_(std::move(queueReference)), compile_(std::move(compileReference)) {}

void DeviceCheck::prepare(const std::string &arch) {
  if (ready_)
    return;
  allocate();
  auto compiled = std::async(std::launch::async, [&] { compile_(referenceView(), stream_, arch); });
  compare();
  compiled.get();
  makeReference();
}

double DeviceCheck::largest_difference() {
  if (!ready_) {
    allocate();
    makeReference();
  }
  return compare();
}

void DeviceCheck::poison(const Stream &stream) const { poisonView(out_, stream); }

void DeviceCheck::poisonView(const TensorView &view, const Stream &stream) {
  Pointwise fill;
  fill.output(view, Expr(std::numeric_limits<double>::quiet_NaN()));
  fill.run(stream);
}

void DeviceCheck::attach(const std::shared_ptr<DeviceCheck> &check, autotune::Task &task, double tolerance,
                         const std::string &arch, const std::string &what) {
  if (!arch.empty())
    task.prepare = [check, arch] { check->prepare(arch); };
  task.restore = [check](const Stream &s) { check->poison(s); };
  task.check = [check, tolerance, what](const Config &) -> std::string {
    double worst = check->largest_difference();
    if (!(worst <= tolerance)) // NaN (an element the config left unwritten) fails too
      return what + " by " + std::to_string(worst) + " (relative)";
    return "";
  };
}

void DeviceCheck::allocate() {
  const Device &device = stream_.device();
  reference_ = Buffer::allocate(device, out_.numel() * size_in_bytes(out_.dtype));
  rowMax_ = Buffer::allocate(device, rowsOf(out_) * 4);
  worst_ = Buffer::allocate(device, 4);
}

void DeviceCheck::makeReference() {
  // (Poisoned first, as out is before each run: what the op leaves
  // unwritten by design, such as a grouped product's rows past its last
  // group, is NaN in both.)
  poisonView(referenceView(), stream_);
  queue_(referenceView(), stream_);
  ready_ = true;
}

TensorView DeviceCheck::referenceView() const { return TensorView::of(reference_, out_.dtype, out_.shape); }

double DeviceCheck::compare() {
  TensorView out = out_;
  out.strides = out.effective_strides();
  Reduction rows(Reduce::max, out.rank() - 1);
  Expr got = rows.input(out), want = rows.input(referenceView());
  // Equal (infinities included) or both NaN: no difference.
  Expr same = (got == want) | ((got != got) & (want != want));
  rows.reduce(where(same, 0.0, abs(got - want) / maximum(abs(want), 1.0)));
  rows.output(TensorView::of(rowMax_, DType::f32, leadingOf(out_)));
  rows.run(stream_);
  reduce(Reduce::max, TensorView::of(rowMax_, DType::f32, {rowsOf(out_)}), 0, TensorView::of(worst_, DType::f32, {1}),
         stream_);
  stream_.synchronize();
  float worst = 0;
  worst_.copy_to_host(&worst, sizeof worst);
  return worst;
}

} // namespace kiln::ops
