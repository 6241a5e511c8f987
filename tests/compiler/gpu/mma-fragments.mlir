// mma.sync K loops after pipelining: the dot runs K step by K step from
// fragments in registers (#kgpu.mma_operand), the first step's carried
// from the iteration before, read after the wait that moved down before
// the last step; the ahead copies follow the first step.
// RUN: kiln-opt %s --kgpu-assign-layouts --kgpu-pipeline-loops=num-stages=3 | FileCheck %s
// RUN: kiln-opt %s --kgpu-assign-layouts --kgpu-pipeline-loops=num-stages=3 --kgpu-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-DAG: #[[FA:.*]] = #kgpu.mma_operand<{operand = 0, warpsM = 2, warpsN = 2, numWarps = 4, bits = 16}>
// CHECK-DAG: #[[FB:.*]] = #kgpu.mma_operand<{operand = 1, warpsM = 2, warpsN = 2, numWarps = 4, bits = 16}>
// CHECK-LABEL: tile.func @four_k_steps
// CHECK: %[[RA:.*]] = kgpu.local_alloc : tensor<3x32x64xf16
// CHECK: %[[RB:.*]] = kgpu.local_alloc : tensor<3x64x32xf16
// Before the loop: slot 0 landed, its first K step read.
// CHECK: kgpu.async_wait 1
// CHECK-NEXT: %[[A0:.*]] = kgpu.local_load %[[RA]][%[[S0:.*]]] offsets [0, 0] : {{.*}} -> tensor<32x16xf16, #[[FA]]>
// CHECK-NEXT: %[[B0:.*]] = kgpu.local_load %[[RB]][%[[S0]]] offsets [0, 0] : {{.*}} -> tensor<16x32xf16, #[[FB]]>
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[READ:.*]] = %{{.*}}, %[[WRITE:.*]] = %{{.*}}, %[[A:.*]] = %[[A0]], %[[B:.*]] = %[[B0]])
// CHECK: %[[NEXT:.*]] = arith.select
// CHECK-NOT: kgpu.async_wait
// Step 1's fragments, read before step 0's dot; then the copies.
// CHECK: %[[A1:.*]] = kgpu.local_load %[[RA]][%[[READ]]] offsets [0, 16]
// CHECK-NEXT: %[[B1:.*]] = kgpu.local_load %[[RB]][%[[READ]]] offsets [16, 0]
// CHECK-NEXT: %[[D0:.*]] = tile.dot %[[A]], %[[B]], %[[ACC]] : tensor<32x16xf16, #[[FA]]> * tensor<16x32xf16, #[[FB]]>
// CHECK: kgpu.async_copy %{{.*}}, %[[RA]][%[[WRITE]]] if
// CHECK: kgpu.async_copy %{{.*}}, %[[RB]][%[[WRITE]]] if
// CHECK-NEXT: kgpu.async_commit
// CHECK-NEXT: %[[A2:.*]] = kgpu.local_load %[[RA]][%[[READ]]] offsets [0, 32]
// CHECK-NEXT: %[[B2:.*]] = kgpu.local_load %[[RB]][%[[READ]]] offsets [32, 0]
// CHECK-NEXT: %[[D1:.*]] = tile.dot %[[A1]], %[[B1]], %[[D0]]
// CHECK-NEXT: %[[A3:.*]] = kgpu.local_load %[[RA]][%[[READ]]] offsets [0, 48]
// CHECK-NEXT: %[[B3:.*]] = kgpu.local_load %[[RB]][%[[READ]]] offsets [48, 0]
// CHECK-NEXT: %[[D2:.*]] = tile.dot %[[A2]], %[[B2]], %[[D1]]
// The next slot landed: its first step is read before the last dot.
// CHECK-NEXT: kgpu.async_wait 1
// CHECK-NEXT: %[[NA:.*]] = kgpu.local_load %[[RA]][%[[NEXT]]] offsets [0, 0]
// CHECK-NEXT: %[[NB:.*]] = kgpu.local_load %[[RB]][%[[NEXT]]] offsets [0, 0]
// CHECK-NEXT: %[[D3:.*]] = tile.dot %[[A3]], %[[B3]], %[[D2]]
// CHECK: scf.yield %[[D3]], %{{.*}}, %{{.*}}, %[[NEXT]], %{{.*}}, %[[NA]], %[[NB]]
// CHECK: kgpu.async_wait 0


// The fragments are ldmatrix results kept packed two 16-bit values a
// register (<2 x f16>), also in the loop's carried values; each dot step is
// one K step of mma.sync (2 pieces of 16x8 per warp here).
// LLVM-LABEL: llvm.func @four_k_steps
// LLVM: "cp.async.wait_group 1;"
// LLVM-NEXT: nvvm.barrier0
// LLVM: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// LLVM: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// LLVM: scf.for {{.*}} -> ({{.*}}, !llvm.struct<(vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>)>, !llvm.struct<(vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>)>)
// LLVM-COUNT-2: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// LLVM-NOT: mma.sync
// LLVM: "cp.async.commit_group;"
// LLVM-COUNT-4: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// LLVM-NOT: mma.sync
// LLVM: "cp.async.wait_group 1;"
// LLVM-NEXT: nvvm.barrier0
// LLVM: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// LLVM: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// LLVM-COUNT-2: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// LLVM-NOT: mma.sync
// LLVM: scf.yield
tile.func @four_k_steps(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %rows = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ks = tile.splat %k : i32 -> tensor<32x1xi32>
  %arow = arith.muli %rows, %ks : tensor<32x1xi32>
  %acols = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %arowb = tile.broadcast %arow : tensor<32x1xi32> -> tensor<32x64xi32>
  %acolb = tile.broadcast %acols : tensor<1x64xi32> -> tensor<32x64xi32>
  %aoff = arith.addi %arowb, %acolb : tensor<32x64xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %a0 = tile.addptr %as, %aoff : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
  %brow = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %c32s = arith.constant dense<32> : tensor<64x1xi32>
  %brows = arith.muli %brow, %c32s : tensor<64x1xi32>
  %bcols = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %browb = tile.broadcast %brows : tensor<64x1xi32> -> tensor<64x32xi32>
  %bcolb = tile.broadcast %bcols : tensor<1x32xi32> -> tensor<64x32xi32>
  %boff = arith.addi %browb, %bcolb : tensor<64x32xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %step = arith.constant dense<64> : tensor<32x64xi32>
  %acc, %last = scf.for %i = %c0 to %k step %c64 iter_args(%sum = %zero, %ap = %a0) -> (tensor<32x32xf32>, tensor<32x64x!tile.ptr<f16>>) : i32 {
    %av = tile.load %ap : tensor<32x64x!tile.ptr<f16>>
    %boffk = arith.muli %i, %c32 : i32
    %bk = tile.splat %boffk : i32 -> tensor<64x32xi32>
    %bpk = tile.addptr %bp, %bk : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
    %bv = tile.load %bpk : tensor<64x32x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<32x64xf16> * tensor<64x32xf16> -> tensor<32x32xf32>
    %next = tile.addptr %ap, %step : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
    scf.yield %d, %next : tensor<32x32xf32>, tensor<32x64x!tile.ptr<f16>>
  }
  %crow = arith.constant dense<32> : tensor<32x1xi32>
  %crows = arith.muli %rows, %crow : tensor<32x1xi32>
  %crowb = tile.broadcast %crows : tensor<32x1xi32> -> tensor<32x32xi32>
  %ccolb = tile.broadcast %bcols : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %crowb, %ccolb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  tile.store %cp, %acc : tensor<32x32x!tile.ptr<f32>>
  tile.return
}

// A loop that also stores its product under a branch (a persistent
// program's epilogue: global memory only, never the rings) still carries
// its fragments; the store follows the last K step's dot.
// CHECK-LABEL: tile.func @epilogue_in_loop
// CHECK: scf.for
// CHECK: kgpu.local_load %{{.*}} offsets [0, 16]
// CHECK: kgpu.async_wait 1
// CHECK: %[[LAST:.*]] = tile.dot
// CHECK: scf.if
// CHECK-NEXT: tile.store %{{.*}}, %[[LAST]]
// CHECK: scf.yield %[[LAST]]
tile.func @epilogue_in_loop(%a: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %b: !tile.ptr<f16> {tile.divisibility = 16 : i32}, %c: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %r64 = tile.range 0, 64 : tensor<64xi32>
  %r32 = tile.range 0, 32 : tensor<32xi32>
  %rows = tile.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ks = tile.splat %k : i32 -> tensor<32x1xi32>
  %arow = arith.muli %rows, %ks : tensor<32x1xi32>
  %acols = tile.expand_dims %r64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %arowb = tile.broadcast %arow : tensor<32x1xi32> -> tensor<32x64xi32>
  %acolb = tile.broadcast %acols : tensor<1x64xi32> -> tensor<32x64xi32>
  %aoff = arith.addi %arowb, %acolb : tensor<32x64xi32>
  %as = tile.splat %a : !tile.ptr<f16> -> tensor<32x64x!tile.ptr<f16>>
  %a0 = tile.addptr %as, %aoff : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
  %brow = tile.expand_dims %r64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %c32s = arith.constant dense<32> : tensor<64x1xi32>
  %brows = arith.muli %brow, %c32s : tensor<64x1xi32>
  %bcols = tile.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %browb = tile.broadcast %brows : tensor<64x1xi32> -> tensor<64x32xi32>
  %bcolb = tile.broadcast %bcols : tensor<1x32xi32> -> tensor<64x32xi32>
  %boff = arith.addi %browb, %bcolb : tensor<64x32xi32>
  %bs = tile.splat %b : !tile.ptr<f16> -> tensor<64x32x!tile.ptr<f16>>
  %bp = tile.addptr %bs, %boff : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
  %step = arith.constant dense<64> : tensor<32x64xi32>
  %crow = arith.constant dense<32> : tensor<32x1xi32>
  %crows = arith.muli %rows, %crow : tensor<32x1xi32>
  %crowb = tile.broadcast %crows : tensor<32x1xi32> -> tensor<32x32xi32>
  %ccolb = tile.broadcast %bcols : tensor<1x32xi32> -> tensor<32x32xi32>
  %coff = arith.addi %crowb, %ccolb : tensor<32x32xi32>
  %cs = tile.splat %c : !tile.ptr<f32> -> tensor<32x32x!tile.ptr<f32>>
  %cp = tile.addptr %cs, %coff : tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>
  %acc, %last = scf.for %i = %c0 to %k step %c64 iter_args(%sum = %zero, %ap = %a0) -> (tensor<32x32xf32>, tensor<32x64x!tile.ptr<f16>>) : i32 {
    %av = tile.load %ap : tensor<32x64x!tile.ptr<f16>>
    %boffk = arith.muli %i, %c32 : i32
    %bk = tile.splat %boffk : i32 -> tensor<64x32xi32>
    %bpk = tile.addptr %bp, %bk : tensor<64x32x!tile.ptr<f16>>, tensor<64x32xi32>
    %bv = tile.load %bpk : tensor<64x32x!tile.ptr<f16>>
    %d = tile.dot %av, %bv, %sum : tensor<32x64xf16> * tensor<64x32xf16> -> tensor<32x32xf32>
    %to = arith.addi %i, %c64 : i32
    %final = arith.cmpi sge, %to, %k : i32
    scf.if %final {
      tile.store %cp, %d : tensor<32x32x!tile.ptr<f32>>
    }
    %next = tile.addptr %ap, %step : tensor<32x64x!tile.ptr<f16>>, tensor<32x64xi32>
    scf.yield %d, %next : tensor<32x32xf32>, tensor<32x64x!tile.ptr<f16>>
  }
  tile.return
}
