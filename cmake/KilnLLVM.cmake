# Finds LLVM/MLIR 22 (Debian's llvm-22 prefix) and provides kiln_link_mlir(),
# which links a target against MLIR/LLVM either through the shared libraries
# (default: fast links for development and CI) or statically
# (KILN_STATIC_LLVM=ON: self-contained binaries for the GPU machine, which has
# no LLVM installed).

set(KILN_LLVM_PREFIX "/usr/lib/llvm-22" CACHE PATH "Prefix of the LLVM/MLIR 22 installation")
find_package(MLIR REQUIRED CONFIG HINTS "${KILN_LLVM_PREFIX}/lib/cmake/mlir" NO_DEFAULT_PATH)
if(NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR "Kiln needs LLVM/MLIR 22, found ${LLVM_PACKAGE_VERSION} in ${MLIR_DIR}")
endif()
message(STATUS "Kiln: MLIR from ${MLIR_DIR}, LLVM ${LLVM_PACKAGE_VERSION}")

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
include(TableGen)
include(AddLLVM)
include(AddMLIR)

# MLIR/LLVM headers are private to the targets that implement Kiln: public
# headers never see them (users' compile times; checked by
# tests/unit/public_headers_test.cpp, which is built without them).
separate_arguments(KILN_LLVM_DEFINITIONS UNIX_COMMAND "${LLVM_DEFINITIONS}")
function(kiln_use_mlir_headers target)
  target_include_directories(${target} SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  target_compile_definitions(${target} PRIVATE ${KILN_LLVM_DEFINITIONS})
endfunction()

set(KILN_LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}")
find_program(KILN_LIT lit HINTS "${KILN_LLVM_TOOLS_DIR}" NO_DEFAULT_PATH REQUIRED)
find_program(KILN_FILECHECK FileCheck HINTS "${KILN_LLVM_TOOLS_DIR}" NO_DEFAULT_PATH REQUIRED)

# Link with LLVM's own lld when it is there: the MLIR-heavy binaries link in a
# fraction of GNU ld's time. GCC finds "ld.lld" through -B, so point it at a
# folder that holds only that one link.
find_program(KILN_LLD ld.lld HINTS "${KILN_LLVM_TOOLS_DIR}" NO_DEFAULT_PATH)
if(KILN_LLD)
  set(_kiln_linker_dir "${CMAKE_BINARY_DIR}/linker")
  file(MAKE_DIRECTORY "${_kiln_linker_dir}")
  file(CREATE_LINK "${KILN_LLD}" "${_kiln_linker_dir}/ld.lld" SYMBOLIC)
  add_link_options("-B${_kiln_linker_dir}" "-fuse-ld=lld")
endif()
add_link_options("-Wl,--as-needed")

# The LLVM components Kiln uses directly (the NVPTX and AMDGPU back ends, IR
# passes); in static mode these replace the LLVM dylib everywhere.
set(KILN_LLVM_COMPONENTS
  Core Support Passes Analysis TransformUtils IPO Target MC CodeGen
  NVPTXCodeGen NVPTXDesc NVPTXInfo)
if(KILN_AMDGPU)
  list(APPEND KILN_LLVM_COMPONENTS AMDGPUCodeGen AMDGPUDesc AMDGPUInfo)
endif()

if(KILN_STATIC_LLVM)
  # Debian's MLIR targets name the LLVM dylib ("LLVM") in their link
  # interface; mixing it with static component libraries registers LLVM's
  # command-line options twice and aborts at start. Rewrite every exported MLIR
  # target to use the static components instead.
  llvm_map_components_to_libnames(_kiln_llvm_static_libs ${KILN_LLVM_COMPONENTS})
  foreach(_target IN LISTS MLIR_EXPORTED_TARGETS)
    if(NOT TARGET ${_target})
      continue()
    endif()
    get_target_property(_type ${_target} TYPE)
    if(NOT _type STREQUAL "STATIC_LIBRARY" AND NOT _type STREQUAL "INTERFACE_LIBRARY")
      continue()
    endif()
    get_target_property(_libs ${_target} INTERFACE_LINK_LIBRARIES)
    if(_libs)
      list(TRANSFORM _libs REPLACE "^LLVM$" "${_kiln_llvm_static_libs}")
      set_target_properties(${_target} PROPERTIES INTERFACE_LINK_LIBRARIES "${_libs}")
    endif()
  endforeach()
  # z3 is an optional solver LLVMSupport names in its interface; Kiln never
  # calls it, and the GPU machine does not have it.
  get_target_property(_support_libs LLVMSupport INTERFACE_LINK_LIBRARIES)
  list(FILTER _support_libs EXCLUDE REGEX "z3")
  set_target_properties(LLVMSupport PROPERTIES INTERFACE_LINK_LIBRARIES "${_support_libs}")
endif()

# kiln_link_mlir(<target> <PUBLIC|PRIVATE> <MLIR static libraries...>)
# Links <target> against the named MLIR libraries (static mode) or against the
# MLIR and LLVM shared libraries that contain them (default mode).
function(kiln_link_mlir target visibility)
  kiln_use_mlir_headers(${target})
  if(KILN_STATIC_LLVM)
    llvm_map_components_to_libnames(_llvm_libs ${KILN_LLVM_COMPONENTS})
    target_link_libraries(${target} ${visibility} ${ARGN} ${_llvm_libs})
  else()
    target_link_libraries(${target} ${visibility} MLIR LLVM)
  endif()
endfunction()

