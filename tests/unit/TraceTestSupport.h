// Helpers for tests that trace small kernels and look at their IR.
#pragma once

#include <kiln/kiln.h>

#include <gtest/gtest.h>

#include <string>

namespace kiln::testing {

/// The IR of `kernel` traced for `config` (no passes run).
inline std::string trace_ir(const Kernel &kernel, const Config &config = {}) {
  return kernel.trace(config).str();
}

/// Traces `fn` as a kernel and returns its IR.
template <class Fn> std::string trace_ir(Fn fn, const Config &config = {}) {
  return trace_ir(jit(fn, "test_kernel"), config);
}

/// Traces `fn`, which must fail; returns the TraceError.
template <class Fn> TraceError trace_error(Fn fn, const Config &config = {}) {
  try {
    jit(fn, "test_kernel").trace(config);
  } catch (const TraceError &error) {
    return error;
  }
  ADD_FAILURE() << "tracing succeeded but an error was expected";
  return TraceError(Loc::current(), "no error");
}

/// Whether `text` contains `needle`, with a readable failure.
inline ::testing::AssertionResult contains(const std::string &text, const std::string &needle) {
  if (text.find(needle) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << needle << "' not found in:\n" << text;
}

/// How many times `needle` occurs in `text` (IR, PTX).
inline size_t occurrences(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

} // namespace kiln::testing

/// Checks that `error` points at this file and `line`, and mentions `text`.
#define EXPECT_ERROR_AT(error, line, text)                                                       \
  do {                                                                                           \
    const ::kiln::TraceError &e_ = (error);                                                      \
    EXPECT_STREQ(e_.file(), __FILE__);                                                           \
    EXPECT_EQ(e_.line(), static_cast<unsigned>(line)) << e_.what();                              \
    EXPECT_TRUE(::kiln::testing::contains(e_.what(), text));                                     \
  } while (0)
