// A producer's loop of chained dots, rotated by its last dot
// (compiler/transforms/OverlapChain.h): block lo's first part before the
// loop where it runs; in the loop, block j's Q Kᵀ, then block j-1's P V from
// the slot it was read from, a wait for Q Kᵀ alone (P V stays in flight
// under the softmax), then a wait for P V and the slot handed back; after
// the loop, the last P V where it ran. Not rotated: with turns, with the
// option off, causal attention's two loops (the first would complete its
// last P V before the second's first Q Kᵀ instead of under it), and D 256,
// whose queries the first dot reads from shared memory.
// RUN: kiln-opt %S/Inputs/attention-d64.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %S/Inputs/attention-d64.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true ping-pong=true" --canonicalize --cse | FileCheck %s --check-prefix=TURNS
// RUN: kiln-opt %S/Inputs/attention-d64.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true" --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %S/Inputs/attention-d256.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s --check-prefix=D256

// RUN: kiln-opt %S/Inputs/attention-causal-d128.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s --check-prefix=CAUSAL

// CHECK: kgpu.producer {
// CHECK: %[[RAN:.*]] = arith.cmpi sgt, %[[HI:.*]], %c0_i32
// CHECK: %[[PRO:.*]]:4 = scf.if %[[RAN]]
// CHECK: kgpu.mbarrier_wait
// CHECK: tile.dot {{.*}} {kgpu.wgmma}
// CHECK-NOT: tile.dot
// CHECK: } else {
// CHECK: %[[LOOP:.*]]:7 = scf.for %{{.*}} = %c64_i32 to %[[HI]] step %c64_i32 iter_args({{.*}}, %[[P:.*]] = %[[PRO]]#3, %[[VSLOT:.*]] = %c0_i32)
// CHECK: kgpu.mbarrier_wait
// CHECK: %[[S:.*]] = tile.dot {{.*}} {kgpu.in_flight_register_a, kgpu.wgmma}
// CHECK-NEXT: %[[V:.*]] = kgpu.local_load %1[%[[VSLOT]]]
// CHECK-NEXT: %[[O:.*]] = tile.dot %[[P]], %[[V]], {{.*}} {kgpu.in_flight_register_a, kgpu.wgmma}
// CHECK-NEXT: kgpu.warpgroup_wait %[[S]], 1 :
// CHECK: math.exp2
// CHECK: kgpu.warpgroup_wait %[[O]], 0 :
// CHECK-NEXT: kgpu.mbarrier_arrive %3[%[[VSLOT]]] if %true
// CHECK: scf.yield
// CHECK: %[[LAST:.*]] = scf.if %[[RAN]]
// CHECK-NEXT: %[[LASTV:.*]] = kgpu.local_load %1[%[[LOOP]]#6]
// CHECK-NEXT: tile.dot %[[LOOP]]#5, %[[LASTV]], %[[LOOP]]#2 {kgpu.wgmma}
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[LOOP]]#2
// CHECK-NOT: kgpu.warpgroup_wait
// CHECK: arith.divf %[[LAST]],

// TURNS-NOT: scf.if
// TURNS: kgpu.wait_turn
// TURNS-NOT: scf.if
// TURNS: tile.return

// OFF-NOT: scf.if
// OFF: kgpu.warpgroup_wait %{{.*}}, 1 :
// OFF-NOT: scf.if

// CAUSAL: scf.for
// CAUSAL-NOT: scf.if
// CAUSAL: tile.return

// D256: scf.for
// D256-NOT: scf.if
// D256: tile.return
