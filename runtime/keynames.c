/*
 * Names derived from a lock key: its fence counter and its wake-up channel.
 * Each is put in the lock key's Redis Cluster hash slot, so one script can
 * touch the lock and its counter and publish on its channel: "{key}:suffix"
 * hashes as "key" — unless the key already has a hash tag, which then decides
 * for all three.
 */
#include <stdlib.h>
#include <string.h>

#include "keynames.h"

static int has_hash_tag(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    const char *close;

    if (open == NULL)
        return 0;
    close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
    return close != NULL && close > open + 1;
}

char *lw__keyname(const char *key, size_t len, const char *suffix, char *buf,
                  size_t cap, size_t *outlen)
{
    size_t slen = strlen(suffix);
    int tag = has_hash_tag(key, len);
    size_t need = len + slen + (tag ? 0 : 2);
    char *out = need <= cap ? buf : malloc(need), *p = out;

    if (out == NULL)
        return NULL;
    if (!tag)
        *p++ = '{';
    memcpy(p, key, len);
    p += len;
    if (!tag)
        *p++ = '}';
    memcpy(p, suffix, slen);
    *outlen = need;
    return out;
}
