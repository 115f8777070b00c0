# lw_input_flags(INPUT VAR): the flags a test input gives in a line
#   // flags: -std=c++20
# (for its parse and its compile) as a list in VAR; empty without one.
function(lw_input_flags input var)
  set(flags "")
  file(STRINGS "${input}" flagline REGEX "^// flags: " LIMIT_COUNT 1)
  if(flagline)
    string(REGEX REPLACE "^// flags: " "" flags "${flagline}")
    separate_arguments(flags UNIX_COMMAND "${flags}")
  endif()
  set(${var} "${flags}" PARENT_SCOPE)
endfunction()
