/*
 * The woven file: the original text, with each annotated definition made
 * the body of a wrapper appended at the end (emit.c writes the text of each,
 * see lw_woven in lwgen.h; this file puts it in place).
 *
 * Every change to the original is whole lines of directives and
 * declarations between its lines, each followed by a #line that puts the
 * numbering back, so the text the compiler reads from the user's file is
 * the user's, byte for byte and column for column: messages, carets,
 * __LINE__ and debuggers all point where they would without lockweave.
 * The one exception is a definition whose name was declared before the
 * file's first line, renamed where it stands (rename_in_place).
 */
#include "lwgen.h"

#include <stdlib.h>
#include <string.h>

enum { EDIT_LINES, EDIT_INLINE, EDIT_REPLACE };

typedef struct edit {
    size_t pos, len; /* len: bytes of the original replaced (EDIT_REPLACE) */
    int kind;
    const char *text;
    char *owned; /* text, when the edit owns it */
} edit;

typedef struct edits {
    edit *v;
    int n;
} edits;

static void add(edits *e, size_t pos, size_t len, int kind, const char *text)
{
    e->v = xrealloc(e->v, sizeof *e->v * (size_t)(e->n + 1));
    e->v[e->n++] = (edit){pos, len, kind, text, NULL};
}

static int by_pos(const void *x, const void *y)
{
    const edit *a = x, *b = y;
    if (a->pos != b->pos)
        return a->pos < b->pos ? -1 : 1;
    return a->kind - b->kind; /* whole lines before text at one place */
}

/* Every mention of identifier name in t[from, to) outside comments and
 * literals, except the one at keep, is replaced by repl: in the lines where
 * the #define is lifted for the definition's name, a call on the same line
 * (a one-line recursive function) must still reach the wrapper. */
static void rename_others(edits *e, const char *t, size_t from, size_t to,
                          const char *name, size_t keep, const char *repl)
{
    size_t n = strlen(name);
    for (size_t i = from; i < to;) {
        char c = t[i];
        if (c == '/' && i + 1 < to && t[i + 1] == '/') {
            while (i < to && t[i] != '\n')
                i++;
        } else if (c == '/' && i + 1 < to && t[i + 1] == '*') {
            const char *end = strstr(t + i + 2, "*/");
            i = end ? (size_t)(end - t) + 2 : to;
        } else if (c == '"' || c == '\'') {
            for (i++; i < to && t[i] != c && t[i] != '\n'; i++)
                if (t[i] == '\\')
                    i++;
            i++;
        } else if (ident_char(c)) {
            size_t s = i;
            while (i < to && ident_char(t[i]))
                i++;
            if (i - s == n && memcmp(t + s, name, n) == 0 && s != keep &&
                !(s > 0 && ident_char(t[s - 1])))
                add(e, s, n, EDIT_REPLACE, repl);
        } else
            i++;
    }
}

static size_t line_start(const char *t, size_t off)
{
    while (off > 0 && t[off - 1] != '\n')
        off--;
    return off;
}

/* Append text of the woven file's own (a wrapper, the declarations in front
 * of a definition), turning each LW_LINE_RESUME into a #line that gives the
 * generated file's own line number to the code after it (after a user's
 * expression, or after the user's lines). */
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

static size_t count_lines(const lw_buf *b)
{
    size_t lines = 0;
    for (size_t i = 0; i < b->len; i++)
        lines += b->p[i] == '\n';
    return lines;
}

/* The edits that make f, woven as v, the body of its wrapper in the
 * original text t[0..n), and the lines the woven file starts with for it
 * (out). */
static void edit_func(edits *e, lw_buf *out, const char *t, size_t n,
                      const lw_func *f, const lw_woven *v)
{
    if (f->cxx) {
        /* The lock goes into the body, on lines of its own after its '{'
         * (the rest of that line keeps its columns); the sites are
         * edit_sites()'. */
        add(e, f->body_off, 0, EDIT_LINES, v->protos);
        return;
    }
    if (f->rename_in_place) {
        size_t ins = f->insert_off <= f->name_off ? f->insert_off : f->name_off;
        add(e, ins, 0, EDIT_INLINE, v->protos);
        add(e, f->name_off, strlen(f->name), EDIT_REPLACE, v->body_name);
        return;
    }
    /* From here on the name is the wrapper's; the wrapper keeps the
     * function's symbol. */
    if (!f->internal)
        buf_printf(out, "#pragma redefine_extname %s %s\n", v->wrapper_name,
                   f->name);
    buf_printf(out, "#define %s %s\n", f->name, v->wrapper_name);
    /* The declarations go on lines of their own before the definition's
     * first line, unless code that is not the definition's shares that
     * line. */
    size_t ins = line_start(t, f->insert_off);
    for (size_t k = ins; k < f->insert_off; k++)
        if (t[k] != ' ' && t[k] != '\t')
            ins = f->insert_off;
    add(e, ins, 0, EDIT_LINES, v->protos);
    size_t eol = f->name_off;
    while (eol < n && t[eol] != '\n')
        eol++;
    rename_others(e, t, ins, eol, f->name, f->name_off, v->wrapper_name);
    lw_buf def = {0};
    buf_printf(&def, "#define %s %s\n", f->name, v->wrapper_name);
    add(e, eol < n ? eol + 1 : n, 0, EDIT_LINES, def.p);
    e->v[e->n - 1].owned = buf_take(&def);
}

/* C++: the metrics sites of the functions woven (wv), at namespace scope in
 * front of the file-scope declaration holding each definition, on lines of
 * their own; one edit per place, in the order of the file. */
static void edit_sites(edits *e, const lw_scan *s, const lw_woven *wv)
{
    for (int i = 0; i < s->nfuncs; i++) {
        const lw_func *f = &s->funcs[i];
        int first = 1;
        for (int k = 0; k < i && first; k++)
            first = !(s->funcs[k].cxx && s->funcs[k].top_off == f->top_off);
        if (!f->cxx || !first)
            continue;
        lw_buf b = {0};
        buf_puts(&b, LW_LINE_RESUME "\n");
        for (int k = i; k < s->nfuncs; k++)
            if (s->funcs[k].cxx && s->funcs[k].top_off == f->top_off)
                buf_puts(&b, wv[k].wrapper);
        add(e, f->top_off, 0, EDIT_LINES, b.p);
        e->v[e->n - 1].owned = buf_take(&b);
    }
}

/* Text of the woven file's own (a wrapper, declarations), resolving each
 * LW_LINE_RESUME in it to the woven file's numbering under the name self. */
static void put_own(lw_buf *out, const char *w, const char *self)
{
    size_t lines = count_lines(out);
    put_wrapper(out, w, self, &lines);
}

/* The main file with the edits e (sorted) made; self: the woven file's
 * name for its own lines. */
static void put_edited(lw_buf *out, const lw_scan *s, const edits *e,
                       const char *self)
{
    const char *t = s->main.text;
    size_t n = s->main.len, at = 0;
    buf_puts(out, "#line 1 ");
    put_line_path(out, s->line_name);
    buf_putc(out, '\n');
    for (int i = 0; i < e->n; i++) {
        const edit *d = &e->v[i];
        buf_put(out, t + at, d->pos - at);
        at = d->pos;
        if (d->kind != EDIT_LINES) {
            buf_puts(out, d->text);
            at += d->len;
            continue;
        }
        /* Whole lines, then the numbering back; in the middle of a line,
         * the rest of it keeps its columns (tabs stay tabs). */
        size_t bol = line_start(t, d->pos);
        if (out->len && out->p[out->len - 1] != '\n')
            buf_putc(out, '\n');
        put_own(out, d->text, self);
        buf_printf(out, "#line %u ", src_line(&s->main, d->pos));
        put_line_path(out, s->line_name);
        buf_putc(out, '\n');
        for (size_t k = bol; k < d->pos && t[d->pos] != '\n'; k++)
            buf_putc(out, t[k] == '\t' ? '\t' : ' ');
    }
    buf_put(out, t + at, n - at);
    if (out->len && out->p[out->len - 1] != '\n')
        buf_putc(out, '\n');
}

static int by_name_off(const void *x, const void *y)
{
    const lw_func *a = *(const lw_func *const *)x;
    const lw_func *b = *(const lw_func *const *)y;
    return a->name_off < b->name_off ? -1 : a->name_off > b->name_off;
}

/* The wrappers wv of s's functions, in the order of the file, after the
 * #include they need. */
static void put_wrappers(lw_buf *out, const lw_scan *s, const lw_woven *wv,
                         const char *output_abs)
{
    buf_printf(out, "#line %zu ", count_lines(out) + 2);
    put_line_path(out, output_abs);
    buf_putc(out, '\n');
    /* <lockweave.h> is included here and not at the top: the user's file
     * may define _GNU_SOURCE or similar before its first #include, and the
     * libc headers lockweave.h pulls in must not come first.  The wrappers
     * are written with the functions' own names, which the #defines above
     * make the wrappers' names. */
    buf_printf(
        out,
        "/* ---- lockweave: %s ---- */\n"
        "#include <lockweave.h>\n"
        "#if LW_VERSION_NUM != %d\n"
        "#error \"woven by lockweave-gen %s, compiled against another "
        "<lockweave.h>: use the lockweave-gen of the same installation\"\n"
        "#endif\n",
        s->cxx ? "the locks are woven into the definitions above"
               : "the wrappers, one per REDIS_LOCK",
        LW_GEN_VERSION_NUM, LW_GEN_VERSION);
    /* What a function with a loop keeps its arguments with. */
    buf_puts(out, emit_includes(s->funcs, s->nfuncs));
    size_t lines = count_lines(out);
    const lw_func **order = xmalloc(sizeof *order * (size_t)(s->nfuncs + 1));
    for (int i = 0; i < s->nfuncs; i++)
        order[i] = &s->funcs[i];
    qsort(order, (size_t)s->nfuncs, sizeof *order, by_name_off);
    for (int i = 0; i < s->nfuncs; i++)
        if (!order[i]->cxx) /* C++: the definitions are the wrappers */
            put_wrapper(out, wv[order[i] - s->funcs].wrapper, output_abs,
                        &lines);
    free(order);
}

void weave(const lw_scan *s, const char *output_abs, lw_buf *out)
{
    edits e = {0};
    lw_woven *wv = xmalloc(sizeof *wv * (size_t)(s->nfuncs + 1));

    put_banner(out, s->input, "");
    buf_puts(out, "#define LW__MODE " LW_MODE_WOVEN "\n");
    for (int i = 0; i < s->nfuncs; i++) {
        emit_func(&s->funcs[i], &wv[i]);
        edit_func(&e, out, s->main.text, s->main.len, &s->funcs[i], &wv[i]);
    }
    edit_sites(&e, s, wv);
    qsort(e.v, (size_t)e.n, sizeof *e.v, by_pos);
    put_edited(out, s, &e, output_abs);
    put_wrappers(out, s, wv, output_abs);
    for (int i = 0; i < e.n; i++)
        free(e.v[i].owned);
    free(e.v);
    for (int i = 0; i < s->nfuncs; i++)
        emit_free(&wv[i]);
    free(wv);
}
