/* A growable text buffer for response bodies. */
#ifndef INV_BUF_H
#define INV_BUF_H

#include <stddef.h>

struct inv_buf {
    char *p; /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
    int oom; /* an append failed: the text is incomplete */
};

/* Append formatted text (printf).  On allocation failure sets oom and keeps
 * what was there, so callers append freely and check once. */
void inv_buf_printf(struct inv_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Append s as a JSON string literal, quotes included. */
void inv_buf_json_str(struct inv_buf *b, const char *s);

void inv_buf_free(struct inv_buf *b);

#endif /* INV_BUF_H */
