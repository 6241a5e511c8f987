//===- KGpuDialect.td - Kiln's GPU dialect -----------------*- tablegen -*-===//
//
// The GPU level of Kiln's IR: the tile dialect's operations on tensors
// whose types carry a *layout* (an encoding saying which thread holds which
// element), plus the operations that only exist at this level (layout
// conversions). Every layout is a LinearLayout underneath
// (LinearLayout.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KGPU_DIALECT
#define KILN_KGPU_DIALECT

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/TensorEncoding.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def KGpu_Dialect : Dialect {
  let name = "kgpu";
  let cppNamespace = "::kiln::gpu";
  let summary = "Layouts of blocks over the threads of a GPU program";
  let description = [{
    A module at this level carries `kgpu.num_warps` (warps per program) and
    `kgpu.threads_per_warp` (32 on NVIDIA). Tensor types carry a layout
    encoding: `#kgpu.blocked`, `#kgpu.slice` or `#kgpu.linear`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::kiln::tile::TileDialect"];
}

def KGpu_LayoutEncodingAttrInterface : AttrInterface<"LayoutEncodingAttr"> {
  let cppNamespace = "::kiln::gpu";
  let description = [{
    A layout of a tensor over registers, lanes and warps.
  }];
  let methods = [
    InterfaceMethod<"The linear layout of a tensor of `shape` in this layout.",
      "::kiln::gpu::LinearLayout", "toLinearLayout",
      (ins "::llvm::ArrayRef<int64_t>":$shape)>,
    InterfaceMethod<"The tensor rank this layout applies to.", "unsigned", "getRank">
  ];
}

class KGpu_Layout<string name, string attrMnemonic>
    : AttrDef<KGpu_Dialect, name, [
        DeclareAttrInterfaceMethods<KGpu_LayoutEncodingAttrInterface>,
        DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = attrMnemonic;
  let hasCustomAssemblyFormat = 1;
}

def KGpu_BlockedEncodingAttr : KGpu_Layout<"BlockedEncoding", "blocked"> {
  let summary = "Each thread holds a small contiguous block; the blocks tile the tensor";
  let description = [{
    Thread t of warp w holds `sizePerThread` consecutive elements; the lanes
    of a warp tile `threadsPerWarp` such blocks and the warps tile
    `warpsPerCTA` warp tiles, walking dimensions fastest first in `order`.
    The tile repeats over larger tensors (more registers per thread) and is
    broadcast over smaller ones (threads hold the same elements).

    `#kgpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>`
  }];
  let parameters = (ins
    ArrayRefParameter<"unsigned">:$sizePerThread,
    ArrayRefParameter<"unsigned">:$threadsPerWarp,
    ArrayRefParameter<"unsigned">:$warpsPerCTA,
    ArrayRefParameter<"unsigned">:$order);
  let genVerifyDecl = 1;
}

def KGpu_SliceEncodingAttr : KGpu_Layout<"SliceEncoding", "slice"> {
  let summary = "A parent layout with one dimension removed";
  let description = [{
    The layout of a reduction's result (or of an operand about to gain a
    dimension through `tile.expand_dims`): the parent layout of the tensor
    with dimension `dim` inserted, that dimension then dropped.

    `#kgpu.slice<{dim = 1, parent = #kgpu.blocked<...>}>`
  }];
  let parameters = (ins "unsigned":$dim, "::mlir::Attribute":$parent);
  let genVerifyDecl = 1;
}

def KGpu_LinearEncodingAttr : KGpu_Layout<"LinearEncoding", "linear"> {
  let summary = "A layout given by its bases";
  let description = [{
    Register bit b maps to coordinate `register[b]`, and likewise for lanes
    and warps; an index maps to the XOR of the bases of its bits. Layouts of
    reshaped and transposed values, which no named layout expresses.

    `#kgpu.linear<{register = [[1, 0]], lane = [[2, 0], [0, 1]], warp = [[0, 2]]}>`
  }];
  let parameters = (ins
    "unsigned":$rank,
    ArrayRefParameter<"int32_t">:$registerBases,
    ArrayRefParameter<"int32_t">:$laneBases,
    ArrayRefParameter<"int32_t">:$warpBases);
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The linear encoding of `layout`'s bases.
    static LinearEncodingAttr get(::mlir::MLIRContext *context, const ::kiln::gpu::LinearLayout &layout);
  }];
}

def KGpu_MmaOperandEncodingAttr : AttrDef<KGpu_Dialect, "MmaOperandEncoding", [
        DeclareAttrInterfaceMethods<KGpu_LayoutEncodingAttrInterface>,
        DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = "mma_operand";
  let summary = "An mma.sync operand's fragments, held in registers";
  let description = [{
    Operand `operand` (0: A, M x K; 1: B, K x N) of an `mma.sync` dot whose
    warps are arranged `warpsM x warpsN` (Mma.h's `mmaWarps`; the rest of
    `numWarps` hold copies), in exactly the registers the instruction takes:
    per K step of 16 (`bits` = 16: f16/bf16, m16n8k16) or 8 (32: tf32,
    m16n8k8), each warp's A pieces of 16 rows (rows 16 * warpsM apart) or
    B pieces of 8 columns (8 * warpsN apart). Within a piece lane l holds
    A's rows l/4 and l/4 + 8 and B's column l/4; register order is the
    instruction's (two 16-bit elements share a 32-bit register). The
    warps that differ only along the other operand's dimension hold the
    same elements.

    `#kgpu.mma_operand<{operand = 0, warpsM = 2, warpsN = 2, numWarps = 4, bits = 16}>`
  }];
  let parameters = (ins "unsigned":$operand, "unsigned":$warpsM, "unsigned":$warpsN, "unsigned":$numWarps,
                        "unsigned":$bits);
  let assemblyFormat = "`<` `{` `operand` `=` $operand `,` `warpsM` `=` $warpsM `,` `warpsN` `=` $warpsN `,` `numWarps` `=` $numWarps `,` `bits` `=` $bits `}` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The K of one instruction: 16 (16-bit operands) or 8 (tf32).
    int64_t getKStep() const { return getBits() == 16 ? 16 : 8; }
  }];
}

def KGpu_SharedEncodingAttr : AttrDef<KGpu_Dialect, "SharedEncoding"> {
  let mnemonic = "shared";
  let summary = "A buffer of tiles in shared memory, XOR-swizzled";
  let description = [{
    The encoding of a tensor that lives in shared memory rather than in
    registers: `slots x rows x cols` (one tile per slot of a pipelining
    ring), `order[0]` naming the tile dimension that is contiguous. Within a
    tile, the `vec`-element chunks of row r sit at chunk
    `c ^ ((r / perPhase) % maxPhase)`, so that the eight rows an `ldmatrix`
    reads (or a warp's 16-byte stores write) fall in different banks.

    `#kgpu.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>`
  }];
  let parameters = (ins "unsigned":$vec, "unsigned":$perPhase, "unsigned":$maxPhase,
                        ArrayRefParameter<"unsigned">:$order);
  let assemblyFormat = "`<` `{` `vec` `=` $vec `,` `perPhase` `=` $perPhase `,` `maxPhase` `=` $maxPhase `,` `order` `=` `[` $order `]` `}` `>`";
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

class KGpu_Op<string mnemonic, list<Trait> traits = []>
    : Op<KGpu_Dialect, mnemonic, traits>;

def KGpu_ConvertLayoutOp : KGpu_Op<"convert_layout", [
    Pure, SameOperandsAndResultElementType, SameOperandsAndResultShape]> {
  let summary = "Move a block's elements to another layout";
  let description = [{
    The same values, held by other threads and registers. Lowered to a
    permutation of registers when lanes and warps agree, otherwise through
    shared memory.
  }];
  let arguments = (ins AnyRankedTensor:$src);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def KGpu_SharedBuffer : Type<
    And<[AnyRankedTensor.predicate,
         CPred<"::llvm::isa_and_nonnull<::kiln::gpu::SharedEncodingAttr>(::llvm::cast<::mlir::RankedTensorType>($_self).getEncoding())">]>,
    "a shared-memory buffer (tensor with #kgpu.shared encoding)", "::mlir::RankedTensorType">;

def KGpu_LocalAllocOp : KGpu_Op<"local_alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "A buffer in shared memory for the whole program";
  let description = [{
    Reserves `slots x rows x cols` elements of shared memory, alive for the
    whole program (separate from the scratch that conversions and
    reductions share). The lowering places it after that scratch.
  }];
  let results = (outs KGpu_SharedBuffer:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def KGpu_AsyncCopyOp : KGpu_Op<"async_copy", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Start copying a block from global memory into a buffer slot";
  let description = [{
    Every element `ptr` points to is copied, asynchronously (`cp.async`),
    into slot `slot` of `buffer` at its coordinate; where `mask` is false or
    `pred` is false, the element becomes zero and global memory is not read.
    The copy joins the current group: see `async_commit` and `async_wait`.
  }];
  let arguments = (ins AnyRankedTensor:$ptr, KGpu_SharedBuffer:$buffer, I32:$slot,
                       Optional<AnyRankedTensor>:$mask, I1:$pred);
  let assemblyFormat = [{
    $ptr `,` $buffer `[` $slot `]` (`mask` $mask^)? `if` $pred attr-dict `:` type($ptr) (`,` type($mask)^)? `->` type($buffer)
  }];
  let hasVerifier = 1;
}

def KGpu_AsyncCommitOp : KGpu_Op<"async_commit", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Close the group of async copies issued so far by this thread";
  let assemblyFormat = "attr-dict";
}

def KGpu_AsyncWaitOp : KGpu_Op<"async_wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait until at most `pending` groups of async copies are in flight";
  let description = [{
    Then a barrier: the copies of every thread of the program that
    completed are visible to all, and all threads have finished reading the
    slots they read before.
  }];
  let arguments = (ins I32Attr:$pending);
  let assemblyFormat = "$pending attr-dict";
}

def KGpu_LocalLoadOp : KGpu_Op<"local_load", [MemoryEffects<[MemRead]>]> {
  let summary = "Read a slot of a shared-memory buffer into registers";
  let description = [{
    The tile in slot `slot` of `buffer`, in the result's layout; with
    `offsets`, the window of the result's shape that starts there (an
    mma.sync dot's K step). A `tile.dot` whose operand is a whole-slot
    local_load reads the slot directly (with `ldmatrix`), so the registers
    of this layout are then never built; a local_load into a
    `#kgpu.mma_operand` layout is itself `ldmatrix`.
  }];
  let arguments = (ins KGpu_SharedBuffer:$buffer, I32:$slot, OptionalAttr<DenseI64ArrayAttr>:$offsets);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $buffer `[` $slot `]` (`offsets` $offsets^)? attr-dict `:` type($buffer) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$buffer, "::mlir::Value":$slot), [{
      build($_builder, $_state, result, buffer, slot, ::mlir::DenseI64ArrayAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// Whether it reads its slot's whole tile (not a window of it).
    bool readsWholeSlot() { return !getOffsets(); }
  }];
  let hasVerifier = 1;
}

def KGpu_LocalStoreOp : KGpu_Op<"local_store", [MemoryEffects<[MemWrite]>]> {
  let summary = "Write a block of registers into a slot of a shared-memory buffer";
  let description = [{
    After a barrier of the program (every read of the slot before it is
    done), every thread stores its elements of `value` into slot `slot` of
    `buffer` at their coordinates, in the buffer's swizzled encoding; then
    the writes are fenced for the async proxy and another barrier passes,
    so that every thread, and wgmma reading the slot through a matrix
    descriptor, sees them after this op. (A block held across a loop of
    tensor-core dots is stored this way: see HeldOperands.h.)

    With `unsynchronized`, only the stores: the caller orders them with
    `kgpu.barrier`s of its own (a ring of slots written from registers,
    kgpu-prefetch-operands, which passes one barrier for all of an
    iteration's stores and none before them: the slot being written was
    last read two iterations before, and the barrier of the iteration
    between ordered that read first). Not for slots the async proxy reads.
  }];
  let arguments = (ins AnyRankedTensor:$value, KGpu_SharedBuffer:$buffer, I32:$slot, UnitAttr:$unsynchronized);
  let assemblyFormat = [{
    $value `,` $buffer `[` $slot `]` (`unsynchronized` $unsynchronized^)? attr-dict `:` type($value) `->` type($buffer)
  }];
  let hasVerifier = 1;
}

def KGpu_TensorMap : Type<CPred<"::llvm::isa<::kiln::tile::TensorMapType>($_self)">, "tensor map",
                           "::kiln::tile::TensorMapType">,
                      BuildableType<"::kiln::tile::TensorMapType::get($_builder.getContext())">;

def KGpu_BarrierOp : KGpu_Op<"barrier", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Every thread of the program arrives before any goes on";
  let description = [{
    A barrier of the whole program (`bar.sync 0`): shared-memory accesses
    before it are ordered before those after it, in every thread. In a
    warp-specialized program (`kgpu.producer_warps` on the module) it is
    a barrier of the consumer warps only (`bar.sync 0, threads`): the
    producer warpgroup runs its own loop and never meets it.
  }];
  let assemblyFormat = "attr-dict";
}

def KGpu_MBarrierInitOp : KGpu_Op<"mbarrier_init", [MemoryEffects<[MemWrite]>]> {
  let summary = "Initialize a buffer of transaction barriers, then synchronize";
  let description = [{
    `barriers` is a shared buffer of i64 (one `mbarrier` object each). One
    thread initializes each to complete a phase when `count` arrivals (1 by
    default: the thread that starts the copies filling a slot, see
    `mbarrier_expect`; one per consumer warp for the slots they hand back,
    see `mbarrier_arrive`) and the bytes announced have arrived; then a
    barrier of every thread of the program (the producer warpgroup's too) makes
    them visible to every thread and to the copy engine. With `cluster`, that
    barrier spans every thread of the program's cluster, so that the other
    programs may arrive on these barriers and copy into this program's
    buffers (`mbarrier_arrive` and `tma_load` with `multicast`).
  }];
  let arguments = (ins KGpu_SharedBuffer:$barriers, DefaultValuedAttr<I32Attr, "1">:$count, UnitAttr:$cluster);
  let assemblyFormat = "$barriers attr-dict `:` type($barriers)";
}

def KGpu_MBarrierInvalOp : KGpu_Op<"mbarrier_inval", [MemoryEffects<[MemWrite]>]> {
  let summary = "Synchronize, then invalidate a buffer of transaction barriers";
  let description = [{
    After a barrier of the program (no thread still waits on them), one
    thread invalidates each barrier, so that `mbarrier_init` may set the
    memory up again (a loop run once per output tile).
  }];
  let arguments = (ins KGpu_SharedBuffer:$barriers);
  let assemblyFormat = "$barriers attr-dict `:` type($barriers)";
}

def KGpu_MBarrierExpectOp : KGpu_Op<"mbarrier_expect", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Arrive on a barrier, announcing the bytes its copies will bring";
  let description = [{
    Where `pred` holds, one thread arrives on barrier `slot` of `barriers`
    and tells it to expect `bytes` more bytes of copies (`tma_load`) before
    its current phase completes. That thread is thread 0, or with
    `producer` the thread running it (the producer warpgroup's first, inside
    `kgpu.producer`).
  }];
  let arguments = (ins KGpu_SharedBuffer:$barriers, I32:$slot, I32Attr:$bytes, I1:$pred, UnitAttr:$producer);
  let assemblyFormat = "$barriers `[` $slot `]` `,` $bytes `if` $pred attr-dict `:` type($barriers)";
}

def KGpu_MBarrierWaitOp : KGpu_Op<"mbarrier_wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait for a barrier's phase of the given parity to complete";
  let description = [{
    Every thread waits until the phase of barrier `slot` whose parity is
    `phase` (0 or 1) has completed: the copies it expected have landed and
    are visible to the thread.
  }];
  let arguments = (ins KGpu_SharedBuffer:$barriers, I32:$slot, I32:$phase);
  let assemblyFormat = "$barriers `[` $slot `]` `,` $phase attr-dict `:` type($barriers)";
}

def KGpu_TmaLoadOp : KGpu_Op<"tma_load", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Copy a box of a tensor into a buffer slot with the copy engine";
  let description = [{
    Where `pred` holds, one thread starts the copy engine (TMA,
    `cp.async.bulk.tensor`) on the block of the tensor described by `map`
    whose first element is at `coords` (outermost first), into slot `slot`
    of `buffer`, completing on barrier `slot` of `barriers`. The buffer's
    swizzled encoding is the copy engine's swizzle; a tile whose contiguous
    rows are longer than 128 bytes arrives as several boxes of 128-byte
    columns, one after another. Elements outside the tensor arrive as zero.
    The thread is thread 0, or with `producer` the thread running it (inside
    `kgpu.producer`). With `multicast` = n > 1 (a cluster of n programs, all
    issuing this copy with the same coordinates), each program copies the
    n-th part of the block's rows matching its rank in the cluster
    (`tile.cluster_rank`) into the same slot of every program of the cluster,
    completing on each one's barrier `slot`: each program's barrier still
    receives the whole block's bytes. The tensor map's box then holds that
    part's rows.
  }];
  let arguments = (ins KGpu_TensorMap:$map, Variadic<I32>:$coords, KGpu_SharedBuffer:$buffer, I32:$slot,
                       KGpu_SharedBuffer:$barriers, I1:$pred, UnitAttr:$producer,
                       DefaultValuedAttr<I32Attr, "1">:$multicast);
  let assemblyFormat = [{
    $map `[` $coords `]` `->` $buffer `[` $slot `]` `,` $barriers `if` $pred attr-dict `:` type($buffer) `,` type($barriers)
  }];
  let hasVerifier = 1;
}

def KGpu_MBarrierArriveOp : KGpu_Op<"mbarrier_arrive", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Each warp arrives once on a barrier: its reads of a slot are done";
  let description = [{
    Where `pred` holds, one lane of every warp running it arrives on barrier
    `slot` of `barriers` (whose `mbarrier_init` count is the number of such
    warps). A warp-specialized loop's consumers hand a ring slot back to
    the producer this way once the dot that read it has completed. With
    `cluster` = n > 1 it arrives on barrier `slot` of every program of its
    cluster of n (whose count then includes the other programs' warps): a
    slot filled by copies multicast to the cluster is free only when every
    program has read it.
  }];
  let arguments = (ins KGpu_SharedBuffer:$barriers, I32:$slot, I1:$pred, DefaultValuedAttr<I32Attr, "1">:$cluster);
  let assemblyFormat = "$barriers `[` $slot `]` `if` $pred attr-dict `:` type($barriers)";
}

def KGpu_ProducerOp : KGpu_Op<"producer", [NoTerminator, SingleBlock, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "What the producer warpgroup does, in one thread, before it exits";
  let description = [{
    The program runs `kgpu.producer_warps` (on the module) warps past its
    `num_warps`: the producer. One thread of it runs this region (scalar
    arithmetic, waits on barriers, copy-engine copies) and the producer
    then exits; every other operation of the program runs in the consumer
    warps only, whose barriers (`kgpu.barrier`) no longer count the
    producer. Built by the pipeliner's warp specialization: the region
    holds the loop that fills the rings, a slot whenever the consumers
    hand one back (`mbarrier_arrive` on the slot's "empty" barrier).
    Lowered, the producer gives its registers up (`setmaxnreg.dec`) and the
    consumers take them (`setmaxnreg.inc`) where that gives them more.
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$body attr-dict";
}

def KGpu_WaitTurnOp : KGpu_Op<"wait_turn", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait until the warpgroup before this one passes it the turn";
  let description = [{
    The consumer warpgroups of a warp-specialized program (`num_warps / 4`
    of them, w = thread / 128) take turns issuing their tensor-core work:
    warpgroup w waits here until warpgroup (w - 1) mod n has passed it the
    turn (`pass_turn`): a `bar.sync` on named barrier `barrier + w` of the
    two warpgroups' threads. So one warpgroup's dots are queued on the
    tensor cores while the other computes its softmax, in a fixed order.
  }];
  let arguments = (ins I32Attr:$barrier);
  let assemblyFormat = "$barrier attr-dict";
  let hasVerifier = 1;
}

def KGpu_PassTurnOp : KGpu_Op<"pass_turn", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Pass the turn to the next warpgroup without waiting";
  let description = [{
    Warpgroup w passes the turn to warpgroup (w + 1) mod n (`wait_turn`):
    a `bar.arrive` on named barrier `barrier + (w + 1) mod n`. With
    `only_last`, only the last warpgroup does, which hands the first its
    first turn; with `except_last`, the last warpgroup does not, since no
    warpgroup waits for a turn after the final one (every arrival on a
    named barrier is then matched by a wait).
  }];
  let arguments = (ins I32Attr:$barrier, UnitAttr:$only_last, UnitAttr:$except_last);
  let assemblyFormat = "$barrier attr-dict";
  let hasVerifier = 1;
}

def KGpu_WarpgroupWaitOp : KGpu_Op<"warpgroup_wait", [
    MemoryEffects<[MemRead, MemWrite]>, AllTypesMatch<["acc", "result"]>]> {
  let summary = "Wait until at most `pending` groups of wgmma are in flight";
  let description = [{
    `acc` is the accumulator of a `tile.dot` lowered to asynchronous wgmma
    (the dot then leaves its group in flight); the result is the same
    registers, readable once the groups older than the last `pending` have
    completed. With `pending = 1` the next iteration's wgmma is issued
    before the previous one finishes; `pending = 0` makes the final value
    readable.
  }];
  let arguments = (ins AnyRankedTensor:$acc, I32Attr:$pending);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$acc `,` $pending attr-dict `:` type($acc)";
}

#endif // KILN_KGPU_DIALECT
