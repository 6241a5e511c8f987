# `cmake --install build --prefix P`: Kiln's public headers, its three
# libraries, the tools, and what other build systems find them by: a CMake
# package (find_package(Kiln CONFIG): Kiln::kiln, the DSL and its JIT;
# Kiln::runtime, launching compiled kernels without a compiler; Kiln::ops,
# the ops library's C++ API and C ABI) and pkg-config files (kiln_ops.pc
# for the C ABI, kiln.pc for the DSL).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_kiln_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/Kiln")

# Installed libraries find each other beside them and LLVM/MLIR where this
# build linked them (the system's, or none in a static build); programs
# find the libraries in ../lib.
set_target_properties(kiln kiln_runtime_shared kiln_ops PROPERTIES
  INSTALL_RPATH "\$ORIGIN" INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(kiln_runtime_shared PROPERTIES EXPORT_NAME runtime)
set_target_properties(kiln_ops PROPERTIES EXPORT_NAME ops)
foreach(_library kiln kiln_runtime_shared kiln_ops)
  target_include_directories(${_library} INTERFACE "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  target_compile_features(${_library} INTERFACE cxx_std_20)
endforeach()
install(TARGETS kiln kiln_runtime_shared kiln_ops EXPORT KilnTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")

# One include folder: kiln/*.h from every layer's public headers, kiln/ops/
# and kiln_ops.h (the C ABI).
foreach(_folder base cache runtime compiler dsl autotune ops)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/${_folder}/include/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
endforeach()

set(_kiln_tools autotune kiln-info)
foreach(_tool kilnc kiln-opt)
  if(TARGET ${_tool})
    list(APPEND _kiln_tools ${_tool})
  endif()
endforeach()
set_target_properties(${_kiln_tools} PROPERTIES
  INSTALL_RPATH "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR}" INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS ${_kiln_tools} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(FILES "${PROJECT_SOURCE_DIR}/ops/python/kiln_ops.py" DESTINATION "${CMAKE_INSTALL_DATADIR}/kiln/python")

install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION "${_kiln_cmake_dir}")
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/KilnConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/KilnConfig.cmake" INSTALL_DESTINATION "${_kiln_cmake_dir}")
# (0.x: a minor version may change the interfaces.)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/KilnConfig.cmake" "${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake"
  DESTINATION "${_kiln_cmake_dir}")

# (pkg-config files name their prefix from where they lie: the install
# prefix is chosen at install time.)
string(REGEX MATCHALL "[^/]+" _kiln_pc_depth "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
list(TRANSFORM _kiln_pc_depth REPLACE ".+" "..")
list(JOIN _kiln_pc_depth "/" KILN_PC_PREFIX)
foreach(_pc kiln kiln_ops)
  configure_file("${CMAKE_CURRENT_LIST_DIR}/${_pc}.pc.in" "${PROJECT_BINARY_DIR}/${_pc}.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/${_pc}.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endforeach()
