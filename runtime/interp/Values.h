// How the interpreter holds values: one 64-bit word per element.
//  - integers of width w: the low w bits, zero-extended (signed operations
//    sign-extend on the fly);
//  - floats of any format: the value as a double, always exactly a value of
//    the format (every operation rounds its result to the format);
//  - pointers: the address.
// Internal to runtime/interp.
#pragma once

#include <kiln/dtype.h>
#include <kiln/error.h>

#include "mlir/IR/Operation.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Types.h"

#include <bit>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace kiln::interp {

using Word = uint64_t;

inline double as_double(Word w) { return std::bit_cast<double>(w); }
inline Word from_double(double d) { return std::bit_cast<Word>(d); }
inline Word width_mask(unsigned width) { return width >= 64 ? ~Word(0) : (Word(1) << width) - 1; }
inline int64_t sign_extend(Word x, unsigned width) {
  if (width >= 64)
    return static_cast<int64_t>(x);
  Word sign = Word(1) << (width - 1);
  return static_cast<int64_t>((x ^ sign) - sign);
}

/// What an element is.
struct Element {
  /// (tensor_map: a descriptor's tensor map, which the interpreter never reads)
  enum Kind : uint8_t { integer, floating, pointer, tensor_map } kind = integer;
  unsigned width = 32;        ///< bits (64 for pointers)
  DType float_type = DType::f32; ///< format of floats
  /// For pointers: what they point to.
  Kind pointee_kind = integer;
  unsigned pointee_width = 32;
  DType pointee_float = DType::f32;
  unsigned pointee_bytes() const { return pointee_width == 1 ? 1 : pointee_width / 8; }
};

/// The element of a scalar or tensor type.
Element element_of(mlir::Type type);
/// The float dtype of an MLIR float type.
DType float_dtype(mlir::Type type);
/// A float value rounded to the format (the invariant of float words).
double round_float(DType type, double value);

/// A value of the kernel: the words of its elements, row-major.
struct Data {
  std::vector<Word> words;
};

/// Memory a launch passed (the interpreter checks every access against it).
struct Region {
  uint64_t begin, end;
  unsigned argument;
};

/// The state of one program instance while it runs.
struct Exec {
  uint32_t pid[3] = {0, 0, 0};
  uint32_t programs[3] = {1, 1, 1};
  std::vector<Data> slots;
  const std::vector<Region> *memory = nullptr;
  std::ostream *out = nullptr;
};

using Instr = std::function<void(Exec &)>;

/// "file:line:col" of an operation (as traced from the user's source).
std::string where(mlir::Operation *op);
/// A kiln::Error for `op` in the program `exec` runs: "file:line: error: ...".
[[noreturn]] void fail_at(mlir::Operation *op, const Exec &exec, const std::string &message);

} // namespace kiln::interp
