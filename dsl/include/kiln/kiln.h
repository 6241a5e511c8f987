// Kiln: block-level GPU kernels in C++. The one header users include.
//
//   #include <kiln/kiln.h>
//   using namespace kiln;
//
//   void add(const Config& cfg, ConstPtr<f32> x, ConstPtr<f32> y, Ptr<f32> out, Int n) {
//     int64_t BLOCK = cfg["BLOCK"];
//     Tensor offs = program_id(0) * BLOCK + arange(0, BLOCK);
//     Tensor mask = offs < n;
//     store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
//   }
//   Kernel kernel = jit(add, "vector_add").defaults({{"BLOCK", 1024}});
//
// See docs/dsl.md.
#pragma once

#include <kiln/config.h>
#include <kiln/control.h>
#include <kiln/descriptor.h>
#include <kiln/dtype.h>
#include <kiln/error.h>
#include <kiln/kernel.h>
#include <kiln/module.h>
#include <kiln/ops.h>
#include <kiln/registry.h>
#include <kiln/tensor.h>
