# lockweave_generate(<target>)
#
# Weaves REDIS_LOCK into <target>: lockweave-gen becomes the target's C and
# C++ compiler launcher, so every compile of the target runs through it with
# the command line the build tool runs (every flag, definition, include
# directory and generator expression, for the configuration being built).
# For each source it either weaves the annotated definitions and compiles
# the woven copy (beside the object: <object>.lw.c), or compiles the source
# as it is.  Sources added after this call, with target_sources() or as
# generated files, go the same way; so does a launcher such as ccache, which
# runs after lockweave-gen.  Also links lockweave::runtime.
#
# An annotated definition in a file that is compiled without lockweave-gen
# fails to link, naming lockweave_generate; see <lockweave.h>.
#
# Works from the source tree (add_subdirectory) and from the install tree
# (find_package(lockweave)): both define lockweave::gen and lockweave::runtime.
# Needs a Makefile or Ninja generator (CMake's compiler launchers).
include_guard(GLOBAL)

function(lockweave_generate target)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "lockweave_generate: no target named '${target}'")
  endif()
  if(NOT TARGET lockweave::gen)
    message(FATAL_ERROR "lockweave_generate: lockweave::gen is not available "
      "(configure lockweave with LW_BUILD_GEN=ON, or install it with the generator)")
  endif()
  if(NOT CMAKE_GENERATOR MATCHES "Ninja|Makefiles")
    message(FATAL_ERROR "lockweave_generate: the ${CMAKE_GENERATOR} generator "
      "runs no compiler launcher; use Ninja or a Makefile generator")
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    message(FATAL_ERROR "lockweave_generate: ${target} is an interface library; "
      "weave the target that compiles the sources")
  endif()
  get_target_property(done ${target} LOCKWEAVE_GENERATE)
  if(done)
    return()
  endif()
  set_property(TARGET ${target} PROPERTY LOCKWEAVE_GENERATE ON)

  # Built in this project: compile nothing of the target before it exists.
  get_target_property(gen lockweave::gen ALIASED_TARGET)
  if(gen)
    add_dependencies(${target} ${gen})
  endif()
  # The launcher is set when this directory is done, so it goes in front of
  # whatever launcher the target has by then.
  cmake_language(EVAL CODE
    "cmake_language(DEFER CALL _lockweave_set_launcher [[${target}]])")

  # Properties rather than target_link_libraries(): that would clash with a
  # target linked with the keyword-less signature.
  set_property(TARGET ${target} APPEND PROPERTY LINK_LIBRARIES lockweave::runtime)
  if(type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "OBJECT_LIBRARY")
    set_property(TARGET ${target} APPEND PROPERTY
      INTERFACE_LINK_LIBRARIES "$<LINK_ONLY:lockweave::runtime>")
  endif()
endfunction()

function(_lockweave_set_launcher target)
  foreach(lang C CXX)
    set(launcher "$<TARGET_FILE:lockweave::gen>" --launch)
    get_target_property(next ${target} ${lang}_COMPILER_LAUNCHER)
    if(next)
      list(APPEND launcher ${next})
    endif()
    set_property(TARGET ${target} PROPERTY ${lang}_COMPILER_LAUNCHER "${launcher}")
  endforeach()
endfunction()
