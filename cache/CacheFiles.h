// What the two stores share inside cache/ beyond cache.h's trust rules.
#pragma once

#include <string_view>

namespace kiln {

/// Writes all of `data` to `fd` (retrying short and interrupted writes):
/// 0, or the errno of the failure.
int write_all(int fd, std::string_view data);

} // namespace kiln
