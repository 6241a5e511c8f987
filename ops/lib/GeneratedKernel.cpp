//===- GeneratedKernel.cpp - the kernels ops generate, and their cache ----===//

#include "ops/lib/GeneratedKernel.h"

#include <map>
#include <mutex>

namespace kiln::ops {

std::string target_of(const Stream &stream) {
  return stream.device().kind() != DeviceKind::interp ? target_for(stream.device()) : std::string();
}

Kernel cached_kernel(const std::string &key, const std::function<Kernel()> &make) {
  static std::mutex mutex;
  static std::map<std::string, Kernel> kernels;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = kernels.find(key); it != kernels.end())
      return it->second;
  }
  Kernel made = make(); // outside the lock: making traces nothing yet, but may be slow
  std::lock_guard<std::mutex> lock(mutex);
  return kernels.emplace(key, made).first->second;
}

std::vector<Tensor> arguments_at(const std::vector<int> &positions, const std::vector<Tensor> &args) {
  std::vector<Tensor> values;
  for (int k : positions)
    values.push_back(k < 0 ? Tensor() : args[k]);
  return values;
}

} // namespace kiln::ops
