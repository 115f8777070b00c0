/*
 * Lock tokens.  Each thread draws 128 bits from getrandom() once per process
 * (again after fork, so a child never mints its parent's tokens) and appends a
 * sequence number: tokens stay unguessable, unique per acquisition, and the
 * uncontended path makes no system call.  The base's first 16 hex digits
 * also name each of the thread's connections (net/handshake.c), so that
 * lockweave-ctl finds the process and thread a lock's token came from in
 * the server's client list; the other 16, and the sequence, are never
 * shown there.
 */
#include "core/token.h"

#include <lockweave.h>
#include <stdio.h>

#include "base/fork.h"
#include "base/numfmt.h"
#include "base/thread.h"

int lw__token_new(char *buf)
{
    static const char hex[] = "0123456789abcdef";
    struct lw_thread *t = lw__thread();
    char *p = buf;

    if (t->token_gen != lw__fork_gen && lw__thread_token_base(t) != LW_OK)
        return LW_ESYSTEM;
    for (size_t i = 0; i < sizeof t->token_base; i++) {
        *p++ = hex[t->token_base[i] >> 4];
        *p++ = hex[t->token_base[i] & 15];
    }
    *p++ = ':';
    return (int)(p - buf) + (int)lw__fmt_hex(p, ++t->token_seq);
}
