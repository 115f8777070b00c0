# lockweave_generate(<target>)
#
# Weaves REDIS_LOCK into <target>: lockweave-gen becomes the target's C and
# C++ compiler launcher, so every compile of the target runs through it with
# the command line the build tool runs (every flag, definition, include
# directory and generator expression, for the configuration being built).
# For each source it either weaves the annotated definitions and compiles
# the woven copy (a temporary file outside the build tree, with -fexceptions
# so that a C++ exception through a locked function releases its lock; see
# docs/weaving.md), or compiles the source as it is.  Sources added after
# this call, with target_sources() or as generated files, go the same way;
# so does a launcher such as ccache, which runs after lockweave-gen.  Also
# links lockweave::runtime: PUBLIC for a library (its users get
# <lockweave.h> and the runtime), PRIVATE otherwise.
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
  # A library links it PUBLIC: what links a static or object library needs
  # the runtime to link at all, and whoever calls a guarded function needs
  # <lockweave.h>'s directory, for the library's headers that include it (an
  # annotated declaration does) and for lw_last_error().
  if(type MATCHES "^(STATIC|SHARED|OBJECT)_LIBRARY$")
    set_property(TARGET ${target} APPEND PROPERTY
      INTERFACE_LINK_LIBRARIES lockweave::runtime)
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
