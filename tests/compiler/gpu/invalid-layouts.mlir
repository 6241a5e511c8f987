// Malformed layouts are rejected with a reason.
// RUN: kiln-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{blocked layout: order must be a permutation of 0..1}}
#bad = #kgpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [0, 0]}>
tile.func @f() {
  tile.return
}

// -----

// expected-error @+1 {{blocked layout: sizes must be powers of two}}
#bad = #kgpu.blocked<{sizePerThread = [3], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
tile.func @f() {
  tile.return
}

// -----

#blocked = #kgpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
tile.func @f() {
  // expected-error @+1 {{a rank-1 blocked layout on a rank-2 tensor}}
  %c = arith.constant dense<1.0> : tensor<4x4xf32, #blocked>
  tile.return
}

// -----

#blocked = #kgpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// expected-error @+1 {{slice layout: dim 1 is out of range for a rank-1 parent}}
#slice = #kgpu.slice<{dim = 1, parent = #blocked}>
tile.func @f() {
  tile.return
}

// -----

#linear = #kgpu.linear<{register = [[8]], lane = [], warp = []}>
tile.func @f() {
  // expected-error @+1 {{linear layout: a basis reaches 8 in dimension 0 of size 8}}
  %c = arith.constant dense<1.0> : tensor<8xf32, #linear>
  tile.return
}

// -----

// The rows of a 64x1 layout on a 64x64 tensor: column 1 onwards held by no thread.
#rows = #kgpu.linear<{register = [[8, 0], [32, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = [[0, 0], [16, 0]]}>
tile.func @f() {
  // expected-error @+1 {{linear layout: some elements of the shape are held by no thread}}
  %c = arith.constant dense<1.0> : tensor<64x64xf32, #rows>
  tile.return
}

// -----

#a = #kgpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
tile.func @f() {
  %c = arith.constant dense<1.0> : tensor<8xf32, #a>
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %d = kgpu.convert_layout %c : tensor<8xf32, #a> -> tensor<16xf32, #a>
  tile.return
}

// -----

// expected-error @+1 {{mma operand layout: operand must be 0 (A) or 1 (B)}}
#bad = #kgpu.mma_operand<{operand = 2, warpsM = 2, warpsN = 2, numWarps = 4, bits = 16}>
tile.func @f() {
  tile.return
}

// -----

#a = #kgpu.mma_operand<{operand = 0, warpsM = 2, warpsN = 2, numWarps = 4, bits = 16}>
tile.func @f() {
  // expected-error @+1 {{mma operand layout: A of 16x16 does not split into whole K steps of 16 and 32 rows}}
  %c = arith.constant dense<1.0> : tensor<16x16xf16, #a>
  tile.return
}

// -----

#a = #kgpu.mma_operand<{operand = 0, warpsM = 1, warpsN = 1, numWarps = 1, bits = 16}>
tile.func @f(%slot: i32) {
  %ring = kgpu.local_alloc : tensor<2x16x32xf16, #kgpu.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
  // expected-error @+1 {{window at offset 24 of 16 elements leaves the slot's 32 in dimension 1}}
  %w = kgpu.local_load %ring[%slot] offsets [0, 24] : tensor<2x16x32xf16, #kgpu.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>> -> tensor<16x16xf16, #a>
  tile.return
}

// -----

#b = #kgpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [1, 0]}>
tile.func @f(%slot: i32) {
  %q = arith.constant dense<1.0> : tensor<16x32xf16, #b>
  %held = kgpu.local_alloc : tensor<1x16x64xf16, #kgpu.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>>
  // expected-error @+1 {{value shape does not match the buffer's tile shape}}
  kgpu.local_store %q, %held[%slot] : tensor<16x32xf16, #b> -> tensor<1x16x64xf16, #kgpu.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>>
  tile.return
}

// -----

#b = #kgpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [1, 0]}>
tile.func @f(%slot: i32) {
  %q = arith.constant dense<1.0> : tensor<16x32xbf16, #b>
  %held = kgpu.local_alloc : tensor<1x16x32xf16, #kgpu.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
  // expected-error @+1 {{value and buffer hold different element types}}
  kgpu.local_store %q, %held[%slot] : tensor<16x32xbf16, #b> -> tensor<1x16x32xf16, #kgpu.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
  tile.return
}
