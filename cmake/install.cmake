# Installation: headers, libraries, the CLI, the drop-in, a pkg-config file and a CMake package.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/plans/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/plans
        FILES_MATCHING PATTERN "*.xml")

set(KILN_EXPORTED kiln_core)
if(TARGET kiln_synth)
  list(APPEND KILN_EXPORTED kiln_synth)
endif()
foreach(t kiln_registry kiln_runtime kiln_shared)
  if(TARGET ${t})
    list(APPEND KILN_EXPORTED ${t})
  endif()
endforeach()
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

set(KILN_PC_LIBS "-lkiln_core")
if(TARGET kiln_synth)
  set(KILN_PC_LIBS "-lkiln_synth ${KILN_PC_LIBS} -lglpk")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
