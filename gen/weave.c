/*
 * The woven file: the original text with each annotated definition renamed
 * to its static body (and prototypes put in front of it on the same line,
 * so every line keeps its number), then the wrappers.
 */
#include "lwgen.h"

#include <stdlib.h>
#include <string.h>

static int by_offset(const void *x, const void *y)
{
    const lw_func *a = x, *b = y;
    return a->name_off < b->name_off ? -1 : a->name_off > b->name_off;
}

/* Append a wrapper, turning each LW_LINE_RESUME into a #line that gives the
 * generated file's own line number back to the code after a user's
 * expression. */
static void put_wrapper(lw_buf *out, const char *w, const char *output_abs,
                        size_t *lines)
{
    static const char mark[] = LW_LINE_RESUME "\n";
    const char *m;

    while ((m = strstr(w, mark)) != NULL) {
        for (const char *p = w; p < m; p++)
            *lines += *p == '\n';
        buf_put(out, w, (size_t)(m - w));
        buf_printf(out, "#line %zu ", *lines + 2);
        put_line_path(out, output_abs);
        buf_putc(out, '\n');
        (*lines)++;
        w = m + sizeof mark - 1;
    }
    for (const char *p = w; *p; p++)
        *lines += *p == '\n';
    buf_puts(out, w);
}

void weave(const lw_scan *s, const char *output_abs, lw_buf *out)
{
    const char *t = s->main.text;
    size_t n = s->main.len, at = 0;
    lw_func *f = xmalloc(sizeof *f * (size_t)(s->nfuncs + 1));
    memcpy(f, s->funcs, sizeof *f * (size_t)s->nfuncs);
    qsort(f, (size_t)s->nfuncs, sizeof *f, by_offset);

    put_banner(out, s->input, "");
    /* Before anything else: makes REDIS_LOCK vanish from this file and from
     * every header it includes. */
    buf_puts(out, "#ifndef LW__WOVEN\n#define LW__WOVEN 1\n#endif\n");
    buf_puts(out, "#line 1 ");
    put_line_path(out, s->input);
    buf_putc(out, '\n');

    for (int i = 0; i < s->nfuncs; i++) {
        size_t ins =
            f[i].insert_off <= f[i].name_off ? f[i].insert_off : f[i].name_off;
        if (ins < at)
            ins = at;
        buf_put(out, t + at, ins - at);
        buf_puts(out, f[i].protos);
        buf_put(out, t + ins, f[i].name_off - ins);
        buf_puts(out, f[i].body_name);
        at = f[i].name_off + strlen(f[i].name);
    }
    buf_put(out, t + at, n - at);
    if (n && t[n - 1] != '\n')
        buf_putc(out, '\n');

    size_t lines = 0;
    for (size_t i = 0; i < out->len; i++)
        lines += out->p[i] == '\n';
    buf_printf(out, "#line %zu ", lines + 2);
    put_line_path(out, output_abs);
    buf_putc(out, '\n');
    /* <lockweave.h> is included here and not at the top: the user's file
     * may define _GNU_SOURCE or similar before its first #include, and the
     * libc headers lockweave.h pulls in must not come first. */
    buf_printf(
        out,
        "/* ---- lockweave: the wrappers, one per REDIS_LOCK ---- */\n"
        "#include <lockweave.h>\n"
        "#if LW_VERSION_NUM != %d\n"
        "#error \"woven by lockweave-gen %s, compiled against another "
        "<lockweave.h>: use the lockweave-gen of the same installation\"\n"
        "#endif\n",
        LW_GEN_VERSION_NUM, LW_GEN_VERSION);
    lines = 0;
    for (size_t i = 0; i < out->len; i++)
        lines += out->p[i] == '\n';
    for (int i = 0; i < s->nfuncs; i++)
        put_wrapper(out, f[i].wrapper, output_abs, &lines);
    free(f);
}
