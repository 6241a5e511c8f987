// Tensors the ops library reads and writes: non-owning views of memory the
// caller allocated (a GPU's, or the host's for the interpreter), with shapes
// and strides in elements. Public header: no MLIR.
#pragma once

#include <kiln/dtype.h>
#include <kiln/runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::ops {

struct TensorView {
  uint64_t address = 0;         ///< the first element (device address, or host pointer on the interpreter)
  DType dtype = DType::f32;
  std::vector<int64_t> shape;   ///< empty: a scalar
  std::vector<int64_t> strides; ///< in elements, one per dimension; empty: contiguous row-major
  DeviceKind device = DeviceKind::cuda;

  /// A contiguous view of a Buffer (on the Buffer's device).
  static TensorView of(const Buffer &buffer, DType dtype, std::vector<int64_t> shape);
  /// A contiguous view of host memory, for the interpreter.
  template <class T> static TensorView of_host(T *data, std::vector<int64_t> shape) {
    TensorView v;
    v.address = reinterpret_cast<uint64_t>(data);
    v.dtype = dtype_of<T>();
    v.shape = std::move(shape);
    v.device = DeviceKind::interp;
    return v;
  }

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  /// The strides, filled in when empty (row-major).
  std::vector<int64_t> effective_strides() const;
  /// "f32[4, 8] strides [8, 1]": how errors describe it.
  std::string describe() const;
};

} // namespace kiln::ops
