//===- Lowering.h - shared pieces of the GPU -> LLVM lowering --*- C++ -*-===//
//
// At the LLVM level a block becomes, in each thread, an LLVM struct with one
// member per register of its layout (LinearLayout::registers()). These
// helpers move between those structs and per-register values, compute which
// element a register holds, and reach the GPU's threads, shared memory and
// PTX. The same helpers serve AMD targets (a module whose kgpu.target is a
// gfx name): there they emit ROCDL and plain LLVM memory operations
// instead of NVVM and inline PTX.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "compiler/dialect/gpu/KGpu.h"
#include "compiler/dialect/gpu/Staging.h"

#include <array>
#include <optional>

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln::gpu {
class AxisInfoAnalysis;
}

namespace kiln::lowering {

using mlir::Location;
using mlir::OpBuilder;
using mlir::Type;
using mlir::Value;

/// Types at the LLVM level: tensors with a layout become structs of their
/// registers; tile pointers become LLVM pointers; 8-bit floats become i8.
class KilnTypeConverter : public mlir::LLVMTypeConverter {
public:
  explicit KilnTypeConverter(mlir::MLIRContext *context);
  /// The LLVM type of one element of `type` (scalar or tensor).
  Type elementType(Type type) const;
};

/// What every pattern needs: the type converter, the module's facts, and
/// the axis info of the values before lowering.
struct LoweringContext {
  const KilnTypeConverter &types;
  int numWarps;
  int threadsPerWarp;
  std::string arch;              ///< "sm_90a"
  int computeCapability;         ///< 90
  const gpu::AxisInfoAnalysis &axis;
  bool amd = false;              ///< an AMD target (gfx...): ROCDL, no inline PTX
  int producerWarps = 0;         ///< warps past numWarps that run kgpu.producer
  int minBlocksPerSm = 0;        ///< programs a multiprocessor must hold at once (0: no bound)

  /// The warps a program is launched with.
  int launchedWarps() const { return numWarps + producerWarps; }
};

//===----------------------------------------------------------------------===//
// Registers
//===----------------------------------------------------------------------===//

llvm::SmallVector<Value> unpack(OpBuilder &b, Location loc, Value packed);
Value pack(OpBuilder &b, Location loc, Type structType, llvm::ArrayRef<Value> values);
/// The per-register values of a lowered operand: a struct is unpacked; a
/// scalar stands alone.
llvm::SmallVector<Value> registersOf(OpBuilder &b, Location loc, Value lowered);

gpu::LinearLayout layoutOf(Type tensorType);

//===----------------------------------------------------------------------===//
// Targets
//===----------------------------------------------------------------------===//

/// Whether the module holding `op` targets an AMD GPU (its kgpu.target).
bool targetsAmd(mlir::Operation *op);
/// The same for the module the builder inserts into.
bool targetsAmd(OpBuilder &b);

/// Runs `then` under `predicate` (an scf.if, branches once lowered).
void ifThen(OpBuilder &b, Location loc, Value predicate, llvm::function_ref<void()> then);
/// `then()` where `predicate` holds, else `otherwise()` (values of `type`).
Value ifThenElse(OpBuilder &b, Location loc, Value predicate, Type type, llvm::function_ref<Value()> then,
                 llvm::function_ref<Value()> otherwise);

//===----------------------------------------------------------------------===//
// Threads and coordinates
//===----------------------------------------------------------------------===//

struct ThreadIds {
  Value thread, lane, warp;
};
ThreadIds threadIds(OpBuilder &b, Location loc, int threadsPerWarp);
/// The same, from a read of %tid.x that is never merged with another one:
/// what follows computes its coordinates anew instead of keeping earlier
/// ones live.
ThreadIds freshThreadIds(OpBuilder &b, Location loc, int threadsPerWarp);
/// Whether `op` runs after a loop (one before it, at its level or an
/// enclosing one's) and in none.
bool afterLoop(mlir::Operation *op);
/// Computes again after each loop the cheap blocks computed before it,
/// unused in it and used after it (RecomputeAfterLoops.cpp).
void recomputeAfterLoops(mlir::ModuleOp module);

/// Per dimension, the part of the coordinate this thread's lane and warp
/// contribute (i32).
llvm::SmallVector<Value> threadCoords(OpBuilder &b, Location loc, const gpu::LinearLayout &layout,
                                      const ThreadIds &ids);
/// The coordinate register `r` holds: its static part XOR the thread's.
llvm::SmallVector<Value> registerCoords(OpBuilder &b, Location loc, const gpu::LinearLayout &layout,
                                        int r, llvm::ArrayRef<Value> thread);
/// Row-major linear index of a coordinate (i32).
Value linearize(OpBuilder &b, Location loc, llvm::ArrayRef<Value> coord,
                llvm::ArrayRef<int64_t> shape);
/// True in the one thread of each group of threads holding the same elements
/// (lanes and warps differing only in broadcast bits).
Value isOwner(OpBuilder &b, Location loc, const gpu::LinearLayout &layout, const ThreadIds &ids);
/// isOwner where `layout` has threads holding copies of one element, else
/// null: every thread then writes its own elements (storeShared).
Value ownerIfCopies(OpBuilder &b, Location loc, const gpu::LinearLayout &layout, const ThreadIds &ids);

//===----------------------------------------------------------------------===//
// Constants, shared memory, PTX
//===----------------------------------------------------------------------===//

Value i32Const(OpBuilder &b, Location loc, int64_t v);
Value i64Const(OpBuilder &b, Location loc, int64_t v);
Value intConst(OpBuilder &b, Location loc, Type type, int64_t v);

/// The base of the kernel's shared memory (addrspace 3), declared once per
/// module as the dynamic shared array every scratch use shares.
Value sharedBase(OpBuilder &b, Location loc, mlir::Operation *anchor);
/// A pointer `index` elements of `elementType` past `base`.
Value gep(OpBuilder &b, Location loc, Value base, Type elementType, Value index);
void barrier(OpBuilder &b, Location loc);

/// Stores `value` (i8, i16, i32, i64 or float) to shared memory at `address`
/// where `predicate` (i1) holds.
void storeSharedIf(OpBuilder &b, Location loc, Value address, Value value, Value predicate);
/// Stores `value` (a scalar as above, or a vector of 8, 16, 32, 64 or 128
/// bits) to shared memory at `address`: plainly when `predicate` is null,
/// else where it holds. Layouts whose threads hold copies of one element
/// pass isOwner, so that one thread writes it: copies written at once are a
/// data race in the memory model, however equal their values.
void storeShared(OpBuilder &b, Location loc, Value address, Value value, Value predicate, int64_t alignment);

/// Inline PTX (NVIDIA targets only); `resultType` may be null (no result)
/// or a struct of several.
Value ptx(OpBuilder &b, Location loc, Type resultType, llvm::StringRef text,
          llvm::StringRef constraints, mlir::ValueRange operands, bool sideEffects = true);

/// An element as it travels through shared memory or registers of one kind:
/// i1 widens to i8; pointers are kept as pointers.
Type storageType(Type llvmElement);
/// Its size in memory: i1 a byte, pointers 8 bytes (every lowering sizes
/// elements this way).
int64_t storageBytes(Type llvmElement);

/// Moves the registers of a block from layout `from` to layout `to`: a
/// register permutation when their threads agree, otherwise through shared
/// memory (scratch at offset 0, bracketed by barriers; gpu::stagingBytes).
llvm::SmallVector<Value> convertRegisters(OpBuilder &b, Location loc, mlir::Operation *anchor,
                                          llvm::ArrayRef<Value> values, Type llvmElement,
                                          const gpu::LinearLayout &from, const gpu::LinearLayout &to,
                                          int threadsPerWarp);

/// Applies a reduce or scan combine region to (acc..., next...) by cloning
/// its body (scalar arith, lowered later).
llvm::SmallVector<Value> combineWith(OpBuilder &b, mlir::Region &region, llvm::ArrayRef<Value> acc,
                                     llvm::ArrayRef<Value> next);

/// A warp shuffle of any scalar (in 32-bit pieces): `kind` bfly (lane ^
/// offset), up (lane - offset), down (lane + offset) or idx (lane `offset`
/// given as a value through `lane`). Up and down leave a lane whose source
/// lies outside the warp its own value. (AMD: ds_bpermute over the whole
/// wavefront.)
Value shuffle(OpBuilder &b, Location loc, Value v, mlir::NVVM::ShflKind kind, int offset);
Value shuffleIndex(OpBuilder &b, Location loc, Value v, Value lane);

/// An fp8 byte (e4m3fn or e5m2) as f32, exactly: the hardware's cvt on
/// sm_89+, integer arithmetic before.
Value widenFp8(OpBuilder &b, Location loc, Value byte, bool e4m3, int computeCapability);
/// An f32 as an fp8 byte, rounded once (to nearest even, or toward zero when
/// `towardZero`) and saturated at the largest finite value (448 for e4m3,
/// 57344 for e5m2; infinities too); NaN stays NaN. The hardware's
/// cvt.rn.satfinite on sm_89+ for nearest even, integer arithmetic else.
Value narrowToFp8(OpBuilder &b, Location loc, Value f32, bool e4m3, bool towardZero, int computeCapability);

/// An f32 rounded to tf32's 10 mantissa bits (to nearest, ties away from
/// zero, as cvt.rna), as f32: cvt.rna on NVIDIA GPUs, integer arithmetic on
/// AMD ones.
Value tf32Rounded(OpBuilder &b, Location loc, Value f32);

/// A tile in XOR-swizzled shared memory (#kgpu.shared): `rows x cols`
/// elements, cols contiguous, 16-byte chunks of row r permuted by
/// `(r / perPhase) % maxPhase`; rows longer than 128 bytes are split into
/// 128-byte column blocks stored one after another.
struct SwizzledTile {
  static constexpr int64_t atomBytes = 128;
  Value base; ///< !llvm.ptr<3> to the tile's first element
  Type element;
  int64_t rows, cols;
  unsigned vec, perPhase, maxPhase;
  unsigned contiguousDim; ///< the tensor dimension that runs along cols

  SwizzledTile(Value base, Type element, llvm::ArrayRef<int64_t> tileShape, gpu::SharedEncodingAttr encoding);
  /// Columns a row holds in each 128-byte column block (rows longer than
  /// 128 bytes are stored block after block).
  int64_t blockCols() const;
  /// The element offset (i32) of (row, col), both i32.
  Value offset(OpBuilder &b, Location loc, Value row, Value col) const;
  /// The address of tensor coordinate `coord` (i32 per dimension).
  Value address(OpBuilder &b, Location loc, llvm::ArrayRef<Value> coord) const;
  /// How many elements register `r` of `layout` lies past register 0 in
  /// the tile, when that is the same for every thread: its coordinate only
  /// adds bits no lane or warp sets, whole swizzle periods of rows and
  /// whole 128-byte column blocks (the swizzle then permutes both alike).
  /// Lets a thread address all its registers from one computed address.
  std::optional<int64_t> registerDelta(const gpu::LinearLayout &layout, int r) const;
};

/// A shared-memory pointer as the 32-bit address PTX's .shared accesses
/// take (the shared window is far below 4 GiB; 32-bit arithmetic is cheaper).
Value sharedAddress(OpBuilder &b, Location loc, Value pointer);

/// Stores registers of `layout` (a 2-D block) as a swizzled tile at byte
/// `offset` of the scratch: vector stores of up to 16 bytes along
/// `contiguousDim`, or (-1) along the layout's own contiguous dimension,
/// `fallbackDim` when it has none. The caller brackets it with barriers.
SwizzledTile stageSwizzled(OpBuilder &b, Location loc, mlir::Operation *anchor, llvm::ArrayRef<Value> values,
                           Type element, const gpu::LinearLayout &layout, int contiguousDim, int fallbackDim,
                           int64_t offset, int threadsPerWarp);

/// Stores the registers of `layout` (a 2-d block) whose column lies in
/// [firstColumn, firstColumn + columns) as a rows x columns swizzled tile
/// (columns contiguous) at byte `offset` of shared memory. Which registers
/// those are must not depend on the thread: its lanes and warps spread over
/// fewer than `columns` columns. The caller brackets it with barriers.
SwizzledTile stageColumns(OpBuilder &b, Location loc, mlir::Operation *anchor, llvm::ArrayRef<Value> values,
                          Type element, const gpu::LinearLayout &layout, int64_t firstColumn, int64_t columns,
                          int64_t offset, int threadsPerWarp);

/// The instruction a dot's staged operand tiles are read by.
enum class DotReader {
  mmaSync, ///< ldmatrix: tiles along the operands' own contiguous dimension
  wgmma,   ///< K-major tiles, fenced for the async proxy
  mfma,    ///< K-major tiles: each lane reads its K run as one vector
};

/// The shared tiles a matrix-core dot reads: for a (K is dimension 1) and b
/// (K is dimension 0), the ring slot when the operand is a whole-slot
/// kgpu.local_load, none when it is already in an mma operand layout
/// (registers), else its registers stored to scratch one after the other,
/// between barriers, in the form `reader` wants. `aFromRegisters`: the
/// instruction reads A from registers (wgmma), so only B gets a tile.
std::array<std::optional<SwizzledTile>, 2> dotOperandTiles(mlir::ConversionPatternRewriter &rewriter, Location loc,
                                                           tile::DotOp op, Value loweredA, Value loweredB,
                                                           Type element, DotReader reader, int threadsPerWarp,
                                                           bool aFromRegisters = false);

/// Slot `slot` (i32) of a lowered kgpu.shared buffer `buffer` of `type`.
SwizzledTile bufferSlot(OpBuilder &b, Location loc, Value buffer, mlir::RankedTensorType type, Type llvmElement,
                        Value slot);

/// How many consecutive registers of a global access go in one vector
/// (layout contiguity bounded by axis info).
int64_t accessWidth(const LoweringContext &ctx, Value ptr, Value mask, Type element);

/// Shared memory bytes a scan needs (its layout conversion or its
/// cross-warp step, whichever is larger).
int64_t scanScratchBytes(tile::ScanOp op, int numWarps, int threadsPerWarp);

/// Copy-engine stores (tile.descriptor_store kept by LowerDescriptors) go
/// through a staging buffer of their own, a run of whole 128-byte column
/// blocks at a time: the most columns of `block` (a laid-out 2-d tensor)
/// one staging of at most `budgetBytes` takes, or 0 when not even one
/// column block fits. A thread's elements must fall in one staging per
/// register (its lanes and warps spread over fewer columns), or the whole
/// block is staged at once.
int64_t copyEngineStoreColumns(mlir::RankedTensorType block, int64_t budgetBytes);
/// On a copy-engine store: the byte offset of the staging buffer (i32) and
/// the columns it takes at a time (i32), set when shared memory is laid out.
constexpr const char *kStagingOffsetAttr = "kgpu.staging_offset";
constexpr const char *kStagingColumnsAttr = "kgpu.staging_columns";
/// On the module: some program issues copy-engine stores, so every thread
/// waits for their reads of shared memory before it returns.
constexpr const char *kBulkStoresAttr = "kgpu.bulk_stores";

/// Shared memory bytes an operation needs as scratch (0 for most).
int64_t scratchBytes(mlir::Operation *op, int numWarps, int threadsPerWarp);

//===----------------------------------------------------------------------===//
// Pattern sets
//===----------------------------------------------------------------------===//

void populateFuncPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateElementwisePatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateViewPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateMemoryPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateReducePatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateScanPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateDotPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateMmaPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateMfmaPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateWgmmaPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateSharedPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateTmaPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
void populateDebugPatterns(mlir::RewritePatternSet &patterns, const LoweringContext &context);
/// math.erf on f32 without division (ErfToLLVM.cpp); applied before the
/// math dialect's generic approximations. `amd`: with AMD's approximate
/// exp2 and reciprocal instead of NVIDIA's.
void populateErfPatterns(mlir::RewritePatternSet &patterns, bool amd);

/// The approximate f32 instructions of the target's vendor, as LLVM
/// intrinsics (FinalizeLLVM, the erf patterns).
struct ApproximateMath {
  const char *exp2, *log2, *rsqrt, *reciprocal;
};
ApproximateMath approximateMath(bool amd);

/// Base of Kiln's lowering patterns: the op, its converted operands, and the
/// lowering context.
template <class Op> class KilnPattern : public mlir::OpConversionPattern<Op> {
public:
  KilnPattern(const LoweringContext &context, mlir::PatternBenefit benefit = 1)
      : mlir::OpConversionPattern<Op>(context.types, &context.types.getContext(), benefit),
        ctx(context) {}

protected:
  const LoweringContext &ctx;
};

} // namespace kiln::lowering
