// A traced kernel: an MLIR module of Kiln IR, behind an opaque handle so that
// public headers stay free of MLIR.
//
// Threads: the modules a thread traces or parses share that thread's MLIR
// context. Use a module on the thread that made it (or hand it over only
// while that thread makes no other module): Kernel::launch and
// Kernel::compile trace and compile on the calling thread, so any number of
// threads may launch and compile at once.
#pragma once

#include <memory>
#include <string>

namespace kiln {

class Module {
public:
  struct Impl; ///< defined in compiler/ModuleImpl.h (owns the MLIR context)

  Module() = default;
  explicit Module(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  bool valid() const { return impl_ != nullptr; }
  /// The IR as text; with `locations`, every operation's source location
  /// (the user's file:line for traced kernels).
  std::string str(bool locations = false) const;
  /// The name of the kernel function in the module.
  std::string kernel_name() const;
  /// Parses textual IR (any stage). Throws kiln::Error with the parser's
  /// diagnostics when the text is not valid IR.
  static Module parse(const std::string &text, const std::string &buffer_name = "<input>");

  Impl &impl() const { return *impl_; }

private:
  std::shared_ptr<Impl> impl_;
};

} // namespace kiln
