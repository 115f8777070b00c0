#include "keynames.h"

#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

static const char *const suffixes[] = {":fence", ":wake", ":q", ":w:"};

static int has_hash_tag(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    const char *close;

    if (open == NULL)
        return 0;
    close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
    return close != NULL && close > open + 1;
}

int lw__names_init(struct lw_names *n, const char *key, size_t len)
{
    int tag = has_hash_tag(key, len);
    size_t base = len + (tag ? 0 : 2), need = 0;
    const char **out[] = {&n->fence, &n->chan, &n->queue, &n->alive};
    size_t *outlen[] = {&n->fencelen, &n->chanlen, &n->queuelen, &n->alivelen};
    char *p;

    for (int i = 0; i < 4; i++)
        need += base + strlen(suffixes[i]);
    n->heap = need > sizeof n->buf ? malloc(need) : NULL;
    if (need > sizeof n->buf && n->heap == NULL)
        return LW_ENOMEM;
    p = n->heap ? n->heap : n->buf;
    for (int i = 0; i < 4; i++) {
        size_t slen = strlen(suffixes[i]);
        *out[i] = p;
        *outlen[i] = base + slen;
        if (!tag)
            *p++ = '{';
        memcpy(p, key, len);
        p += len;
        if (!tag)
            *p++ = '}';
        memcpy(p, suffixes[i], slen);
        p += slen;
    }
    return LW_OK;
}

void lw__names_free(struct lw_names *n)
{
    free(n->heap);
    n->heap = NULL;
}
