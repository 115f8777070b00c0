# Debian's hiredis 0.14 ships a HiredisConfig.cmake with no imported target:
# wrap what it finds in lockweave::hiredis, for the build tree and for
# lockweaveConfig.cmake alike.
if(NOT TARGET lockweave::hiredis)
  # Its HiredisConfigVersion.cmake fails under find_package(), so look for
  # the files directly.
  find_path(HIREDIS_INCLUDE_DIRS hiredis/hiredis.h)
  find_library(HIREDIS_LIBRARIES NAMES hiredis)
  if(HIREDIS_LIBRARIES AND HIREDIS_INCLUDE_DIRS)
    add_library(lockweave::hiredis INTERFACE IMPORTED)
    set_target_properties(lockweave::hiredis PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${HIREDIS_INCLUDE_DIRS}"
      INTERFACE_LINK_LIBRARIES "${HIREDIS_LIBRARIES}")
    set(Hiredis_FOUND TRUE)
  else()
    set(Hiredis_FOUND FALSE)
  endif()
endif()
