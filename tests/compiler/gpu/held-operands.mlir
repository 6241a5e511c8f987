// A block made before a loop of dots and held across it (attention's Q):
// wgmma reads it from registers where the loop's values fit a thread's
// registers (D 64: no buffer), else from a buffer in shared memory stored
// once before the loop (D 256, whose 128 x 256 output and queries would
// take 264 registers a thread). LowerDescriptors counts the buffer against
// the loop's rings, which still fit at two slots each (a producer's chain
// does without the spare slot), so the loop keeps its producer; the dot
// reads the buffer through a K-major matrix descriptor like a ring slot.
// RUN: kiln-opt %S/Inputs/attention-d256.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a" --kgpu-assign-layouts="num-warps=8 target=sm_90a" --kgpu-pipeline-loops="num-stages=2" | FileCheck %s
// RUN: kiln-opt %S/Inputs/attention-d256.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a" --kgpu-assign-layouts="num-warps=8 target=sm_90a" --kgpu-pipeline-loops="num-stages=2" --kgpu-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: kiln-opt %S/Inputs/attention-d64.mlir --kgpu-lower-descriptors="num-stages=3 num-warps=8 target=sm_90a" --kgpu-assign-layouts="num-warps=8 target=sm_90a" --kgpu-pipeline-loops="num-stages=3" | FileCheck %s --check-prefix=REGISTERS

// CHECK: module attributes {kgpu.num_warps = 8 : i32, kgpu.producer_warps = 4 : i32
// CHECK-LABEL: tile.func @tutorial_attention
// CHECK: kgpu.local_alloc : tensor<2x256x64xbf16
// CHECK: kgpu.local_alloc : tensor<2x64x256xbf16
// CHECK: kgpu.producer {
// CHECK: %[[Q:.*]] = tile.load {{.*}} : tensor<128x256x!tile.ptr<bf16>, #[[QL:.*]]>
// CHECK-NEXT: %[[HELD:.*]] = kgpu.local_alloc : tensor<1x128x256xbf16, #kgpu.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>>
// CHECK-NEXT: %[[SLOT:.*]] = arith.constant 0 : i32
// CHECK-NEXT: kgpu.local_store %[[Q]], %[[HELD]][%[[SLOT]]]
// CHECK: scf.for
// CHECK: %[[READ:.*]] = kgpu.local_load %[[HELD]][%[[SLOT]]] {{.*}} -> tensor<128x256xbf16, #[[QL]]>
// CHECK-NEXT: kgpu.mbarrier_wait
// CHECK-NEXT: kgpu.local_load
// CHECK-NEXT: tile.dot %[[READ]], {{.*}} {kgpu.wgmma}

// After the consumers' barrier, each thread's 16-byte vectors into the
// swizzled buffer, fenced for the async proxy, then the consumers' barrier
// again; the first dot's A is a descriptor (one 64-bit operand before
// B's), not four registers.
// LLVM: nvvm.barrier id = {{.*}} number_of_threads
// LLVM-NOT: nvvm.barrier
// LLVM: llvm.store {{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<3>
// LLVM: "fence.proxy.async.shared::cta;"
// LLVM: nvvm.barrier id = {{.*}} number_of_threads
// LLVM: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, $64, $65, p, 1, 1, 0, 0; }
// LLVM-SAME: 31,l,l,r"

// REGISTERS-NOT: kgpu.local_store
// REGISTERS: tile.dot {{.*}} {kgpu.wgmma} : tensor<128x64xbf16, #linear
