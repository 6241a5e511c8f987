#include "runtime/cuda/TensorMap.h"

#include "runtime/cuda/Driver.h"

#include <kiln/error.h>

#include <array>
#include <string>
#include <utility>

namespace kiln::cuda {

namespace {

// The driver's CUtensorMapDataType, CUtensorMapSwizzle and
// CUtensorMapL2promotion values (cuda.h).
int dataType(DType dtype) {
  switch (dtype) {
  case DType::u8: case DType::i8: case DType::f8e4m3: case DType::f8e5m2: return 0; // UINT8
  case DType::u16: case DType::i16: return 1;                                         // UINT16
  case DType::u32: return 2;                                                          // UINT32
  case DType::i32: return 3;                                                          // INT32
  case DType::u64: return 4;                                                          // UINT64
  case DType::i64: return 5;                                                          // INT64
  case DType::f16: return 6;                                                          // FLOAT16
  case DType::f32: return 7;                                                          // FLOAT32
  case DType::f64: return 8;                                                          // FLOAT64
  case DType::bf16: return 9;                                                         // BFLOAT16
  default: return -1;
  }
}

/// What a tensor map is encoded from (unused dimensions zero).
struct Encoding {
  int type = -1, rank = 0, swizzleBytes = 0;
  uint64_t address = 0;
  std::array<uint64_t, 5> dims{};
  std::array<uint64_t, 4> byteStrides{};
  std::array<uint32_t, 5> boxDims{};
  bool operator==(const Encoding &) const = default;
};

/// A thread's last maps (an op's operands, a few ops in turn).
struct RecentMaps {
  std::array<std::pair<Encoding, TensorMap>, 8> entries;
  size_t next = 0;
};

int swizzleMode(int bytes) { return bytes == 128 ? 3 : bytes == 64 ? 2 : bytes == 32 ? 1 : 0; }
constexpr int kL2Promotion256B = 3;

} // namespace

TensorMap encode_tensor_map(DType dtype, uint64_t address, std::span<const int64_t> sizes,
                            std::span<const int64_t> strides, std::span<const uint32_t> box, int swizzleBytes) {
  auto refuse = [](const std::string &why) { throw Error("cannot describe the tensor to the copy engine: " + why); };
  const size_t rank = sizes.size();
  const int type = dataType(dtype);
  const int64_t bytes = bit_width(dtype) / 8;
  if (type < 0 || bytes < 1)
    refuse("no tensor-map type for " + std::string(name(dtype)));
  if (rank < 1 || rank > 5 || strides.size() != rank || box.size() != rank)
    refuse("tensor maps have 1 to 5 dimensions, with one stride and box size each");
  if (address % 16 != 0)
    refuse("the base address must be a multiple of 16 bytes");
  if (strides[rank - 1] != 1)
    refuse("the innermost dimension must be contiguous (stride 1), got stride " + std::to_string(strides[rank - 1]));
  // The driver takes dimensions innermost first, and byte strides of all
  // but the innermost.
  uint64_t dims[5], byteStrides[4];
  uint32_t boxDims[5], elementStrides[5];
  for (size_t i = 0; i < rank; ++i) {
    size_t d = rank - 1 - i;
    if (sizes[d] < 1 || sizes[d] > (int64_t(1) << 32))
      refuse("sizes must lie in [1, 2^32], got " + std::to_string(sizes[d]) + " in dimension " + std::to_string(d));
    dims[i] = static_cast<uint64_t>(sizes[d]);
    boxDims[i] = box[d];
    elementStrides[i] = 1;
    if (i > 0) {
      int64_t stride = strides[d] * bytes;
      if (stride % 16 != 0 || stride >= (int64_t(1) << 40))
        refuse("strides must be multiples of 16 bytes below 2^40, got " + std::to_string(stride) +
               " bytes in dimension " + std::to_string(d));
      byteStrides[i - 1] = static_cast<uint64_t>(stride);
    }
  }
  // An op called again on the same tensors asks for the same maps: the
  // thread's last few are kept (a map is a pure function of these inputs).
  Encoding encoding{type, static_cast<int>(rank), swizzleBytes, address, {}, {}, {}};
  for (size_t i = 0; i < rank; ++i) {
    encoding.dims[i] = dims[i];
    encoding.boxDims[i] = boxDims[i];
    if (i > 0)
      encoding.byteStrides[i - 1] = byteStrides[i - 1];
  }
  thread_local RecentMaps recent;
  for (const auto &[known, map] : recent.entries)
    if (known == encoding)
      return map;
  const Driver &d = driver();
  if (!d.cuTensorMapEncodeTiled)
    refuse("the CUDA driver has no cuTensorMapEncodeTiled (it needs CUDA 12 or later)");
  TensorMap map;
  check(d.cuTensorMapEncodeTiled(&map, type, static_cast<uint32_t>(rank), reinterpret_cast<void *>(address), dims,
                                 byteStrides, boxDims, elementStrides, /*interleave=*/0, swizzleMode(swizzleBytes),
                                 kL2Promotion256B, /*oobFill=zeros*/ 0),
        "cuTensorMapEncodeTiled");
  recent.entries[recent.next] = {encoding, map};
  recent.next = (recent.next + 1) % recent.entries.size();
  return map;
}

} // namespace kiln::cuda
