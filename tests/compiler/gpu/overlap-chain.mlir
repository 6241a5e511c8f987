// A producer's loop of chained dots, rotated by its last dot
// (compiler/transforms/OverlapChain.h): block lo's first part before the
// loop where it runs; in the loop, block j's Q Kᵀ, then block j-1's P V from
// the slot it was read from, a wait for Q Kᵀ alone (P V stays in flight
// under the softmax) and the keys' slot handed back, then a wait for P V
// and the values' slot handed back; after the loop, the last P V where it
// ran. The keys and values have a barrier pair each (chainSplit): the
// producer waits for each slot on its own, the consumers wait for the
// values where the unrotated loop read them (after the softmax). D 256,
// whose first dot reads the queries from shared memory, is rotated too (its
// split rings keep the next keys from waiting for the previous P V). A mask
// applied in a branch (a causal kernel written as one loop) keeps the
// chain: P comes from Q Kᵀ through the branch. Not rotated: with turns,
// with the option off, and causal attention's two loops (the first would
// complete its last P V before the second's first Q Kᵀ instead of under
// it), which hand the keys' slot back after Q Kᵀ and the values' after the
// next one.
// RUN: kiln-opt %S/Inputs/attention-d64.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %S/Inputs/attention-d64.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true ping-pong=true" --canonicalize --cse | FileCheck %s --check-prefix=TURNS
// RUN: kiln-opt %S/Inputs/attention-d64.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true" --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %S/Inputs/attention-d256.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s --check-prefix=D256

// RUN: kiln-opt %S/Inputs/attention-d64-masked-branch.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s --check-prefix=BRANCH
// RUN: kiln-opt %S/Inputs/attention-causal-d128.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s --check-prefix=CAUSAL

// CHECK: kgpu.producer {
// CHECK: kgpu.mbarrier_wait %[[KEMPTY:[0-9]+]][
// CHECK: kgpu.tma_load {{.*}} -> %0[%{{.*}}], %[[KFULL:[0-9]+]] if
// CHECK: kgpu.mbarrier_wait %[[VEMPTY:[0-9]+]][
// CHECK: kgpu.tma_load {{.*}} -> %1[%{{.*}}], %[[VFULL:[0-9]+]] if
// CHECK: %[[RAN:.*]] = arith.cmpi sgt, %[[HI:.*]], %c0_i32
// CHECK: %[[PRO:.*]]:4 = scf.if %[[RAN]]
// CHECK: kgpu.mbarrier_wait %[[KFULL]][%c0_i32]
// CHECK: tile.dot {{.*}} {kgpu.wgmma}
// CHECK-NEXT: kgpu.mbarrier_arrive %[[KEMPTY]][%c0_i32] if %true
// CHECK-NOT: tile.dot
// CHECK: kgpu.mbarrier_wait %[[VFULL]][%c0_i32]
// CHECK-NOT: tile.dot
// CHECK: } else {
// CHECK: %[[LOOP:.*]]:7 = scf.for %{{.*}} = %c64_i32 to %[[HI]] step %c64_i32 iter_args({{.*}}, %[[KSLOT:arg[0-9]+]] = %{{[0-9]+}}, %{{.*}} = %c0_i32, %[[P:.*]] = %[[PRO]]#3, %[[VSLOT:.*]] = %c0_i32)
// CHECK: kgpu.mbarrier_wait %[[KFULL]][%[[KSLOT]]]
// CHECK: %[[S:.*]] = tile.dot {{.*}} {kgpu.in_flight_register_a, kgpu.wgmma}
// CHECK-NEXT: %[[V:.*]] = kgpu.local_load %1[%[[VSLOT]]]
// CHECK-NEXT: %[[O:.*]] = tile.dot %[[P]], %[[V]], {{.*}} {kgpu.in_flight_register_a, kgpu.wgmma}
// CHECK-NEXT: kgpu.warpgroup_wait %[[S]], 1 :
// CHECK-NEXT: kgpu.mbarrier_arrive %[[KEMPTY]][%[[KSLOT]]] if %true
// CHECK: math.exp2
// CHECK: kgpu.warpgroup_wait %[[O]], 0 :
// CHECK-NEXT: kgpu.mbarrier_arrive %[[VEMPTY]][%[[VSLOT]]] if %true
// CHECK: kgpu.mbarrier_wait %[[VFULL]][%[[KSLOT]]]
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

// CAUSAL: kgpu.producer {
// CAUSAL: kgpu.mbarrier_wait %[[KEMPTY:[0-9]+]][
// CAUSAL: kgpu.mbarrier_wait %[[VEMPTY:[0-9]+]][
// CAUSAL: %[[FIRST:.*]]:5 = scf.for {{.*}} iter_args({{.*}}, %[[SLOT:arg[0-9]+]] = %c0_i32, %{{.*}} = %c0_i32)
// CAUSAL-NOT: scf.if
// CAUSAL: tile.dot {{.*}} {kgpu.wgmma}
// CAUSAL-NEXT: kgpu.mbarrier_arrive %[[KEMPTY]][%[[SLOT]]] if %true
// CAUSAL: kgpu.mbarrier_arrive %[[VEMPTY]][%{{.*}}] if %
// CAUSAL: scf.yield
// CAUSAL: kgpu.warpgroup_wait %[[FIRST]]#2, 0
// CAUSAL-NOT: kgpu.mbarrier_arrive %[[KEMPTY]]
// CAUSAL: kgpu.mbarrier_arrive %[[VEMPTY]][
// CAUSAL: scf.for
// CAUSAL-NOT: scf.if
// CAUSAL: tile.return

// D256: kgpu.producer {
// D256: scf.if
// D256: scf.for
// D256: %[[S:.*]] = tile.dot {{.*}} {kgpu.wgmma}
// D256-NEXT: kgpu.local_load
// D256-NEXT: tile.dot {{.*}} {kgpu.in_flight_register_a, kgpu.wgmma}
// D256-NEXT: kgpu.warpgroup_wait %[[S]], 1 :
// D256-NEXT: kgpu.mbarrier_arrive
// D256: scf.if
// D256: tile.return

// BRANCH: kgpu.producer {
// BRANCH: scf.for
// BRANCH: tile.dot {{.*}} {kgpu.in_flight_register_a, kgpu.wgmma}
// BRANCH: tile.dot {{.*}} {kgpu.in_flight_register_a, kgpu.wgmma}
// BRANCH-NEXT: kgpu.warpgroup_wait %{{.*}}, 1 :
// BRANCH: scf.if
// BRANCH: arith.select
// BRANCH: scf.yield
