/* A make-style depfile (what gcc -MD writes), read by Ninja and Make
 * through add_custom_command(DEPFILE). */
#include "lwgen.h"

#include <stdio.h>
#include <string.h>

static void put_escaped(lw_buf *b, const char *p)
{
    for (; *p; p++) {
        if (*p == ' ' || *p == '#' || *p == '\\')
            buf_putc(b, '\\');
        else if (*p == '$')
            buf_putc(b, '$');
        buf_putc(b, *p);
    }
}

int depfile_write(const char *path, const char *target, const char *const *deps,
                  int ndeps)
{
    lw_buf b = {0};
    put_escaped(&b, target);
    buf_putc(&b, ':');
    for (int i = 0; i < ndeps; i++) {
        int dup = 0;
        for (int j = 0; j < i && !dup; j++)
            dup = strcmp(deps[i], deps[j]) == 0;
        if (dup)
            continue;
        buf_puts(&b, " \\\n  ");
        put_escaped(&b, deps[i]);
    }
    buf_putc(&b, '\n');
    int rc = file_write_if_changed(path, b.p, b.len, 0);
    buf_free(&b);
    return rc;
}

/* Whether a name ends at in[i]: a blank, the end of a line, or of the
 * file. */
static int name_ends(const lw_buf *in, size_t i)
{
    return i == in->len || in->p[i] == ' ' || in->p[i] == '\t' ||
           in->p[i] == '\n' || in->p[i] == '\r' ||
           (in->p[i] == '\\' && i + 1 < in->len &&
            (in->p[i + 1] == '\n' || in->p[i + 1] == '\r'));
}

int depfile_add(const char *path, const char *from, const char *to,
                const char *const *deps, int ndeps)
{
    lw_buf in = {0}, out = {0}, efrom = {0}, eto = {0};
    int rc = -1;
    if (file_read(path, &in) != 0 || !in.p)
        goto cleanup;
    if (from && to) {
        /* Names are compared as the depfile writes them, escaped. */
        put_escaped(&efrom, from);
        put_escaped(&eto, to);
        lw_buf swapped = {0};
        for (size_t i = 0; i < in.len;) {
            if (efrom.len && i + efrom.len <= in.len &&
                memcmp(in.p + i, efrom.p, efrom.len) == 0 &&
                (i == 0 || in.p[i - 1] == ' ' || in.p[i - 1] == '\t' ||
                 in.p[i - 1] == '\n') &&
                name_ends(&in, i + efrom.len)) {
                buf_put(&swapped, eto.p, eto.len);
                i += efrom.len;
            } else
                buf_putc(&swapped, in.p[i++]);
        }
        buf_free(&in);
        in = swapped;
    }
    /* The rule's targets end at the first unescaped ':' followed by a
     * blank or the end of the line. */
    size_t i = 0;
    for (; i < in.len; i++) {
        if (in.p[i] == '\\' && i + 1 < in.len)
            i++;
        else if (in.p[i] == ':' && (i + 1 == in.len || in.p[i + 1] == ' ' ||
                                    in.p[i + 1] == '\t' ||
                                    in.p[i + 1] == '\n' || in.p[i + 1] == '\r'))
            break;
    }
    if (i == in.len)
        goto cleanup;
    buf_put(&out, in.p, i + 1);
    for (int k = 0; k < ndeps; k++) {
        buf_putc(&out, ' ');
        put_escaped(&out, deps[k]);
    }
    buf_put(&out, in.p + i + 1, in.len - i - 1);
    rc = file_write_if_changed(path, out.p, out.len, 0);
cleanup:
    buf_free(&in);
    buf_free(&out);
    buf_free(&efrom);
    buf_free(&eto);
    return rc;
}
