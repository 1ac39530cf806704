# `cmake --install`: headers, the library and a CMake package for find_package(wick).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS wick wick_options EXPORT wickTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/wick DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT wickTargets NAMESPACE wick:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/wick)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/wickConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/wickConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/wick)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/wickConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/wickConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/wickConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/wick)
