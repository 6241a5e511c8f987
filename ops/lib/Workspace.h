//===- Workspace.h - scratch memory between an op's kernels ---------------===//

#pragma once

#include <kiln/runtime.h>

#include <cstddef>

namespace kiln::ops {

/// What every workspace allocation's address, and every region an op
/// carves of it, is a multiple of.
constexpr uint64_t kWorkspaceAlignment = 256;

/// At least `bytes` of scratch memory on the stream's device, for kernels
/// queued on that stream: one buffer per (device, stream), kept and grown as
/// needed (stream order makes reusing it safe). Valid until the next call
/// for the same stream.
Buffer workspace(const Stream &stream, size_t bytes);

} // namespace kiln::ops
