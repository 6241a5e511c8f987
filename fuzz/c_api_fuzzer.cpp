// Fuzzes the ops library's C ABI (kiln_ops.h): every op on host tensors
// (kDLCPU, run by the CPU interpreter) whose dtypes, shapes, strides,
// offsets and scalars come from the input, as do odd arguments (NULL
// tensors, data or shapes, other devices, unsupported dtypes, bad ranks).
//
// The tensors are honest: the memory each one's data and byte_offset point
// into is allocated here and covers every element its shape and strides
// reach. Sizes and strides that reach no element (a tensor with a size-0
// dimension, the stride of a size-1 dimension) may be anything; others are
// small. A DLTensor that lies about its extent is the caller's bug and out
// of scope, as kiln_ops.h says.
//
// A crash is a sanitizer report, KILN_ERROR_INTERNAL (the ABI's "a bug"), a
// failure without a message (or a success with one), a write to an input,
// or a write to an output's memory outside its elements.
//
// Input, read in order (missing bytes read as 0): the op (mod 9); the op's
// scalars (dim, correction, reduction, activation, precision: a byte each;
// attention takes its layout and mask from the last two, its scale from
// alpha, its window from dim and correction, its soft cap from eps;
// eps and alpha: 8 bytes, big-endian doubles); the input and output count
// (pointwise, fused reductions); each tensor (see readTensor); 16 bytes the
// inputs repeat as their values; the rest is the expression text (a fused
// reduction's prologue and epilogue split at the first newline).

#include <kiln_ops.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

class Reader {
public:
  Reader(const uint8_t *data, size_t size) : p_(data), end_(data + size) {}
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }
  int64_t wide() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v = v << 8 | byte();
    return static_cast<int64_t>(v);
  }
  double real() {
    int64_t bits = wide();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  std::string rest() {
    std::string s(p_, end_);
    p_ = end_;
    return s;
  }

private:
  const uint8_t *p_, *end_;
};

const DLDataType kDTypes[] = {{kDLFloat, 32, 1}, {kDLFloat, 16, 1}, {kDLBfloat, 16, 1}, {kDLFloat, 64, 1},
                              {kDLInt, 8, 1},    {kDLInt, 16, 1},   {kDLInt, 32, 1},    {kDLInt, 64, 1},
                              {kDLUInt, 8, 1},   {kDLUInt, 16, 1},  {kDLUInt, 32, 1},   {kDLUInt, 64, 1},
                              {kDLUInt, 1, 1},   {6, 8, 1}}; // the last two: bool (DLPack 0.6, and kDLBool of 1.x)
constexpr int kNumDTypes = sizeof(kDTypes) / sizeof(kDTypes[0]);

/// Devices that are neither the host nor CUDA (host memory passed as CUDA
/// memory would be a lie about it).
const DLDeviceType kOtherDevices[] = {kDLCUDAHost, kDLOpenCL, kDLVulkan, kDLMetal, kDLROCM, kDLExtDev};

constexpr int64_t kMaxElements = 1 << 12;
constexpr int64_t kMaxStride = 16;

/// One tensor and the memory it points into.
struct Tensor {
  DLTensor dl{};
  bool null = false;  ///< passed as a NULL pointer
  bool output = false;
  std::vector<int64_t> shape, strides;
  std::unique_ptr<uint8_t[]> memory; ///< exactly `size` bytes: ASan sees any access past them
  size_t size = 0;
  std::vector<uint8_t> before;   ///< the memory's bytes before the call
  std::vector<bool> element;     ///< which of its bytes belong to an element
  bool isBool() const { return (dl.dtype.code == kDLUInt && dl.dtype.bits == 1) || dl.dtype.code == 6; }
};

/// Reads a tensor's description: a flags byte (bits 0-3: dtype, 14: an
/// unsupported one from the next two bytes, 15: two lanes; bit 4: explicit
/// strides; bit 5: misaligned by a byte; bit 6: odd, as the last byte says;
/// bit 7: NULL), a rank byte (bits 0-6 mod 6, 5: the next byte as a signed
/// rank; bit 7: the offset to the first element in byte_offset rather than
/// in data), a byte per dimension (0xF0 and above: the next 8 bytes as the
/// size), with explicit strides a byte per stride (signed; 0x80: the next 8
/// bytes), and when odd one more byte. Then allocates honest memory for it.
Tensor readTensor(Reader &in, bool output) {
  Tensor t;
  t.output = output;
  const uint8_t flags = in.byte();
  const int type = flags & 15;
  if (type < kNumDTypes)
    t.dl.dtype = kDTypes[type];
  else if (type == 14)
    t.dl.dtype = {in.byte(), in.byte(), 1};
  else
    t.dl.dtype = {kDLFloat, 32, 2};
  t.null = flags & 0x80;
  const uint8_t rankByte = in.byte();
  int rank = (rankByte & 0x7F) % 6;
  if (rank == 5)
    rank = static_cast<int8_t>(in.byte());
  const int dims = rank < 0 ? 0 : rank > 9 ? 9 : rank; // (a bad rank still gets a few sizes to be rejected with)
  for (int d = 0; d < dims; ++d) {
    uint8_t b = in.byte();
    t.shape.push_back(b >= 0xF0 ? in.wide() : b % 9);
  }
  if (flags & 0x10)
    for (int d = 0; d < dims; ++d) {
      int8_t s = static_cast<int8_t>(in.byte());
      t.strides.push_back(s == -128 ? in.wide() : s);
    }

  // Honest memory: sizes and strides that would reach elements beyond a
  // few thousand become small ones. A negative size describes no memory.
  bool empty = false;
  for (int64_t d : t.shape)
    empty = empty || d <= 0;
  int64_t count = 1;
  if (!empty) {
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (t.shape[d] > 8)
        t.shape[d] = 1 + static_cast<uint64_t>(t.shape[d]) % 8;
      if (count * t.shape[d] > kMaxElements)
        t.shape[d] = 1;
      count *= t.shape[d];
      if (!t.strides.empty() && t.shape[d] > 1 && (t.strides[d] < -kMaxStride || t.strides[d] > kMaxStride))
        t.strides[d] %= kMaxStride;
    }
  }
  const size_t elementSize = (static_cast<size_t>(t.dl.dtype.bits) * t.dl.dtype.lanes + 7) / 8;
  // The offsets (in elements) of the first and last element reached.
  int64_t low = 0, high = 0;
  if (!empty) {
    int64_t step = 1;
    for (size_t d = t.shape.size(); d-- > 0;) {
      int64_t stride = t.strides.empty() ? step : t.strides[d];
      if (t.shape[d] > 1)
        (stride < 0 ? low : high) += (t.shape[d] - 1) * stride;
      step *= t.shape[d];
    }
  }
  const size_t misalign = flags & 0x20 ? 1 : 0;
  const size_t span = empty ? 0 : static_cast<size_t>(high - low + 1) * (elementSize ? elementSize : 1);
  t.size = misalign + span + (span == 0); // (never zero bytes: data is not NULL)
  t.memory.reset(new uint8_t[t.size]);
  t.element.assign(t.size, false);
  const size_t first = misalign + static_cast<size_t>(-low) * elementSize;
  if (!empty && t.output) {
    std::vector<int64_t> index(t.shape.size(), 0);
    for (int64_t n = 0; n < count; ++n) {
      int64_t offset = 0, step = 1;
      for (size_t d = t.shape.size(); d-- > 0;) {
        offset += index[d] * (t.strides.empty() ? step : t.strides[d]);
        step *= t.shape[d];
      }
      const int64_t at = static_cast<int64_t>(first) + offset * static_cast<int64_t>(elementSize);
      for (size_t b = 0; b < elementSize; ++b)
        t.element[at + b] = true;
      for (size_t d = t.shape.size(); d-- > 0 && ++index[d] == t.shape[d];)
        index[d] = 0;
    }
  }

  t.dl.device = {kDLCPU, 0};
  t.dl.ndim = rank;
  t.dl.shape = t.shape.data();
  t.dl.strides = t.strides.empty() ? nullptr : t.strides.data();
  if (rankByte & 0x80) {
    t.dl.data = t.memory.get();
    t.dl.byte_offset = first;
  } else {
    t.dl.data = t.memory.get() + first;
  }
  if (flags & 0x40) {
    const uint8_t odd = in.byte();
    switch (odd % 4) {
    case 0: t.dl.data = nullptr; break;
    case 1: t.dl.shape = nullptr; break;
    case 2: t.dl.device = {kOtherDevices[odd / 4 % 6], 0}; break;
    default: t.dl.device.device_id = 1; break; // the host still, but another id than the others'
    }
  }
  return t;
}

/// Fills an input's memory from `values` (bools 0 or 1, as DLPack's) and
/// remembers every tensor's bytes.
void fill(Tensor &t, const uint8_t (&values)[16]) {
  for (size_t i = 0; i < t.size; ++i)
    t.memory[i] = t.output ? 0xA5 : t.isBool() ? values[i % 16] & 1 : values[i % 16];
  t.before.assign(t.memory.get(), t.memory.get() + t.size);
}

/// Inputs are never written, outputs only in their elements.
void checkWrites(const Tensor &t, const char *role, int index) {
  for (size_t i = 0; i < t.size; ++i)
    if (t.memory[i] != t.before[i] && !t.element[i]) {
      std::fprintf(stderr, "%s %d: byte %zu of its memory was written, outside %s\n", role, index, i,
                   t.output ? "its elements" : "any output");
      std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader in(data, size);
  const int op = in.byte() % 9;
  const int64_t dim = static_cast<int8_t>(in.byte());
  const int correction = static_cast<int8_t>(in.byte());
  const int reduction = static_cast<int8_t>(in.byte());
  const int activation = static_cast<int8_t>(in.byte());
  const int precision = static_cast<int8_t>(in.byte());
  const double eps = in.real(), alpha = in.real();
  const uint8_t counts = in.byte();
  const int numInputs = (counts & 15) % 5, numOutputs = 1 + (counts >> 4) % 3;

  // The tensors each op takes, in its arguments' order: inputs first.
  std::vector<Tensor> inputs, outputs;
  auto input = [&] { inputs.push_back(readTensor(in, false)); };
  auto output = [&] { outputs.push_back(readTensor(in, true)); };
  bool residualIsOut = false;
  switch (op) {
  case 0: // pointwise
    for (int i = 0; i < numInputs; ++i)
      input();
    for (int o = 0; o < numOutputs; ++o)
      output();
    break;
  case 1: // reduce
  case 3: // softmax
  case 4: // log_softmax
    input();
    output();
    break;
  case 2: // reduce_fused
    for (int i = 0; i < numInputs; ++i)
      input();
    output();
    break;
  case 5: // layer_norm: x, weight, bias; y, mean, rstd
    input(), input(), input();
    output(), output(), output();
    break;
  case 6: // rms_norm: x, weight; y, rstd
    input(), input();
    output(), output();
    break;
  case 7: // matmul: a, b, bias, residual (or out itself); out
    input(), input(), input(), input();
    output();
    residualIsOut = inputs[3].null && (counts & 0x80);
    break;
  default: // attention: q, k, v; out, lse
    input(), input(), input();
    output(), output();
    break;
  }
  uint8_t values[16];
  for (uint8_t &v : values)
    v = in.byte();
  const std::string text = in.rest();
  for (Tensor &t : inputs)
    fill(t, values);
  for (Tensor &t : outputs)
    fill(t, values);

  auto ptr = [](const Tensor &t) { return t.null ? nullptr : &t.dl; };
  std::vector<const DLTensor *> in_, out_;
  for (const Tensor &t : inputs)
    in_.push_back(ptr(t));
  for (const Tensor &t : outputs)
    out_.push_back(ptr(t));
  const size_t split = text.find('\n');
  const std::string prologue = text.substr(0, split), epilogue = split == std::string::npos ? "" : text.substr(split + 1);

  int status = KILN_OK;
  const char *call = "";
  switch (op) {
  case 0:
    call = "kiln_pointwise";
    status = kiln_pointwise(text.c_str(), in_.data(), numInputs, out_.data(), numOutputs, nullptr);
    break;
  case 1:
    call = "kiln_reduce";
    status = kiln_reduce(reduction, in_[0], dim, out_[0], correction, nullptr);
    break;
  case 2:
    call = "kiln_reduce_fused";
    status = kiln_reduce_fused(reduction, prologue.c_str(), in_.data(), numInputs, dim, epilogue.c_str(), out_[0],
                               correction, nullptr);
    break;
  case 3:
    call = "kiln_softmax";
    status = kiln_softmax(in_[0], out_[0], nullptr);
    break;
  case 4:
    call = "kiln_log_softmax";
    status = kiln_log_softmax(in_[0], out_[0], nullptr);
    break;
  case 5:
    call = "kiln_layer_norm";
    status = kiln_layer_norm(in_[0], in_[1], in_[2], eps, out_[0], out_[1], out_[2], nullptr);
    break;
  case 6:
    call = "kiln_rms_norm";
    status = kiln_rms_norm(in_[0], in_[1], eps, out_[0], out_[1], nullptr);
    break;
  case 7:
    call = "kiln_matmul";
    status = kiln_matmul(in_[0], in_[1], in_[2], residualIsOut ? out_[0] : in_[3], alpha, activation, precision,
                         out_[0], nullptr);
    break;
  default: {
    call = "kiln_attention";
    // (counts' top bit: no options, the defaults; the next: a window of
    // dim keys left and correction right)
    const kiln_attention_options options{sizeof(kiln_attention_options), activation, precision, alpha,
                                         (counts & 0x40) != 0, dim, correction, eps};
    status = kiln_attention(in_[0], in_[1], in_[2], out_[0], out_[1], (counts & 0x80) ? nullptr : &options, nullptr);
    break;
  }
  }

  const std::string message = kiln_ops_last_error();
  if (status == KILN_ERROR_INTERNAL || (status != KILN_OK && status != KILN_ERROR_INVALID_ARGUMENT &&
                                        status != KILN_ERROR_FAILED)) {
    std::fprintf(stderr, "%s returned %d: %s\n", call, status, message.c_str());
    std::abort();
  }
  if ((status == KILN_OK) != message.empty()) {
    std::fprintf(stderr, "%s returned %d with the message '%s'\n", call, status, message.c_str());
    std::abort();
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    checkWrites(inputs[i], "input", static_cast<int>(i));
  for (size_t i = 0; i < outputs.size(); ++i)
    checkWrites(outputs[i], "output", static_cast<int>(i));
  return 0;
}
