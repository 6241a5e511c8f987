// Kiln's exceptions. Public header: no MLIR.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

namespace kiln {

/// Any error Kiln reports: bad input, a failed compile, a missing driver.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A mistake in a kernel found while tracing it: `what()` reads
/// "file:line: error: message", naming the user's own source line; with no
/// location (a library's own kernel, see LibraryScope), the message alone.
class TraceError : public Error {
public:
  TraceError(std::source_location where, const std::string &message);
  const std::string &message() const { return message_; }
  const char *file() const { return file_; }
  unsigned line() const { return line_; }

private:
  std::string message_;
  const char *file_;
  unsigned line_;
};

} // namespace kiln
