/*
 * Lock tokens.  Each thread draws 128 bits from getrandom() once per process
 * (again after fork, so a child never mints its parent's tokens) and appends a
 * sequence number: tokens stay unguessable, unique per acquisition, and the
 * uncontended path makes no system call.
 */
#include "core/token.h"

#include <lockweave.h>
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

#include "base/fork.h"
#include "base/numfmt.h"
#include "base/thread.h"

static int draw_base(struct lw_thread *t)
{
    size_t got = 0;

    while (got < sizeof t->token_base) {
        ssize_t n =
            getrandom(t->token_base + got, sizeof t->token_base - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return LW_ESYSTEM;
        got += (size_t)n;
    }
    t->token_gen = lw__fork_gen;
    return LW_OK;
}

int lw__token_new(char *buf)
{
    static const char hex[] = "0123456789abcdef";
    struct lw_thread *t = lw__thread();
    char *p = buf;

    if (t->token_gen != lw__fork_gen && draw_base(t) != LW_OK)
        return LW_ESYSTEM;
    for (size_t i = 0; i < sizeof t->token_base; i++) {
        *p++ = hex[t->token_base[i] >> 4];
        *p++ = hex[t->token_base[i] & 15];
    }
    *p++ = ':';
    return (int)(p - buf) + (int)lw__fmt_hex(p, ++t->token_seq);
}
