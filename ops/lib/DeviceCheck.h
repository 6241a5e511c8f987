//===- DeviceCheck.h - a tuned config's output against the default's -----===//
//
// The autotuner checks every config's output against the op's default plan.
// The comparison runs where the data are (a reduction of the ops library),
// so that checking a config costs microseconds, not a copy of the output.
//
//===----------------------------------------------------------------------===//

#pragma once

#include <kiln/autotune.h>
#include <kiln/kiln.h>
#include <kiln/ops/view.h>

#include <functional>
#include <memory>
#include <string>

namespace kiln::ops {

/// The default plan's output, kept in a device buffer of its own, and the
/// largest relative difference of the output from it: the maximum over
/// elements of |out - ref| / max(|ref|, 1), 0 where both are equal or both
/// NaN, NaN where only one is, reduced on the device along the last
/// dimension and then over the rows. The task poisons the output (NaN)
/// before every run, and the reference before it is made, so an element a
/// config leaves unwritten fails unless the default plan leaves it too.
class DeviceCheck {
public:
  /// `queueReference(view)` queues the default plan writing into `view`
  /// (out's shape and dtype, row-major); `compileReference(view, arch)`
  /// compiles that launch.
  using Queue = std::function<void(const TensorView &, const Stream &)>;
  using Compile = std::function<void(const TensorView &, const Stream &, const std::string &)>;
  DeviceCheck(const TensorView &out, const Stream &stream, Queue queueReference, Compile compileReference);

  /// Makes the reference and loads the comparison's kernels: the reference
  /// compiles on a thread of its own while this one runs the comparison
  /// once. (When it fails part way, the first check starts over.)
  void prepare(const std::string &arch);

  /// out against the reference (made first if prepare did not run).
  double largest_difference();

  /// Fills out with NaN (queued on `stream`): the task's `restore`.
  void poison(const Stream &stream) const;

  /// Makes `check` the task's output check: made ready by its `prepare`
  /// (when `arch` names a target), poisoning in `restore`, and `check`
  /// rejecting a config whose output differs by more than `tolerance`
  /// ("<what> by <difference> (relative)").
  static void attach(const std::shared_ptr<DeviceCheck> &check, autotune::Task &task, double tolerance,
                     const std::string &arch, const std::string &what);

private:
  void allocate();
  /// Poisons the reference and queues the default plan into it.
  void makeReference();
  static void poisonView(const TensorView &view, const Stream &stream);
  TensorView referenceView() const;
  double compare();

  TensorView out_;
  Stream stream_;
  Queue queue_;
  Compile compile_;
  Buffer reference_, rowMax_, worst_;
  bool ready_ = false; ///< the reference holds the default plan's output
};

} // namespace kiln::ops
