# KILN_SANITIZE=ON (scripts/build-sanitizers.sh, into build-sanitize/): the
# parts of Kiln that take input from outside -- the ops library with its C
# ABI and expression parser, the kernel cache and tuning store, the DSL's
# launch path, the CPU interpreter -- built with AddressSanitizer and
# UndefinedBehaviorSanitizer and libFuzzer's coverage, for the sanitized unit
# tests (tests/unit) and the fuzzers (fuzz/). libFuzzer needs clang.
#
# kiln_sanitize(<target>...) instruments a target's own sources. The
# compiler's MLIR-heavy sources (kiln_compiler) are left as they are: they
# read nothing from outside, and instrumenting them would only slow the
# build (LLVM's and MLIR's own libraries are not instrumented either).

if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "KILN_SANITIZE needs clang (libFuzzer): configure with "
                      "-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 (scripts/build-sanitizers.sh)")
endif()
if(KILN_STATIC_LLVM)
  message(FATAL_ERROR "KILN_SANITIZE and KILN_STATIC_LLVM do not go together")
endif()

set(KILN_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all)

# Every binary links the sanitizers' runtime as a shared library, so that
# libkiln.so and libkiln_ops.so keep linking with -Wl,--no-undefined and the
# programs and both libraries share one runtime. The runtime lives in
# clang's own folder: programs find it through their rpath.
add_link_options(${KILN_SANITIZE_FLAGS} -shared-libasan)
execute_process(COMMAND "${CMAKE_CXX_COMPILER}" -print-runtime-dir
                OUTPUT_VARIABLE KILN_SANITIZER_RUNTIME_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
list(APPEND CMAKE_BUILD_RPATH "${KILN_SANITIZER_RUNTIME_DIR}")

# libFuzzer, which fuzzers link after their objects: with -fsanitize=fuzzer
# the driver would put it (and libstdc++) before the shared sanitizer
# runtime, which must come first.
set(KILN_LIBFUZZER "${KILN_SANITIZER_RUNTIME_DIR}/libclang_rt.fuzzer-${CMAKE_SYSTEM_PROCESSOR}.a")
if(NOT EXISTS "${KILN_LIBFUZZER}")
  message(FATAL_ERROR "KILN_SANITIZE: no libFuzzer at ${KILN_LIBFUZZER} (scripts/install-deps.sh --sanitizers)")
endif()

# Sanitizer reports name source lines through LLVM's symbolizer (the one
# of clang's own release reads its debug info).
find_program(KILN_SYMBOLIZER llvm-symbolizer HINTS "${KILN_LLVM_TOOLS_DIR}" NO_DEFAULT_PATH REQUIRED)

function(kiln_sanitize)
  foreach(target IN LISTS ARGN)
    # -O1: the sanitizers' usual level (quick enough to run, with stack
    # traces that keep their frames); coverage for libFuzzer's guidance.
    target_compile_options(${target} PRIVATE ${KILN_SANITIZE_FLAGS} -fsanitize=fuzzer-no-link
                           -fno-omit-frame-pointer -gline-tables-only -O1)
  endforeach()
endfunction()
