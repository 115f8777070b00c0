# cmake --install: header, both libraries, lockweave-gen, lockweave-ctl,
# their man pages, the CMake package (exported targets under lockweave::,
# lockweave_generate()) and lockweave.pc.
include(CMakePackageConfigHelpers)

set(LW_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lockweave)

install(FILES ${PROJECT_SOURCE_DIR}/include/lockweave.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS lockweave lockweave_static EXPORT lockweaveTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT lockweaveTargets NAMESPACE lockweave:: DESTINATION ${LW_CMAKE_DIR})

# The commands' man pages (lockweave-gen's only when it is built).
set(LW_MAN_PAGES ${PROJECT_SOURCE_DIR}/docs/man/lockweave-ctl.1)
if(TARGET lockweave-gen)
  list(APPEND LW_MAN_PAGES ${PROJECT_SOURCE_DIR}/docs/man/lockweave-gen.1)
endif()
install(FILES ${LW_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/lockweaveConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lockweaveConfig.cmake
  INSTALL_DESTINATION ${LW_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/lockweaveConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
set(LW_PACKAGE_FILES
  ${PROJECT_BINARY_DIR}/lockweaveConfig.cmake
  ${PROJECT_BINARY_DIR}/lockweaveConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/lockweaveHiredis.cmake)
if(EXISTS ${PROJECT_SOURCE_DIR}/cmake/LockweaveGenerate.cmake)
  list(APPEND LW_PACKAGE_FILES ${PROJECT_SOURCE_DIR}/cmake/LockweaveGenerate.cmake)
endif()
install(FILES ${LW_PACKAGE_FILES} DESTINATION ${LW_CMAKE_DIR})

# pkg-config: the shared library by default; --static adds hiredis, OpenSSL and
# pthread for the archive.  The prefix is found relative to the .pc file, so
# `cmake --install --prefix` anywhere gives a working package.
file(RELATIVE_PATH LW_PC_UP /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
set(LW_PC_PREFIX "\${pcfiledir}/${LW_PC_UP}")
# Outside the directories the linker and loader search anyway (/usr/lib...),
# the program must say where liblockweave.so is: the package carries the
# rpath, so a program built from it runs without LD_LIBRARY_PATH.
set(LW_PC_RPATH "-Wl,-rpath,\${libdir}")
if("${CMAKE_INSTALL_FULL_LIBDIR}" IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
  set(LW_PC_RPATH "")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/lockweave.pc.in
               ${PROJECT_BINARY_DIR}/lockweave.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/lockweave.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
