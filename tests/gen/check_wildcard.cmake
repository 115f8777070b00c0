# The woven copy is nowhere a Makefile looks: make in a copy of wildcard/
# (every *.c a source, objects and depfiles in OBJDIR, a clean rule that
# removes that directory) through lockweave-gen --launch, with the objects
# in a directory of their own and beside the sources.  Each time: it links,
# nothing woven is left in the project or in TMPDIR, the debug information
# names the user's file; again, nothing is rebuilt (the depfiles name no
# file that is gone); a header's change rebuilds; make clean succeeds, and
# so does the build after it.  With LOCKWEAVE_KEEP_WOVEN=1 the copy is kept
# and its place said.
file(REMOVE_RECURSE "${WORK}")
file(COPY "${SRC}/" DESTINATION "${WORK}/src")
set(tmp "${WORK}/tmp")
file(MAKE_DIRECTORY "${tmp}")
find_program(READELF readelf)

# run_make(<var> [make arguments...]): make, which must succeed; <var> gets
# what it printed.
function(run_make var)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env "TMPDIR=${tmp}" ${env}
      "${MAKE}" -C "${WORK}/src" "CC=${GEN} --launch ${CC}"
      "INCLUDE=${INCLUDE}" "LDLIBS=${RUNTIME}" "OBJDIR=${objdir}" ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("---- make ${ARGN} (OBJDIR=${objdir})\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "make ${ARGN} failed (OBJDIR=${objdir})")
  endif()
  set(${var} "${out}${err}" PARENT_SCOPE)
endfunction()

function(expect_compiled out want)
  if(out MATCHES "-c -o [^ ]*stock\\.o stock\\.c")
    set(got yes)
  else()
    set(got no)
  endif()
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "stock.c compiled: ${got}, expected ${want}")
  endif()
endfunction()

function(expect_nothing_left)
  file(GLOB_RECURSE left "${WORK}/src/*.lw.c" "${WORK}/src/*.lw.*")
  file(GLOB_RECURSE tmpleft "${tmp}/*")
  if(left OR tmpleft)
    message(FATAL_ERROR "the build left woven copies: ${left} ${tmpleft}")
  endif()
endfunction()

foreach(objdir objs .)
  run_make(out -j2)
  expect_compiled("${out}" yes)
  expect_nothing_left()
  if(READELF)
    execute_process(COMMAND "${READELF}" --debug-dump=info
        "${WORK}/src/${objdir}/stock.o"
      OUTPUT_VARIABLE info)
    string(REGEX MATCH "DW_AT_name[^\n]*" name "${info}")
    if(NOT name MATCHES ": stock\\.c$")
      message(FATAL_ERROR "the debug information names '${name}', not stock.c")
    endif()
  endif()

  run_make(out)
  expect_compiled("${out}" no)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 1.1)
  file(TOUCH "${WORK}/src/stock.h")
  run_make(out)
  expect_compiled("${out}" yes)
  expect_nothing_left()

  run_make(out clean)
  run_make(out)
  expect_compiled("${out}" yes)
  expect_nothing_left()
  run_make(out clean)
endforeach()

set(objdir objs)
set(env LOCKWEAVE_KEEP_WOVEN=1)
run_make(out)
string(REGEX MATCH "the woven copy of stock\\.c is ([^\n]*)" said "${out}")
set(kept "${CMAKE_MATCH_1}")
if(NOT kept OR NOT EXISTS "${kept}")
  message(FATAL_ERROR "LOCKWEAVE_KEEP_WOVEN=1 did not keep the woven copy")
endif()
file(READ "${kept}" text)
if(NOT text MATCHES "lw__deduct_body")
  message(FATAL_ERROR "${kept} is not the woven stock.c")
endif()
