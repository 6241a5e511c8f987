// An AMD target's lowering (kgpu.target gfx942: 64-lane wavefronts): the
// kernel is a workgroup of num_warps wavefronts, program ids are workgroup
// ids and the program count comes from the dispatch packet; global memory
// is plain LLVM loads, stores and atomics of address space 1 (16-byte
// vectors, a branch where masked); lanes exchange values by ds_bpermute,
// warps through LDS between workgroup barriers; no inline PTX.
// RUN: kiln-opt %s --kgpu-to-llvm | FileCheck %s --implicit-check-not=llvm.inline_asm --implicit-check-not=nvvm.

#b4 = #kgpu.blocked<{sizePerThread = [4], threadsPerWarp = [64], warpsPerCTA = [4], order = [0]}>
module attributes {kgpu.num_warps = 4 : i32, kgpu.threads_per_warp = 64 : i32, kgpu.target = "gfx942"} {
  // The LDS the program needs, allocated with the workgroup.
  // CHECK: llvm.mlir.global internal @kiln_shared_memory() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<16 x i8>
  // CHECK: llvm.func @amd({{.*}}) attributes {rocdl.flat_work_group_size = "256,256", rocdl.kernel, rocdl.reqd_work_group_size = array<i32: 256, 1, 1>}
  tile.func @amd(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32},
                 %n: i32 {tile.divisibility = 16 : i32}) {
    // CHECK: rocdl.workgroup.id.x : i32
    %pid = tile.program_id x : i32
    // The grid's work-items (the packet's grid_size_x, at byte 12) over the workgroup's.
    // CHECK: %[[PACKET:.*]] = llvm.call_intrinsic "llvm.amdgcn.dispatch.ptr"() : () -> !llvm.ptr<4>
    // CHECK: %[[TWELVE:.*]] = llvm.mlir.constant(12 : i32)
    // CHECK: %[[FIELD:.*]] = llvm.getelementptr %[[PACKET]][%[[TWELVE]]]
    // CHECK: %[[ITEMS:.*]] = llvm.load %[[FIELD]] invariant {alignment = 4 : i64} : !llvm.ptr<4> -> i32
    // CHECK: %[[THREADS:.*]] = llvm.mlir.constant(256 : i32)
    // CHECK: llvm.udiv %[[ITEMS]], %[[THREADS]]
    %np = tile.num_programs x : i32
    %c1024 = arith.constant 1024 : i32
    %base = arith.muli %pid, %c1024 : i32
    %r = tile.range 0, 1024 : tensor<1024xi32, #b4>
    %bs = tile.splat %base : i32 -> tensor<1024xi32, #b4>
    %off = arith.addi %bs, %r : tensor<1024xi32, #b4>
    %ns = tile.splat %n : i32 -> tensor<1024xi32, #b4>
    %m = arith.cmpi slt, %off, %ns : tensor<1024xi32, #b4>
    %xs = tile.splat %x : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>, #b4>
    %px = tile.addptr %xs, %off : tensor<1024x!tile.ptr<f32>, #b4>, tensor<1024xi32, #b4>
    // CHECK: rocdl.workitem.id.x
    // A masked 16-byte load: zeros where the mask is off.
    // CHECK: %[[ZEROS:.*]] = llvm.mlir.zero : vector<4xf32>
    // CHECK: scf.if %{{.*}} -> (vector<4xf32>) {
    // CHECK-NEXT: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
    // CHECK: } else {
    // CHECK-NEXT: scf.yield %[[ZEROS]]
    %a = tile.load %px, %m : tensor<1024x!tile.ptr<f32>, #b4>
    // Across the wavefront's 64 lanes (6 steps), then its 4 wavefronts through LDS.
    // CHECK-COUNT-6: rocdl.ds_bpermute
    // CHECK: scf.if
    // CHECK-NEXT: llvm.store %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<3>
    // CHECK: llvm.fence syncscope("workgroup") release
    // CHECK-NEXT: rocdl.s.barrier
    // CHECK-NEXT: llvm.fence syncscope("workgroup") acquire
    // CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
    %s = tile.reduce(%a) axis = 0 : (tensor<1024xf32, #b4>) -> f32 {
    ^bb0(%l: f32, %rr: f32):
      %t = arith.addf %l, %rr : f32
      tile.reduce.return %t : f32
    }
    %e = math.exp %s : f32
    %ys = tile.splat %y : !tile.ptr<f32> -> tensor<1024x!tile.ptr<f32>, #b4>
    %py = tile.addptr %ys, %off : tensor<1024x!tile.ptr<f32>, #b4>, tensor<1024xi32, #b4>
    // CHECK: scf.if
    // CHECK-NEXT: llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
    tile.store %py, %a, %m : tensor<1024x!tile.ptr<f32>, #b4>
    // A scalar atomic by the first work-item, at the device's scope.
    // CHECK: scf.if %{{.*}} -> (f32) {
    // CHECK-NEXT: llvm.atomicrmw fadd %{{.*}} syncscope("agent") monotonic : !llvm.ptr<1>, f32
    %old = tile.atomic_rmw fadd, %y, %e sem = relaxed scope = gpu : !tile.ptr<f32>
    tile.return
  }
}
