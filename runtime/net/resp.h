#ifndef LW_RESP_H
#define LW_RESP_H

#include <stddef.h>

/* A growable buffer of RESP-encoded commands, reused across calls so the hot
 * path formats without allocating. */
struct lw_resp {
    char *p;
    size_t len, cap;
};

/* Append one command (binary-safe argv) in RESP.  0, or -1 on ENOMEM. */
int lw__resp_cmd(struct lw_resp *b, int argc, const char *const *argv,
                 const size_t *lens);
void lw__resp_free(struct lw_resp *b);

#endif
