// Turns need named barriers past the program's barrier 0, one a consumer
// warpgroup, within the 16 a program has; a pass is from the last
// warpgroup only or from all but the last, not both.
// RUN: kiln-opt %s --split-input-file --verify-diagnostics

module attributes {kgpu.num_warps = 8 : i32} {
  tile.func @f() {
    // expected-error @+1 {{needs named barriers 0..1 within 1..15}}
    kgpu.wait_turn 0
    tile.return
  }
}

// -----

module attributes {kgpu.num_warps = 16 : i32} {
  tile.func @f() {
    // expected-error @+1 {{needs named barriers 13..16 within 1..15}}
    kgpu.pass_turn 13
    tile.return
  }
}

// -----

module attributes {kgpu.num_warps = 8 : i32} {
  tile.func @f() {
    // expected-error @+1 {{cannot pass the turn from only the last warpgroup and from all but the last at once}}
    kgpu.pass_turn 1 {only_last, except_last}
    tile.return
  }
}
