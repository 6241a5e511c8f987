//===- MemoryToLLVM.cpp - loads, stores and atomics -----------------------===//
//
// Global memory accesses are one access per vector of up to 16 bytes of
// registers that hold consecutive elements (the layout's contiguous
// registers, bounded by axis info: pointer contiguity and alignment, mask
// constancy). Masked-off vectors keep `other`. Threads holding duplicates
// of an element (broadcast layouts) leave stores and atomics to one owner.
// On NVIDIA GPUs each access is a predicated ld/st/atom in inline PTX,
// with the cache hints PTX has; on AMD GPUs a plain LLVM load, store or
// atomicrmw of address space 1 under a branch where masked (the AMDGPU back
// end picks global_load_dwordx4 and the like; cache hints are not passed).
//
//===----------------------------------------------------------------------===//

#include "compiler/lowering/Lowering.h"

#include "compiler/analysis/AxisInfo.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln::lowering {

using gpu::HwDim;
using gpu::LinearLayout;

namespace {

/// An element as raw bits of its memory size (i1 as i8, pointers as i64).
Value toBits(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType();
  if (isa<LLVM::LLVMPointerType>(t))
    return LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), v);
  if (t.isInteger(1))
    return LLVM::ZExtOp::create(b, loc, b.getI8Type(), v);
  if (isa<FloatType>(t))
    return LLVM::BitcastOp::create(b, loc, b.getIntegerType(t.getIntOrFloatBitWidth()), v);
  return v;
}

Value fromBits(OpBuilder &b, Location loc, Value bits, Type element) {
  if (isa<LLVM::LLVMPointerType>(element))
    return LLVM::IntToPtrOp::create(b, loc, element, bits);
  if (element.isInteger(1))
    return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, bits, intConst(b, loc, bits.getType(), 0));
  if (isa<FloatType>(element))
    return LLVM::BitcastOp::create(b, loc, element, bits);
  return bits;
}

/// Packs `elements` (raw bits of equal width) into words of `wordBits`.
SmallVector<Value> toWords(OpBuilder &b, Location loc, ArrayRef<Value> elements, unsigned wordBits) {
  unsigned elementBits = elements[0].getType().getIntOrFloatBitWidth();
  SmallVector<Value> words;
  if (elementBits >= wordBits) { // one element per word or more words per element
    for (Value e : elements) {
      if (elementBits == wordBits) {
        words.push_back(e);
        continue;
      }
      auto vector = LLVM::BitcastOp::create(b, loc, VectorType::get(elementBits / wordBits, b.getIntegerType(wordBits)), e);
      for (unsigned i = 0; i < elementBits / wordBits; ++i)
        words.push_back(LLVM::ExtractElementOp::create(b, loc, vector, i32Const(b, loc, i)));
    }
    return words;
  }
  unsigned perWord = wordBits / elementBits;
  auto vectorType = VectorType::get(perWord, elements[0].getType());
  for (size_t i = 0; i < elements.size(); i += perWord) {
    Value vector = LLVM::UndefOp::create(b, loc, vectorType);
    for (unsigned j = 0; j < perWord; ++j)
      vector = LLVM::InsertElementOp::create(b, loc, vector, elements[i + j], i32Const(b, loc, j));
    words.push_back(LLVM::BitcastOp::create(b, loc, b.getIntegerType(wordBits), vector));
  }
  return words;
}

SmallVector<Value> fromWords(OpBuilder &b, Location loc, ArrayRef<Value> words, unsigned elementBits) {
  unsigned wordBits = words[0].getType().getIntOrFloatBitWidth();
  SmallVector<Value> elements;
  Type elementType = b.getIntegerType(elementBits);
  if (elementBits >= wordBits) {
    unsigned perElement = elementBits / wordBits;
    for (size_t i = 0; i < words.size(); i += perElement) {
      if (perElement == 1) {
        elements.push_back(words[i]);
        continue;
      }
      Value vector = LLVM::UndefOp::create(b, loc, VectorType::get(perElement, b.getIntegerType(wordBits)));
      for (unsigned j = 0; j < perElement; ++j)
        vector = LLVM::InsertElementOp::create(b, loc, vector, words[i + j], i32Const(b, loc, j));
      elements.push_back(LLVM::BitcastOp::create(b, loc, elementType, vector));
    }
    return elements;
  }
  unsigned perWord = wordBits / elementBits;
  for (Value w : words) {
    auto vector = LLVM::BitcastOp::create(b, loc, VectorType::get(perWord, elementType), w);
    for (unsigned j = 0; j < perWord; ++j)
      elements.push_back(LLVM::ExtractElementOp::create(b, loc, vector, i32Const(b, loc, j)));
  }
  return elements;
}

/// The qualifiers of a global load or store for its cache hints. A cache
/// operator (.cg, .cs, ...) excludes an L1 eviction priority, but both
/// combine with an L2 policy (`withPolicy`: the access takes a
/// createpolicy register as its last operand, sm_80+).
std::string cacheSuffix(tile::CacheModifier cache, tile::EvictionPolicy evict, bool load, bool withPolicy) {
  std::string suffix;
  switch (cache) {
  case tile::CacheModifier::ca: suffix = load ? ".ca" : ""; break;
  case tile::CacheModifier::cg: suffix = ".cg"; break;
  case tile::CacheModifier::cs: suffix = ".cs"; break;
  case tile::CacheModifier::cv: suffix = load ? ".cv" : ""; break;
  case tile::CacheModifier::wb: suffix = load ? "" : ".wb"; break;
  case tile::CacheModifier::wt: suffix = load ? "" : ".wt"; break;
  case tile::CacheModifier::none:
    if (evict == tile::EvictionPolicy::evict_first)
      suffix = ".L1::evict_first";
    else if (evict == tile::EvictionPolicy::evict_last)
      suffix = ".L1::evict_last";
    break;
  }
  return withPolicy ? suffix + ".L2::cache_hint" : suffix;
}

/// The L2 eviction policy register for `evict` (sm_80+; null for normal
/// eviction or older targets): L1 priorities alone leave L2, where data
/// read twice by one program waits between its walks, unaffected.
Value l2Policy(OpBuilder &b, Location loc, const LoweringContext &ctx, tile::EvictionPolicy evict) {
  if (evict == tile::EvictionPolicy::normal || ctx.computeCapability < 80 || ctx.amd)
    return Value();
  std::string priority = evict == tile::EvictionPolicy::evict_first ? "evict_first" : "evict_last";
  return ptx(b, loc, b.getI64Type(), "createpolicy.fractional.L2::" + priority + ".b64 $0, 1.0;", "=l", {},
             /*sideEffects=*/false);
}

} // namespace

int64_t accessWidth(const LoweringContext &ctx, Value ptr, Value mask, Type element) {
  auto tensor = dyn_cast<RankedTensorType>(ptr.getType());
  if (!tensor)
    return 1;
  LinearLayout layout = layoutOf(tensor);
  if (layout.registers() == 1 || layout.bits(HwDim::Register) == 0)
    return 1;
  const gpu::Coord &first = layout.basis(HwDim::Register, 0);
  int dim = -1;
  for (int d = 0; d < layout.rank(); ++d)
    if (first[d])
      dim = d;
  if (dim < 0)
    return 1;
  int64_t width = std::min<int64_t>(layout.contiguousRegisters(dim),
                                    ctx.axis.vectorWidth(ptr, dim, storageBytes(element), mask));
  return std::max<int64_t>(1, width);
}

namespace {

/// Word size (bits) and count for `width` elements of `bytes` each.
std::pair<unsigned, unsigned> wordsFor(int64_t width, int64_t bytes) {
  int64_t total = width * bytes;
  if (total >= 4)
    return {32, static_cast<unsigned>(total / 4)};
  return {16, 1}; // 1 or 2 bytes: one 16-bit register (b8 loads fill it)
}

std::string wordList(unsigned first, unsigned count) {
  std::string text = count > 1 ? "{" : "";
  for (unsigned i = 0; i < count; ++i)
    text += (i ? ", $" : "$") + std::to_string(first + i);
  return text + (count > 1 ? "}" : "");
}

/// (AMD) The elements of registers [k, k + width) as one value to store:
/// an element, or a vector of them (i1 widened to i8).
Value amdStoredValue(OpBuilder &b, Location loc, ArrayRef<Value> values, int64_t width) {
  auto stored = [&](Value v) { return v.getType().isInteger(1) ? LLVM::ZExtOp::create(b, loc, b.getI8Type(), v) : v; };
  if (width == 1)
    return stored(values[0]);
  Value vector = LLVM::PoisonOp::create(b, loc, VectorType::get({width}, stored(values[0]).getType()));
  for (int64_t j = 0; j < width; ++j)
    vector = LLVM::InsertElementOp::create(b, loc, vector, stored(values[j]), i32Const(b, loc, j));
  return vector;
}

/// (AMD) The elements of a value amdStoredValue made.
SmallVector<Value> amdElements(OpBuilder &b, Location loc, Value loaded, int64_t width, Type element) {
  SmallVector<Value> elements;
  for (int64_t j = 0; j < width; ++j) {
    Value v = width == 1 ? loaded : LLVM::ExtractElementOp::create(b, loc, loaded, i32Const(b, loc, j)).getResult();
    if (element.isInteger(1))
      v = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, v, intConst(b, loc, v.getType(), 0));
    elements.push_back(v);
  }
  return elements;
}

/// (AMD) A load of `width` elements from `address`, where `mask` (if any)
/// holds; `other` (registers, if any) elsewhere, else zeros.
SmallVector<Value> amdLoad(OpBuilder &b, Location loc, Value address, Type element, int64_t width, Value mask,
                           ArrayRef<Value> other, bool isVolatile) {
  Type stored = storageType(element);
  Type type = width == 1 ? stored : VectorType::get({width}, stored);
  const int64_t alignment = width * storageBytes(element);
  auto load = [&] {
    return LLVM::LoadOp::create(b, loc, type, address, alignment, isVolatile).getResult();
  };
  if (!mask)
    return amdElements(b, loc, load(), width, element);
  Value otherwise = !other.empty() ? amdStoredValue(b, loc, other, width)
                                   : LLVM::ZeroOp::create(b, loc, type).getResult();
  return amdElements(b, loc, ifThenElse(b, loc, mask, type, load, [&] { return otherwise; }), width, element);
}

struct LoadLowering : KilnPattern<tile::LoadOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::LoadOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = ctx.types.elementType(op.getType());
    int64_t bytes = storageBytes(element);
    SmallVector<Value> ptrs = registersOf(rewriter, loc, adaptor.getPtr());
    SmallVector<Value> masks, others;
    if (adaptor.getMask())
      masks = registersOf(rewriter, loc, adaptor.getMask());
    if (adaptor.getOther())
      others = registersOf(rewriter, loc, adaptor.getOther());
    int64_t width = accessWidth(ctx, op.getPtr(), op.getMask(), element);
    SmallVector<Value> result;
    if (ctx.amd) {
      for (size_t k = 0; k < ptrs.size(); k += width)
        llvm::append_range(result, amdLoad(rewriter, loc, ptrs[k], element, width, masks.empty() ? Value() : masks[k],
                                           others.empty() ? ArrayRef<Value>() : ArrayRef(others).slice(k, width),
                                           op.getIsVolatile()));
      replaceWithRegisters(rewriter, op, result);
      return success();
    }
    auto [wordBits, wordCount] = wordsFor(width, bytes);
    Value policy = op.getIsVolatile() ? Value() : l2Policy(rewriter, loc, ctx, op.getEvict());
    std::string suffix = op.getIsVolatile() ? "" : cacheSuffix(op.getCache(), op.getEvict(), true, bool(policy));
    std::string access = std::string(op.getIsVolatile() ? "ld.volatile.global" : "ld.global") + suffix +
                         (wordCount > 1 ? ".v" + std::to_string(wordCount) : "") +
                         (bytes * width == 1 ? ".b8" : wordBits == 16 ? ".b16" : ".b32");
    Type wordType = rewriter.getIntegerType(wordBits);
    for (size_t k = 0; k < ptrs.size(); k += width) {
      // Operands: address, [predicate, other words...]; results: the words.
      SmallVector<Value> operands{ptrs[k]};
      std::string constraints;
      for (unsigned i = 0; i < wordCount; ++i)
        constraints += (wordBits == 16 ? "=h," : "=r,");
      constraints += "l";
      // "[address]", then the L2 policy, which goes last among the operands.
      auto addressing = [&] {
        std::string text = "[$" + std::to_string(wordCount) + "]";
        if (policy) {
          text += ", $" + std::to_string(wordCount + operands.size());
          operands.push_back(policy);
          constraints += ",l";
        }
        return text;
      };
      std::string text;
      if (!masks.empty()) {
        operands.push_back(LLVM::ZExtOp::create(rewriter, loc, rewriter.getI32Type(), masks[k]));
        constraints += ",r";
        text = "{ .reg .pred p; setp.ne.b32 p, $" + std::to_string(wordCount + 1) + ", 0; ";
        if (!others.empty()) {
          SmallVector<Value> otherBits;
          for (int64_t j = 0; j < width; ++j)
            otherBits.push_back(toBits(rewriter, loc, others[k + j]));
          SmallVector<Value> otherWords = bytes * width < 2
                                              ? SmallVector<Value>{LLVM::ZExtOp::create(rewriter, loc, rewriter.getI16Type(), otherBits[0])}
                                              : toWords(rewriter, loc, otherBits, wordBits);
          for (unsigned i = 0; i < wordCount; ++i) {
            text += "mov.b" + std::to_string(wordBits) + " $" + std::to_string(i) + ", $" +
                    std::to_string(wordCount + 2 + i) + "; ";
            operands.push_back(otherWords[i]);
            constraints += wordBits == 16 ? ",h" : ",r";
          }
        }
        std::string address = addressing();
        text += "@p " + access + " " + wordList(0, wordCount) + ", " + address + "; }";
      } else {
        std::string address = addressing();
        text = access + " " + wordList(0, wordCount) + ", " + address + ";";
      }
      Type resultType = wordCount == 1 ? wordType
                                       : LLVM::LLVMStructType::getLiteral(rewriter.getContext(),
                                                                          SmallVector<Type>(wordCount, wordType));
      Value loaded = ptx(rewriter, loc, resultType, text, constraints, operands, /*sideEffects=*/true);
      SmallVector<Value> words = wordCount == 1 ? SmallVector<Value>{loaded} : unpack(rewriter, loc, loaded);
      SmallVector<Value> bits;
      if (bytes * width == 1)
        bits = {LLVM::TruncOp::create(rewriter, loc, rewriter.getI8Type(), words[0])};
      else
        bits = fromWords(rewriter, loc, words, bytes * 8);
      for (Value v : bits)
        result.push_back(fromBits(rewriter, loc, v, element));
    }
    replaceWithRegisters(rewriter, op, result);
    return success();
  }

  void replaceWithRegisters(ConversionPatternRewriter &rewriter, tile::LoadOp op, ArrayRef<Value> result) const {
    if (isa<RankedTensorType>(op.getType()))
      rewriter.replaceOp(op, pack(rewriter, op.getLoc(), getTypeConverter()->convertType(op.getType()), result));
    else
      rewriter.replaceOp(op, result[0]);
  }
};

struct StoreLowering : KilnPattern<tile::StoreOp> {
  using KilnPattern::KilnPattern;
  LogicalResult matchAndRewrite(tile::StoreOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = ctx.types.elementType(op.getValue().getType());
    int64_t bytes = storageBytes(element);
    SmallVector<Value> ptrs = registersOf(rewriter, loc, adaptor.getPtr());
    SmallVector<Value> values = registersOf(rewriter, loc, adaptor.getValue());
    SmallVector<Value> masks;
    if (adaptor.getMask())
      masks = registersOf(rewriter, loc, adaptor.getMask());
    // Only one of the threads holding an element stores it.
    ThreadIds ids = threadIds(rewriter, loc, ctx.threadsPerWarp);
    Value owner;
    if (auto tensor = dyn_cast<RankedTensorType>(op.getPtr().getType()))
      owner = isOwner(rewriter, loc, layoutOf(tensor), ids);
    else // a scalar store: the first thread
      owner = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, ids.thread, i32Const(rewriter, loc, 0));
    int64_t width = accessWidth(ctx, op.getPtr(), op.getMask(), element);
    if (ctx.amd) {
      for (size_t k = 0; k < ptrs.size(); k += width) {
        Value predicate = masks.empty() ? owner : LLVM::AndOp::create(rewriter, loc, owner, masks[k]).getResult();
        Value value = amdStoredValue(rewriter, loc, ArrayRef(values).slice(k, width), width);
        ifThen(rewriter, loc, predicate, [&] { LLVM::StoreOp::create(rewriter, loc, value, ptrs[k], width * bytes); });
      }
      rewriter.eraseOp(op);
      return success();
    }
    auto [wordBits, wordCount] = wordsFor(width, bytes);
    Value policy = l2Policy(rewriter, loc, ctx, op.getEvict());
    std::string access = "st.global" + cacheSuffix(op.getCache(), op.getEvict(), false, bool(policy)) +
                         (wordCount > 1 ? ".v" + std::to_string(wordCount) : "") +
                         (bytes * width == 1 ? ".b8" : wordBits == 16 ? ".b16" : ".b32");
    for (size_t k = 0; k < ptrs.size(); k += width) {
      Value predicate = owner;
      if (!masks.empty())
        predicate = LLVM::AndOp::create(rewriter, loc, predicate, masks[k]);
      SmallVector<Value> bits;
      for (int64_t j = 0; j < width; ++j)
        bits.push_back(toBits(rewriter, loc, values[k + j]));
      SmallVector<Value> words = bytes * width < 2
                                     ? SmallVector<Value>{LLVM::ZExtOp::create(rewriter, loc, rewriter.getI16Type(), bits[0])}
                                     : toWords(rewriter, loc, bits, wordBits);
      SmallVector<Value> operands{ptrs[k], LLVM::ZExtOp::create(rewriter, loc, rewriter.getI32Type(), predicate)};
      std::string constraints = "l,r";
      for (Value w : words) {
        operands.push_back(w);
        constraints += wordBits == 16 ? ",h" : ",r";
      }
      std::string policyOperand; // the L2 policy: after the values
      if (policy) {
        policyOperand = ", $" + std::to_string(operands.size());
        operands.push_back(policy);
        constraints += ",l";
      }
      std::string text = "{ .reg .pred p; setp.ne.b32 p, $1, 0; @p " + access + " [$0], " +
                         wordList(2, wordCount) + policyOperand + "; }";
      ptx(rewriter, loc, Type(), text, constraints, operands, /*sideEffects=*/true);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

std::string semanticsText(tile::MemSemantic sem, tile::MemScope scope) {
  return "." + tile::stringifyMemSemantic(sem).str() + "." + tile::stringifyMemScope(scope).str();
}

/// (AMD) An atomic's ordering, and its failure ordering for a compare and
/// swap (which may not release).
LLVM::AtomicOrdering amdOrdering(tile::MemSemantic sem, bool onFailure = false) {
  switch (sem) {
  case tile::MemSemantic::relaxed: return LLVM::AtomicOrdering::monotonic;
  case tile::MemSemantic::acquire: return LLVM::AtomicOrdering::acquire;
  case tile::MemSemantic::release: return onFailure ? LLVM::AtomicOrdering::monotonic : LLVM::AtomicOrdering::release;
  case tile::MemSemantic::acq_rel: return onFailure ? LLVM::AtomicOrdering::acquire : LLVM::AtomicOrdering::acq_rel;
  }
  llvm_unreachable("four semantics");
}

/// (AMD) The synchronization scope: a workgroup, the device ("agent"), the
/// system (LLVM's default scope).
StringRef amdScope(tile::MemScope scope) {
  switch (scope) {
  case tile::MemScope::cta: return "workgroup";
  case tile::MemScope::gpu: return "agent";
  case tile::MemScope::sys: return "";
  }
  llvm_unreachable("three scopes");
}

/// (AMD) `v` as the integer of its width (floats), or itself.
Value asInteger(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType();
  return isa<FloatType>(t) ? LLVM::BitcastOp::create(b, loc, b.getIntegerType(t.getIntOrFloatBitWidth()), v).getResult()
                           : v;
}

/// One atomic per element, by its owner; the old values of elements other
/// threads also hold (or of a scalar atomic) go round through shared memory.
template <class Op> struct AtomicLowering : KilnPattern<Op> {
  using KilnPattern<Op>::KilnPattern;

  /// The PTX of one atomic: result $0, address $1, predicate $2, operands $3...
  virtual FailureOr<std::string> instruction(Op op, unsigned bits, bool isFloat) const = 0;
  /// (AMD) One atomic at `address` on `operands` (elements): the old value.
  virtual Value amdAtomic(Op op, OpBuilder &b, Location loc, Value address, ArrayRef<Value> operands) const = 0;
  virtual SmallVector<Value> operandsOf(typename Op::Adaptor adaptor, OpBuilder &b, Location loc) const = 0;

  LogicalResult matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = this->ctx.types.elementType(op.getType());
    unsigned bits = storageBytes(element) * 8;
    FailureOr<std::string> text = instruction(op, bits, isa<FloatType>(element));
    if (failed(text) && !this->ctx.amd)
      return rewriter.notifyMatchFailure(op, "no PTX atomic for this type");
    SmallVector<Value> ptrs = registersOf(rewriter, loc, adaptor.getPtr());
    SmallVector<SmallVector<Value>> operands;
    for (Value v : operandsOf(adaptor, rewriter, loc))
      operands.push_back(registersOf(rewriter, loc, v));
    SmallVector<Value> masks;
    if constexpr (std::is_same_v<Op, tile::AtomicRMWOp>)
      if (adaptor.getMask())
        masks = registersOf(rewriter, loc, adaptor.getMask());
    ThreadIds ids = threadIds(rewriter, loc, this->ctx.threadsPerWarp);
    auto tensor = dyn_cast<RankedTensorType>(op.getType());
    Value owner = tensor ? isOwner(rewriter, loc, layoutOf(tensor), ids)
                         : LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, ids.thread,
                                                i32Const(rewriter, loc, 0)).getResult();
    std::string reg = bits == 16 ? "h" : bits == 32 ? "r" : "l";
    Type bitsType = rewriter.getIntegerType(bits);
    SmallVector<Value> results;
    for (size_t k = 0; k < ptrs.size(); ++k) {
      Value predicate = owner;
      if (!masks.empty())
        predicate = LLVM::AndOp::create(rewriter, loc, predicate, masks[k]);
      if (this->ctx.amd) {
        SmallVector<Value> elements;
        for (auto &o : operands)
          elements.push_back(o.size() == 1 ? o[0] : o[k]);
        results.push_back(ifThenElse(
            rewriter, loc, predicate, element, [&] { return amdAtomic(op, rewriter, loc, ptrs[k], elements); },
            [&] { return LLVM::ZeroOp::create(rewriter, loc, element).getResult(); }));
        continue;
      }
      SmallVector<Value> args{ptrs[k], LLVM::ZExtOp::create(rewriter, loc, rewriter.getI32Type(), predicate)};
      std::string constraints = "=" + reg + ",l,r";
      for (auto &o : operands) {
        args.push_back(toBits(rewriter, loc, o.size() == 1 ? o[0] : o[k]));
        constraints += "," + reg;
      }
      Value old = ptx(rewriter, loc, bitsType, "{ .reg .pred p; setp.ne.b32 p, $2, 0; mov.b" +
                                                   std::to_string(bits) + " $0, 0; " + *text + " }",
                      constraints, args, /*sideEffects=*/true);
      results.push_back(fromBits(rewriter, loc, old, element));
    }
    // Threads that did not perform an element's atomic learn its result
    // from the one that did.
    bool broadcast = !tensor || layoutOf(tensor).broadcastMask(HwDim::Lane) ||
                     layoutOf(tensor).broadcastMask(HwDim::Warp);
    if (broadcast && !op->use_empty())
      results = share(rewriter, loc, op, results, element, owner, ids);
    if (tensor)
      rewriter.replaceOp(op, pack(rewriter, loc, this->getTypeConverter()->convertType(tensor), results));
    else
      rewriter.replaceOp(op, results[0]);
    return success();
  }

  SmallVector<Value> share(OpBuilder &b, Location loc, Operation *op, ArrayRef<Value> values, Type element,
                           Value owner, const ThreadIds &ids) const {
    Type stored = storageType(element);
    Value base = sharedBase(b, loc, op);
    barrier(b, loc);
    auto tensor = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<Value> indices;
    if (tensor) {
      LinearLayout layout = layoutOf(tensor);
      SmallVector<Value> thread = threadCoords(b, loc, layout, ids);
      for (int r = 0; r < layout.registers(); ++r)
        indices.push_back(linearize(b, loc, registerCoords(b, loc, layout, r, thread), layout.shape()));
    } else {
      indices.push_back(i32Const(b, loc, 0));
    }
    for (size_t r = 0; r < values.size(); ++r) {
      Value address = gep(b, loc, base, stored, indices[r]);
      Value bits = values[r].getType().isInteger(1) ? LLVM::ZExtOp::create(b, loc, stored, values[r]).getResult() : values[r];
      storeSharedIf(b, loc, address, bits, owner); // only the owner's copy is the result
    }
    barrier(b, loc);
    SmallVector<Value> shared;
    for (size_t r = 0; r < values.size(); ++r) {
      Value loaded = LLVM::LoadOp::create(b, loc, stored, gep(b, loc, base, stored, indices[r]));
      shared.push_back(element.isInteger(1) ? LLVM::TruncOp::create(b, loc, element, loaded).getResult() : loaded);
    }
    return shared;
  }
};

struct AtomicRMWLowering : AtomicLowering<tile::AtomicRMWOp> {
  using AtomicLowering::AtomicLowering;
  FailureOr<std::string> instruction(tile::AtomicRMWOp op, unsigned bits, bool isFloat) const override {
    using K = tile::AtomicRMWKind;
    // Nobody reads the old values of a relaxed (or releasing) update: a
    // reduction (`red`) then, which returns nothing, so the thread need not
    // wait for the memory's answer. (`red` has no acquiring form.)
    const bool reduce = op->use_empty() && op.getKind() != K::xchg &&
                        (op.getSem() == tile::MemSemantic::relaxed || op.getSem() == tile::MemSemantic::release);
    const std::string opcode = std::string(reduce ? "red" : "atom") + semanticsText(op.getSem(), op.getScope()) + ".global";
    const std::string operands = reduce ? " [$1], $3;" : " $0, [$1], $3;";
    std::string prefix = "@p " + opcode;
    std::string b = std::to_string(bits);
    switch (op.getKind()) {
    case K::add: return prefix + ".add.u" + b + operands;
    case K::fadd: {
      Type element = getElementTypeOrSelf(op.getVal().getType());
      if (element.isF16())
        return prefix + ".add.noftz.f16" + operands;
      if (element.isBF16())
        return prefix + ".add.noftz.bf16" + operands;
      return prefix + ".add.f" + b + operands;
    }
    case K::max:
    case K::min: {
      bool isMax = op.getKind() == K::max;
      if (!isFloat)
        return prefix + (isMax ? ".max.s" : ".min.s") + b + operands;
      // IEEE floats order like sign-magnitude integers: positive values by
      // signed max (min), negative ones by unsigned min (max).
      std::string lt = "setp.lt.and.s" + b + " q, $3, 0, p; setp.ge.and.s" + b + " p, $3, 0, p; ";
      std::string positive = isMax ? ".max.s" : ".min.s", negative = isMax ? ".min.u" : ".max.u";
      return "{ .reg .pred q; " + lt + "@p " + opcode + positive + b + operands + " @q " + opcode + negative + b +
             operands + " }";
    }
    case K::umax: return prefix + ".max.u" + b + operands;
    case K::umin: return prefix + ".min.u" + b + operands;
    case K::and_: return prefix + ".and.b" + b + operands;
    case K::or_: return prefix + ".or.b" + b + operands;
    case K::xor_: return prefix + ".xor.b" + b + operands;
    case K::xchg:
      if (bits == 16)
        return failure();
      return prefix + ".exch.b" + b + operands;
    }
    return failure();
  }
  Value amdAtomic(tile::AtomicRMWOp op, OpBuilder &b, Location loc, Value address,
                  ArrayRef<Value> operands) const override {
    using K = tile::AtomicRMWKind;
    using B = LLVM::AtomicBinOp;
    auto rmw = [&](B kind, Value v) {
      return LLVM::AtomicRMWOp::create(b, loc, kind, address, v, amdOrdering(op.getSem()), amdScope(op.getScope()))
          .getResult();
    };
    Value v = operands[0];
    switch (op.getKind()) {
    case K::add: return rmw(B::add, v);
    case K::fadd: return rmw(B::fadd, v);
    case K::umax: return rmw(B::umax, v);
    case K::umin: return rmw(B::umin, v);
    case K::and_: return rmw(B::_and, v);
    case K::or_: return rmw(B::_or, v);
    case K::xor_: return rmw(B::_xor, v);
    case K::xchg: return rmw(B::xchg, v);
    case K::max:
    case K::min: {
      const bool isMax = op.getKind() == K::max;
      if (!isa<FloatType>(v.getType()))
        return rmw(isMax ? B::max : B::min, v);
      // As on NVIDIA: IEEE floats order like sign-magnitude integers.
      Value bits = asInteger(b, loc, v);
      Value zero = intConst(b, loc, bits.getType(), 0);
      Value positive = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::sge, bits, zero);
      Value old = ifThenElse(
          b, loc, positive, bits.getType(), [&] { return rmw(isMax ? B::max : B::min, bits); },
          [&] { return rmw(isMax ? B::umin : B::umax, bits); });
      return LLVM::BitcastOp::create(b, loc, v.getType(), old);
    }
    }
    llvm_unreachable("every atomic kind");
  }
  SmallVector<Value> operandsOf(OpAdaptor adaptor, OpBuilder &, Location) const override {
    return {adaptor.getVal()};
  }
};

struct AtomicCASLowering : AtomicLowering<tile::AtomicCASOp> {
  using AtomicLowering::AtomicLowering;
  FailureOr<std::string> instruction(tile::AtomicCASOp op, unsigned bits, bool) const override {
    return "@p atom" + semanticsText(op.getSem(), op.getScope()) + ".global.cas.b" + std::to_string(bits) +
           " $0, [$1], $3, $4;";
  }
  Value amdAtomic(tile::AtomicCASOp op, OpBuilder &b, Location loc, Value address,
                  ArrayRef<Value> operands) const override {
    // (cmpxchg takes integers and pointers: floats as their bits.)
    Value swapped =
        LLVM::AtomicCmpXchgOp::create(b, loc, address, asInteger(b, loc, operands[0]), asInteger(b, loc, operands[1]),
                                      amdOrdering(op.getSem()), amdOrdering(op.getSem(), /*onFailure=*/true),
                                      amdScope(op.getScope()));
    Value old = LLVM::ExtractValueOp::create(b, loc, swapped, ArrayRef<int64_t>{0});
    Type type = operands[0].getType();
    return old.getType() == type ? old : LLVM::BitcastOp::create(b, loc, type, old).getResult();
  }
  SmallVector<Value> operandsOf(OpAdaptor adaptor, OpBuilder &, Location) const override {
    return {adaptor.getCmp(), adaptor.getVal()};
  }
};

} // namespace

void populateMemoryPatterns(RewritePatternSet &patterns, const LoweringContext &context) {
  patterns.add<LoadLowering, StoreLowering, AtomicRMWLowering, AtomicCASLowering>(context);
}

} // namespace kiln::lowering
