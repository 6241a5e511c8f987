// Pointers, loads, stores, atomics, program ids, printing and assertions.
// Every access is checked against the memory the launch passed.

#include "runtime/interp/Compiler.h"

#include "compiler/dialect/tile/Tile.h"

#include <kiln/numeric.h>

#include "llvm/ADT/TypeSwitch.h"

#include <cinttypes>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <sstream>

namespace kiln::interp {

namespace {

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%" PRIx64, value);
  return text;
}

/// Checks that [address, address + bytes) lies in memory a launch passed
/// and is aligned; otherwise reports the access at `op`.
void check_access(mlir::Operation *op, const Exec &e, const char *what, size_t element,
                  uint64_t address, unsigned bytes) {
  const std::vector<Region> &memory = *e.memory;
  for (const Region &r : memory)
    if (address >= r.begin && address + bytes <= r.end) {
      if (address % bytes != 0)
        fail_at(op, e, std::string("misaligned ") + what + ": element " + std::to_string(element) +
                           " accesses address " + hex(address) + ", not a multiple of " +
                           std::to_string(bytes) + " bytes (argument #" +
                           std::to_string(r.argument) + ", byte offset " +
                           std::to_string(address - r.begin) + ")");
      return;
    }
  // Name the nearest argument's memory, to say how far off the access is.
  std::string nearest;
  uint64_t best = UINT64_MAX;
  for (const Region &r : memory) {
    uint64_t distance = address < r.begin ? r.begin - address : address + bytes - r.end;
    if (distance < best) {
      best = distance;
      long long offset = static_cast<long long>(address - r.begin);
      nearest = "; the nearest memory is argument #" + std::to_string(r.argument) + " (" +
                std::to_string(r.end - r.begin) + " bytes), at byte offset " +
                std::to_string(offset) + (address < r.begin ? " (before its start)" : " (past its end)");
    }
  }
  fail_at(op, e, std::string("out-of-bounds ") + what + ": element " + std::to_string(element) +
                     " accesses " + std::to_string(bytes) + " bytes at address " + hex(address) +
                     ", outside every buffer passed to the kernel" + nearest);
}

Word read(uint64_t address, const Element &p) {
  unsigned bytes = p.pointee_bytes();
  uint64_t raw = 0;
  std::memcpy(&raw, reinterpret_cast<const void *>(address), bytes);
  if (p.pointee_kind == Element::floating)
    return from_double(decode_float(p.pointee_float, raw));
  return raw & width_mask(p.pointee_width);
}

void write(uint64_t address, const Element &p, Word value) {
  uint64_t raw = p.pointee_kind == Element::floating ? encode_float(p.pointee_float, as_double(value))
                                                     : value;
  std::memcpy(reinterpret_cast<void *>(address), &raw, p.pointee_bytes());
}

/// Applies an atomic read-modify-write to `old`.
Word apply_rmw(tile::AtomicRMWKind kind, const Element &p, Word old, Word value) {
  unsigned w = p.pointee_width;
  Word m = width_mask(w);
  bool fp = p.pointee_kind == Element::floating;
  switch (kind) {
  case tile::AtomicRMWKind::add: return (old + value) & m;
  case tile::AtomicRMWKind::fadd:
    return from_double(round_float(p.pointee_float, as_double(old) + as_double(value)));
  case tile::AtomicRMWKind::max:
    if (fp) // maxNum: NaN loses
      return from_double(std::fmax(as_double(old), as_double(value)));
    return sign_extend(value, w) > sign_extend(old, w) ? value : old;
  case tile::AtomicRMWKind::min:
    if (fp)
      return from_double(std::fmin(as_double(old), as_double(value)));
    return sign_extend(value, w) < sign_extend(old, w) ? value : old;
  case tile::AtomicRMWKind::umax: return value > old ? value : old;
  case tile::AtomicRMWKind::umin: return value < old ? value : old;
  case tile::AtomicRMWKind::and_: return old & value;
  case tile::AtomicRMWKind::or_: return old | value;
  case tile::AtomicRMWKind::xor_: return old ^ value;
  case tile::AtomicRMWKind::xchg: return value;
  }
  return old;
}

std::string format_value(const Element &el, Word w, bool as_hex) {
  if (as_hex)
    return hex(el.kind == Element::floating ? encode_float(el.float_type, as_double(w)) : w);
  std::ostringstream os;
  switch (el.kind) {
  case Element::floating: os << std::setprecision(8) << as_double(w); break;
  case Element::pointer:
  case Element::tensor_map: os << hex(w); break;
  case Element::integer: os << sign_extend(w, el.width); break;
  }
  return os.str();
}

/// The elements of a descriptor block that lie inside the tensor, and
/// their addresses.
class DescriptorAccess {
public:
  DescriptorAccess(Compiler &c, mlir::Value base, mlir::ValueRange sizes, mlir::ValueRange strides,
                   mlir::ValueRange offsets, llvm::ArrayRef<int64_t> shape)
      : base_(c.slot(base)), shape_(shape.begin(), shape.end()),
        elementBytes_(element_of(base.getType()).pointee_bytes()) {
    for (mlir::Value v : sizes)
      sizes_.push_back(c.slot(v));
    for (mlir::Value v : strides)
      strides_.push_back(c.slot(v));
    for (mlir::Value v : offsets)
      offsets_.push_back(c.slot(v));
  }

  size_t elements() const {
    size_t n = 1;
    for (int64_t d : shape_)
      n *= static_cast<size_t>(d);
    return n;
  }

  /// Calls `visit(i, address)` for each element i (row-major in the block)
  /// inside the tensor's sizes.
  template <class Visit> void walk(const Exec &e, Visit visit) const {
    const size_t rank = shape_.size();
    std::vector<int64_t> size(rank), stride(rank), offset(rank), index(rank, 0);
    for (size_t d = 0; d < rank; ++d) {
      size[d] = static_cast<int64_t>(e.slots[sizes_[d]].words[0]);
      stride[d] = static_cast<int64_t>(e.slots[strides_[d]].words[0]);
      offset[d] = sign_extend(e.slots[offsets_[d]].words[0], 32);
    }
    const uint64_t base = e.slots[base_].words[0];
    const size_t n = elements();
    for (size_t i = 0; i < n; ++i) {
      bool inside = true;
      int64_t element = 0;
      for (size_t d = 0; d < rank; ++d) {
        int64_t at = offset[d] + index[d];
        inside = inside && at >= 0 && at < size[d];
        element += at * stride[d];
      }
      if (inside)
        visit(i, base + static_cast<uint64_t>(element) * elementBytes_);
      for (size_t d = rank; d-- > 0;) { // the next index, row-major
        if (++index[d] < shape_[d])
          break;
        index[d] = 0;
      }
    }
  }

private:
  unsigned base_;
  std::vector<unsigned> sizes_, strides_, offsets_;
  std::vector<int64_t> shape_;
  unsigned elementBytes_;
};

} // namespace

Instr compile_memory(Compiler &c, mlir::Operation *op) {
  return llvm::TypeSwitch<mlir::Operation *, Instr>(op)
      .Case([&](tile::ProgramIdOp p) -> Instr {
        unsigned axis = static_cast<unsigned>(p.getAxis()), r = c.slot(p);
        return [=](Exec &e) { e.slots[r].words.assign(1, e.pid[axis]); };
      })
      .Case([&](tile::ClusterIdOp p) -> Instr {
        const Word size = static_cast<Word>(tile::clusterSizeOf(p));
        unsigned r = c.slot(p);
        return [=](Exec &e) { e.slots[r].words.assign(1, e.pid[0] / size); };
      })
      .Case([&](tile::ClusterRankOp p) -> Instr {
        const Word size = static_cast<Word>(tile::clusterSizeOf(p));
        unsigned r = c.slot(p);
        return [=](Exec &e) { e.slots[r].words.assign(1, e.pid[0] % size); };
      })
      .Case([&](tile::NumProgramsOp p) -> Instr {
        unsigned axis = static_cast<unsigned>(p.getAxis()), r = c.slot(p);
        return [=](Exec &e) { e.slots[r].words.assign(1, e.programs[axis]); };
      })
      .Case([&](tile::AddPtrOp a) -> Instr {
        unsigned p = c.slot(a.getPtr()), o = c.slot(a.getOffset()), r = c.slot(a);
        unsigned w = element_of(a.getOffset().getType()).width;
        uint64_t size = element_of(a.getPtr().getType()).pointee_bytes();
        return [=](Exec &e) {
          const auto &P = e.slots[p].words, &O = e.slots[o].words;
          std::vector<Word> R(P.size());
          for (size_t i = 0; i < P.size(); ++i)
            R[i] = P[i] + static_cast<Word>(sign_extend(O[i], w)) * size;
          e.slots[r].words = std::move(R);
        };
      })
      .Case<tile::IntToPtrOp, tile::PtrToIntOp, tile::HintOp>([&](mlir::Operation *o) -> Instr {
        unsigned a = c.slot(o->getOperand(0)), r = c.slot(o->getResult(0));
        return [=](Exec &e) { e.slots[r] = e.slots[a]; };
      })
      .Case([&](tile::LoadOp load) -> Instr {
        Element el = element_of(load.getPtr().getType());
        unsigned p = c.slot(load.getPtr()), r = c.slot(load);
        int m = load.getMask() ? static_cast<int>(c.slot(load.getMask())) : -1;
        int o = load.getOther() ? static_cast<int>(c.slot(load.getOther())) : -1;
        mlir::Operation *where_op = op;
        return [=](Exec &e) {
          const auto &P = e.slots[p].words;
          std::vector<Word> R(P.size(), 0);
          for (size_t i = 0; i < P.size(); ++i) {
            if (m >= 0 && !e.slots[m].words[i]) {
              if (o >= 0)
                R[i] = e.slots[o].words[i];
              continue;
            }
            check_access(where_op, e, "load", i, P[i], el.pointee_bytes());
            R[i] = read(P[i], el);
          }
          e.slots[r].words = std::move(R);
        };
      })
      .Case([&](tile::DescriptorLoadOp load) -> Instr {
        Element el = element_of(load.getBase().getType());
        DescriptorAccess access(c, load.getBase(), load.getSizes(), load.getStrides(), load.getOffsets(),
                                mlir::cast<mlir::RankedTensorType>(load.getType()).getShape());
        unsigned r = c.slot(load);
        mlir::Operation *where_op = op;
        return [=](Exec &e) {
          std::vector<Word> R(access.elements(), 0);
          access.walk(e, [&](size_t i, uint64_t address) {
            check_access(where_op, e, "descriptor load", i, address, el.pointee_bytes());
            R[i] = read(address, el);
          });
          e.slots[r].words = std::move(R);
        };
      })
      .Case([&](tile::DescriptorStoreOp store) -> Instr {
        Element el = element_of(store.getBase().getType());
        DescriptorAccess access(c, store.getBase(), store.getSizes(), store.getStrides(), store.getOffsets(),
                                mlir::cast<mlir::RankedTensorType>(store.getValue().getType()).getShape());
        unsigned v = c.slot(store.getValue());
        mlir::Operation *where_op = op;
        return [=](Exec &e) {
          const auto &V = e.slots[v].words;
          access.walk(e, [&](size_t i, uint64_t address) {
            check_access(where_op, e, "descriptor store", i, address, el.pointee_bytes());
            write(address, el, V[i]);
          });
        };
      })
      .Case([&](tile::StoreOp store) -> Instr {
        Element el = element_of(store.getPtr().getType());
        unsigned p = c.slot(store.getPtr()), v = c.slot(store.getValue());
        int m = store.getMask() ? static_cast<int>(c.slot(store.getMask())) : -1;
        mlir::Operation *where_op = op;
        return [=](Exec &e) {
          const auto &P = e.slots[p].words, &V = e.slots[v].words;
          for (size_t i = 0; i < P.size(); ++i) {
            if (m >= 0 && !e.slots[m].words[i])
              continue;
            check_access(where_op, e, "store", i, P[i], el.pointee_bytes());
            write(P[i], el, V[i]);
          }
        };
      })
      .Case([&](tile::AtomicRMWOp rmw) -> Instr {
        Element el = element_of(rmw.getPtr().getType());
        unsigned p = c.slot(rmw.getPtr()), v = c.slot(rmw.getVal()), r = c.slot(rmw);
        int m = rmw.getMask() ? static_cast<int>(c.slot(rmw.getMask())) : -1;
        tile::AtomicRMWKind kind = rmw.getKind();
        mlir::Operation *where_op = op;
        return [=](Exec &e) {
          const auto &P = e.slots[p].words, &V = e.slots[v].words;
          std::vector<Word> R(P.size(), 0);
          for (size_t i = 0; i < P.size(); ++i) {
            if (m >= 0 && !e.slots[m].words[i])
              continue;
            check_access(where_op, e, "atomic", i, P[i], el.pointee_bytes());
            R[i] = read(P[i], el);
            write(P[i], el, apply_rmw(kind, el, R[i], V[i]));
          }
          e.slots[r].words = std::move(R);
        };
      })
      .Case([&](tile::AtomicCASOp cas) -> Instr {
        Element el = element_of(cas.getPtr().getType());
        unsigned p = c.slot(cas.getPtr()), cmp = c.slot(cas.getCmp()), v = c.slot(cas.getVal()),
                 r = c.slot(cas);
        mlir::Operation *where_op = op;
        return [=](Exec &e) {
          const auto &P = e.slots[p].words, &C = e.slots[cmp].words, &V = e.slots[v].words;
          std::vector<Word> R(P.size(), 0);
          for (size_t i = 0; i < P.size(); ++i) {
            check_access(where_op, e, "atomic", i, P[i], el.pointee_bytes());
            R[i] = read(P[i], el);
            // Compared bitwise, as the hardware does.
            bool equal = el.pointee_kind == Element::floating
                             ? encode_float(el.pointee_float, as_double(R[i])) ==
                                   encode_float(el.pointee_float, as_double(C[i]))
                             : R[i] == C[i];
            if (equal)
              write(P[i], el, V[i]);
          }
          e.slots[r].words = std::move(R);
        };
      })
      .Case([&](tile::PrintOp print) -> Instr {
        std::string prefix = print.getPrefix().str();
        bool as_hex = print.getHex();
        std::vector<std::pair<unsigned, Element>> args;
        for (mlir::Value v : print.getArgs())
          args.push_back({c.slot(v), element_of(v.getType())});
        return [=](Exec &e) {
          std::ostream &os = *e.out;
          os << "pid (" << e.pid[0] << ", " << e.pid[1] << ", " << e.pid[2] << ") " << prefix;
          for (const auto &[slot, el] : args) {
            const auto &W = e.slots[slot].words;
            if (W.size() == 1) {
              os << format_value(el, W[0], as_hex) << " ";
              continue;
            }
            os << "[";
            for (size_t i = 0; i < W.size(); ++i)
              os << (i ? ", " : "") << format_value(el, W[i], as_hex);
            os << "] ";
          }
          os << "\n";
        };
      })
      .Case([&](tile::AssertOp assert) -> Instr {
        unsigned cond = c.slot(assert.getCondition());
        std::string message = assert.getMessage().str();
        mlir::Operation *where_op = op;
        return [=](Exec &e) {
          const auto &C = e.slots[cond].words;
          for (size_t i = 0; i < C.size(); ++i)
            if (!C[i])
              fail_at(where_op, e, "device assertion failed (element " + std::to_string(i) + "): " +
                                       message);
        };
      })
      .Default([](mlir::Operation *) { return Instr(); });
}

} // namespace kiln::interp
