// Checks every device's launches share. Internal to runtime/.
#pragma once

#include <kiln/dtype.h>
#include <kiln/runtime.h>

#include <string>

namespace kiln {

/// The 8 bytes a GPU kernel's parameter of `type` takes from `arg`, as its
/// launch passes them (little endian, the value's own bytes first): memory
/// of the launching `device`'s kind, an integer that fits the parameter's
/// width, an f32 or f64. Throws kiln::Error naming argument `index` of
/// `kernel` that does not fit.
uint64_t parameter_slot(const ElementType &type, const Arg &arg, size_t index, const std::string &kernel,
                        DeviceKind device);

/// A launch of a kernel compiled for clusters of `size` programs must hold
/// whole clusters along x (the driver would refuse it less plainly).
void check_whole_clusters(const std::string &name, const Grid &grid, int size);

} // namespace kiln
