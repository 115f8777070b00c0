/*
 * The JSON that compile_commands.json needs, read in place: a cursor over
 * the text, strings decoded into a buffer, any other value skipped.  No
 * tree is built; the caller walks the structure it expects.
 */
#ifndef LW_JSON_H
#define LW_JSON_H

#include "lwgen.h"

typedef struct lw_json {
    const char *p, *e; /* the unread text */
} lw_json;

/* Skip whitespace; the next byte (not consumed), or -1 at the end. */
int json_peek(lw_json *j);
/* Skip whitespace; consume c when it comes next.  1 if it did, else 0. */
int json_eat(lw_json *j, char c);
/* A string into b, NUL-terminated (b NULL: skip it).  0, or -1 when the
 * next value is not a string. */
int json_string(lw_json *j, lw_buf *b);
/* Skip any one value.  0, or -1 when malformed. */
int json_skip(lw_json *j);

#endif
