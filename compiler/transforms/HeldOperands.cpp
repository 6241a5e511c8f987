//===- HeldOperands.cpp - a dot operand held across a loop ----------------===//

#include "compiler/transforms/HeldOperands.h"

#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/gpu/Mma.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace kiln {

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// The most registers a thread may have.
constexpr int kThreadRegisters = 255;

int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() * elementBytes(type.getElementType());
}

/// The loop whose body holds `dot`, if any.
scf::ForOp loopOf(tile::DotOp dot) { return dyn_cast<scf::ForOp>(dot->getParentOp()); }

/// Whether `dot`'s A is a 16-bit block made outside `loop`, for wgmma.
bool heldA(tile::DotOp dot, scf::ForOp loop, int computeCapability, int numWarps) {
  Value a = dot.getA();
  Operation *def = a.getDefiningOp();
  bool outside = def ? !loop->isAncestor(def) : !loop->isAncestor(a.getParentRegion()->getParentOp());
  return outside && wgmmaShapeFits(dot, computeCapability, numWarps) && wgmmaTakesRegisterA(dot);
}

/// Registers a thread of `loop` holds across an iteration: each dot's f32
/// result, each A not loaded in the loop that `inRegisters` says is read
/// from registers, and kChainOverheadRegisters.
int registersHeld(scf::ForOp loop, int numWarps, llvm::function_ref<bool(tile::DotOp)> inRegisters) {
  int64_t bytes = 0;
  for (auto dot : loop.getBody()->getOps<tile::DotOp>()) {
    bytes += cast<RankedTensorType>(dot.getType()).getNumElements() * 4;
    if (!loadedIn(loop, dot.getA()) && inRegisters(dot))
      bytes += bytesOf(dot.getA());
  }
  return static_cast<int>(bytes / 4 / (numWarps * 32)) + kChainOverheadRegisters;
}

/// Whether `loop`'s values, with every held A in registers, exceed a
/// thread's registers.
bool overflowsRegisters(scf::ForOp loop, int numWarps) {
  return registersHeld(loop, numWarps, [](tile::DotOp) { return true; }) > kThreadRegisters;
}

} // namespace

bool loadedIn(scf::ForOp loop, Value operand) {
  Operation *def = operand.getDefiningOp();
  return def && def->getBlock() == loop.getBody() && isa<tile::LoadOp, tile::DescriptorLoadOp, tile::TransOp>(def);
}

bool holdsAInShared(tile::DotOp dot, int computeCapability, int numWarps) {
  scf::ForOp loop = loopOf(dot);
  if (!loop || !heldA(dot, loop, computeCapability, numWarps))
    return false;
  // Kept in shared memory for every loop that holds it, if one of them
  // needs the registers.
  for (Operation *user : dot.getA().getUsers()) {
    auto other = dyn_cast<tile::DotOp>(user);
    scf::ForOp otherLoop = other ? loopOf(other) : scf::ForOp();
    if (otherLoop && other.getA() == dot.getA() && heldA(other, otherLoop, computeCapability, numWarps) &&
        overflowsRegisters(otherLoop, numWarps))
      return true;
  }
  return false;
}

int loopRegisters(scf::ForOp loop, int computeCapability, int numWarps) {
  return registersHeld(loop, numWarps,
                       [&](tile::DotOp dot) { return !holdsAInShared(dot, computeCapability, numWarps); });
}

int64_t heldSharedBytes(scf::ForOp loop, int computeCapability, int numWarps) {
  llvm::SmallPtrSet<Value, 2> counted;
  int64_t bytes = 0;
  for (auto dot : loop.getBody()->getOps<tile::DotOp>())
    if (holdsAInShared(dot, computeCapability, numWarps) && counted.insert(dot.getA()).second)
      bytes += bytesOf(dot.getA());
  return bytes;
}

void storeHeldOperands(tile::FuncOp func, int computeCapability, int numWarps) {
  llvm::MapVector<Value, SmallVector<tile::DotOp>> held;
  func.walk([&](tile::DotOp dot) {
    if (isWgmmaDot(dot, computeCapability, numWarps) && holdsAInShared(dot, computeCapability, numWarps))
      held[dot.getA()].push_back(dot);
  });
  for (auto &[value, dots] : held) {
    auto type = cast<RankedTensorType>(value.getType());
    OpBuilder b(func.getContext());
    if (Operation *def = value.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(value).getOwner());
    Location loc = value.getLoc();
    // K-major, as wgmma reads A.
    auto encoding = swizzledEncoding(b.getContext(), type.getShape()[1], elementBytes(type.getElementType()), {1, 0});
    auto bufferType = RankedTensorType::get({1, type.getShape()[0], type.getShape()[1]}, type.getElementType(), encoding);
    Value buffer = LocalAllocOp::create(b, loc, bufferType);
    Value slot = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
    LocalStoreOp::create(b, loc, value, buffer, slot);
    // Read in each loop (a read before the loops would end the buffer's
    // life there for the scratch that shares its memory).
    for (tile::DotOp dot : dots) {
      b.setInsertionPoint(dot);
      dot.getAMutable().assign(LocalLoadOp::create(b, loc, type, buffer, slot));
    }
  }
}

} // namespace kiln
