//===- Error.cpp - Kiln's exceptions --------------------------------------===//

#include <kiln/error.h>

namespace kiln {

TraceError::TraceError(std::source_location where, const std::string &message)
    : Error(std::string(where.file_name()) + ":" + std::to_string(where.line()) +
            ": error: " + message),
      message_(message), file_(where.file_name()), line_(where.line()) {}

} // namespace kiln
