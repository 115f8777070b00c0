# Run lockweave-gen on INPUT, which must fail.  Each line of INPUT holding
#   // expect: LINE:COL: error: MESSAGE        (or note:)
# must appear as INPUT:LINE:COL: error: MESSAGE... in the output (MESSAGE is
# a prefix of the printed message); the number of "error:" lines printed must
# equal the number expected; and no output file may be written.
# With -DCC=compiler: as that compiler's launcher, from the directory above
# INPUT's, INPUT named relative to it; the messages must name it so, as the
# compiler's own do, and name no file by its absolute path.
# INPUT may be C++ (.cpp), and may give its parse flags in a line
#   // flags: -std=c++20
get_filename_component(name "${INPUT}" NAME_WE)
get_filename_component(ext "${INPUT}" LAST_EXT)
include("${CMAKE_CURRENT_LIST_DIR}/input_flags.cmake")
lw_input_flags("${INPUT}" flags)
get_filename_component(dir "${INPUT}" DIRECTORY)
get_filename_component(top "${dir}" DIRECTORY)
get_filename_component(subdir "${dir}" NAME)
file(MAKE_DIRECTORY "${OUT_DIR}")
set(out "${OUT_DIR}/${name}.lw${ext}")
file(REMOVE "${out}")
if(CC)
  set(out "${OUT_DIR}/${name}.o")
  file(REMOVE "${out}")
  execute_process(COMMAND "${GEN}" --launch "${CC}" "-I${INCLUDE}" -c
      ${flags} "${subdir}/${name}${ext}" -o "${out}"
    WORKING_DIRECTORY "${top}"
    RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE outtext)
  set(shown "${subdir}")
else()
  execute_process(COMMAND "${GEN}" "${INPUT}" -o "${out}" -- "-I${INCLUDE}" ${flags}
    RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE outtext)
  set(shown "${dir}")
endif()
message("${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "lockweave-gen succeeded on ${INPUT}; errors were expected")
endif()
if(EXISTS "${out}")
  message(FATAL_ERROR "lockweave-gen wrote ${out} despite errors")
endif()
if(CC)
  string(FIND "${err}" "${dir}" pos)
  if(pos GREATER_EQUAL 0)
    message(FATAL_ERROR "a message names ${dir} by its absolute path; "
      "the compile names it ${subdir}")
  endif()
endif()
file(STRINGS "${INPUT}" lines REGEX "// expect: ")
set(nexpect 0)
foreach(l IN LISTS lines)
  string(REGEX REPLACE ".*// expect: " "" e "${l}")
  # "LINE:COL: ..." is in INPUT; "other.h:LINE:COL: ..." next to it.
  if(e MATCHES "^[0-9]")
    set(want "${shown}/${name}${ext}:${e}")
  else()
    set(want "${shown}/${e}")
  endif()
  if(e MATCHES "^([^:]*:)?[0-9]+:[0-9]+: error:")
    math(EXPR nexpect "${nexpect} + 1")
  endif()
  string(FIND "${err}" "${want}" pos)
  if(pos LESS 0)
    message(FATAL_ERROR "missing diagnostic: ${want}")
  endif()
endforeach()
if(nexpect EQUAL 0)
  message(FATAL_ERROR "${INPUT} has no '// expect:' lines")
endif()
string(REGEX MATCHALL "[0-9]+:[0-9]+: error: " got "${err}")
list(LENGTH got ngot)
if(NOT ngot EQUAL nexpect)
  message(FATAL_ERROR "expected ${nexpect} errors, got ${ngot}")
endif()
# Each error is shown with its source line and a caret.
string(REGEX MATCHALL "\n[ \t]*\\^\n" carets "${err}")
list(LENGTH carets ncarets)
if(ncarets LESS nexpect)
  message(FATAL_ERROR "expected a caret line under each diagnostic")
endif()
