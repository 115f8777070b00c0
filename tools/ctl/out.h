/*
 * Output for people and for scripts.  Keys, tokens and error texts come
 * from Redis and from whoever wrote the keys: no byte of them reaches a
 * terminal or a JSON reader unescaped.
 */
#ifndef LW_CTL_OUT_H
#define LW_CTL_OUT_H

#include <stddef.h>
#include <stdio.h>

/* p[0..n) for people: printable ASCII as it is, '\' and '"' with a
 * backslash, every other byte as \xNN (so a terminal escape, a newline or
 * a byte of UTF-8 shows as its code).  ctl_unescape() reads it back. */
void out_text(FILE *f, const char *p, size_t n);

/* out_text() into buf (cap bytes, NUL-terminated, cut short to fit), for
 * a message; returns buf. */
char *out_escape(char *buf, size_t cap, const char *p, size_t n);

/* The same between double quotes. */
void out_quoted(FILE *f, const char *p, size_t n);

/* Read what out_text() writes (and \n, \r, \t) from s into a new string,
 * *len bytes (NUL-terminated too).  NULL when s holds a bad escape or on
 * out-of-memory (*len is then 0 or 1). */
char *out_unescape(const char *s, size_t *len);

/*
 * One JSON document on f, written as it is walked.  Strings are JSON
 * escaped; a byte string that is not UTF-8 is written with U+FFFD for each
 * bad byte, and out_json_bytes() adds "<name>_hex" with its exact bytes.
 * Names are ASCII literals.  At most OUT_JSON_DEPTH levels.
 */
#define OUT_JSON_DEPTH 8
struct out_json {
    FILE *f;
    int depth;
    int count[OUT_JSON_DEPTH]; /* members written at each level */
};

void out_json_init(struct out_json *j, FILE *f);
/* name: the member's name inside an object, NULL inside an array or at the
 * top. */
void out_json_open(struct out_json *j, const char *name, char bracket);
void out_json_close(struct out_json *j, char bracket);
void out_json_str(struct out_json *j, const char *name, const char *s);
void out_json_bytes(struct out_json *j, const char *name, const char *p,
                    size_t n);
void out_json_int(struct out_json *j, const char *name, long long v);
void out_json_bool(struct out_json *j, const char *name, int v);
void out_json_null(struct out_json *j, const char *name);
/* End the document with a newline and flush. */
void out_json_end(struct out_json *j);

#endif
