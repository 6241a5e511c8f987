// The CPU interpreter's programs: a tile-dialect module run program by
// program on the host, with the semantics the tile dialect documents. Part
// of the kiln_interp library, which links the compiler (it reads tile IR);
// the GPU runtime alone does not. Public header: no MLIR.
#pragma once

#include <kiln/module.h>
#include <kiln/program.h>

namespace kiln {

/// The interpreter's program of the kernel in `module` (traced or at the
/// tile stage; lowered to the tile stage here), whose parameters are
/// `parameters`. Its launches run at once, on Device::interp() streams,
/// with host memory; device prints go to standard output. Throws
/// kiln::Error naming an operation the interpreter does not know.
std::shared_ptr<const Program> interpret(const Module &module, std::span<const ElementType> parameters);

} // namespace kiln
