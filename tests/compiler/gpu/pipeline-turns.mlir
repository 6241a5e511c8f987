// Consumer warpgroups taking turns (ping-pong) in a producer's loop of
// chained dots: a warpgroup's turn runs from the loop's last dot to the
// next iteration's first (kgpu.wait_turn before the last, kgpu.pass_turn
// after the first). Where an op in that stretch may wait at a program
// barrier (here a sum across the block's rows, so across warps, after the
// second dot), the other warpgroups, waiting for their turn, would never
// reach it: the loop runs without turns. (Between the passes, the
// canonicalizer and CSE, as in the compiler's pipeline: no op left dead.)
// RUN: kiln-opt %S/Inputs/attention-d64.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true ping-pong=true" | FileCheck %s --check-prefix=TURNS
// RUN: kiln-opt %S/Inputs/attention-d64-block-sum.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a warp-specialize=true" --canonicalize --cse --kgpu-assign-layouts="num-warps=8 target=sm_90a" --canonicalize --cse --kgpu-pipeline-loops="num-stages=2 warp-specialize=true ping-pong=true" | FileCheck %s --check-prefix=NOTURNS

// TURNS: kgpu.producer {
// TURNS: kgpu.pass_turn 1 {only_last}
// TURNS-NEXT: kgpu.wait_turn 1
// TURNS: scf.for
// TURNS: tile.dot
// TURNS-NEXT: kgpu.pass_turn 1
// TURNS: kgpu.wait_turn 1
// TURNS-NEXT: tile.dot

// NOTURNS: kgpu.producer {
// NOTURNS: scf.for
// NOTURNS-NOT: _turn
// NOTURNS: tile.reduce
// NOTURNS-NOT: _turn
