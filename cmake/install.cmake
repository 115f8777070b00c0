# cmake --install: header, both libraries, lockweave-gen, lockweave-ctl,
# their man pages, the CMake package (exported targets under lockweave::,
# lockweave_generate()) and lockweave.pc.  Each file belongs to one
# component, one Debian package each (cmake/package.cmake): runtime (the
# shared library), dev (everything to build against it), tools (the
# commands and their man pages).
include(CMakePackageConfigHelpers)

set(LW_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lockweave)

# <lockweave.hpp>: the header-only C++17 layer over it.
install(FILES ${PROJECT_SOURCE_DIR}/include/lockweave.h
              ${PROJECT_SOURCE_DIR}/include/lockweave.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
# The event-loop adapters, header-only: their users link libuv or libevent.
install(FILES ${PROJECT_SOURCE_DIR}/include/lockweave/uv.h
              ${PROJECT_SOURCE_DIR}/include/lockweave/event.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lockweave COMPONENT dev)
install(TARGETS lockweave lockweave_static EXPORT lockweaveTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          COMPONENT runtime NAMELINK_COMPONENT dev
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT lockweaveTargets NAMESPACE lockweave:: DESTINATION ${LW_CMAKE_DIR}
        COMPONENT dev)

# The commands' man pages (lockweave-gen's only when it is built).
set(LW_MAN_PAGES ${PROJECT_SOURCE_DIR}/docs/man/lockweave-ctl.1)
if(TARGET lockweave-gen)
  list(APPEND LW_MAN_PAGES ${PROJECT_SOURCE_DIR}/docs/man/lockweave-gen.1)
endif()
install(FILES ${LW_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)

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
install(FILES ${LW_PACKAGE_FILES} DESTINATION ${LW_CMAKE_DIR} COMPONENT dev)

# pkg-config: the shared library by default; --static adds what the archive
# needs (hiredis, OpenSSL, pthread) as Libs.private, not as Requires.private,
# which would put their Cflags (hiredis': -I.../hiredis -D_FILE_OFFSET_BITS=64)
# into every consumer's --cflags although <lockweave.h> needs neither.
# Each library is named as the build found it: -L<dir> (unless the linker
# searches <dir> anyway) -l<name>.
function(_lw_pc_lib out path)
  get_filename_component(dir "${path}" DIRECTORY)
  get_filename_component(file "${path}" NAME)
  if(file MATCHES "^lib(.+)\\.(so|a)(\\.[0-9.]+)?$")
    set(flag "-l${CMAKE_MATCH_1}")
    if(NOT dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
      set(flag "-L${dir} ${flag}")
    endif()
  else()
    set(flag "${path}")
  endif()
  set(${out} "${flag}" PARENT_SCOPE)
endfunction()
set(LW_PC_LIBS_PRIVATE)
foreach(lib IN ITEMS ${HIREDIS_LIBRARIES} ${OPENSSL_SSL_LIBRARY} ${OPENSSL_CRYPTO_LIBRARY})
  _lw_pc_lib(flag "${lib}")
  list(APPEND LW_PC_LIBS_PRIVATE "${flag}")
endforeach()
# libcrypto.a's own needs, then the runtime's threads.
foreach(lib IN ITEMS ${CMAKE_DL_LIBS})
  list(APPEND LW_PC_LIBS_PRIVATE "-l${lib}")
endforeach()
list(APPEND LW_PC_LIBS_PRIVATE -lpthread)
list(REMOVE_DUPLICATES LW_PC_LIBS_PRIVATE)
list(JOIN LW_PC_LIBS_PRIVATE " " LW_PC_LIBS_PRIVATE)
# The install directories, from ${prefix} unless given absolute.
foreach(dir LIBDIR INCLUDEDIR BINDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(LW_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(LW_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
# The path of lockweave-gen, for Make rules: --variable=lockweave_gen.
set(LW_PC_GEN "")
if(TARGET lockweave-gen)
  set(LW_PC_GEN "lockweave_gen=\${bindir}/lockweave-gen")
endif()
# Everything but the prefix now.  The prefix, and whether the libdir needs
# an rpath, when installing: `cmake --install --prefix` may name another
# prefix than the one configured.  Written out absolute and normalized, the
# paths read PREFIX/lib, not PREFIX/lib/pkgconfig/../../lib.
set(LW_PC_PREFIX "@LW_PC_PREFIX@")
set(LW_PC_RPATH "@LW_PC_RPATH@")
configure_file(${PROJECT_SOURCE_DIR}/cmake/lockweave.pc.in
               ${PROJECT_BINARY_DIR}/lockweave.pc.in @ONLY)
install(CODE "
  set(_lw_pc_in [[${PROJECT_BINARY_DIR}/lockweave.pc.in]])
  set(_lw_pc_out [[${PROJECT_BINARY_DIR}/lockweave.pc]])
  set(_lw_pc_libdir [[${CMAKE_INSTALL_LIBDIR}]])
  set(_lw_pc_implicit [[${CMAKE_C_IMPLICIT_LINK_DIRECTORIES}]])
" COMPONENT dev)
install(CODE [[
  cmake_path(SET _lw_pc_prefix NORMALIZE "${CMAKE_INSTALL_PREFIX}")
  string(REGEX REPLACE "(.)/+$" "\\1" _lw_pc_prefix "${_lw_pc_prefix}")
  cmake_path(ABSOLUTE_PATH _lw_pc_libdir BASE_DIRECTORY "${_lw_pc_prefix}"
             NORMALIZE OUTPUT_VARIABLE _lw_pc_full_libdir)
  # Outside the directories the linker and loader search anyway (/usr/lib...),
  # the program must say where liblockweave.so is: the package carries the
  # rpath, so a program built from it runs without LD_LIBRARY_PATH.
  # (The install script runs without the project's policies: no IN_LIST.)
  set(_lw_pc_rpath "-Wl,-rpath,\${libdir}")
  list(FIND _lw_pc_implicit "${_lw_pc_full_libdir}" _lw_pc_found)
  if(_lw_pc_found GREATER -1)
    set(_lw_pc_rpath "")
  endif()
  file(READ "${_lw_pc_in}" _lw_pc)
  string(REPLACE "@LW_PC_PREFIX@" "${_lw_pc_prefix}" _lw_pc "${_lw_pc}")
  string(REPLACE "@LW_PC_RPATH@" "${_lw_pc_rpath}" _lw_pc "${_lw_pc}")
  file(WRITE "${_lw_pc_out}" "${_lw_pc}")
]] COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/lockweave.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
