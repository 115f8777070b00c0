/*
 * The text an annotated definition adds to the woven file, written from
 * its model (model.h): the declarations that go in front of the definition
 * and the wrapper that takes the lock around it (lw_woven in lwgen.h).
 * weave.c decides where they go.
 */
#include "lwgen.h"

#include <stdlib.h>
#include <string.h>

/* Every name the wrapper's own code below refers to that it does not
 * declare itself (those begin with LW_RESERVED), and where each comes
 * from.  A parameter of the wrapper with one of these names would hide it
 * there, so the scan refuses such a parameter. */
typedef struct wrapper_use {
    const char *name, *from;
} wrapper_use;

static const wrapper_use wrapper_uses[] = {
    {"lw_lock_opts", "<lockweave.h>"},
    {"lw_guard", "<lockweave.h>"},
    {"lw_guard_init", "<lockweave.h>"},
    /* lw_guard_init() expands to it */
    {"lw_guard_init_sized", "<lockweave.h>"},
    {"lw_guard_key_bytes", "<lockweave.h>"},
    {"lw_guard_key_i64", "<lockweave.h>"},
    {"lw_guard_key_u64", "<lockweave.h>"},
    {"lw_guard_key_str", "<lockweave.h>"},
    {"lw_guard_enter", "<lockweave.h>"},
    {"lw_guard_enter_all", "<lockweave.h>"},
    {"lw_guard_leave", "<lockweave.h>"},
    {"lw_guard_leave_all", "<lockweave.h>"},
    {"lw_guard_cleanup", "<lockweave.h>"},
    {"lw_set_last_error", "<lockweave.h>"},
    {"lw_last_error", "<lockweave.h>"},
    {"lw_once_done_i64", "<lockweave.h>"},
    {"lw_once_done_u64", "<lockweave.h>"},
    {"lw_once_done_double", "<lockweave.h>"},
    {"lw_once_done_void", "<lockweave.h>"},
    {"lw_once_outcome_i64", "<lockweave.h>"},
    {"lw_once_outcome_u64", "<lockweave.h>"},
    {"lw_once_outcome_double", "<lockweave.h>"},
    /* REDIS_ONCE's wrapper declares it, for failed_if */
    {"lw_result", "the wrapper of a REDIS_ONCE function"},
    {"LW_OK", "<lockweave.h>"},
    {"LW_EDONE", "<lockweave.h>"},
    {"LW_LOCK_READ", "<lockweave.h>"},
    {"int64_t", "<stdint.h>"},
    {"uint64_t", "<stdint.h>"},
};

/* The same for what only the wrapper of a function with a loop, and its
 * callback, refer to: refused as the parameters of such a function only. */
static const wrapper_use loop_uses[] = {
    {"lw_loop", "<lockweave.h>"},
    {"lw_lease", "<lockweave.h>"},
    {"lw_acquire_guards_async", "<lockweave.h>"},
    {"lw_loop_body_begin", "<lockweave.h>"},
    {"lw_loop_body_end", "<lockweave.h>"},
    {"lw_release_async", "<lockweave.h>"},
    {"LW_ENOMEM", "<lockweave.h>"},
    {"malloc", "<stdlib.h>"},
    {"free", "<stdlib.h>"},
    {"NULL", "<stdlib.h>"},
    {"memcpy", "<string.h>"},
};

const char *emit_uses(const char *name, int loop)
{
    for (size_t i = 0; i < sizeof wrapper_uses / sizeof *wrapper_uses; i++)
        if (strcmp(wrapper_uses[i].name, name) == 0)
            return wrapper_uses[i].from;
    for (size_t i = 0; loop && i < sizeof loop_uses / sizeof *loop_uses; i++)
        if (strcmp(loop_uses[i].name, name) == 0)
            return loop_uses[i].from;
    return NULL;
}

const char *emit_includes(const lw_func *funcs, int nfuncs)
{
    for (int i = 0; i < nfuncs; i++)
        if (funcs[i].loop.text)
            return "#include <stdlib.h>\n#include <string.h>\n";
    return "";
}

/* A C string literal for n bytes: printable ASCII as is, the rest octal
 * (three digits, so a following digit cannot join the escape). */
static void put_c_string(lw_buf *b, const char *p, size_t n)
{
    buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c == '?') /* no accidental trigraphs */
            buf_puts(b, "\\?");
        else if (c >= 0x20 && c < 0x7f)
            buf_putc(b, (char)c);
        else
            buf_printf(b, "\\%03o", c);
    }
    buf_putc(b, '"');
}

/* The key's parts as guard calls; C++ converts with static_cast, which
 * -Wold-style-cast accepts. */
static void put_key(lw_buf *b, const lw_key *k, const char *g,
                    const char *indent, int cxx)
{
    const char *i64 = cxx ? "static_cast<int64_t>" : "(int64_t)";
    const char *u64 = cxx ? "static_cast<uint64_t>" : "(uint64_t)";
    for (int i = 0; i < k->n; i++) {
        const lw_keypart *p = &k->v[i];
        switch (p->kind) {
        case LW_KEY_BYTES:
            buf_printf(b, "%slw_guard_key_bytes(&%s, ", indent, g);
            put_c_string(b, p->text, p->len);
            buf_printf(b, ", %zu);\n", p->len);
            break;
        case LW_KEY_I64:
            buf_printf(b, "%slw_guard_key_i64(&%s, %s(%s));\n", indent, g, i64,
                       p->text);
            break;
        case LW_KEY_U64:
            buf_printf(b, "%slw_guard_key_u64(&%s, %s(%s));\n", indent, g, u64,
                       p->text);
            break;
        case LW_KEY_STR:
            buf_printf(b, "%slw_guard_key_str(&%s, %s);\n", indent, g, p->text);
            break;
        case LW_KEY_DATA:
            buf_printf(b,
                       "%slw_guard_key_bytes(&%s, (%s).data(), (%s).size());\n",
                       indent, g, p->text, p->text);
            break;
        }
    }
}

void emit_key(lw_buf *b, const lw_key *k, const char *g, const char *indent)
{
    put_key(b, k, g, indent, 0);
}

static void put_decl(lw_buf *b, const lw_decl *d, const char *name)
{
    buf_puts(b, d->head);
    buf_puts(b, name);
    buf_puts(b, d->tail);
}

/* A C comment can hold the annotation text for the reader of the woven
 * file, as long as it cannot end the comment early. */
static void put_comment_text(lw_buf *b, const char *t)
{
    for (; *t; t++) {
        if (t[0] == '*' && t[1] == '/')
            buf_puts(b, "* ");
        else if (*t == '\n' || *t == '\r')
            buf_putc(b, ' ');
        else
            buf_putc(b, *t);
    }
}

/* A user's expression under a #line of its own, so a compiler error in it
 * points at the annotation; weave() turns the LW_LINE_RESUME that follows
 * it back into the generated file's own line. */
static void put_user_expr(lw_buf *b, const lw_expr *e)
{
    buf_printf(b, "\n#line %u ", e->line);
    put_line_path(b, e->file);
    buf_printf(b, "\n%s\n" LW_LINE_RESUME "\n", e->text);
}

/* The wrapper's skip_if test: before the lock (the guards' cleanup drops
 * them), and again under it (leave first).  note goes after "if (", leave
 * before the return. */
static void put_skip_if(lw_buf *b, const lw_expr *skip_if, const char *note,
                        const char *leave, const char *retstmt)
{
    buf_printf(b, "    if (%s", note);
    put_user_expr(b, skip_if);
    buf_printf(b,
               "    ) {\n"
               "%s"
               "        lw_set_last_error(LW_OK);\n"
               "        %s\n"
               "    }\n",
               leave, retstmt);
}

/* What the wrapper's declarations start with.  An explicit visibility on
 * the definition (an exported function of a library built with
 * -fvisibility=hidden) belongs to the wrapper: the wrapper is what carries
 * the name. */
static void put_spec(lw_buf *b, const lw_func *f)
{
    if (f->visibility)
        buf_printf(b, "__attribute__((visibility(\"%s\"))) ", f->visibility);
    buf_puts(b, f->internal    ? (f->is_inline ? "static inline " : "static ")
                : f->is_inline ? (f->is_extern ? "extern inline " : "inline ")
                               : "");
}

/* The return statement for when the body does not run. */
static void put_return(lw_buf *b, const lw_func *f)
{
    if (f->ret == LW_RET_VOID) {
        buf_puts(b, "return;");
        return;
    }
    buf_puts(b, "return ");
    if (f->on_fail.text) {
        buf_putc(b, '(');
        put_user_expr(b, &f->on_fail);
        buf_putc(b, ')');
    } else if (f->ret == LW_RET_RECORD)
        buf_printf(b, "(%s){0}", f->ret_type);
    else
        buf_puts(b, "0");
    buf_putc(b, ';');
}

/* The release at the end of the wrapper, as a call. */
static const char *leave_call(const lw_func *f)
{
    return f->nlocks == 1 ? "lw_guard_leave(&lw__g)"
                          : "lw_guard_leave_all(lw__gs, lw__n)";
}

/* The guards' names: lw__g alone, or lw__g0, lw__g1, ... */
static void guard_name(lw_buf *b, const lw_func *f, const char *base, int i)
{
    if (f->nlocks == 1)
        buf_puts(b, base);
    else
        buf_printf(b, "%s%d", base, i);
}

/* Whether f's locks get a metrics site: a static lw_site, which an
 * external inline function may not refer to (C11 6.7.4): its locks count
 * as unannotated. */
static int has_sites(const lw_func *f)
{
    return f->internal || !f->is_inline;
}

/* Lock i's site: lw__site_NAME, or lw__site_NAME0, lw__site_NAME1, ... */
static void site_name(lw_buf *b, const lw_func *f, int i)
{
    buf_printf(b, "lw__site_%s", f->name);
    if (f->nlocks > 1)
        buf_printf(b, "%d", i);
}

/* The sites of f's locks, at file scope before its wrapper: each lock's
 * labels for lw_metrics_write(), registered before main() runs. */
static void put_sites(lw_buf *b, const lw_func *f)
{
    if (!has_sites(f))
        return;
    for (int i = 0; i < f->nlocks; i++) {
        const lw_lockspec *l = &f->locks[i];
        buf_puts(b, "LW_SITE_AT(");
        site_name(b, f, i);
        buf_printf(b, ", \"%s\", ", f->name);
        put_c_string(b, l->tmpl, l->tmpl_len);
        buf_puts(b, ", ");
        put_c_string(b, l->file, strlen(l->file));
        buf_printf(b, ", %u);\n", l->line);
    }
}

/* The C constant of word option o's value x. */
static const char *word_c(const lw_option *o, int64_t x)
{
    const lw_optword *w = o->words;
    while (w->value != x)
        w++;
    return w->c ? w->c : "0";
}

/* The lock options of an lw_lock_opts initializer, as lw_options says. */
static void put_lock_options(lw_buf *b, const lw_lockopts *v)
{
    for (const lw_option *o = lw_options; o->name; o++) {
        if (o->kind == LW_OPT_EXPR)
            continue; /* the wrapper's code, not the lock's */
        int64_t x = lockopt_get(v, o);
        if ((x == 0 && o->def == 0) || o->woven.field == NULL)
            continue; /* no field: REDIS_ONCE's expire and wait */
        buf_printf(b, ", .%s = ", o->woven.field);
        if (o->kind == LW_OPT_WORD)
            buf_puts(b, word_c(o, x));
        else
            buf_printf(b, "%lld%s", (long long)x,
                       o->woven.suffix ? o->woven.suffix : "");
    }
}

/* The names of f's REDIS_ONCE store: the type its result is kept as, and
 * the suffix of lw_once_done_ and lw_once_outcome_. */
static const char *store_type(const lw_func *f)
{
    return f->store == LW_STORE_I64   ? "int64_t"
           : f->store == LW_STORE_U64 ? "uint64_t"
                                      : "double";
}

static const char *store_suffix(const lw_func *f)
{
    return f->store == LW_STORE_I64   ? "i64"
           : f->store == LW_STORE_U64 ? "u64"
                                      : "double";
}

/* REDIS_ONCE's enter, for a result it stores: LW_EDONE returns the first
 * run's, read back as the return type (exact: it was stored from one). */
static void put_once_enter(lw_buf *wr, const lw_func *f, const char *retstmt)
{
    buf_printf(wr,
               "    if (lw_guard_enter(&lw__g) != LW_OK) {\n"
               "        %s lw__v; /* LW_EDONE: an earlier run's result */\n"
               "        if (lw_last_error() == LW_EDONE &&\n"
               "            lw_once_outcome_%s(&lw__g, &lw__v) == LW_OK)\n"
               "            return (",
               store_type(f), store_suffix(f));
    lw_buf t = {0};
    put_decl(&t, &f->ret_decl, "");
    while (t.len > 0 && t.p[t.len - 1] == ' ')
        t.p[--t.len] = '\0'; /* "int " as a cast: (int) */
    buf_printf(wr, "%s)lw__v;\n        %s\n    }\n", t.p, retstmt);
    buf_free(&t);
}

/* After REDIS_ONCE's body: its result stored (unless failed_if says the
 * run failed: the key is then free for a retry), the mark left. */
static void put_once_leave(lw_buf *wr, const lw_func *f)
{
    const char *indent = "    ";

    if (f->failed_if.text) {
        buf_puts(wr, "    if (!(");
        put_user_expr(wr, &f->failed_if);
        buf_puts(wr, "    ))\n");
        indent = "        ";
    }
    if (f->ret == LW_RET_VOID || f->store == LW_STORE_NONE)
        buf_printf(wr, "%slw_once_done_void(&lw__g);\n", indent);
    else
        buf_printf(wr, "%slw_once_done_%s(&lw__g, (%s)lw_result);\n", indent,
                   store_suffix(f), store_type(f));
    buf_puts(wr, "    lw_guard_leave(&lw__g);\n");
}

/* The wrapper up to the body's call: options, guards, skip_if, keys, and
 * the acquisition, returning retstmt when it fails.  Several locks are
 * entered as one (lw_guard_enter_all: sorted by key, all or none).  With
 * a loop, up to the keys: the guards, in lw__gs, only give their keys and
 * options to the request (put_loop_call).
 *
 * Each guard is left by its cleanup however the wrapper's scope ends, an
 * exception from C++ code the body calls included (lw_guard_cleanup: a
 * guard still entered is left, one never entered discarded), so every
 * guard is initialised before the first return. */
static void put_locks(lw_buf *wr, const lw_func *f, const char *retstmt)
{
    int loop = f->loop.text != NULL;
    int n = f->nlocks;
    lw_buf leave = {0};

    /* Constant options: static, except in an external inline function,
     * where a static object would be a separate one per file. */
    for (int i = 0; i < n; i++) {
        const lw_lockspec *l = &f->locks[i];
        buf_printf(wr, "    %sconst lw_lock_opts ",
                   (!f->internal && f->is_inline) ? "" : "static ");
        guard_name(wr, f, "lw__o", i);
        buf_printf(wr, " = {.expire_ms = %uu, .wait_ms = %uu", l->expire_ms,
                   l->wait_ms);
        put_lock_options(wr, &l->opts);
        if (f->once_window_ms > 0)
            buf_printf(wr, ", .once_window_ms = %uu", f->once_window_ms);
        if (has_sites(f)) {
            buf_puts(wr, ", .site = &");
            site_name(wr, f, i);
        }
        buf_puts(wr, "};\n");
    }
    /* __cleanup__, not cleanup: a macro of the user's named cleanup must
     * not reach the attribute. */
    for (int i = 0; i < n; i++) {
        buf_puts(wr, "    lw_guard ");
        guard_name(wr, f, "lw__g", i);
        buf_puts(wr, " __attribute__((__cleanup__(lw_guard_cleanup)));\n");
    }
    if (n > 1 || loop) {
        buf_printf(
            wr, "    enum { lw__n = %d };\n    lw_guard *lw__gs[lw__n] = {", n);
        for (int i = 0; i < n; i++) {
            buf_puts(wr, i ? ", &" : "&");
            guard_name(wr, f, "lw__g", i);
        }
        buf_puts(wr, "};\n");
    }
    for (int i = 0; i < n; i++) {
        lw_buf g = {0}, o = {0};
        guard_name(&g, f, "lw__g", i);
        guard_name(&o, f, "lw__o", i);
        buf_printf(wr, "    lw_guard_init(&%s, &%s);\n", g.p, o.p);
        buf_free(&g);
        buf_free(&o);
    }
    if (f->skip_if.text)
        put_skip_if(wr, &f->skip_if, "", "", retstmt);
    for (int i = 0; i < n; i++) {
        lw_buf g = {0};
        guard_name(&g, f, "lw__g", i);
        emit_key(wr, &f->locks[i].key, g.p, "    ");
        buf_free(&g);
    }
    if (loop)
        return;
    if (f->once_window_ms > 0 && f->store != LW_STORE_NONE &&
        f->ret != LW_RET_VOID) {
        put_once_enter(wr, f, retstmt);
        return;
    }
    if (n == 1)
        buf_printf(wr, "    if (lw_guard_enter(&lw__g) != LW_OK)\n        %s\n",
                   retstmt);
    else
        buf_printf(wr,
                   "    if (lw_guard_enter_all(lw__gs, lw__n) != LW_OK)\n"
                   "        %s\n",
                   retstmt);
    buf_printf(&leave, "        %s;\n", leave_call(f));
    if (f->skip_if.text)
        put_skip_if(wr, &f->skip_if, " /* checked again under the lock */",
                    leave.p, retstmt);
    buf_free(&leave);
}

/* A user's expression run as a statement, with the indent of one. */
static void put_user_stmt(lw_buf *b, const lw_expr *e, const char *indent)
{
    buf_printf(b, "%s(", indent);
    put_user_expr(b, e);
    buf_printf(b, "%s);\n", indent);
}

/* The struct that keeps the arguments of a call of f with a loop for its
 * body, which runs on the loop after the call has returned: a member for
 * each parameter, of its type as an object (an array parameter is the
 * pointer it is). */
static void put_loop_args(lw_buf *b, const lw_func *f)
{
    if (f->nparams == 0)
        return;
    buf_printf(b,
               "/* The arguments of a call of %s(), kept for its body, which "
               "runs on the loop\n"
               " * after the call has returned. */\n"
               "struct lw__%s_args {\n",
               f->name, f->name);
    for (int i = 0; i < f->nparams; i++) {
        buf_puts(b, "    ");
        put_decl(b, &f->params[i].decl, f->params[i].use);
        buf_puts(b, ";\n");
    }
    buf_puts(b, "};\n\n");
}

/* The callback of f's request, on the loop: the arguments back under the
 * parameters' names, for the body and for on_fail and skip_if; then, with
 * the lock held, the body under its lease, which is released after it
 * unless the body took it (lw_take_lease()); without, on_fail.  call: the
 * body's call, lifting the #define (lift, restore). */
static void put_loop_run(lw_buf *b, const lw_func *f, const char *spec,
                         const char *call, const char *lift,
                         const char *restore)
{
    buf_puts(b, "/* On the loop, once the lock is held (lw__l) or cannot be "
                "(lw__s says why). */\n");
    /* Linkage as the body's: external only where an external inline
     * wrapper refers to it, with a prototype of its own then
     * (-Wmissing-prototypes). */
    if (!*spec)
        buf_printf(b,
                   "void lw__%s_run(lw_lease *lw__l, int lw__s, void "
                   "*lw__ud);\n",
                   f->name);
    buf_printf(b,
               "%svoid lw__%s_run(lw_lease *lw__l, int lw__s, void *lw__ud)\n"
               "{\n",
               spec, f->name);
    if (f->nparams == 0)
        buf_puts(b, "    (void)lw__ud;\n");
    else {
        buf_printf(b, "    struct lw__%s_args *lw__a = lw__ud;\n", f->name);
        for (int i = 0; i < f->nparams; i++) {
            buf_puts(b, "    ");
            put_decl(b, &f->params[i].decl, f->params[i].use);
            buf_printf(b, " = lw__a->%s;\n", f->params[i].use);
        }
        buf_puts(b, "    free(lw__a);\n");
    }
    buf_puts(b, "    if (lw__s != LW_OK) {\n"
                "        lw_set_last_error(lw__s);\n");
    if (f->on_fail.text)
        put_user_stmt(b, &f->on_fail, "        ");
    buf_puts(b, "        return;\n"
                "    }\n");
    if (f->skip_if.text)
        put_skip_if(b, &f->skip_if, " /* checked again under the lock */",
                    "        lw_release_async(lw__l, NULL, NULL);\n",
                    "return;");
    buf_printf(b,
               "    lw_set_last_error(LW_OK);\n"
               "    lw_loop_body_begin(lw__l);\n"
               "%s    %s\n%s"
               "    lw__l = lw_loop_body_end();\n"
               "    if (lw__l != NULL)\n"
               "        lw_release_async(lw__l, NULL, NULL);\n"
               "}\n\n",
               lift, call, restore);
}

/* The rest of the wrapper of f with a loop, after put_locks(): the loop,
 * the arguments kept, and the request, whose callback runs the body;
 * on_fail at once when it cannot be made (lw_last_error() says why: a NULL
 * loop is LW_EINVAL). */
static void put_loop_call(lw_buf *b, const lw_func *f)
{
    buf_puts(b, "    lw_loop *lw__loop = (");
    put_user_expr(b, &f->loop);
    buf_puts(b, "    );\n");
    if (f->nparams == 0)
        buf_printf(b,
                   "    int lw__rc = lw_acquire_guards_async(lw__loop, lw__gs, "
                   "lw__n, lw__%s_run, NULL);\n",
                   f->name);
    else {
        buf_printf(b, "    struct lw__%s_args lw__v = {", f->name);
        for (int i = 0; i < f->nparams; i++)
            buf_printf(b, "%s%s", i ? ", " : "", f->params[i].use);
        /* Copied, not assigned: a struct argument may have const members. */
        buf_printf(b,
                   "};\n"
                   "    struct lw__%s_args *lw__a = malloc(sizeof *lw__a);\n"
                   "    int lw__rc = LW_ENOMEM;\n"
                   "    if (lw__a != NULL) {\n"
                   "        memcpy(lw__a, &lw__v, sizeof lw__v);\n"
                   "        lw__rc = lw_acquire_guards_async(lw__loop, lw__gs, "
                   "lw__n, lw__%s_run, lw__a);\n"
                   "        if (lw__rc != LW_OK)\n"
                   "            free(lw__a);\n"
                   "    }\n",
                   f->name, f->name);
    }
    buf_puts(b, "    lw_set_last_error(lw__rc);\n");
    if (f->on_fail.text) {
        buf_puts(b, "    if (lw__rc != LW_OK)\n");
        put_user_stmt(b, &f->on_fail, "        ");
    }
}

static void emit_func_cxx(const lw_func *f, lw_woven *out);

void emit_func(const lw_func *f, lw_woven *out)
{
    if (f->cxx) {
        emit_func_cxx(f, out);
        return;
    }
    const char *name = f->name;
    lw_buf wname = {0}, bname = {0}, protos = {0}, wr = {0}, ret = {0};
    lw_buf lift = {0}, restore = {0};
    /* The body is static, so it can never be called around the wrapper.
     * Except under a plain external `inline` wrapper: C forbids an inline
     * definition with external linkage to refer to an internal name, so
     * there the body gets external linkage; its declaration without
     * `inline` makes its definition the one external definition. */
    const char *bspec =
        (!f->internal && f->is_inline && !f->is_extern) ? "" : "static ";

    buf_printf(&wname, "lw__lock_%s", name);
    buf_printf(&bname, "lw__%s_body", name);

    /* What goes in front of the definition, under the woven file's own
     * line numbers (a message about these lines shows them).  The
     * wrapper's declaration, so a call in the body (recursion) goes
     * through the lock, unless a declaration before the definition, a
     * header's, already gives its prototype: a second one would be a
     * redundant declaration (-Wredundant-decls).  Then the body's, which
     * gives the definition its linkage and its symbol.  After a
     * declaration without a prototype (int f();) the wrapper's is needed
     * all the same, for the calls between the definition and the wrapper,
     * and gcc calls it redundant: not a warning of the user's code. */
    if (!f->rename_in_place)
        buf_puts(&protos, LW_LINE_RESUME "\n");
    if (f->declared < 0 && !f->rename_in_place)
        buf_puts(&protos,
                 "#pragma GCC diagnostic push\n"
                 "#pragma GCC diagnostic ignored \"-Wredundant-decls\"\n");
    if (f->declared <= 0) {
        put_spec(&protos, f);
        put_decl(&protos, &f->type, name);
        buf_puts(&protos, f->rename_in_place ? "; " : ";\n");
    }
    if (f->declared < 0 && !f->rename_in_place)
        buf_puts(&protos, "#pragma GCC diagnostic pop\n");
    if (f->rename_in_place) {
        /* On the definition's own line, so no line number moves. */
        buf_puts(&protos, bspec);
        put_decl(&protos, &f->type, bname.p);
        buf_puts(&protos, "; ");
    } else {
        buf_printf(&protos, "#undef %s\n%s", name, bspec);
        put_decl(&protos, &f->type, name);
        buf_printf(&protos, " __asm__(\"%s\");\n", bname.p);
        /* In the wrapper the name is the wrapper's own; the body is
         * called with the #define lifted for that one line. */
        buf_printf(&lift, "#undef %s\n", name);
        buf_printf(&restore, "#define %s %s\n", name, wname.p);
    }
    const char *callee = f->rename_in_place ? bname.p : name;

    buf_printf(&wr, "\n/* %s():", name);
    for (int i = 0; i < f->nlocks; i++) {
        buf_puts(&wr, f->once_window_ms > 0 ? " REDIS_ONCE(" : " REDIS_LOCK(");
        put_comment_text(&wr, f->locks[i].annot);
        buf_putc(&wr, ')');
    }
    buf_puts(&wr, " */\n");
    put_sites(&wr, f);
    lw_buf call = {0};
    buf_printf(&call, "%s(", callee);
    for (int i = 0; i < f->nparams; i++)
        buf_printf(&call, "%s%s", i ? ", " : "", f->params[i].use);
    buf_puts(&call, ");");
    if (f->loop.text) {
        put_loop_args(&wr, f);
        put_loop_run(&wr, f, bspec, call.p, lift.p ? lift.p : "",
                     restore.p ? restore.p : "");
    }
    put_spec(&wr, f);
    put_decl(&wr, &f->def, name);
    buf_puts(&wr, "\n{\n");
    put_return(&ret, f);
    put_locks(&wr, f, ret.p);
    if (f->loop.text) {
        put_loop_call(&wr, f);
        buf_puts(&wr, "}\n");
    } else if (f->once_window_ms > 0) {
        buf_put(&wr, lift.p, lift.len);
        buf_puts(&wr, "    ");
        if (f->ret != LW_RET_VOID) {
            put_decl(&wr, &f->ret_decl, "lw_result");
            buf_puts(&wr, " = ");
        }
        buf_printf(&wr, "%s\n", call.p);
        buf_put(&wr, restore.p, restore.len);
        put_once_leave(&wr, f);
        buf_puts(&wr,
                 f->ret == LW_RET_VOID ? "}\n" : "    return lw_result;\n}\n");
    } else {
        buf_put(&wr, lift.p, lift.len);
        buf_puts(&wr, "    ");
        if (f->ret != LW_RET_VOID) {
            put_decl(&wr, &f->ret_decl, "lw__r");
            buf_puts(&wr, " = ");
        }
        buf_printf(&wr, "%s\n", call.p);
        buf_put(&wr, restore.p, restore.len);
        buf_printf(&wr, "    %s;\n%s}\n", leave_call(f),
                   f->ret == LW_RET_VOID ? "" : "    return lw__r;\n");
    }
    buf_free(&call);

    out->wrapper_name = buf_take(&wname);
    out->body_name = buf_take(&bname);
    out->protos = buf_take(&protos);
    out->wrapper = buf_take(&wr);
    buf_free(&ret);
    buf_free(&lift);
    buf_free(&restore);
}

/* ---- C++ ---------------------------------------------------------------- */

/* Lock i's site in C++: lw__site_N, or lw__site_N_0, lw__site_N_1, ...,
 * N the function's place in the file (overloads share a name). */
static void cxx_site_name(lw_buf *b, const lw_func *f, int i)
{
    buf_printf(b, "lw__site_%d", f->index);
    if (f->nlocks > 1)
        buf_printf(b, "_%d", i);
}

/* Guard i of the C++ preamble: a member of its lw__guards. */
static void cxx_guard(lw_buf *b, const lw_func *f, int i)
{
    buf_puts(b, "lw__g.g");
    if (f->nlocks > 1)
        buf_printf(b, "[%d]", i);
}

/* The lock options of lock i: an object of the call, set field by field
 * (C++ before 20 has no designated initializers). */
static void cxx_put_options(lw_buf *b, const lw_func *f, int i)
{
    const lw_lockspec *l = &f->locks[i];
    lw_buf o = {0};
    guard_name(&o, f, "lw__o", i);
    buf_printf(b,
               "    lw_lock_opts %s = lw_lock_opts();\n"
               "    %s.expire_ms = %uu;\n"
               "    %s.wait_ms = %uu;\n",
               o.p, o.p, l->expire_ms, o.p, l->wait_ms);
    for (const lw_option *op = lw_options; op->name; op++) {
        if (op->kind == LW_OPT_EXPR)
            continue;
        int64_t x = lockopt_get(&l->opts, op);
        if ((x == 0 && op->def == 0) || op->woven.field == NULL)
            continue;
        buf_printf(b, "    %s.%s = ", o.p, op->woven.field);
        if (op->kind == LW_OPT_WORD)
            buf_puts(b, word_c(op, x));
        else
            buf_printf(b, "%lld%s", (long long)x,
                       op->woven.suffix ? op->woven.suffix : "");
        buf_puts(b, ";\n");
    }
    buf_printf(b, "    %s.site = &", o.p);
    cxx_site_name(b, f, i);
    buf_puts(b, ";\n");
    buf_free(&o);
}

/* The return of a C++ function whose body does not run: on_fail, or the
 * value-initialized result ({}: zero for the scalars the scan lets
 * through without on_fail). */
static void cxx_put_return(lw_buf *b, const lw_func *f)
{
    if (f->ret == LW_RET_VOID)
        buf_puts(b, "return;");
    else if (f->on_fail.text) {
        buf_puts(b, "return (");
        put_user_expr(b, &f->on_fail);
        buf_puts(b, "    );");
    } else
        buf_puts(b, "return {};");
}

/* C++: the lock is woven into the definition itself.  The metrics sites go
 * at namespace scope in front of the declaration holding it (out->wrapper),
 * and the text after the body's '{' (out->protos) takes the lock: the
 * guards live in a local struct whose destructor leaves them, so a return
 * from the body and an exception through it release the lock alike, after
 * the body's own locals are gone, and -fno-exceptions builds need nothing
 * else.  The function keeps its name, symbol, overloads, access to private
 * members and noexcept; a recursive call re-enters the lock. */
static void emit_func_cxx(const lw_func *f, lw_woven *out)
{
    lw_buf sites = {0}, pre = {0}, ret = {0}, g = {0};
    int n = f->nlocks;

    for (int i = 0; i < n; i++) {
        const lw_lockspec *l = &f->locks[i];
        buf_puts(&sites, "LW_SITE_AT(");
        cxx_site_name(&sites, f, i);
        buf_puts(&sites, ", ");
        put_c_string(&sites, f->qual_name, strlen(f->qual_name));
        buf_puts(&sites, ", ");
        put_c_string(&sites, l->tmpl, l->tmpl_len);
        buf_puts(&sites, ", ");
        put_c_string(&sites, l->file, strlen(l->file));
        buf_printf(&sites, ", %u);\n", l->line);
    }

    cxx_put_return(&ret, f);
    buf_puts(&pre, LW_LINE_RESUME "\n    /* lockweave:");
    for (int i = 0; i < n; i++) {
        buf_puts(&pre, " REDIS_LOCK(");
        put_comment_text(&pre, f->locks[i].annot);
        buf_putc(&pre, ')');
    }
    buf_puts(&pre, " */\n");
    for (int i = 0; i < n; i++)
        cxx_put_options(&pre, f, i);
    buf_puts(&pre, "    struct lw__guards {\n");
    if (n == 1)
        buf_puts(&pre, "        lw_guard g;\n"
                       "        ~lw__guards() { lw_guard_cleanup(&g); }\n");
    else {
        buf_printf(&pre,
                   "        lw_guard g[%d];\n"
                   "        ~lw__guards()\n"
                   "        {\n",
                   n);
        for (int i = n; i-- > 0;)
            buf_printf(&pre, "            lw_guard_cleanup(&g[%d]);\n", i);
        buf_puts(&pre, "        }\n");
    }
    buf_puts(&pre, "    } lw__g;\n");
    for (int i = 0; i < n; i++) {
        lw_buf o = {0};
        guard_name(&o, f, "lw__o", i);
        g.len = 0;
        cxx_guard(&g, f, i);
        buf_printf(&pre, "    lw_guard_init(&%s, &%s);\n", g.p, o.p);
        buf_free(&o);
    }
    if (f->skip_if.text)
        put_skip_if(&pre, &f->skip_if, "", "", ret.p);
    for (int i = 0; i < n; i++) {
        g.len = 0;
        cxx_guard(&g, f, i);
        put_key(&pre, &f->locks[i].key, g.p, "    ", 1);
    }
    if (n == 1)
        buf_printf(&pre,
                   "    if (lw_guard_enter(&lw__g.g) != LW_OK)\n        %s\n",
                   ret.p);
    else {
        buf_printf(&pre, "    lw_guard *lw__gs[%d] = {", n);
        for (int i = 0; i < n; i++)
            buf_printf(&pre, "%s&lw__g.g[%d]", i ? ", " : "", i);
        buf_printf(&pre,
                   "};\n"
                   "    if (lw_guard_enter_all(lw__gs, %d) != LW_OK)\n"
                   "        %s\n",
                   n, ret.p);
    }
    if (f->skip_if.text)
        put_skip_if(&pre, &f->skip_if, " /* checked again under the lock */",
                    "", ret.p);
    out->wrapper_name = NULL;
    out->body_name = NULL;
    out->protos = buf_take(&pre);
    out->wrapper = buf_take(&sites);
    buf_free(&ret);
    buf_free(&g);
}

void emit_free(lw_woven *w)
{
    free(w->wrapper_name);
    free(w->body_name);
    free(w->protos);
    free(w->wrapper);
}
