#ifndef LW_SCRIPT_H
#define LW_SCRIPT_H

#include <stddef.h>

/*
 * A Lua script a connection runs by its SHA-1 (EVALSHA), sending the text
 * (EVAL, which caches it on the server) only when a server answers
 * NOSCRIPT: after a restart, a SCRIPT FLUSH, or the first time it meets the
 * script.  The SHA is computed here, not asked of a server, so no
 * connection spends a round trip on SCRIPT LOAD.  Define one with
 * LW_SCRIPT_INIT(text) and let it live as long as the process.
 */
struct lw_script {
    const char *text;
    size_t len;
    char sha[41];
    int ready; /* atomic: sha is complete */
};

#define LW_SCRIPT_INIT(text)                                                   \
    {                                                                          \
        (text), sizeof(text) - 1, {0}, 0                                       \
    }

/* The script's SHA-1 in hex (40 digits), computed on first use.
 * Thread-safe. */
const char *lw__script_sha(struct lw_script *s);

#endif
