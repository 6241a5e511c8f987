//===- Arguments.cpp - a launch's arguments against a kernel's parameters -===//
//
// Checked before any device sees them, the same on every device: the
// interpreter would stop at the first access outside the memory passed,
// a GPU would read past it.
//
//===----------------------------------------------------------------------===//

#include "runtime/Arguments.h"

#include <kiln/error.h>
#include <kiln/program.h>

#include <cstring>

namespace kiln {

void check_arguments(const std::string &name, std::span<const ElementType> parameters, std::span<const Arg> args) {
  if (args.size() != parameters.size())
    throw Error("kernel '" + name + "' takes " + std::to_string(parameters.size()) + " arguments, the launch passed " +
                std::to_string(args.size()));
  for (size_t i = 0; i < parameters.size(); ++i) {
    const int rank = parameters[i].descriptor_rank;
    if (rank == 0)
      continue;
    auto bad = [&](const std::string &why) {
      throw Error("argument #" + std::to_string(i) + " of kernel '" + name + "': " + why);
    };
    if (args[i].kind() != Arg::Kind::tensor_map || args[i].integer() != rank)
      bad("the kernel expects a rank-" + std::to_string(rank) + " descriptor (a TensorArg with " +
          std::to_string(rank) + " sizes)");
    if (i + 2 + 2 * static_cast<size_t>(rank) > args.size())
      bad("a rank-" + std::to_string(rank) + " descriptor needs " + std::to_string(2 + 2 * rank) + " arguments");
    // The last element's offset, in 128 bits: sizes times strides may pass 2^63.
    unsigned __int128 last = 0;
    bool empty = false;
    for (int d = 0; d < rank; ++d) {
      const Arg &size = args[i + 2 + d], &stride = args[i + 2 + rank + d];
      if (size.kind() != Arg::Kind::integer || stride.kind() != Arg::Kind::integer || size.integer() < 0 ||
          stride.integer() < 0)
        bad("a descriptor's sizes and strides are integers of at least 0 (a TensorArg)");
      if (size.integer() == 0)
        empty = true;
      else
        last += static_cast<unsigned __int128>(size.integer() - 1) * static_cast<uint64_t>(stride.integer());
    }
    const Arg &memory = args[i + 1];
    const unsigned __int128 needed = empty ? 0 : (last + 1) * size_in_bytes(parameters[i].dtype);
    if (memory.kind() == Arg::Kind::memory && memory.bytes() > 0 && needed > memory.bytes())
      bad("the descriptor's sizes and strides reach past its memory (" + std::to_string(memory.bytes()) + " bytes)");
  }
}

uint64_t parameter_slot(const ElementType &type, const Arg &arg, size_t index, const std::string &kernel,
                        DeviceKind device) {
  auto bad = [&](const std::string &why) {
    throw Error("argument #" + std::to_string(index) + " of kernel '" + kernel + "': " + why);
  };
  if (arg.kind() == Arg::Kind::tensor_map)
    bad("a descriptor (TensorArg) where the kernel expects a single value");
  uint64_t slot = 0;
  if (type.is_pointer) {
    if (arg.kind() != Arg::Kind::memory)
      bad("the kernel expects a pointer, the launch passed a number");
    const char *runtime = device == DeviceKind::hip ? "HIP" : "CUDA";
    if (arg.device() == DeviceKind::interp)
      bad(std::string("the GPU needs device memory (a Buffer of a ") + runtime + " device), not host memory");
    if (arg.device() != device)
      bad(std::string("the GPU needs memory of its own runtime (a Buffer of a ") + runtime + " device)");
    return arg.address();
  }
  if (is_float(type.dtype)) {
    if (arg.kind() == Arg::Kind::memory)
      bad("the kernel expects a float, the launch passed memory");
    double v = arg.kind() == Arg::Kind::floating ? arg.floating() : static_cast<double>(arg.integer());
    if (type.dtype == DType::f64) {
      std::memcpy(&slot, &v, 8);
    } else if (type.dtype == DType::f32) {
      float f = static_cast<float>(v);
      std::memcpy(&slot, &f, 4);
    } else {
      bad("scalar parameters of " + std::string(name(type.dtype)) + " are not supported; pass f32");
    }
    return slot;
  }
  if (arg.kind() != Arg::Kind::integer)
    bad("the kernel expects an integer");
  int64_t v = arg.integer();
  int width = bit_width(type.dtype);
  if (width < 64 && (v < -(int64_t(1) << (width - 1)) || v >= (int64_t(1) << width)))
    bad(std::to_string(v) + " does not fit " + std::string(name(type.dtype)));
  std::memcpy(&slot, &v, 8); // little endian: the low bytes first
  return slot;
}

void check_whole_clusters(const std::string &name, const Grid &grid, int size) {
  if (grid.x % size != 0)
    throw Error("kernel '" + name + "' runs in clusters of " + std::to_string(size) +
                " programs along x (cluster_size): the grid's x, " + std::to_string(grid.x) + ", must be a multiple");
}

} // namespace kiln
