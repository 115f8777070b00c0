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
