//===- Error.cpp - Kiln's exceptions --------------------------------------===//

#include <kiln/error.h>

namespace kiln {

namespace {
bool hasFile(std::source_location where) { return where.file_name() && *where.file_name(); }
} // namespace

TraceError::TraceError(std::source_location where, const std::string &message)
    : Error(hasFile(where) ? std::string(where.file_name()) + ":" + std::to_string(where.line()) + ": error: " + message
                           : message),
      message_(message), file_(where.file_name()), line_(where.line()) {}

} // namespace kiln
