/* Script SHAs, computed once per script and process. */
#include "net/script.h"

#include <pthread.h>

#include "base/sha1.h"

static pthread_mutex_t sha_mu = PTHREAD_MUTEX_INITIALIZER;

const char *lw__script_sha(struct lw_script *s)
{
    /* Acquire pairs with the release below: a reader that sees the flag sees
     * the whole SHA, and the common case takes no lock. */
    if (!__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&sha_mu);
        if (!s->ready) {
            lw__sha1_hex(s->text, s->len, s->sha);
            __atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&sha_mu);
    }
    return s->sha;
}
