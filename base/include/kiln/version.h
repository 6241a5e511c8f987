// Kiln's version: part of every cache key, so caches never mix the output of
// two compilers.
#pragma once

#include <string>

namespace kiln {

/// "0.1.0+<git revision>" of the build.
const char *version();

} // namespace kiln
