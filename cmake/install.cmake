# Installation: headers, libraries, the CLI, the drop-in, a pkg-config file and a CMake package.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/plans/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/plans
        FILES_MATCHING PATTERN "*.xml")

# libkiln.so and the synthesizer's static library over it (kiln::kiln, kiln::kiln_synth).
set(KILN_EXPORTED kiln_shared)
if(TARGET kiln_synth)
  list(APPEND KILN_EXPORTED kiln_synth)
endif()
set(KILN_CONFIG_NEEDS_CUDA ${KILN_HAVE_CUDA})
install(TARGETS ${KILN_EXPORTED} EXPORT kilnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kilnConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kilnConfig.cmake ${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

# kiln.pc: libkiln.so and the synthesizer's static library with what it needs, so that
# `pkg-config --libs kiln` links as it stands. The prefix is found from the file's own place
# (${pcfiledir}), so that it holds wherever `cmake --install --prefix` puts the tree.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(KILN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  set(KILN_PC_PREFIX "\${pcfiledir}/..")
  string(REGEX MATCHALL "[^/]+" kiln_pc_parts "${CMAKE_INSTALL_LIBDIR}")
  foreach(part ${kiln_pc_parts})
    string(APPEND KILN_PC_PREFIX "/..")
  endforeach()
endif()
# libdir and includedir: below the prefix, or as given where absolute
set(KILN_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
set(KILN_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(KILN_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(KILN_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(KILN_PC_DESCRIPTION "synthesized collective-communication algorithms (TACCL method): formats, verifier, simulator")
set(KILN_PC_LIBS "-lkiln")
set(KILN_PC_CFLAGS "")
if(TARGET kiln_synth)
  # The synthesizer is a static library: GLPK comes with it.
  set(KILN_PC_DESCRIPTION "${KILN_PC_DESCRIPTION}, synthesizer")
  set(KILN_PC_LIBS "-lkiln_synth ${KILN_PC_LIBS} -lglpk -lm")
endif()
if(KILN_HAVE_CUDA)
  # kiln/runtime.h works on the CUDA runtime's streams and NCCL's communicators: their headers and
  # libraries where the build found them.
  get_filename_component(kiln_nccl_dir "${NCCL_LIBRARY}" DIRECTORY)
  set(KILN_PC_DESCRIPTION "${KILN_PC_DESCRIPTION}, GPU runtime over NCCL")
  string(APPEND KILN_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -L${kiln_nccl_dir} -lnccl")
  list(TRANSFORM CUDAToolkit_INCLUDE_DIRS PREPEND " -I" OUTPUT_VARIABLE kiln_cuda_inc)
  list(JOIN kiln_cuda_inc "" kiln_cuda_inc)
  set(KILN_PC_CFLAGS "${kiln_cuda_inc} -I${NCCL_INCLUDE_DIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
