# Configure and build a small woven project (incremental/) with GENERATOR and
# the consumer's cmake_minimum_required(VERSION POLICY), then check what
# rebuilds: nothing when nothing changed; locked.c only (woven again) when
# the header it includes is touched or it is edited; everything woven or
# scanned when lockweave-gen itself is new.  The generator is a copy, so
# making it new touches nothing else.
file(REMOVE_RECURSE "${WORK}")
file(COPY "${SRC}/" DESTINATION "${WORK}/src")
get_filename_component(gendir "${GEN}" DIRECTORY)
file(COPY "${GEN}" "${gendir}/lockweave-gen-scan" DESTINATION "${WORK}/bin")
set(gen "${WORK}/bin/lockweave-gen")
set(B "${WORK}/build")

execute_process(COMMAND "${CMAKE_COMMAND}" -S "${WORK}/src" -B "${B}" -G "${GENERATOR}"
    "-DLW_POLICY=${POLICY}" "-DCMAKE_C_COMPILER=${CC}" "-DLW_GEN=${gen}"
    "-DLW_RUNTIME=${RUNTIME}" "-DLW_INCLUDE=${INCLUDE}" "-DLW_CMAKE=${LW_CMAKE}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure failed:\n${out}${err}")
endif()

# build(<name>): build, fail on error, leave the objects compiled in
# ${name} (a list of source names: locked.c, plain.c...).
function(build name)
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${B}" --parallel 2
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("---- ${name}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "build '${name}' failed")
  endif()
  string(REGEX MATCHALL "Building C object [^ \n]*" objs "${out}")
  list(TRANSFORM objs REPLACE ".*/([^/]*)\\.o$" "\\1")
  list(SORT objs)
  # A build with nothing to compile must not run anything else either.
  if(NOT objs AND NOT out MATCHES "^ninja: no work to do\\.\n$" AND
     (GENERATOR MATCHES "Ninja" OR out MATCHES "Building|Generating|weaving|Linking"))
    set(objs "(other work)")
  endif()
  set(${name} "${objs}" PARENT_SCOPE)
endfunction()
function(expect name want)
  if(NOT "${${name}}" STREQUAL "${want}")
    message(FATAL_ERROR "build '${name}' compiled [${${name}}], expected [${want}]")
  endif()
endfunction()
# Timestamps: make sure a touch is seen as newer at any resolution.
function(touch path)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 1.1)
  file(TOUCH "${path}")
endfunction()

# object_has(<string>): locked.c's object holds that symbol; the build
# tree holds no woven copy (a woven compile leaves none behind).
function(object_has symbol)
  file(GLOB_RECURSE obj "${B}/*locked.c.o")
  file(GLOB_RECURSE woven "${B}/*.lw.c")
  if(NOT obj OR woven)
    message(FATAL_ERROR "object of locked.c: '${obj}', woven copies left: '${woven}'")
  endif()
  file(STRINGS "${obj}" hit REGEX "${symbol}")
  if(NOT hit)
    message(FATAL_ERROR "${obj} has no ${symbol}")
  endif()
endfunction()

build(first)
expect(first "locked.c;main.c;plain.c")
object_has(lw__withdraw_body) # woven

build(again)
expect(again "")

touch("${WORK}/src/inc/locked.h")
build(header)
expect(header "locked.c;main.c")
build(after_header)
expect(after_header "")

touch("${WORK}/src/local.h")
build(local)
expect(local "locked.c")

file(APPEND "${WORK}/src/locked.c" "int withdraw_edited;\n")
build(edit)
expect(edit "locked.c")
object_has(withdraw_edited) # the edit reached the woven compile

touch("${gen}")
build(new_gen)
expect(new_gen "locked.c;main.c;plain.c")
build(final)
expect(final "")
