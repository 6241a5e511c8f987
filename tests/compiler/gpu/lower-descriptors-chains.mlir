// Which loops of chained dots get a producer warpgroup (LowerDescriptors
// decides; PipelineLoops builds it): where the plain schedule would hold
// one program a multiprocessor anyway, every loop of chained dots of the
// kernel has its K and V pointer loads moved to the copy engine and is
// marked kgpu.warp_specialize (causal attention at D 128: both loops, read
// through maps of their own); where it would hold two (D 64 with 64-key
// blocks, 8 warps) the loads stay per-thread, unless asked.
// RUN: kiln-opt %S/Inputs/attention-causal-d128.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a" | FileCheck %s --check-prefix=CAUSAL
// RUN: kiln-opt %S/Inputs/attention-d64.mlir --kgpu-lower-descriptors="num-stages=3 num-warps=8 target=sm_90a" | FileCheck %s --check-prefix=TWOPROGRAMS
// RUN: kiln-opt %S/Inputs/attention-d64.mlir --kgpu-lower-descriptors="num-stages=3 num-warps=8 target=sm_90a warp-specialize=true" | FileCheck %s --check-prefix=ASKED
// RUN: kiln-opt %S/Inputs/attention-causal-d128.mlir --kgpu-lower-descriptors="num-stages=2 num-warps=8 target=sm_90a copy-engine=false" | FileCheck %s --check-prefix=TWOPROGRAMS

// CAUSAL: scf.for
// CAUSAL: tile.descriptor_load {{.*}} map %arg6 : !tile.ptr<bf16> -> tensor<128x128xbf16>
// CAUSAL: tile.descriptor_load {{.*}} map %arg7 : !tile.ptr<bf16> -> tensor<128x128xbf16>
// CAUSAL: } {kgpu.warp_specialize}
// CAUSAL: scf.for
// CAUSAL: tile.descriptor_load {{.*}} map %arg8
// CAUSAL: tile.descriptor_load {{.*}} map %arg9
// CAUSAL: } {kgpu.warp_specialize}

// TWOPROGRAMS-NOT: kgpu.tensor_maps
// TWOPROGRAMS-NOT: tile.descriptor_load
// TWOPROGRAMS-NOT: kgpu.warp_specialize

// ASKED: scf.for
// ASKED: tile.descriptor_load
// ASKED: tile.descriptor_load
// ASKED: } {kgpu.warp_specialize}
