// The sanitizers' defaults for Kiln's sanitized programs (the unit tests of
// build-sanitize/ and the fuzzers), so that a run by hand reports as ctest's
// does; ASAN_OPTIONS and UBSAN_OPTIONS still override them. Reports name
// source lines through LLVM's symbolizer of clang's release (KILN_SYMBOLIZER).

extern "C" const char *__asan_default_options() { return "external_symbolizer_path=" KILN_SYMBOLIZER; }

extern "C" const char *__ubsan_default_options() {
  return "print_stacktrace=1:external_symbolizer_path=" KILN_SYMBOLIZER;
}
