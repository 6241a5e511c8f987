// Fuzzes the expression language of the ops library (kiln::ops::parse_expr,
// ops/lib/Expr.cpp) and what the C ABI makes of a parsed expression
// (ops/lib/ExprEval.cpp, traced and run on the CPU interpreter through
// kiln_pointwise or kiln_reduce_fused, on small host tensors).
//
// Input: byte 0 = the number of inputs (low 3 bits, mod 5) and the mode
// (bits 4-5: 0-1 pointwise, 2-3 a reduction's prologue and epilogue, split
// at the first newline); bytes 1-4 = the inputs' dtypes (the high bit: a
// row that broadcasts); byte 5 = the outputs' dtype; byte 6 = the
// reduction; the rest = the expression text.
// A crash is a sanitizer report, an exception other than kiln::Error out of
// parse_expr (its contract), or KILN_ERROR_INTERNAL from the C ABI.

#include <kiln/error.h>
#include <kiln/ops/expr.h>
#include <kiln_ops.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct DTypeInfo {
  kiln::DType dtype;
  DLDataType dl;
};

/// The dtypes the C ABI takes.
const DTypeInfo kDTypes[] = {
    {kiln::DType::f32, {kDLFloat, 32, 1}}, {kiln::DType::f16, {kDLFloat, 16, 1}}, {kiln::DType::bf16, {kDLBfloat, 16, 1}},
    {kiln::DType::f64, {kDLFloat, 64, 1}}, {kiln::DType::i8, {kDLInt, 8, 1}},     {kiln::DType::i16, {kDLInt, 16, 1}},
    {kiln::DType::i32, {kDLInt, 32, 1}},   {kiln::DType::i64, {kDLInt, 64, 1}},   {kiln::DType::u8, {kDLUInt, 8, 1}},
    {kiln::DType::u16, {kDLUInt, 16, 1}},  {kiln::DType::u32, {kDLUInt, 32, 1}},  {kiln::DType::u64, {kDLUInt, 64, 1}},
    {kiln::DType::i1, {kDLUInt, 1, 1}}};
constexpr int kNumDTypes = sizeof(kDTypes) / sizeof(kDTypes[0]);

/// Element values that reach the edge cases: zero (division), one, all
/// ones (-1, NaN), the sign bit alone (INT_MIN, -0.0), the largest, and a
/// plain float.
const uint64_t kValues[] = {0, 1, ~uint64_t(0), uint64_t(1) << 63, ~(uint64_t(1) << 63), 0x3FF8000040400000};

/// A contiguous host tensor filled with kValues (its buffers stay put when
/// it moves, and so do the DLTensor's pointers into them).
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  DLTensor dl{};
  HostTensor(const DTypeInfo &type, std::vector<int64_t> dims) : shape(std::move(dims)) {
    size_t count = 1, size = (type.dl.bits + 7) / 8;
    for (int64_t d : shape)
      count *= d;
    bytes.resize(count * size);
    for (size_t i = 0; i < count; ++i) {
      uint64_t v = type.dtype == kiln::DType::i1 ? kValues[i % 6] & 1 : kValues[i % 6];
      std::memcpy(&bytes[i * size], &v, size); // the low bytes (little endian)
    }
    dl.data = bytes.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int>(shape.size());
    dl.dtype = type.dl;
    dl.shape = shape.data();
  }
};

void parseOrDie(const std::string &text, const std::vector<kiln::DType> &types, kiln::DType reduced) {
  try {
    kiln::ops::Expr e = kiln::ops::parse_expr(text, types, reduced);
    (void)e.key();
    (void)e.dtype();
  } catch (const kiln::Error &) {
  } catch (const std::exception &e) {
    std::fprintf(stderr, "parse_expr threw another exception than kiln::Error: %s\n", e.what());
    std::abort();
  }
}

void checkStatus(int status, const char *call) {
  if (status == KILN_ERROR_INTERNAL) {
    std::fprintf(stderr, "%s: KILN_ERROR_INTERNAL: %s\n", call, kiln_ops_last_error());
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 7)
    return -1;
  const int numInputs = (data[0] & 7) % 5, mode = (data[0] >> 4) & 3;
  std::vector<kiln::DType> types;
  std::vector<HostTensor> inputs;
  for (int i = 0; i < numInputs; ++i) {
    const DTypeInfo &type = kDTypes[data[1 + i] % kNumDTypes];
    types.push_back(type.dtype);
    // The high bit: a row [3] that broadcasts over the outputs' [2, 3].
    inputs.emplace_back(type, data[1 + i] & 0x80 ? std::vector<int64_t>{3} : std::vector<int64_t>{2, 3});
  }
  const DTypeInfo &outType = kDTypes[data[5] % kNumDTypes];
  std::string text(reinterpret_cast<const char *>(data) + 7, size - 7);
  std::vector<const DLTensor *> in;
  for (HostTensor &t : inputs)
    in.push_back(&t.dl);

  if (mode < 2) {
    // As kiln_pointwise splits its text: one expression per output (a
    // blank last part is no expression).
    std::vector<std::string> parts(1);
    for (char c : text) {
      if (c == ';')
        parts.emplace_back();
      else
        parts.back().push_back(c);
    }
    if (parts.size() > 1 && parts.back().find_first_not_of(" \t\n") == std::string::npos)
      parts.pop_back();
    for (const std::string &part : parts)
      parseOrDie(part, types, kiln::DType::f32);
    std::vector<HostTensor> outputs;
    for (size_t o = 0; o < parts.size() && o < 4; ++o)
      outputs.emplace_back(outType, std::vector<int64_t>{2, 3});
    std::vector<const DLTensor *> out;
    for (HostTensor &t : outputs)
      out.push_back(&t.dl);
    checkStatus(kiln_pointwise(text.c_str(), in.data(), numInputs, out.data(), static_cast<int>(out.size()), nullptr),
                "kiln_pointwise");
    return 0;
  }

  const size_t split = text.find('\n');
  const std::string prologue = text.substr(0, split), epilogue = split == std::string::npos ? "" : text.substr(split + 1);
  parseOrDie(prologue, types, kiln::DType::f32);
  parseOrDie(epilogue, {}, outType.dtype);
  HostTensor out(outType, {2});
  checkStatus(kiln_reduce_fused(data[6] % 7, prologue.c_str(), in.data(), numInputs, 1, epilogue.c_str(), &out.dl, 1,
                                nullptr),
              "kiln_reduce_fused");
  return 0;
}
