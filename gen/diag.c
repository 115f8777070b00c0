/* Diagnostics in the format compilers use, so editors and CI parse them:
 *   file:line:col: error: message
 *    source line
 *        ^
 */
#include "lwgen.h"

#include <stdio.h>
#include <string.h>

static int n_errors;

int diag_errors(void)
{
    return n_errors;
}

unsigned src_line(const lw_src *src, size_t off)
{
    unsigned line = 1;
    for (size_t i = 0; i < off && i < src->len; i++)
        line += src->text[i] == '\n';
    return line;
}

void vdiag(int kind, const lw_src *src, size_t off, const char *fmt, va_list ap)
{
    static const char *const names[] = {"error", "warning", "note"};
    if (kind == LW_DIAG_ERROR)
        n_errors++;
    if (!src || !src->text) {
        fprintf(stderr,
                "%s: %s: ", src && src->name ? src->name : "lockweave-gen",
                names[kind]);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        return;
    }
    if (off > src->len)
        off = src->len;
    /* Line and column are counted in bytes, 1-based, as clang and gcc do. */
    unsigned line = src_line(src, off);
    size_t bol = off;
    while (bol > 0 && src->text[bol - 1] != '\n')
        bol--;
    size_t eol = off;
    while (eol < src->len && src->text[eol] != '\n' && src->text[eol] != '\r')
        eol++;
    fprintf(stderr, "%s:%u:%zu: %s: ", src->name, line, off - bol + 1,
            names[kind]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fprintf(stderr, "%.*s\n", (int)(eol - bol), src->text + bol);
    /* Keep tabs so the caret lines up under the same byte. */
    for (size_t i = bol; i < off; i++)
        fputc(src->text[i] == '\t' ? '\t' : ' ', stderr);
    fputs("^\n", stderr);
}

void diag(int kind, const lw_src *src, size_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdiag(kind, src, off, fmt, ap);
    va_end(ap);
}
