//===- Workspace.cpp - scratch memory between an op's kernels -------------===//

#include "ops/lib/Workspace.h"

#include <map>
#include <mutex>
#include <tuple>

namespace kiln::ops {

Buffer workspace(const Stream &stream, size_t bytes) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, void *>, Buffer> buffers;
  const Device &device = stream.device();
  std::lock_guard<std::mutex> lock(mutex);
  Buffer &buffer = buffers[{static_cast<int>(device.kind()), device.ordinal(), stream.native()}];
  if (!buffer.valid() || buffer.bytes() < bytes) {
    // Growing: earlier work on this stream may still read the old buffer;
    // finishing it first keeps its memory valid until then.
    if (buffer.valid())
      stream.synchronize();
    buffer = Buffer::allocate(device, std::max<size_t>(bytes, buffer.bytes() * 2));
  }
  return buffer;
}

} // namespace kiln::ops
