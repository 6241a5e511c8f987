// Loops of chained dots inside a walk over tiles (compiler/transforms/ProgramWalk.h): a persistent attention
// kernel's loop over tiles at the kernel's top, a tile's loops of keys inside. The keys and values come by the
// copy engine (the walk's counter is non-negative, so a head's offset from it is a box's row); the producer
// walks the tiles too, its fill slot and parity carried from one tile's loops to the next's; the consumers' walk
// carries their read slot and parity; every loop hands its last slot back once its last dot completed (the
// rotated loop after its epilogue's P V; a causal tile's two loops each after their final wait); the tile's
// result is converted for its coalesced store inside the walk. The inputs are the ops library's kernels as traced:
// their walks carry the next tile's queries, loaded under the tile's end.

// RUN: kiln-opt %S/Inputs/attention-walk-d64.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %S/Inputs/attention-walk-causal-d64.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s --check-prefix=CAUSAL
// RUN: kiln-opt %S/Inputs/attention-walk-bshd-d64.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s --check-prefix=BSHD
// RUN: kiln-opt %S/Inputs/attention-walk-packed-d128.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true overlap-chain=true" --canonicalize --cse | FileCheck %s --check-prefix=PACKED

// The producer's walk: its fill loop starts at the walk's slot and parity (free at first: parity 1) and the walk
// yields where the loop stopped.
// CHECK: kgpu.producer {
// CHECK: %[[PW:[0-9]+]]:2 = scf.for %[[T:arg[0-9]+]] = %{{[0-9]+}} to %{{[0-9]+}} step %{{[0-9]+}} iter_args(%[[PS:arg[0-9]+]] = %c0_i32{{.*}}, %[[PP:arg[0-9]+]] = %c1_i32{{.*}})
// CHECK: arith.divsi %[[T]],
// CHECK: %[[FILL:[0-9]+]]:2 = scf.for {{.*}} iter_args(%{{arg[0-9]+}} = %[[PS]], %{{arg[0-9]+}} = %[[PP]])
// CHECK: kgpu.tma_load
// CHECK: kgpu.tma_load
// CHECK: scf.yield %[[FILL]]#0, %[[FILL]]#1 : i32, i32
// The first tile's queries are loaded before the consumers' walk, which carries the next tile's, and their read
// slot and parity from 0, 0.
// CHECK: %[[FIRSTQ:[0-9]+]] = tile.load
// CHECK: scf.for %{{arg[0-9]+}} = %{{[0-9]+}} to %{{[0-9]+}} step %{{[0-9]+}} iter_args(%[[Q:arg[0-9]+]] = %[[FIRSTQ]], %[[RS:arg[0-9]+]] = %c0_i32{{.*}}, %[[RP:arg[0-9]+]] = %c0_i32{{.*}}) -> (tensor<128x64xbf16, #linear1>, i32, i32)
// The rotated loop's prologue reads the walk's slot first, and the carried queries.
// CHECK: scf.if
// CHECK: kgpu.mbarrier_wait %{{[0-9]+}}[%[[RS]]], %[[RP]]
// CHECK: tile.dot %[[Q]],
// CHECK: %[[LOOP:[0-9]+]]:7 = scf.for
// The epilogue's P V, then its values' slot handed back.
// CHECK: scf.if
// CHECK-NEXT: kgpu.local_load %1[%[[LOOP]]#6]
// CHECK-NEXT: tile.dot
// CHECK-NEXT: kgpu.mbarrier_arrive %{{[0-9]+}}[%[[LOOP]]#6] if %true
// The next tile's queries, loaded once that P V is issued; the tile's store, converted for 16-byte stores; and the
// walk's yield: those queries, and where the loop stopped.
// CHECK: %[[NEXTQ:[0-9]+]] = tile.load
// CHECK: kgpu.convert_layout
// CHECK: tile.store
// CHECK-NEXT: scf.yield %[[NEXTQ]], %[[LOOP]]#3, %[[LOOP]]#4 : tensor<128x64xbf16, #linear1>, i32, i32

// A causal tile's two loops: the producer fills them one after the other in its walk, which yields where the
// second stopped; each consumer loop hands its last slot back after its final wait, if it ran, and the walk
// yields where the second loop stopped.
// CAUSAL: kgpu.producer {
// CAUSAL: scf.for %{{arg[0-9]+}} = {{.*}} iter_args(%[[PS:arg[0-9]+]] = %c0_i32{{.*}}, %[[PP:arg[0-9]+]] = %c1_i32{{.*}})
// CAUSAL: %[[F1:[0-9]+]]:2 = scf.for {{.*}} iter_args(%{{arg[0-9]+}} = %[[PS]], %{{arg[0-9]+}} = %[[PP]])
// CAUSAL: %[[F2:[0-9]+]]:2 = scf.for {{.*}} iter_args(%{{arg[0-9]+}} = %[[F1]]#0, %{{arg[0-9]+}} = %[[F1]]#1)
// CAUSAL: scf.yield %[[F2]]#0, %[[F2]]#1 : i32, i32
// CAUSAL: scf.for %{{arg[0-9]+}} = {{.*}} iter_args(%{{arg[0-9]+}} = %{{[0-9]+}}, %[[RS:arg[0-9]+]] = %c0_i32{{.*}}, %[[RP:arg[0-9]+]] = %c0_i32{{.*}})
// CAUSAL: %[[L1:[0-9]+]]:5 = scf.for {{.*}} iter_args({{.*}}, %{{arg[0-9]+}} = %[[RS]], %{{arg[0-9]+}} = %[[RP]])
// CAUSAL: kgpu.warpgroup_wait %[[L1]]#2, 0
// CAUSAL: kgpu.mbarrier_arrive %{{[0-9]+}}[%{{[0-9]+}}] if %{{[0-9]+}}
// CAUSAL: %[[L2:[0-9]+]]:5 = scf.for {{.*}} iter_args({{.*}}, %{{arg[0-9]+}} = %[[L1]]#3, %{{arg[0-9]+}} = %[[L1]]#4)
// CAUSAL: kgpu.warpgroup_wait %[[L2]]#2, 0
// CAUSAL: kgpu.mbarrier_arrive %{{[0-9]+}}[%{{[0-9]+}}] if %{{[0-9]+}}
// CAUSAL: tile.store
// CAUSAL-NEXT: scf.yield %{{[0-9]+}}, %[[L2]]#3, %[[L2]]#4 : tensor<128x64xbf16, #linear1>, i32, i32

// [batch, seq, heads, D]: the head's offset within a token's row is a box's column, non-negative though the walk's
// counter reaches it through a quotient by max(query blocks, 1): the keys and values still come by the copy engine.
// BSHD: kgpu.tensor_maps = [{base = 1 : i32, box = array<i32: 64, 64>, offset_columns, offset_rows
// BSHD: kgpu.producer {
// BSHD: %[[SOME:[0-9]+]] = arith.maxsi %{{[0-9]+}}, %c1_i32
// BSHD: scf.for %[[T:arg[0-9]+]] =
// BSHD: arith.divsi %[[T]], %[[SOME]]
// BSHD: kgpu.tma_load
// BSHD: kgpu.tma_load

// A packed batch's walk: each step's tile and its sequence's starts are scalar loads through read-only parameters
// (the tile table, cu_seqlens), which the producer's walk issues again, before each of the tile's two fill loops,
// whose boxes start at the sequence's first key.
// PACKED: kgpu.producer {
// PACKED: scf.for %[[T:arg[0-9]+]] =
// PACKED: %[[ENTRY:[0-9]+]] = tile.addptr %arg13,
// PACKED: %[[TILE:[0-9]+]] = tile.load %[[ENTRY]] : !tile.ptr<i64>
// PACKED: %[[SEQ:[0-9]+]] = arith.trunci
// PACKED: %[[STARTK:[0-9]+]] = tile.addptr %arg5, %[[SEQ]]
// PACKED: %[[KEY0:[0-9]+]] = tile.load %[[STARTK]] : !tile.ptr<i32>
// PACKED: scf.for %[[J:arg[0-9]+]] =
// PACKED: %[[ROW:[0-9]+]] = arith.addi %[[J]], %[[KEY0]]
// PACKED: kgpu.tma_load %{{arg[0-9]+}}[%[[ROW]],
// PACKED: kgpu.tma_load %{{arg[0-9]+}}[%[[ROW]],
// PACKED: tile.load %[[ENTRY]] : !tile.ptr<i64>
// PACKED: scf.for
// PACKED: kgpu.tma_load
// PACKED: kgpu.tma_load
