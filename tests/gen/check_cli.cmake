# lockweave-gen's command-line and file errors (those without a file:line:col):
# each exits non-zero with "lockweave-gen: error: ..." naming the problem, and
# writes no output file.  GEN, WORK.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/bad" "${WORK}/empty")
file(WRITE "${WORK}/in.c" "int x;\n")
file(WRITE "${WORK}/bad/compile_commands.json" "{oops")
file(WRITE "${WORK}/empty/compile_commands.json" "[]")
set(out "${WORK}/out.lw.c")

# expect_fail(<message fragment> <args...>)
function(expect_fail want)
  file(REMOVE "${out}")
  execute_process(COMMAND "${GEN}" ${ARGN}
    WORKING_DIRECTORY "${WORK}"
    RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE outtext)
  if(rc EQUAL 0)
    message(FATAL_ERROR "lockweave-gen ${ARGN} succeeded; expected: ${want}")
  endif()
  string(FIND "${err}" "lockweave-gen: error: ${want}" pos)
  if(pos LESS 0)
    message(FATAL_ERROR "lockweave-gen ${ARGN}: missing '${want}' in:\n${err}")
  endif()
  if(EXISTS "${out}")
    message(FATAL_ERROR "lockweave-gen ${ARGN} wrote ${out} despite the error")
  endif()
  message("ok: ${want}")
endfunction()

expect_fail("unknown option '--bogus' (compiler flags go after '--')"
  --bogus in.c -o "${out}")
expect_fail("more than one input ('in.c', 'other.c')"
  in.c other.c -o "${out}")
expect_fail("cannot read ${WORK}/missing.c" missing.c -o "${out}")
expect_fail("cannot read ${WORK}/nodir/compile_commands.json"
  in.c -o "${out}" -p "${WORK}/nodir")
expect_fail("bad/compile_commands.json is not a valid compilation database"
  in.c -o "${out}" -p bad)
expect_fail("empty/compile_commands.json has no entry for ${WORK}/in.c"
  in.c -o "${out}" -p empty)

# No -o: the usage, exit status 2, nothing written next to the input.
execute_process(COMMAND "${GEN}" in.c WORKING_DIRECTORY "${WORK}"
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "usage: lockweave-gen")
  message(FATAL_ERROR "no -o: status ${rc}, expected 2 and the usage:\n${err}")
endif()
