# A woven build adds no warning: warnings/items.c, shaped like memcached (a
# function declared in a header, annotated there or at its definition; a
# static one declared ahead; one with several keys; one with on_fail and
# skip_if; one on an event loop), compiles without a warning under strict flags and -Werror, as it
# is and woven through the launcher, with each compiler (CC, and CLANG when
# given) and each of C99, C11 and GNU17.  So does old_decl.c, where a
# declaration without a prototype comes first (without -Wstrict-prototypes,
# which refuses it).
set(strict -Wall -Wextra -Wredundant-decls -Wmissing-prototypes
  -Wstrict-prototypes -Wshadow -Wconversion -Wcast-qual -pedantic -Werror)
set(items_flags ${strict})
list(REMOVE_ITEM strict -Wstrict-prototypes)
set(old_decl_flags ${strict})
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{LC_ALL} C)
foreach(cc IN ITEMS "${CC}" "${CLANG}")
  if(NOT cc)
    continue()
  endif()
  foreach(std c99 c11 gnu17)
    foreach(src items old_decl)
      set(flags ${${src}_flags} -std=${std} "-I${INCLUDE}")
      execute_process(COMMAND "${cc}" ${flags} -c "${SRC}/${src}.c"
          -o "${WORK}/plain.o"
        RESULT_VARIABLE rc ERROR_VARIABLE err)
      if(NOT rc EQUAL 0 OR err)
        message(FATAL_ERROR "${cc} -std=${std}: ${src}.c itself does not "
          "compile cleanly, so this test shows nothing:\n${err}")
      endif()
      execute_process(COMMAND "${GEN}" --launch "${cc}" ${flags}
          -c "${SRC}/${src}.c" -o "${WORK}/woven.o"
        RESULT_VARIABLE rc ERROR_VARIABLE err)
      if(NOT rc EQUAL 0 OR err)
        message(FATAL_ERROR "${cc} -std=${std}: the woven build of ${src}.c "
          "warns where the plain one does not:\n${err}")
      endif()
      file(STRINGS "${WORK}/woven.o" woven REGEX "lw_guard_enter")
      if(NOT woven)
        message(FATAL_ERROR "${cc} -std=${std}: ${src}.c was not woven")
      endif()
    endforeach()
    message(STATUS "${cc} -std=${std}: no warning, plain or woven")
  endforeach()
endforeach()
