# Configure and build a small woven project (incremental/) with GENERATOR,
# then check what rebuilds weave: nothing when nothing changed, locked.c
# (only) when the header it includes is touched or it is edited.
file(REMOVE_RECURSE "${WORK}")
file(COPY "${SRC}/" DESTINATION "${WORK}/src")
set(B "${WORK}/build")

execute_process(COMMAND "${CMAKE_COMMAND}" -S "${WORK}/src" -B "${B}" -G "${GENERATOR}"
    "-DCMAKE_C_COMPILER=${CC}" "-DLW_GEN=${GEN}" "-DLW_RUNTIME=${RUNTIME}"
    "-DLW_INCLUDE=${INCLUDE}" "-DLW_CMAKE=${LW_CMAKE}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure failed:\n${out}${err}")
endif()

# build(<name>): build, fail on error, leave the output in ${name}.
function(build name)
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${B}" --parallel 2
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("---- ${name}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "build '${name}' failed")
  endif()
  set(${name} "${out}${err}" PARENT_SCOPE)
endfunction()
function(expect name text what)
  string(FIND "${${name}}" "${what}" pos)
  if(text STREQUAL "has" AND pos LESS 0)
    message(FATAL_ERROR "build '${name}' should show '${what}'")
  elseif(text STREQUAL "lacks" AND NOT pos LESS 0)
    message(FATAL_ERROR "build '${name}' should not show '${what}'")
  endif()
endfunction()

set(woven "${B}/lockweave/app/locked.lw.c")
build(first)
expect(first has "weaving locked.c")
expect(first has "weaving plain.c")
if(NOT EXISTS "${woven}")
  message(FATAL_ERROR "${woven} missing")
endif()
file(READ "${woven}" text)
string(FIND "${text}" "lw__withdraw_body" pos)
if(pos LESS 0)
  message(FATAL_ERROR "locked.c was not woven:\n${text}")
endif()

build(again)
expect(again lacks "weaving")

# Timestamps: make sure the touch is seen as newer at any resolution.
execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 1.1)
file(TIMESTAMP "${woven}" t0 "%s")
file(TOUCH "${WORK}/src/inc/locked.h")
build(header)
expect(header has "weaving locked.c")
expect(header lacks "weaving plain.c")
file(TIMESTAMP "${woven}" t1 "%s")
if(GENERATOR MATCHES "Ninja" AND NOT t0 STREQUAL t1)
  message(FATAL_ERROR "unchanged woven output was rewritten (${t0} -> ${t1})")
endif()

build(after_header)
expect(after_header lacks "weaving")

file(APPEND "${WORK}/src/locked.c" "/* edited */\n")
build(edit)
expect(edit has "weaving locked.c")
expect(edit lacks "weaving plain.c")
build(final)
expect(final lacks "weaving")
