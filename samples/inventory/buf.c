#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int reserve(struct inv_buf *b, size_t extra)
{
    if (b->oom)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void inv_buf_printf(struct inv_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void inv_buf_json_str(struct inv_buf *b, const char *s)
{
    inv_buf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            inv_buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            inv_buf_printf(b, "\\u%04x", c);
        else
            inv_buf_printf(b, "%c", c);
    }
    inv_buf_printf(b, "\"");
}

void inv_buf_free(struct inv_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}
