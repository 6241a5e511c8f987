//===- Lowering.cpp - shared pieces of the GPU -> LLVM lowering -----------===//

#include "compiler/lowering/Lowering.h"

#include "compiler/dialect/gpu/Mma.h"

#include <kiln/target.h>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>

using namespace mlir;

namespace kiln::lowering {

using gpu::Coord;
using gpu::HwDim;
using gpu::LinearLayout;

KilnTypeConverter::KilnTypeConverter(MLIRContext *context) : LLVMTypeConverter(context) {
  addConversion([](tile::PointerType type) -> Type {
    return LLVM::LLVMPointerType::get(type.getContext(), type.getAddressSpace());
  });
  // A tensor map is passed by value; the kernel sees its address.
  addConversion([](tile::TensorMapType type) -> Type { return LLVM::LLVMPointerType::get(type.getContext()); });
  addConversion([](RankedTensorType type) -> std::optional<Type> {
    if (!isa_and_nonnull<gpu::SharedEncodingAttr>(type.getEncoding()))
      return std::nullopt;
    return LLVM::LLVMPointerType::get(type.getContext(), /*addressSpace=*/3);
  });
  addConversion([this](RankedTensorType type) -> std::optional<Type> {
    if (!isa_and_nonnull<gpu::LayoutEncodingAttr>(type.getEncoding()))
      return std::nullopt;
    int registers = layoutOf(type).registers();
    SmallVector<Type> members(registers, elementType(type));
    return LLVM::LLVMStructType::getLiteral(type.getContext(), members);
  });
  // mma.sync's 16-bit operand fragments stay packed two to a 32-bit
  // register (as ldmatrix gives them and mma.sync takes them), also where a
  // loop carries them: one member per pair of the layout's registers.
  addConversion([this](RankedTensorType type) -> std::optional<Type> {
    auto encoding = dyn_cast_or_null<gpu::MmaOperandEncodingAttr>(type.getEncoding());
    if (!encoding || encoding.getBits() != 16)
      return std::nullopt;
    Type pair = VectorType::get({2}, elementType(type));
    SmallVector<Type> members(layoutOf(type).registers() / 2, pair);
    return LLVM::LLVMStructType::getLiteral(type.getContext(), members);
  });
}

Type KilnTypeConverter::elementType(Type type) const {
  Type element = getElementTypeOrSelf(type);
  if (auto ptr = dyn_cast<tile::PointerType>(element))
    return LLVM::LLVMPointerType::get(ptr.getContext(), ptr.getAddressSpace());
  return convertType(element);
}

SmallVector<Value> unpack(OpBuilder &b, Location loc, Value packed) {
  auto type = cast<LLVM::LLVMStructType>(packed.getType());
  SmallVector<Value> values;
  for (unsigned i = 0; i < type.getBody().size(); ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, loc, packed, ArrayRef<int64_t>{i}));
  return values;
}

Value pack(OpBuilder &b, Location loc, Type structType, ArrayRef<Value> values) {
  Value result = LLVM::UndefOp::create(b, loc, structType);
  for (unsigned i = 0; i < values.size(); ++i)
    result = LLVM::InsertValueOp::create(b, loc, result, values[i], ArrayRef<int64_t>{i});
  return result;
}

SmallVector<Value> registersOf(OpBuilder &b, Location loc, Value lowered) {
  if (isa<LLVM::LLVMStructType>(lowered.getType()))
    return unpack(b, loc, lowered);
  return {lowered};
}

LinearLayout layoutOf(Type tensorType) { return gpu::linearLayoutOf(cast<RankedTensorType>(tensorType)); }

Value i32Const(OpBuilder &b, Location loc, int64_t v) {
  return LLVM::ConstantOp::create(b, loc, b.getI32Type(), b.getI32IntegerAttr(v));
}
Value i64Const(OpBuilder &b, Location loc, int64_t v) {
  return LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(v));
}
Value intConst(OpBuilder &b, Location loc, Type type, int64_t v) {
  return LLVM::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, v));
}

SmallVector<Value> combineWith(OpBuilder &b, Region &region, ArrayRef<Value> acc, ArrayRef<Value> next) {
  Block &body = region.front();
  IRMapping mapping;
  for (size_t i = 0; i < acc.size(); ++i) {
    mapping.map(body.getArgument(i), acc[i]);
    mapping.map(body.getArgument(acc.size() + i), next[i]);
  }
  for (Operation &op : body.without_terminator())
    b.clone(op, mapping);
  SmallVector<Value> result;
  for (Value v : body.getTerminator()->getOperands())
    result.push_back(mapping.lookupOrDefault(v));
  return result;
}

namespace {

/// The module `b` inserts into, if any.
ModuleOp moduleOf(OpBuilder &b) {
  Block *block = b.getInsertionBlock();
  Operation *at = block ? block->getParentOp() : nullptr;
  return !at ? ModuleOp() : isa<ModuleOp>(at) ? cast<ModuleOp>(at) : at->getParentOfType<ModuleOp>();
}

bool amdModule(ModuleOp module) {
  auto target = module ? module->getAttrOfType<StringAttr>(gpu::kTargetAttr) : StringAttr();
  return target && targets_amd(target.getValue());
}

} // namespace

bool targetsAmd(Operation *op) {
  return amdModule(isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>());
}

bool targetsAmd(OpBuilder &b) { return amdModule(moduleOf(b)); }

void ifThen(OpBuilder &b, Location loc, Value predicate, llvm::function_ref<void()> then) {
  auto branch = scf::IfOp::create(b, loc, predicate, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(branch.thenBlock()->getTerminator());
  then();
}

Value ifThenElse(OpBuilder &b, Location loc, Value predicate, Type type, llvm::function_ref<Value()> then,
                 llvm::function_ref<Value()> otherwise) {
  auto branch = scf::IfOp::create(b, loc, TypeRange{type}, predicate, /*addThenBlock=*/true, /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  scf::YieldOp::create(b, loc, then());
  b.setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(b, loc, otherwise());
  return branch.getResult(0);
}

ApproximateMath approximateMath(bool amd) {
  // (.ftz: a result below 2^-126 is 0; without it ptxas wraps every ex2 in
  // a range test and two multiplies. AMD's v_exp_f32, v_log_f32, v_rsq_f32
  // and v_rcp_f32 are the raw instructions, about 1 ulp.)
  if (amd)
    return {"llvm.amdgcn.exp2", "llvm.amdgcn.log", "llvm.amdgcn.rsq", "llvm.amdgcn.rcp"};
  return {"llvm.nvvm.ex2.approx.ftz.f32", "llvm.nvvm.lg2.approx.f", "llvm.nvvm.rsqrt.approx.f",
          "llvm.nvvm.rcp.approx.ftz.f"};
}

namespace {

/// Moves any scalar through `move32`, a shuffle of one 32-bit value.
Value shuffleAny(OpBuilder &b, Location loc, Value v, const std::function<Value(Value)> &move32) {
  Type t = v.getType();
  Type i32 = b.getI32Type();
  if (isa<LLVM::LLVMPointerType>(t))
    return LLVM::IntToPtrOp::create(
        b, loc, t, shuffleAny(b, loc, LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), v), move32));
  unsigned bits = t.getIntOrFloatBitWidth();
  if (bits == 64) {
    auto pair = VectorType::get(2, i32);
    Value halves = LLVM::BitcastOp::create(b, loc, pair, v);
    Value lo = move32(LLVM::ExtractElementOp::create(b, loc, halves, i32Const(b, loc, 0)));
    Value hi = move32(LLVM::ExtractElementOp::create(b, loc, halves, i32Const(b, loc, 1)));
    Value joined = LLVM::InsertElementOp::create(b, loc, LLVM::UndefOp::create(b, loc, pair), lo, i32Const(b, loc, 0));
    joined = LLVM::InsertElementOp::create(b, loc, joined, hi, i32Const(b, loc, 1));
    return LLVM::BitcastOp::create(b, loc, t, joined);
  }
  Type bitsType = b.getIntegerType(bits);
  Value asInt = isa<FloatType>(t) ? LLVM::BitcastOp::create(b, loc, bitsType, v).getResult() : v;
  Value wide = bits < 32 ? LLVM::ZExtOp::create(b, loc, i32, asInt).getResult() : asInt;
  Value moved = move32(wide);
  Value narrow = bits < 32 ? LLVM::TruncOp::create(b, loc, bitsType, moved).getResult() : moved;
  return isa<FloatType>(t) ? LLVM::BitcastOp::create(b, loc, t, narrow).getResult() : narrow;
}

/// The value of `x` (32 bits) in lane `source` of the wavefront
/// (ds_bpermute, which addresses lanes in bytes).
Value amdLaneValue(OpBuilder &b, Location loc, Value x, Value source) {
  Value address = LLVM::ShlOp::create(b, loc, source, i32Const(b, loc, 2));
  return ROCDL::DsBpermuteOp::create(b, loc, b.getI32Type(), address, x);
}

/// This thread's lane in its wavefront.
Value amdLane(OpBuilder &b, Location loc) {
  Value tid = ROCDL::ThreadIdXOp::create(b, loc, b.getI32Type());
  return LLVM::URemOp::create(b, loc, tid, i32Const(b, loc, gpu::getThreadsPerWarp(moduleOf(b))));
}

} // namespace

Value shuffle(OpBuilder &b, Location loc, Value v, NVVM::ShflKind kind, int offset) {
  if (targetsAmd(b)) {
    const int lanes = gpu::getThreadsPerWarp(moduleOf(b));
    Value lane = amdLane(b, loc), delta = i32Const(b, loc, offset);
    Value source, inside;
    switch (kind) {
    case NVVM::ShflKind::bfly: source = LLVM::XOrOp::create(b, loc, lane, delta); break;
    case NVVM::ShflKind::up:
      source = LLVM::SubOp::create(b, loc, lane, delta);
      inside = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::uge, lane, delta);
      break;
    case NVVM::ShflKind::down:
      source = LLVM::AddOp::create(b, loc, lane, delta);
      inside = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, source, i32Const(b, loc, lanes));
      break;
    case NVVM::ShflKind::idx: source = delta; break;
    }
    return shuffleAny(b, loc, v, [&](Value x) {
      Value moved = amdLaneValue(b, loc, x, source);
      return inside ? LLVM::SelectOp::create(b, loc, inside, moved, x).getResult() : moved;
    });
  }
  // shfl.sync's c operand: the segment mask and clamp; up clamps at lane 0.
  int clamp = kind == NVVM::ShflKind::up ? 0 : 0x1f;
  return shuffleAny(b, loc, v, [&](Value x) {
    return NVVM::ShflOp::create(b, loc, b.getI32Type(), i32Const(b, loc, -1), x, i32Const(b, loc, offset),
                                i32Const(b, loc, clamp), kind, UnitAttr())
        .getResult();
  });
}

Value shuffleIndex(OpBuilder &b, Location loc, Value v, Value lane) {
  if (targetsAmd(b))
    return shuffleAny(b, loc, v, [&](Value x) { return amdLaneValue(b, loc, x, lane); });
  return shuffleAny(b, loc, v, [&](Value x) {
    return NVVM::ShflOp::create(b, loc, b.getI32Type(), i32Const(b, loc, -1), x, lane, i32Const(b, loc, 0x1f),
                                NVVM::ShflKind::idx, UnitAttr())
        .getResult();
  });
}

ThreadIds threadIds(OpBuilder &b, Location loc, int threadsPerWarp) {
  Value tid = targetsAmd(b) ? ROCDL::ThreadIdXOp::create(b, loc, b.getI32Type()).getResult()
                            : NVVM::ThreadIdXOp::create(b, loc, b.getI32Type()).getResult();
  Value lane = LLVM::URemOp::create(b, loc, tid, i32Const(b, loc, threadsPerWarp));
  Value warp = LLVM::UDivOp::create(b, loc, tid, i32Const(b, loc, threadsPerWarp));
  return {tid, lane, warp};
}

ThreadIds freshThreadIds(OpBuilder &b, Location loc, int threadsPerWarp) {
  if (targetsAmd(b)) // (the NVIDIA register-pressure device below is PTX)
    return threadIds(b, loc, threadsPerWarp);
  // (A side effect keeps LLVM from merging the read with others.)
  Value tid = ptx(b, loc, b.getI32Type(), "mov.u32 $0, %tid.x;", "=r", {}, /*sideEffects=*/true);
  Value lane = LLVM::URemOp::create(b, loc, tid, i32Const(b, loc, threadsPerWarp));
  Value warp = LLVM::UDivOp::create(b, loc, tid, i32Const(b, loc, threadsPerWarp));
  return {tid, lane, warp};
}

SmallVector<Value> threadCoords(OpBuilder &b, Location loc, const LinearLayout &layout,
                                const ThreadIds &ids) {
  SmallVector<Value> coords;
  for (int d = 0; d < layout.rank(); ++d) {
    Value c = i32Const(b, loc, 0);
    for (auto [h, index] : {std::pair{HwDim::Lane, ids.lane}, std::pair{HwDim::Warp, ids.warp}})
      for (int bit = 0; bit < layout.bits(h); ++bit) {
        int32_t basis = layout.basis(h, bit)[d];
        if (!basis)
          continue;
        // ((index >> bit) & 1) * basis, XORed in.
        Value set = LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, index, i32Const(b, loc, bit)),
                                        i32Const(b, loc, 1));
        Value term = LLVM::MulOp::create(b, loc, set, i32Const(b, loc, basis));
        c = LLVM::XOrOp::create(b, loc, c, term);
      }
    coords.push_back(c);
  }
  return coords;
}

SmallVector<Value> registerCoords(OpBuilder &b, Location loc, const LinearLayout &layout, int r,
                                  ArrayRef<Value> thread) {
  Coord fixed = layout.applyOne(HwDim::Register, r);
  SmallVector<Value> coords;
  for (int d = 0; d < layout.rank(); ++d)
    coords.push_back(fixed[d] ? LLVM::XOrOp::create(b, loc, thread[d], i32Const(b, loc, fixed[d])).getResult()
                              : thread[d]);
  return coords;
}

Value linearize(OpBuilder &b, Location loc, ArrayRef<Value> coord, ArrayRef<int64_t> shape) {
  Value index = i32Const(b, loc, 0);
  for (size_t d = 0; d < shape.size(); ++d) {
    index = LLVM::MulOp::create(b, loc, index, i32Const(b, loc, shape[d]));
    index = LLVM::AddOp::create(b, loc, index, coord[d]);
  }
  return index;
}

Value isOwner(OpBuilder &b, Location loc, const LinearLayout &layout, const ThreadIds &ids) {
  Value owner = LLVM::ConstantOp::create(b, loc, b.getI1Type(), b.getBoolAttr(true));
  for (auto [h, index] : {std::pair{HwDim::Lane, ids.lane}, std::pair{HwDim::Warp, ids.warp}}) {
    unsigned mask = layout.broadcastMask(h);
    if (!mask)
      continue;
    Value bits = LLVM::AndOp::create(b, loc, index, i32Const(b, loc, mask));
    Value zero = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, bits, i32Const(b, loc, 0));
    owner = LLVM::AndOp::create(b, loc, owner, zero);
  }
  return owner;
}

Value sharedBase(OpBuilder &b, Location loc, Operation *anchor) {
  auto module = anchor->getParentOfType<ModuleOp>();
  constexpr const char *name = "kiln_shared_memory";
  auto global = module.lookupSymbol<LLVM::GlobalOp>(name);
  if (!global) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    if (targetsAmd(module)) {
      // AMD: LDS of the size the program needs, allocated with the
      // workgroup (the code object records it; a launch passes none).
      auto bytes = module->getAttrOfType<IntegerAttr>("kgpu.shared_memory");
      auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes ? std::max<int64_t>(bytes.getInt(), 1) : 1);
      global = LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/false, LLVM::Linkage::Internal, name,
                                      Attribute(), /*alignment=*/16, /*addrSpace=*/3);
      Block *init = b.createBlock(&global.getInitializerRegion());
      b.setInsertionPointToStart(init);
      LLVM::ReturnOp::create(b, loc, LLVM::UndefOp::create(b, loc, type).getResult());
    } else {
      auto type = LLVM::LLVMArrayType::get(b.getI8Type(), 0);
      global = LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/false, LLVM::Linkage::External, name,
                                      Attribute(), /*alignment=*/1024, /*addrSpace=*/3);
    }
  }
  return LLVM::AddressOfOp::create(b, loc, global);
}

Value gep(OpBuilder &b, Location loc, Value base, Type elementType, Value index) {
  return LLVM::GEPOp::create(b, loc, base.getType(), elementType, base, ValueRange{index});
}

void barrier(OpBuilder &b, Location loc) {
  ModuleOp module = moduleOf(b);
  if (amdModule(module)) { // (HIP's __syncthreads: the workgroup's memory, then s_barrier)
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::release, "workgroup");
    ROCDL::SBarrierOp::create(b, loc);
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::acquire, "workgroup");
    return;
  }
  // In a warp-specialized program the producer warpgroup never meets the
  // consumers' barriers: count only the consumers' threads.
  if (!module || gpu::getProducerWarps(module) == 0) {
    NVVM::Barrier0Op::create(b, loc);
    return;
  }
  Value consumers = i32Const(b, loc, gpu::getNumWarps(module) * gpu::getThreadsPerWarp(module));
  NVVM::BarrierOp::create(b, loc, Type(), i32Const(b, loc, 0), consumers, NVVM::BarrierReductionAttr(), Value());
}

Value ptx(OpBuilder &b, Location loc, Type resultType, StringRef text, StringRef constraints,
          ValueRange operands, bool sideEffects) {
  auto dialect = LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT);
  auto op = LLVM::InlineAsmOp::create(b, loc, resultType ? TypeRange{resultType} : TypeRange{},
                                      operands, text, constraints, sideEffects,
                                      /*is_align_stack=*/false, LLVM::TailCallKind::None, dialect,
                                      /*operand_attrs=*/ArrayAttr());
  return resultType ? op.getResult(0) : Value();
}

void storeSharedIf(OpBuilder &b, Location loc, Value address, Value value, Value predicate) {
  if (targetsAmd(b)) {
    ifThen(b, loc, predicate, [&] { LLVM::StoreOp::create(b, loc, value, address, storageBytes(value.getType())); });
    return;
  }
  Type t = value.getType();
  unsigned bits = isa<LLVM::LLVMPointerType>(t) ? 64 : t.getIntOrFloatBitWidth();
  if (isa<LLVM::LLVMPointerType>(t))
    value = LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), value);
  else if (isa<FloatType>(t))
    value = LLVM::BitcastOp::create(b, loc, b.getIntegerType(bits), value);
  std::string reg = bits == 64 ? "l" : bits == 32 ? "r" : "h";
  if (bits == 8) {
    value = LLVM::ZExtOp::create(b, loc, b.getI16Type(), value);
    reg = "h";
  }
  Value where = LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), address);
  Value flag = LLVM::ZExtOp::create(b, loc, b.getI32Type(), predicate);
  ptx(b, loc, Type(),
      "{ .reg .pred p; setp.ne.b32 p, $2, 0; @p st.shared.b" + std::to_string(bits) + " [$0], $1; }",
      "l," + reg + ",r", {where, value, flag});
}

void storeShared(OpBuilder &b, Location loc, Value address, Value value, Value predicate, int64_t alignment) {
  if (!predicate) {
    LLVM::StoreOp::create(b, loc, value, address, alignment);
    return;
  }
  auto vector = dyn_cast<VectorType>(value.getType());
  if (!vector) {
    storeSharedIf(b, loc, address, value, predicate);
    return;
  }
  if (targetsAmd(b)) {
    ifThen(b, loc, predicate, [&] { LLVM::StoreOp::create(b, loc, value, address, alignment); });
    return;
  }
  const int64_t bits = vector.getNumElements() * vector.getElementType().getIntOrFloatBitWidth();
  if (bits <= 64) { // one word: as an integer of its width
    storeSharedIf(b, loc, address, LLVM::BitcastOp::create(b, loc, b.getIntegerType(bits), value), predicate);
    return;
  }
  assert(bits == 128 && "shared stores are at most 16 bytes");
  Value words = LLVM::BitcastOp::create(b, loc, VectorType::get({4}, b.getI32Type()), value);
  SmallVector<Value> operands{LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), address)};
  for (int i = 0; i < 4; ++i)
    operands.push_back(LLVM::ExtractElementOp::create(b, loc, words, i32Const(b, loc, i)));
  operands.push_back(LLVM::ZExtOp::create(b, loc, b.getI32Type(), predicate));
  ptx(b, loc, Type(), "{ .reg .pred p; setp.ne.b32 p, $5, 0; @p st.shared.v4.b32 [$0], {$1, $2, $3, $4}; }",
      "l,r,r,r,r,r", operands);
}

Value ownerIfCopies(OpBuilder &b, Location loc, const LinearLayout &layout, const ThreadIds &ids) {
  if (!layout.broadcastMask(HwDim::Lane) && !layout.broadcastMask(HwDim::Warp))
    return Value();
  return isOwner(b, loc, layout, ids);
}

int64_t storageBytes(Type llvmElement) {
  if (isa<LLVM::LLVMPointerType>(llvmElement))
    return 8;
  return std::max<int64_t>(1, llvmElement.getIntOrFloatBitWidth() / 8); // i1: a byte
}

Type storageType(Type llvmElement) {
  if (llvmElement.isInteger(1))
    return IntegerType::get(llvmElement.getContext(), 8);
  return llvmElement;
}

namespace {

Value toStorage(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isInteger(1))
    return LLVM::ZExtOp::create(b, loc, b.getI8Type(), v);
  return v;
}

Value fromStorage(OpBuilder &b, Location loc, Value v, Type element) {
  if (element.isInteger(1))
    return LLVM::TruncOp::create(b, loc, element, v);
  return v;
}

} // namespace

namespace {

/// Index of `coord` in the staging buffer: row-major, rows padded.
Value stagingIndex(OpBuilder &b, Location loc, ArrayRef<Value> coord, ArrayRef<int64_t> shape, int64_t rowLength) {
  Value row = linearize(b, loc, coord.drop_back(), shape.drop_back());
  return LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, row, i32Const(b, loc, rowLength)), coord.back());
}

/// Elements a thread moves through the staging buffer as one vector of at
/// most 16 bytes: registers contiguous along the last dimension whose
/// starts no other basis disturbs (so register r0 + i holds the element i
/// past r0's, r0 a multiple of the width). Pointers move one at a time.
int stagingVector(const LinearLayout &layout, Type stored, int64_t rowLength) {
  if (!stored.isIntOrFloat())
    return 1;
  int last = layout.rank() - 1;
  int width = std::min<int64_t>(layout.contiguousRegisters(last), std::max<int64_t>(1, 16 / storageBytes(stored)));
  auto disturbs = [&](const Coord &basis) { return basis[last] % width != 0; };
  while (width > 1) {
    bool clean = rowLength % width == 0;
    for (HwDim h : {HwDim::Register, HwDim::Lane, HwDim::Warp})
      for (int bit = h == HwDim::Register ? llvm::Log2_32(width) : 0; bit < layout.bits(h); ++bit)
        clean = clean && !disturbs(layout.basis(h, bit));
    if (clean)
      break;
    width /= 2;
  }
  return width;
}

} // namespace

bool afterLoop(Operation *op) {
  if (op->getParentOfType<LoopLikeOpInterface>())
    return false;
  for (Operation *at = op; at->getParentOp() && !isa<ModuleOp>(at->getParentOp()); at = at->getParentOp())
    for (Operation *before = at->getPrevNode(); before; before = before->getPrevNode())
      if (isa<LoopLikeOpInterface>(before))
        return true;
  return false;
}

SmallVector<Value> convertRegisters(OpBuilder &b, Location loc, Operation *anchor, ArrayRef<Value> values,
                                    Type llvmElement, const LinearLayout &from, const LinearLayout &to,
                                    int threadsPerWarp) {
  SmallVector<Value> result;
  if (from.sameThreads(to)) {
    for (int r = 0; r < to.registers(); ++r) {
      int source = from.findRegister(to.applyOne(HwDim::Register, r));
      assert(source >= 0 && "layouts with the same threads hold the same elements");
      result.push_back(values[source]);
    }
    return result;
  }
  // Through shared memory (stagingBytes): every thread writes its elements
  // at their row-major index, rows padded, then reads the ones it holds in
  // the new layout, each side in vectors of contiguous registers.
  Type stored = storageType(llvmElement);
  ArrayRef<int64_t> shape = from.shape();
  int64_t elementBytes = storageBytes(stored);
  int64_t rowLength = gpu::stagingRowLength(shape, elementBytes);
  Value base = sharedBase(b, loc, anchor);
  // After a loop (an epilogue after the K loop) the thread's coordinates
  // are computed afresh: reused from before the loop, they would stay live
  // through it, beside the accumulators (spills at 255 registers).
  ThreadIds ids =
      afterLoop(anchor) ? freshThreadIds(b, loc, threadsPerWarp) : threadIds(b, loc, threadsPerWarp);
  barrier(b, loc); // whoever used the scratch before is done
  SmallVector<Value> fromThread = threadCoords(b, loc, from, ids);
  Value owner = ownerIfCopies(b, loc, from, ids);
  int writeWidth = stagingVector(from, stored, rowLength);
  for (int r = 0; r < from.registers(); r += writeWidth) {
    Value index = stagingIndex(b, loc, registerCoords(b, loc, from, r, fromThread), shape, rowLength);
    Value address = gep(b, loc, base, stored, index);
    if (writeWidth == 1) {
      storeShared(b, loc, address, toStorage(b, loc, values[r]), owner, elementBytes);
      continue;
    }
    auto vectorType = VectorType::get({writeWidth}, stored);
    Value vector = LLVM::PoisonOp::create(b, loc, vectorType);
    for (int i = 0; i < writeWidth; ++i)
      vector = LLVM::InsertElementOp::create(b, loc, vector, toStorage(b, loc, values[r + i]), i32Const(b, loc, i));
    storeShared(b, loc, address, vector, owner, writeWidth * elementBytes);
  }
  barrier(b, loc);
  SmallVector<Value> toThread = threadCoords(b, loc, to, ids);
  int readWidth = stagingVector(to, stored, rowLength);
  for (int r = 0; r < to.registers(); r += readWidth) {
    Value index = stagingIndex(b, loc, registerCoords(b, loc, to, r, toThread), shape, rowLength);
    Value address = gep(b, loc, base, stored, index);
    if (readWidth == 1) {
      result.push_back(fromStorage(b, loc, LLVM::LoadOp::create(b, loc, stored, address), llvmElement));
      continue;
    }
    auto vectorType = VectorType::get({readWidth}, stored);
    Value vector = LLVM::LoadOp::create(b, loc, vectorType, address, readWidth * elementBytes);
    for (int i = 0; i < readWidth; ++i)
      result.push_back(
          fromStorage(b, loc, LLVM::ExtractElementOp::create(b, loc, vector, i32Const(b, loc, i)), llvmElement));
  }
  return result;
}

int64_t scratchBytes(Operation *op, int numWarps, int threadsPerWarp) {
  auto bytesOf = [](Type t) {
    Type element = getElementTypeOrSelf(t);
    if (isa<tile::PointerType>(element))
      return int64_t(8);
    return std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
  };
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case([&](gpu::ConvertLayoutOp c) {
        return gpu::stagingBytes(cast<RankedTensorType>(c.getType()).getShape(), bytesOf(c.getType()));
      })
      .Case([&](tile::ReduceOp r) {
        // Each warp's partial result per output element, per operand.
        int64_t out = 1;
        if (auto t = dyn_cast<RankedTensorType>(r.getResults().front().getType()))
          out = t.getNumElements();
        int64_t total = 0;
        for (Value v : r.getSrcs())
          total += out * numWarps * std::max<int64_t>(bytesOf(v.getType()), 4);
        return total;
      })
      .Case([&](tile::ScanOp s) { return scanScratchBytes(s, numWarps, threadsPerWarp); })
      .Case([&](tile::DotOp d) {
        // Operands staged side by side (tensor cores) or one at a time
        // (FMA); operands read from a shared buffer or already in
        // mma.sync's registers take none.
        int64_t total = 0;
        for (Value operand : {d.getA(), d.getB()})
          if (!gpu::ringSlotLoad(operand) && !gpu::inMmaOperandLayout(operand))
            total +=
                gpu::stagingBytes(cast<RankedTensorType>(operand.getType()).getShape(), bytesOf(operand.getType()));
        return total;
      })
      .Case<tile::AtomicRMWOp, tile::AtomicCASOp>([&](Operation *o) -> int64_t {
        return isa<RankedTensorType>(o->getResult(0).getType()) ? 0 : 8;
      })
      .Default([](Operation *) { return int64_t(0); });
}

} // namespace kiln::lowering
