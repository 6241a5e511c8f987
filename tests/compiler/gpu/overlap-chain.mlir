// A producer's loop of chained dots, rotated by its last dot
// (compiler/transforms/OverlapChain.h): block lo's first part before the
// loop where it runs; in the loop, block j's Q Kᵀ, then block j-1's P V from
// the slot it was read from, a wait for Q Kᵀ alone (P V stays in flight
// under the softmax), then a wait for P V that keeps the P it reads live,
// and the slot handed back; after the loop, the last P V where it ran.
// Causal attention's second loop reads on from the slot the first stopped
// at, once the first loop's last P V has handed its slot back. With turns,
// the loops are not rotated; nor with the option off.
// RUN: kiln-opt %S/Inputs/attention-causal-d128.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %S/Inputs/attention-causal-d128.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true ping-pong=true" --canonicalize --cse | FileCheck %s --check-prefix=TURNS
// RUN: kiln-opt %S/Inputs/attention-causal-d128.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true" --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %S/Inputs/attention-d256.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s --check-prefix=D256

// CHECK: kgpu.producer {
// CHECK: %[[RAN:.*]] = arith.cmpi sgt, %[[HI:.*]], %c0_i32
// CHECK: %[[PRO:.*]]:4 = scf.if %[[RAN]]
// CHECK: kgpu.mbarrier_wait
// CHECK: tile.dot {{.*}} {kgpu.wgmma}
// CHECK-NOT: tile.dot
// CHECK: } else {
// CHECK: %[[LOOP:.*]]:7 = scf.for %{{.*}} = %c128_i32 to %[[HI]] step %c128_i32 iter_args({{.*}}, %[[P:.*]] = %[[PRO]]#3, %[[VSLOT:.*]] = %c0_i32)
// CHECK: kgpu.mbarrier_wait
// CHECK: %[[S:.*]] = tile.dot {{.*}} {kgpu.in_flight_register_a, kgpu.wgmma}
// CHECK-NEXT: %[[V:.*]] = kgpu.local_load %1[%[[VSLOT]]]
// CHECK-NEXT: %[[O:.*]] = tile.dot %[[P]], %[[V]], {{.*}} {kgpu.in_flight_register_a, kgpu.wgmma}
// CHECK-NEXT: kgpu.warpgroup_wait %[[S]], 1 :
// CHECK: math.exp2
// CHECK: kgpu.warpgroup_wait %[[O]], 0 keep %[[P]] :
// CHECK-NEXT: kgpu.mbarrier_arrive %3[%[[VSLOT]]] if %true
// CHECK: scf.yield
// CHECK: %[[LAST:.*]] = scf.if %[[RAN]]
// CHECK-NEXT: %[[LASTV:.*]] = kgpu.local_load %1[%[[LOOP]]#6]
// CHECK-NEXT: tile.dot %[[LOOP]]#5, %[[LASTV]], %[[LOOP]]#2 {kgpu.wgmma}
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[LOOP]]#2
// CHECK: kgpu.mbarrier_arrive %3[%[[LOOP]]#6] if %[[RAN]]
// CHECK: scf.if
// CHECK: kgpu.mbarrier_wait %2[%[[LOOP]]#3], %[[LOOP]]#4
// CHECK: arith.mulf %[[LAST]],
// CHECK: scf.for
// CHECK: kgpu.warpgroup_wait %{{.*}}, 1 :
// CHECK: kgpu.warpgroup_wait %{{.*}}, 0 keep
// CHECK: scf.if
// CHECK: tile.dot
// CHECK-NOT: kgpu.warpgroup_wait
// CHECK: tile.return

// TURNS: kgpu.wait_turn
// TURNS-NOT: keep
// TURNS: tile.return

// OFF-NOT: keep
// OFF: kgpu.warpgroup_wait %{{.*}}, 1 :
// OFF-NOT: keep

// D 256: the first dot reads the queries from shared memory (no register A to keep live).
// D256: kgpu.local_store
// D256: scf.for
// D256: %[[S:.*]] = tile.dot {{.*}} {kgpu.wgmma}
// D256-NEXT: kgpu.local_load
// D256-NEXT: %[[O:.*]] = tile.dot {{.*}} {kgpu.in_flight_register_a, kgpu.wgmma}
// D256-NEXT: kgpu.warpgroup_wait %[[S]], 1 :
// D256: kgpu.warpgroup_wait %[[O]], 0 keep
