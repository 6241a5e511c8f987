// The consumer warpgroups take turns through named barriers: warpgroup
// w = tid / 128 waits on barrier 1 + w with the two warpgroups' 256 threads
// (bar.sync) and passes the turn on with bar.arrive on the next one's,
// 1 + (w + 1) mod n; `only_last` and `except_last` predicate the pass on
// being, or not being, the last warpgroup. One warpgroup has no turns.
// RUN: kiln-opt %s --kgpu-to-llvm --split-input-file | FileCheck %s

// CHECK-LABEL: llvm.func @turns
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x
// CHECK: %[[WG:.*]] = llvm.udiv %[[TID]], %{{.*}}
// CHECK: %[[ID:.*]] = llvm.add %[[WG]], %{{.*}}
// CHECK: nvvm.barrier id = %[[ID]] number_of_threads = %{{.*}}
// CHECK: %[[LAST:.*]] = llvm.icmp "eq" %{{.*}}, %{{.*}}
// CHECK: %[[PRED:.*]] = llvm.zext %[[LAST]]
// CHECK: llvm.select %[[LAST]]
// CHECK: llvm.inline_asm {{.*}}"{ .reg .pred p; setp.ne.b32 p, $0, 0; @p bar.arrive $1, 256; }", "r,r" %[[PRED]]
// CHECK: llvm.icmp "ne"
// CHECK: llvm.inline_asm {{.*}}bar.arrive $1, 256;
// CHECK: llvm.inline_asm {{.*}}bar.arrive $1, 256;
// CHECK-NOT: bar.arrive
module attributes {kgpu.num_warps = 8 : i32, kgpu.producer_warps = 4 : i32, kgpu.target = "sm_90a", kgpu.threads_per_warp = 32 : i32} {
  tile.func @turns() {
    kgpu.wait_turn 1
    kgpu.pass_turn 1 {only_last}
    kgpu.pass_turn 1 {except_last}
    kgpu.pass_turn 1
    tile.return
  }
}

// -----

// CHECK-LABEL: llvm.func @one_warpgroup
// CHECK-NOT: nvvm.barrier
// CHECK-NOT: bar.arrive
// CHECK: llvm.return
module attributes {kgpu.num_warps = 4 : i32, kgpu.producer_warps = 4 : i32, kgpu.target = "sm_90a", kgpu.threads_per_warp = 32 : i32} {
  tile.func @one_warpgroup() {
    kgpu.wait_turn 1
    kgpu.pass_turn 1
    tile.return
  }
}
