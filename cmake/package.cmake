# Debian packages with CPack: `cpack -G DEB` in a build folder, which
# packaging/deb.sh configures (CMAKE_INSTALL_PREFIX=/usr, so that the
# libraries go to Debian's multiarch directory), builds and packs.  One
# package per install component (cmake/install.cmake):
#   liblockweave<SOVERSION>  runtime  the shared library
#   liblockweave-dev         dev      headers, static library, CMake package,
#                                     pkg-config file
#   lockweave-tools          tools    lockweave-gen, lockweave-ctl, man pages
# Their library dependencies (libhiredis0.14, libssl3, libclang1-N...) come
# from dpkg-shlibdeps, so they name whatever this build linked.
set(LW_DEB_MAINTAINER "lockweave maintainers <maintainers@lockweave.invalid>"
  CACHE STRING "Maintainer field of the Debian packages")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME lockweave)
set(CPACK_PACKAGE_VENDOR lockweave)
set(CPACK_PACKAGE_CONTACT "${LW_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/deb)
# Each package's description starts with a synopsis of its own.  CPack
# puts the project's summary before any description unless the summary is
# its own default ("<name> built using CMake"), which it then leaves out.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CPACK_PACKAGE_NAME} built using CMake")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools)
# Install into the package as into the system (DESTDIR): lockweave.pc is
# written at install time from CMAKE_INSTALL_PREFIX, which must then read
# /usr, not the staging folder.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
  OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(_lw_runtime_pkg liblockweave${PROJECT_VERSION_MAJOR})
set(_lw_exact "(= ${PROJECT_VERSION})")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${_lw_runtime_pkg})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# The shlibs file, for programs built against it: ">=" because the symbols
# are versioned (runtime/lockweave.map), so any later library of the same
# SONAME serves them.  And the ldconfig trigger rather than CPack's
# GENERATE_SHLIBS, whose maintainer scripts call ldconfig themselves.
set(_lw_control ${PROJECT_BINARY_DIR}/deb-control)
file(WRITE ${_lw_control}/shlibs
  "liblockweave ${PROJECT_VERSION_MAJOR} ${_lw_runtime_pkg} (>= ${PROJECT_VERSION})\n")
file(WRITE ${_lw_control}/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
  ${_lw_control}/shlibs ${_lw_control}/triggers)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
  "Redis distributed locks woven into C functions - runtime library
lockweave takes a Redis lock around a C function annotated with
REDIS_LOCK(key, expire, wait): mutexes, semaphores, read/write locks,
Redlock over several masters, Redis Cluster, TLS.

This package holds the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME liblockweave-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The CMake package's exported targets include the generator (and
# lockweave_generate() runs it), and its find_dependency() calls and the
# static library need OpenSSL's and hiredis' development files.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "${_lw_runtime_pkg} ${_lw_exact}, lockweave-tools ${_lw_exact}, libhiredis-dev, libssl-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "Redis distributed locks woven into C functions - development files
lockweave takes a Redis lock around a C function annotated with
REDIS_LOCK(key, expire, wait).

This package holds <lockweave.h>, the libuv and libevent adapters, the
static library, the CMake package (find_package(lockweave),
lockweave_generate()) and the pkg-config file.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME lockweave-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
  "Redis distributed locks woven into C functions - generator and tools
lockweave takes a Redis lock around a C function annotated with
REDIS_LOCK(key, expire, wait).

This package holds lockweave-gen, which weaves the annotated functions
at build time (libclang), and lockweave-ctl, which lists, inspects and
breaks the locks on a server.")

# Every package carries a copyright file and a changelog (Debian policy
# 12.5, 12.7); the changelog and the man pages are compressed in the
# staging folder (packaging/compress.cmake), so that `cmake --install`
# installs the man pages as they are.
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/packaging/compress.cmake)
string(TIMESTAMP _lw_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
foreach(comp runtime dev tools)
  string(TOUPPER ${comp} _lw_comp)
  set(_lw_pkg ${CPACK_DEBIAN_${_lw_comp}_PACKAGE_NAME})
  set(_lw_docdir ${PROJECT_BINARY_DIR}/deb-doc/${_lw_pkg})
  file(MAKE_DIRECTORY ${_lw_docdir})
  file(WRITE ${_lw_docdir}/changelog
    "${_lw_pkg} (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
    "  * Built from the lockweave source tree (its CHANGELOG.md lists the\n"
    "    changes).\n\n"
    " -- ${LW_DEB_MAINTAINER}  ${_lw_date}\n")
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright ${_lw_docdir}/changelog
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_lw_pkg} COMPONENT ${comp}
    EXCLUDE_FROM_ALL)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/packaging/lintian-overrides.tools
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides
  RENAME lockweave-tools COMPONENT tools EXCLUDE_FROM_ALL)

include(CPack)
