// Tensor maps: how Hopper's copy engine (TMA) sees a tensor in global
// memory. Internal to Kiln.
#pragma once

#include <kiln/dtype.h>

#include <cstdint>
#include <span>

namespace kiln::cuda {

/// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned, passed to a
/// kernel by value.
struct alignas(64) TensorMap {
  uint64_t words[16] = {};
};

/// Encodes the map of the tensor of `dtype` at device address `address`
/// with `sizes` and `strides` (elements, outermost first; the innermost
/// stride must be 1), copied in boxes of `box` elements (outermost first)
/// into shared memory swizzled over `swizzleBytes` (0, 32, 64 or 128).
/// Elements outside the tensor read as zero. Throws kiln::Error naming
/// what the copy engine cannot take (alignment, strides, sizes).
TensorMap encode_tensor_map(DType dtype, uint64_t address, std::span<const int64_t> sizes,
                            std::span<const int64_t> strides, std::span<const uint32_t> box, int swizzleBytes);

} // namespace kiln::cuda
