# CPack runs this after installing each package's files into its staging
# folder: Debian wants man pages and changelogs gzip-compressed at the
# highest level, with no name or time stamp in the header (gzip -9n).
find_program(_lw_gzip gzip REQUIRED)
file(GLOB_RECURSE _lw_files "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*")
list(FILTER _lw_files INCLUDE REGEX "/share/(man/man[1-9]/[^/]+\\.[1-9]|doc/[^/]+/changelog)$")
foreach(f IN LISTS _lw_files)
  execute_process(COMMAND ${_lw_gzip} -9nf "${f}" COMMAND_ERROR_IS_FATAL ANY)
endforeach()
