/*
 * RESP encoding of our own commands, into one buffer reused call after call
 * and written to the socket as it is (lw__conn_send()).  hiredis's
 * redisAppendCommandArgv() would build each command with sds strings and a
 * printf-style formatter, allocating per argument: a large share of the
 * client's work per lock.
 */
#include "net/resp.h"

#include <stdlib.h>
#include <string.h>

#include "base/numfmt.h"

static int reserve(struct lw_resp *b, size_t extra)
{
    size_t cap;
    char *p;

    if (b->len + extra <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra)
        cap *= 2;
    p = realloc(b->p, cap);
    if (p == NULL)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* "<c><n>\r\n", the header of an array or a bulk string (the NUL
 * lw__fmt_dec() writes is overwritten).  A lock's commands are some twenty
 * headers, nearly all of them under 100: those are written directly. */
static inline void put_header(struct lw_resp *b, char c, size_t n)
{
    char *p = b->p + b->len;

    *p++ = c;
    if (n < 10) {
        *p++ = (char)('0' + n);
    } else if (n < 100) {
        *p++ = (char)('0' + n / 10);
        *p++ = (char)('0' + n % 10);
    } else {
        p += lw__fmt_dec(p, n);
    }
    *p++ = '\r';
    *p++ = '\n';
    b->len = (size_t)(p - b->p);
}

int lw__resp_cmd(struct lw_resp *b, int argc, const char *const *argv,
                 const size_t *lens)
{
    size_t need = 24;

    for (int i = 0; i < argc; i++)
        need += lens[i] + 24 + 2;
    if (reserve(b, need) != 0)
        return -1;
    put_header(b, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        put_header(b, '$', lens[i]);
        memcpy(b->p + b->len, argv[i], lens[i]);
        b->len += lens[i];
        b->p[b->len++] = '\r';
        b->p[b->len++] = '\n';
    }
    return 0;
}

void lw__resp_free(struct lw_resp *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
