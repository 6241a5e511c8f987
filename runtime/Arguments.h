// Checks every device's launches share. Internal to runtime/.
#pragma once

#include <kiln/runtime.h>

#include <string>

namespace kiln {

/// A launch of a kernel compiled for clusters of `size` programs must hold
/// whole clusters along x (the driver would refuse it less plainly).
void check_whole_clusters(const std::string &name, const Grid &grid, int size);

} // namespace kiln
