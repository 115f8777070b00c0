/* Growable buffers and the few file operations the generator needs. */
#define _POSIX_C_SOURCE 200809L
#include "lwgen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Out of memory in a build tool: nothing sensible to unwind to. */
static void oom(void)
{
    fputs("lockweave-gen: out of memory\n", stderr);
    exit(2);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        oom();
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *d = xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

void buf_put(lw_buf *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->p = xrealloc(b->p, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = 0;
}

void buf_puts(lw_buf *b, const char *s)
{
    buf_put(b, s, strlen(s));
}

void buf_putc(lw_buf *b, char c)
{
    buf_put(b, &c, 1);
}

void buf_printf(lw_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    buf_put(b, "", 0); /* make sure p exists */
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = b->len + (size_t)n + 1;
        b->p = xrealloc(b->p, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void buf_free(lw_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

char *buf_take(lw_buf *b)
{
    buf_put(b, "", 0);
    char *p = b->p;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

int file_read(const char *path, lw_buf *out)
{
    int rc = -1;
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[65536];
    size_t n;
    buf_put(out, "", 0);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_put(out, chunk, n);
    if (ferror(f))
        goto cleanup;
    rc = 0;
cleanup:
    fclose(f);
    return rc;
}

int file_write_if_changed(const char *path, const char *data, size_t n,
                          int touch)
{
    lw_buf old = {0};
    char *tmp = NULL;
    FILE *f = NULL;
    int rc = -1;

    /* Unchanged output keeps its timestamp, so nothing downstream rebuilds
     * (Ninja's restat); --touch is for generators without restat. */
    if (file_read(path, &old) == 0 && old.len == n &&
        memcmp(old.p, data, n) == 0) {
        rc = touch ? utimensat(AT_FDCWD, path, NULL, 0) : 0;
        goto cleanup;
    }
    /* Write a sibling then rename: a parallel build never sees half a file. */
    size_t plen = strlen(path);
    tmp = xmalloc(plen + 32);
    snprintf(tmp, plen + 32, "%s.tmp%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (!f)
        goto cleanup;
    if (fwrite(data, 1, n, f) != n) {
        fclose(f);
        f = NULL;
        goto cleanup;
    }
    if (fclose(f) != 0) {
        f = NULL;
        goto cleanup;
    }
    f = NULL;
    if (rename(tmp, path) != 0)
        goto cleanup;
    rc = 0;
cleanup:
    if (rc != 0 && tmp) {
        int e = errno;
        unlink(tmp);
        errno = e;
    }
    free(tmp);
    buf_free(&old);
    return rc;
}

char *path_absolute(const char *path)
{
    lw_buf b = {0};
    if (path[0] != '/') {
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd))
            return xstrdup(path);
        buf_puts(&b, cwd);
        buf_putc(&b, '/');
    }
    buf_puts(&b, path);
    /* Fold "//", "/./" and "/x/../" so the same file always gets the same
     * spelling (it ends up in #line directives and the depfile). */
    char *p = b.p, *w = b.p;
    const char *r = p;
    while (*r) {
        if (r[0] == '/' && r[1] == '/') {
            r++;
            continue;
        }
        if (r[0] == '/' && r[1] == '.' && (r[2] == '/' || r[2] == 0)) {
            r += 2;
            continue;
        }
        if (r[0] == '/' && r[1] == '.' && r[2] == '.' &&
            (r[3] == '/' || r[3] == 0)) {
            while (w > p && *--w != '/')
                ;
            r += 3;
            continue;
        }
        *w++ = *r++;
    }
    if (w == p)
        *w++ = '/';
    *w = 0;
    return p;
}
