// Kiln's version: part of every cache key, so caches never mix the output of
// two compilers.
#pragma once

#include <string>

namespace kiln {

/// "0.1.0+<git revision>" of the build.
const char *version();

/// The build ID of the library holding Kiln's compiler (hex): it changes
/// with every rebuild, so caches never reuse code from another build.
const std::string &build_id();

} // namespace kiln
