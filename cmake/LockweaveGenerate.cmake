# lockweave_generate(<target>)
#
# Weaves REDIS_LOCK into every C source of <target>: each source is run
# through lockweave-gen at build time and the target compiles the result
# (build tree: lockweave/<target>/<source>.lw.c) instead of the source.  A
# source without REDIS_LOCK costs one cheap generator run that writes a
# one-line file including the original.  Edits to a source or to any header
# it includes re-run the generator (DEPFILE); so does a new generator.
#
# Also: the target gets LW__WOVEN (so headers with annotated declarations
# compile in every file of it) and links lockweave::runtime.
#
# Works from the source tree (add_subdirectory) and from the install tree
# (find_package(lockweave)): both define lockweave::gen and lockweave::runtime.
# Call it in the directory that creates <target>, after its sources are added.
include_guard(GLOBAL)

function(lockweave_generate target)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "lockweave_generate: no target named '${target}'")
  endif()
  if(NOT TARGET lockweave::gen)
    message(FATAL_ERROR "lockweave_generate: lockweave::gen is not available "
      "(configure lockweave with LW_BUILD_GEN=ON, or install it with the generator)")
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    message(FATAL_ERROR "lockweave_generate: ${target} is an interface library; "
      "weave the target that compiles the sources")
  endif()

  get_target_property(srcdir ${target} SOURCE_DIR)
  get_target_property(sources ${target} SOURCES)
  set(outroot "${CMAKE_CURRENT_BINARY_DIR}/lockweave/${target}")

  # The target's own flags, evaluated at generation time so everything set
  # later in the configure step (and usage requirements of linked targets)
  # is included.
  set(inc "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(def "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  set(opt "$<TARGET_PROPERTY:${target},COMPILE_OPTIONS>")
  set(std "$<TARGET_PROPERTY:${target},C_STANDARD>")
  set(ext "$<TARGET_PROPERTY:${target},C_EXTENSIONS>")
  # C_EXTENSIONS unset means ON; clang 14 spells C23 as c2x.
  set(std_flag "$<$<BOOL:${std}>:-std=$<IF:$<OR:$<STREQUAL:${ext},>,$<BOOL:${ext}>>,gnu,c>$<IF:$<STREQUAL:${std},23>,2x,${std}>>")
  set(target_flags
    "$<$<BOOL:${inc}>:-I$<JOIN:${inc},$<SEMICOLON>-I>>"
    "$<$<BOOL:${def}>:-D$<JOIN:${def},$<SEMICOLON>-D>>"
    "${opt}"
    "${std_flag}")
  separate_arguments(global_flags UNIX_COMMAND "${CMAKE_C_FLAGS}")

  # Ninja keeps an unchanged output's old time (restat), so nothing
  # recompiles; Make would re-run the generator on every build instead, so
  # there the output is touched (its object recompiles anyway: it depends
  # on the same source and headers).
  set(touch "")
  if(NOT CMAKE_GENERATOR MATCHES "Ninja")
    set(touch "--touch")
  endif()

  set(new_sources "")
  foreach(src IN LISTS sources)
    # Leave alone: generator expressions, non-C files, generated files.
    if(src MATCHES "\\$<")
      list(APPEND new_sources "${src}")
      continue()
    endif()
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${srcdir}")
    get_source_file_property(lang "${abs}" LANGUAGE)
    get_source_file_property(generated "${abs}" GENERATED)
    if(NOT abs MATCHES "\\.[cC]$" OR (lang AND NOT lang STREQUAL "C")
       OR generated OR abs MATCHES "\\.lw\\.c$")
      list(APPEND new_sources "${src}")
      continue()
    endif()

    file(RELATIVE_PATH rel "${srcdir}" "${abs}")
    if(rel MATCHES "^\\.\\./" OR IS_ABSOLUTE "${rel}")
      # Outside the target's directory: keep the name, keyed by its folder.
      get_filename_component(dir "${abs}" DIRECTORY)
      get_filename_component(name "${abs}" NAME)
      string(MD5 h "${dir}")
      string(SUBSTRING "${h}" 0 8 h)
      set(rel "_ext/${h}/${name}")
    endif()
    set(out "${outroot}/${rel}")
    string(REGEX REPLACE "\\.[cC]$" ".lw.c" out "${out}")
    get_filename_component(outdir "${out}" DIRECTORY)
    file(MAKE_DIRECTORY "${outdir}")
    get_filename_component(srcfile_dir "${abs}" DIRECTORY)

    # Per-source settings carry over to the woven copy.
    set(src_flags "")
    foreach(p COMPILE_DEFINITIONS COMPILE_OPTIONS INCLUDE_DIRECTORIES)
      get_source_file_property(v "${abs}" ${p})
      if(v)
        set_property(SOURCE "${out}" APPEND PROPERTY ${p} "${v}")
        if(p STREQUAL "COMPILE_DEFINITIONS")
          list(TRANSFORM v PREPEND "-D")
        elseif(p STREQUAL "INCLUDE_DIRECTORIES")
          list(TRANSFORM v PREPEND "-I")
        endif()
        list(APPEND src_flags ${v})
      endif()
    endforeach()

    set(_lw_gen_scan)
    if(TARGET lockweave::gen_scan)
      set(_lw_gen_scan lockweave::gen_scan)
    endif()
    add_custom_command(
      OUTPUT "${out}"
      COMMAND lockweave::gen "${abs}" -o "${out}" --depfile "${out}.d" ${touch}
              -- ${global_flags} ${target_flags} ${src_flags}
      # The scanner too: a new parser must re-weave as a new front end does.
      DEPENDS "${abs}" lockweave::gen ${_lw_gen_scan}
      DEPFILE "${out}.d"
      COMMENT "lockweave: weaving ${rel}"
      COMMAND_EXPAND_LISTS VERBATIM)
    # The woven copy lives in the build tree: "quoted" includes must still
    # find the files next to the original.
    set_property(SOURCE "${out}" APPEND PROPERTY COMPILE_OPTIONS "-iquote" "${srcfile_dir}")
    set_source_files_properties("${out}" PROPERTIES GENERATED TRUE)
    list(APPEND new_sources "${out}")
  endforeach()

  set_property(TARGET ${target} PROPERTY SOURCES "${new_sources}")
  target_compile_definitions(${target} PRIVATE LW__WOVEN)
  # Properties rather than target_link_libraries(): that would clash with a
  # target linked with the keyword-less signature.
  set_property(TARGET ${target} APPEND PROPERTY LINK_LIBRARIES lockweave::runtime)
  if(type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "OBJECT_LIBRARY")
    set_property(TARGET ${target} APPEND PROPERTY
      INTERFACE_LINK_LIBRARIES "$<LINK_ONLY:lockweave::runtime>")
  endif()
endfunction()
