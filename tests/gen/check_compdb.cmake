# -p BUILD_DIR: the flags come from compile_commands.json (the "command"
# form, with a relative -I resolved against "directory", a GCC-only flag and
# -Werror dropped).
file(MAKE_DIRECTORY "${WORK}")
set(json "[
  {\"directory\": \"${SRC}\",
   \"command\": \"gcc -O2 -fno-tree-vrp -Werror -Iconf -I${INCLUDE} '-DAPP_KEY=\\\"app:{id}\\\"' -c app.c -o app.o\",
   \"file\": \"app.c\"}
]")
file(WRITE "${WORK}/compile_commands.json" "${json}")
execute_process(COMMAND "${GEN}" -p "${WORK}" "${SRC}/app.c" -o "${WORK}/app.lw.c"
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lockweave-gen -p failed:\n${err}\n${json}")
endif()
file(READ "${WORK}/app.lw.c" text)
foreach(want "lw_guard_key_bytes(&lw__g, \"app:\", 4);" "{.expire_ms = 3000u, .wait_ms = 0u, .max_renew = -1, .site = &lw__site_work}")
  string(FIND "${text}" "${want}" pos)
  if(pos LESS 0)
    message(FATAL_ERROR "woven file lacks '${want}':\n${text}")
  endif()
endforeach()
