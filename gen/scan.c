/*
 * The libclang side: parse the file as the compiler would (plus LW__SCAN, so
 * REDIS_LOCK becomes an annotate attribute), walk the declarations, check
 * every annotation and turn each annotated definition into an lw_func.
 */
#include "args.h" /* is_cxx_source() */
#include "lwgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Files whose text diagnostics quote; the main file is s->main. */
typedef struct src_cache {
    CXFile file;
    lw_src src;
} src_cache;

/* The parameter names of a declaration carrying a REDIS_LOCK: the key
 * and the options name parameters as the declaration they are written on
 * does, even when the definition calls them otherwise. */
typedef struct annotated_decl {
    const lw_src *src;
    size_t off; /* where its REDIS_LOCK is */
    char *func; /* the function's name */
    char *text; /* the REDIS_LOCK's spelling */
    char **names;
    int n;
    /* Where each name is written: a parameter named there that the
     * wrapper cannot take is reported there. */
    const lw_src **psrc;
    size_t *poff;
    /* The function's USR: in C++ a name is shared by overloads and by
     * members of other classes. */
    char *usr;
} annotated_decl;

typedef struct walk {
    lw_scan *s;
    CXTranslationUnit tu;
    CXFile main_file;
    src_cache files[64];
    int nfiles;
    /* The same parse with function bodies, made only when the text cannot
     * tell a definition from a declaration. */
    CXIndex idx;
    const char *const *args;
    int nargs;
    CXTranslationUnit full;
    int full_tried;
    annotated_decl *decls;
    int ndecls;
    /* Files included before the main file's first line (-include). */
    CXFile forced[16];
    int nforced;
    /* Where <lockweave.h> is first included from the main file (-1: not
     * at all; 0 when through a forced include). */
    long lockweave_h_at;
    int reported_missing_header;
    /* The declarations that check what the wrappers return (ret_check),
     * for the parse check_returns() makes, and where each is. */
    lw_buf checks;
    struct ret_check *rchecks;
    int nrchecks;
    /* The annotations already reported as dropped by clang, so that the
     * walk does not report one twice. */
    const lw_src **dropped_src;
    size_t *dropped_off;
    int ndropped;
    /* Where the last file-scope declaration walked ends. */
    CXFile top_file;
    unsigned top_end;
    /* Where the file-scope declaration being walked starts, in the main
     * file (-1: elsewhere): a C++ definition's metrics sites go in front
     * of it, at namespace scope. */
    long top_start;
} walk;

/* A value the wrapper returns in place of the body's (on_fail) must be one
 * the function may return.  The compiler only warns about most values that
 * may not (a string for an int, an int for a pointer), and warns in the
 * woven file's wrapper, so the scan checks each itself: a declaration
 * appended to the file for a second parse, in which the expression is
 * assigned to an object of the return type, as a return does with it
 * (C11 6.8.6.4), with the parameters in scope:
 *
 *     void lw__ret_check_0(int id, int (*lw__r), char (*lw__c)[sizeof(*lw__r =
 *     ("x")
 *     )]);
 *
 * The expression has a line of its own: what the parse says about it alone
 * (an unknown name) the compiler says at the annotation anyway; what it
 * says about the assignment is the error reported here.  A value the
 * wrapper keeps in an object of a type of its own (loop's lw_loop *) is
 * checked the same way.  An expression the wrapper runs as a statement in
 * place of the body (a loop function's on_fail) must have no value that
 * it would drop unseen: its type, read back from
 *
 *     void lw__ret_check_1(int id, __typeof__(
 *     (retry(id))
 *     ) *lw__t);
 *
 * must be void. */
enum check_kind {
    CHECK_RETURN, /* assigned to an object of the return type */
    CHECK_TYPE,   /* assigned to an object of its option's type */
    CHECK_VOID    /* a void expression */
};

typedef struct ret_check {
    enum check_kind kind;
    size_t start, expr, expr_end, end; /* offsets in walk.checks */
    const lw_src *src;                 /* where the value is written */
    size_t off;
    char *option; /* its option's name */
    char *func;   /* the function's name, and the type assigned to */
    char *rtype;
} ret_check;

static const lw_src *src_of(walk *w, CXFile f)
{
    if (!f)
        return NULL;
    if (clang_File_isEqual(f, w->main_file))
        return &w->s->main;
    for (int i = 0; i < w->nfiles; i++)
        if (clang_File_isEqual(f, w->files[i].file))
            return &w->files[i].src;
    if (w->nfiles == (int)(sizeof w->files / sizeof w->files[0]))
        return NULL;
    src_cache *c = &w->files[w->nfiles++];
    size_t len = 0;
    CXString name = clang_getFileName(f);
    c->file = f;
    c->src.name = xstrdup(clang_getCString(name));
    clang_disposeString(name);
    c->src.text = clang_getFileContents(w->tu, f, &len);
    c->src.len = len;
    return &c->src;
}

/* Where a location ends up in a file (macro expansions: the invocation). */
static const lw_src *where(walk *w, CXSourceLocation loc, size_t *off)
{
    CXFile f;
    unsigned o;
    clang_getExpansionLocation(loc, &f, NULL, NULL, &o);
    *off = o;
    return src_of(w, f);
}

static char *spelling(CXCursor c)
{
    CXString s = clang_getCursorSpelling(c);
    char *r = xstrdup(clang_getCString(s));
    clang_disposeString(s);
    return r;
}

static int is_lockweave_attr(CXCursor c)
{
    if (clang_getCursorKind(c) != CXCursor_AnnotateAttr)
        return 0;
    CXString s = clang_getCursorSpelling(c);
    int r = strncmp(clang_getCString(s), LW_ANNOT_PREFIX,
                    sizeof LW_ANNOT_PREFIX - 1) == 0 ||
            strncmp(clang_getCString(s), LW_ONCE_PREFIX,
                    sizeof LW_ONCE_PREFIX - 1) == 0;
    clang_disposeString(s);
    return r;
}

/* ---- the annotations of one function declaration ---------------------- */

/* REDIS_LOCK annotations one function's declarations may carry in all. */
#define LW_ATTRS_MAX 16

typedef struct fn_attrs {
    walk *w;
    CXCursor attr[LW_ATTRS_MAX]; /* distinct by location */
    size_t off[LW_ATTRS_MAX];
    const lw_src *src[LW_ATTRS_MAX];
    int n;
    int bad_param; /* REDIS_LOCK on a parameter was reported */
    /* On a definition: each one's spelling, whether it is written on the
     * definition itself (else inherited from a declaration), and the first
     * that is (-1: none). */
    char *text[LW_ATTRS_MAX];
    int own[LW_ATTRS_MAX];
    int first_own;
} fn_attrs;

static enum CXChildVisitResult attrs_visit(CXCursor c, CXCursor parent,
                                           CXClientData d)
{
    fn_attrs *fa = d;
    if (!is_lockweave_attr(c))
        return clang_getCursorKind(c) == CXCursor_ParmDecl
                   ? CXChildVisit_Recurse
                   : CXChildVisit_Continue;
    size_t off;
    const lw_src *src = where(fa->w, clang_getCursorLocation(c), &off);
    if (clang_getCursorKind(parent) == CXCursor_ParmDecl) {
        diag(LW_DIAG_ERROR, src, off,
             "REDIS_LOCK must stand before a function, not a parameter");
        return CXChildVisit_Continue;
    }
    /* Attributes are inherited by later declarations: the same attribute
     * shows up again, at the same place. */
    for (int i = 0; i < fa->n; i++)
        if (fa->src[i] == src && fa->off[i] == off)
            return CXChildVisit_Continue;
    if (fa->n == LW_ATTRS_MAX) {
        diag(LW_DIAG_ERROR, src, off,
             "more than %d REDIS_LOCK annotations on one function (its "
             "declarations included)",
             LW_ATTRS_MAX);
        return CXChildVisit_Continue;
    }
    fa->attr[fa->n] = c;
    fa->off[fa->n] = off;
    fa->src[fa->n] = src;
    fa->n++;
    return CXChildVisit_Continue;
}

/* ---- one annotated definition ----------------------------------------- */

/* The first character after off that is not blank or comment, or 0. */
static char next_char(const lw_src *src, size_t off)
{
    while (off < src->len) {
        char c = src->text[off];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
            c == '\v')
            off++;
        else if (c == '/' && off + 1 < src->len && src->text[off + 1] == '*') {
            const char *e = strstr(src->text + off + 2, "*/");
            off = e ? (size_t)(e - src->text) + 2 : src->len;
        } else if (c == '/' && off + 1 < src->len &&
                   src->text[off + 1] == '/') {
            while (off < src->len && src->text[off] != '\n')
                off++;
        } else
            return c;
    }
    return 0;
}

/* Whether the token at off of src is the identifier name, written there
 * (not produced by a macro). */
static int written_at(const lw_src *src, size_t off, const char *name)
{
    size_t n = strlen(name);
    if (!src || !src->text || off + n > src->len ||
        memcmp(src->text + off, name, n) != 0)
        return 0;
    char after = off + n < src->len ? src->text[off + n] : 0;
    return !ident_char(after);
}

/* Called on each declaration of a function, with where it is (macro
 * expansions: where invoked); nonzero stops the search. */
typedef int (*decl_fn)(CXCursor decl, CXFile file, unsigned off, void *ud);

typedef struct decl_search {
    CXString usr; /* the function's, which any parse of the file agrees on */
    decl_fn fn;
    void *ud;
    int stopped;
} decl_search;

static enum CXChildVisitResult decl_visit(CXCursor c, CXCursor parent,
                                          CXClientData d)
{
    (void)parent;
    decl_search *ds = d;
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_LinkageSpec || k == CXCursor_Namespace ||
        k == CXCursor_ClassDecl || k == CXCursor_StructDecl ||
        k == CXCursor_UnionDecl)
        return CXChildVisit_Recurse;
    if (k != CXCursor_FunctionDecl && k != CXCursor_CXXMethod)
        return CXChildVisit_Continue;
    CXString usr = clang_getCursorUSR(c);
    int same = strcmp(clang_getCString(usr), clang_getCString(ds->usr)) == 0;
    clang_disposeString(usr);
    if (!same)
        return CXChildVisit_Continue;
    CXFile f;
    unsigned off;
    clang_getExpansionLocation(clang_getCursorLocation(c), &f, NULL, NULL,
                               &off);
    ds->stopped = ds->fn(c, f, off, ds->ud);
    return ds->stopped ? CXChildVisit_Break : CXChildVisit_Continue;
}

/* Call fn on each declaration in tu of the function c declares (c may come
 * from another parse of the file) until it returns nonzero; whether it
 * did. */
static int each_declaration(CXTranslationUnit tu, CXCursor c, decl_fn fn,
                            void *ud)
{
    decl_search ds = {clang_getCursorUSR(c), fn, ud, 0};
    clang_visitChildren(clang_getTranslationUnitCursor(tu), decl_visit, &ds);
    clang_disposeString(ds.usr);
    return ds.stopped;
}

/* A declaration at a place: whether one is there, and a definition. */
typedef struct decl_at {
    CXFile file;
    unsigned off;
    int found, def;
} decl_at;

static int note_decl_at(CXCursor decl, CXFile file, unsigned off, void *ud)
{
    decl_at *da = ud;
    if (off == da->off && file && da->file &&
        clang_File_isEqual(file, da->file)) {
        da->found = 1;
        da->def |= clang_isCursorDefinition(decl);
    }
    return 0;
}

/* The same parse with function bodies, made the first time it is needed:
 * NULL when it fails. */
static CXTranslationUnit full_parse(walk *w)
{
    if (!w->full_tried) {
        w->full_tried = 1;
        if (clang_parseTranslationUnit2(
                w->idx, w->s->line_name, w->args, w->nargs, NULL, 0,
                CXTranslationUnit_KeepGoing, &w->full) != CXError_Success)
            w->full = NULL;
    }
    return w->full;
}

/* Whether c is a definition, as the parse with bodies has it.  A parse
 * that fails, or a declaration it does not find, counts as a definition:
 * the answer that is refused rather than woven. */
static int defined_in_full(walk *w, CXCursor c)
{
    CXTranslationUnit full = full_parse(w);
    if (!full)
        return 1;
    decl_at da = {0};
    CXFile f;
    clang_getExpansionLocation(clang_getCursorLocation(c), &f, NULL, NULL,
                               &da.off);
    CXString fname = clang_getFileName(f);
    da.file = clang_getFile(full, clang_getCString(fname));
    clang_disposeString(fname);
    each_declaration(full, c, note_decl_at, &da);
    return da.found ? da.def : 1;
}

/* Is c a definition?  With function bodies skipped (the fast parse)
 * libclang answers no for every function, so the text decides: a '{'
 * right after the declaration, or a ';' or ',', both where the name is
 * written in the file.  When a macro wrote the declaration, or the text
 * after it, only the compiler can tell: the file is parsed again, bodies
 * included, once. */
static int is_definition(walk *w, CXCursor c, const char *name)
{
    /* C++ is parsed with bodies (scan_file()): clang knows, also of a
     * function defined as '= default'. */
    if (w->s->cxx)
        return clang_isCursorDefinition(c);
    size_t name_off, end;
    const lw_src *nsrc = where(w, clang_getCursorLocation(c), &name_off);
    const lw_src *esrc =
        where(w, clang_getRangeEnd(clang_getCursorExtent(c)), &end);
    if (nsrc && nsrc == esrc && written_at(nsrc, name_off, name)) {
        char next = next_char(esrc, end);
        if (next == '{')
            return 1;
        if (next == ';' || next == ',')
            return 0;
    }
    return defined_in_full(w, c);
}

/* "name(int a, char *b)": a prototype for the parameters of c, to suggest
 * in place of its K&R definition. */
static void put_kr_hint(lw_buf *b, CXCursor c, const char *name)
{
    buf_printf(b, "%s(", name);
    int n = clang_Cursor_getNumArguments(c);
    for (int i = 0; i < n; i++) {
        CXCursor p = clang_Cursor_getArgument(c, (unsigned)i);
        char *pn = spelling(p);
        if (i)
            buf_puts(b, ", ");
        if (decl_print(b, clang_getCursorType(p), pn) != 0)
            buf_printf(b, "... %s", pn);
        free(pn);
    }
    buf_puts(b, n ? ")" : "void)");
}

static void report_kr(const lw_src *src, size_t off, CXCursor c,
                      const char *name)
{
    lw_buf hint = {0};
    put_kr_hint(&hint, c, name);
    diag(LW_DIAG_ERROR, src, off,
         "'%s' is an old-style (K&R) definition: REDIS_LOCK needs a "
         "prototype, as in '%s'",
         name, hint.p);
    buf_free(&hint);
}

/* The field of f that C expression option o sets. */
static lw_expr *expr_field(lw_func *f, const lw_option *o)
{
    return (lw_expr *)((char *)f + o->field);
}

/* Option k of lw_options, a C expression, as annotation a gives it, for
 * the model, which outlives the file texts the scan reads. */
static void expr_set(lw_expr *e, const lw_annot *a, int k)
{
    e->text = xstrdup(a->expr[k]);
    e->file = xstrdup(a->src->name);
    e->line = src_line(a->src, annot_option_off(a, k));
}

static void func_free(lw_func *f)
{
    free(f->name);
    free(f->qual_name);
    for (int i = 0; i < f->nparams; i++) {
        free(f->params[i].name);
        free(f->params[i].use);
        decl_free(&f->params[i].decl);
    }
    free(f->params);
    decl_free(&f->type);
    decl_free(&f->def);
    decl_free(&f->ret_decl);
    free(f->ret_type);
    for (int i = 0; i < f->nlocks; i++) {
        free(f->locks[i].annot);
        free(f->locks[i].tmpl);
        free(f->locks[i].file);
        key_free(&f->locks[i].key);
    }
    free(f->locks);
    for (const lw_option *o = lw_options; o->name; o++)
        if (o->kind == LW_OPT_EXPR) {
            free(expr_field(f, o)->text);
            free(expr_field(f, o)->file);
        }
}

/* The annotation of as[0..na) that gives option k of lw_options, a C
 * expression, to the function name, or NULL; given by two of them, an
 * error, unless the option is one they may agree on and they do. */
static const lw_annot *expr_giver(const lw_annot *as, int na, int k,
                                  const char *name)
{
    const lw_annot *found = NULL;
    for (int i = 0; i < na; i++) {
        const lw_annot *a = &as[i];
        if (!a->expr[k])
            continue;
        if (found && lw_options[k].agree) {
            if (strcmp(found->expr[k], a->expr[k]) != 0) {
                diag(LW_DIAG_ERROR, a->src, annot_option_off(a, k),
                     "conflicting %s on the REDIS_LOCK annotations of '%s' "
                     "('%s' here, '%s' before): it is the function's, not "
                     "one lock's; give it once, or the same on each",
                     lw_options[k].name, name, a->expr[k], found->expr[k]);
                diag(LW_DIAG_NOTE, found->src, annot_option_off(found, k),
                     "first given here");
            }
            continue;
        }
        if (found) {
            diag(LW_DIAG_ERROR, a->src, annot_option_off(a, k),
                 "%s given on two REDIS_LOCK annotations of '%s': give it "
                 "once, on any of them",
                 lw_options[k].name, name);
            diag(LW_DIAG_NOTE, found->src, annot_option_off(found, k),
                 "first given here");
            continue;
        }
        found = a;
    }
    return found;
}

/* The identifiers of the C text *t, one at a time (NULL at its end), with
 * string and character literals and numbers skipped. */
static const char *next_ident(const char **t, size_t *len)
{
    const char *p = *t;
    while (*p) {
        char c = *p;
        if (c == '"' || c == '\'') {
            for (p++; *p && *p != c; p++)
                if (*p == '\\' && p[1])
                    p++;
            p += *p != 0;
        } else if ((c >= '0' && c <= '9') ||
                   (c == '.' && p[1] >= '0' && p[1] <= '9')) {
            /* A number, exponent signs included ("1e-5", "0x1p+3"). */
            for (p++; ident_char(*p) || *p == '.' ||
                      ((*p == '+' || *p == '-') && strchr("eEpP", p[-1]));
                 p++)
                ;
        } else if (ident_char(c)) {
            const char *id = p;
            while (ident_char(*p))
                p++;
            *len = (size_t)(p - id);
            *t = p;
            return id;
        } else
            p++;
    }
    *t = p;
    return NULL;
}

static int is_reserved(const char *id, size_t n)
{
    return n >= sizeof LW_RESERVED - 1 &&
           memcmp(id, LW_RESERVED, sizeof LW_RESERVED - 1) == 0;
}

/* Whether the C type text t refers to the ordinary identifier name: a
 * struct, union or enum tag is a name no parameter can hide. */
static int type_refers_to(const char *t, const char *name)
{
    size_t n, len = strlen(name);
    int tag = 0;
    for (const char *id; (id = next_ident(&t, &n));) {
        if (!tag && n == len && memcmp(id, name, n) == 0)
            return 1;
        tag = (n == 6 && memcmp(id, "struct", 6) == 0) ||
              (n == 5 && memcmp(id, "union", 5) == 0) ||
              (n == 4 && memcmp(id, "enum", 4) == 0);
    }
    return 0;
}

/* The wrapper declares the function's parameters, as the annotated
 * declaration names them, around code of its own: a parameter must not
 * take a name that code declares (the reserved prefix) or refers to (a
 * name of <lockweave.h>, the function, a type it writes), which it would
 * hide there and break the build, or worse, silently change what the
 * wrapper does.  Each such name is reported where it is written. */
static void check_param_names(walk *w, CXCursor def, CXType fn,
                              const annotated_decl *ad, const lw_func *f)
{
    int n = f->nparams;
    /* The types as the wrapper writes them: a parameter's name is in scope
     * in the types of the parameters after it, and in the body, where the
     * result's type is written (not for void). */
    char **ptypes = xmalloc(sizeof *ptypes * (size_t)(n + 1));
    for (int j = 0; j < n; j++) {
        lw_buf b = {0};
        if (fn.kind == CXType_FunctionProto &&
            decl_print(&b, clang_getArgType(fn, (unsigned)j), "") != 0)
            b.len = 0;
        ptypes[j] = buf_take(&b);
    }
    CXType ret = clang_getResultType(fn);
    lw_buf rt = {0};
    if (clang_getCanonicalType(ret).kind == CXType_Void ||
        decl_print(&rt, ret, "") != 0)
        rt.len = 0;
    char *rtype = buf_take(&rt);

    for (int i = 0; i < n; i++) {
        const char *pn = f->params[i].name, *from;
        if (!pn)
            continue;
        lw_buf why = {0};
        int reserved = is_reserved(pn, strlen(pn));
        if (reserved)
            buf_puts(&why, LW_RESERVED);
        else if ((from = emit_uses(pn, f->loop.text != NULL)))
            buf_printf(&why, "%s's '%s'", from, pn);
        else if (strcmp(pn, f->name) == 0)
            buf_puts(&why, "the function's own name");
        else if (type_refers_to(rtype, pn))
            buf_printf(&why, "the type name '%s' in its return type", pn);
        else
            for (int j = i + 1; j < n && !why.p; j++)
                if (type_refers_to(ptypes[j], pn))
                    buf_printf(&why,
                               "the type name '%s' in the type of parameter "
                               "'%s'",
                               pn, f->params[j].use);
        if (why.p) {
            size_t off;
            const lw_src *src;
            if (ad && i < ad->n && *ad->names[i]) {
                src = ad->psrc[i];
                off = ad->poff[i];
            } else
                src = where(w,
                            clang_getCursorLocation(
                                clang_Cursor_getArgument(def, (unsigned)i)),
                            &off);
            if (reserved)
                diag(LW_DIAG_ERROR, src, off,
                     "parameter '%s' of '%s': names beginning with "
                     "'" LW_RESERVED "' are reserved for lockweave's generated "
                     "code; rename the parameter",
                     pn, f->name);
            else
                diag(LW_DIAG_ERROR, src, off,
                     "parameter '%s' of '%s' would hide %s, which the lock's "
                     "wrapper uses; rename the parameter",
                     pn, f->name, why.p);
        }
        buf_free(&why);
    }
    for (int j = 0; j < n; j++)
        free(ptypes[j]);
    free(ptypes);
    free(rtype);
}

/* C expression options (option k of lw_options, as a gives it) are
 * evaluated inside the wrapper, where a name with the reserved prefix is
 * one of the wrapper's own, not the user's. */
static void check_expr_names(const lw_annot *a, int k)
{
    const char *text = a->expr[k];
    size_t n;
    for (const char *t = text, *id; (id = next_ident(&t, &n));) {
        /* A member's name (r.lw__x, p->lw__x) is not looked up in scope. */
        const char *b = id;
        while (b > text && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\n'))
            b--;
        if (b > text &&
            (b[-1] == '.' || (b[-1] == '>' && b - 1 > text && b[-2] == '-')))
            continue;
        if (is_reserved(id, n)) {
            diag(LW_DIAG_ERROR, a->src, annot_option_off(a, k),
                 "%s names '%.*s': names beginning with '" LW_RESERVED
                 "' are reserved for lockweave's generated code; rename it",
                 lw_options[k].name, (int)n, id);
            return;
        }
    }
}

/* The function type of c, unsugared where a typedef names it. */
static CXType function_type(CXCursor c)
{
    CXType t = clang_getCursorType(c);
    if (t.kind != CXType_FunctionProto && t.kind != CXType_FunctionNoProto)
        t = clang_getCanonicalType(t);
    return t;
}

static int param_count(CXCursor def)
{
    int n = clang_Cursor_getNumArguments(def);
    return n < 0 ? 0 : n;
}

/* Whether t is va_list: named so through typedefs, or what it stands for
 * (the array of one __va_list_tag it is on x86-64). */
static int is_va_list(CXType t)
{
    static const char *const names[] = {"va_list", "__gnuc_va_list",
                                        "__builtin_va_list"};
    int found = 0;
    for (int depth = 0; depth < 32 && !found; depth++) {
        if (t.kind == CXType_Elaborated)
            t = clang_Type_getNamedType(t);
        if (t.kind != CXType_Typedef)
            break;
        CXString n = clang_getTypedefName(t);
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            found |= strcmp(clang_getCString(n), names[i]) == 0;
        clang_disposeString(n);
        t = clang_getTypedefDeclUnderlyingType(clang_getTypeDeclaration(t));
    }
    CXType c = clang_getCanonicalType(t);
    if (c.kind == CXType_ConstantArray)
        c = clang_getCanonicalType(clang_getArrayElementType(c));
    CXString sp = clang_getTypeSpelling(c);
    found |= strcmp(clang_getCString(sp), "struct __va_list_tag") == 0;
    clang_disposeString(sp);
    return found;
}

/* A signature whose arguments cannot be passed on: reported, -1.  Those of
 * a function with a loop (loop) are kept for a body that runs after the
 * call has returned: not '...', nor a va_list, which are the caller's
 * only until it returns. */
static int refuse_signature(walk *w, CXCursor def, CXType fn, const lw_func *f,
                            int loop)
{
    if (fn.kind == CXType_FunctionNoProto && param_count(def) > 0) {
        report_kr(&w->s->main, f->name_off, def, f->name);
        return -1;
    }
    if (fn.kind == CXType_FunctionProto && clang_isFunctionTypeVariadic(fn)) {
        if (loop)
            diag(LW_DIAG_ERROR, &w->s->main, f->name_off,
                 "'%s' is variadic: the arguments of a function with a loop "
                 "are kept for its body, which runs after the call returns, "
                 "and those of '...' cannot be (pass them in an array or a "
                 "struct)",
                 f->name);
        else
            diag(LW_DIAG_ERROR, &w->s->main, f->name_off,
                 "'%s' is variadic: its arguments cannot be passed on to the "
                 "locked body (write a wrapper taking a va_list)",
                 f->name);
        return -1;
    }
    for (int i = 0; loop && i < param_count(def); i++) {
        CXCursor p = clang_Cursor_getArgument(def, (unsigned)i);
        if (is_va_list(clang_getCursorType(p))) {
            size_t off;
            const lw_src *src = where(w, clang_getCursorLocation(p), &off);
            char *pn = spelling(p);
            lw_buf which = {0};
            if (*pn)
                buf_printf(&which, "'%s'", pn);
            else
                buf_printf(&which, "%d", i + 1);
            diag(LW_DIAG_ERROR, src, off,
                 "parameter %s of '%s' is a va_list: the arguments of a "
                 "function with a loop are kept for its body, which runs "
                 "after the call returns, and a va_list is good only until "
                 "then",
                 which.p, f->name);
            buf_free(&which);
            free(pn);
            return -1;
        }
    }
    return 0;
}

/* The record type of the class whose non-static member function c is
 * ('this' in a key), or an invalid type. */
static CXType this_type(CXCursor c)
{
    CXType none = {CXType_Invalid, {NULL, NULL}};
    if (clang_getCursorKind(c) != CXCursor_CXXMethod ||
        clang_CXXMethod_isStatic(c))
        return none;
    return clang_getCursorType(clang_getCursorSemanticParent(c));
}

/* f's parameters, named as the declaration the annotation is written on
 * (ad, when not the definition def) names them, where the definition's
 * names differ.  Returns their types. */
static CXType *model_params(CXCursor def, const annotated_decl *ad, int cxx,
                            lw_func *f)
{
    int n = param_count(def);
    CXType *types = xmalloc(sizeof *types * (size_t)(n + 1));
    f->params = xmalloc(sizeof *f->params * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        CXCursor p = clang_Cursor_getArgument(def, (unsigned)i);
        lw_param *prm = &f->params[f->nparams++];
        prm->decl = (lw_decl){NULL, NULL};
        char *name = ad && i < ad->n && *ad->names[i] ? xstrdup(ad->names[i])
                                                      : spelling(p);
        types[i] = clang_getCursorType(p);
        if (cxx) {
            /* The lock is woven into the definition: its code names the
             * parameters as the definition does ("": unnamed there). */
            prm->name = *name ? name : NULL;
            if (!*name)
                free(name);
            prm->use = spelling(p);
        } else if (*name) {
            prm->name = name;
            prm->use = xstrdup(name);
        } else {
            free(name);
            prm->name = NULL;
            lw_buf t = {0};
            buf_printf(&t, "lw__p%d", i);
            prm->use = buf_take(&t);
        }
    }
    return types;
}

/* l's metrics site: a's key template, file name and line. */
static void site_set(lw_lockspec *l, const lw_annot *a)
{
    const char *slash = strrchr(a->src->name, '/');

    l->tmpl = xmalloc(a->keylen + 1);
    if (a->key)
        memcpy(l->tmpl, a->key, a->keylen);
    l->tmpl_len = a->key ? a->keylen : 0;
    l->tmpl[l->tmpl_len] = '\0';
    /* The path depends on where the tree was built; the name does not. */
    l->file = xstrdup(slash ? slash + 1 : a->src->name);
    l->line = src_line(a->src, a->at);
}

/* f's locks, one per annotation of as[0..na), their keys compiled against
 * f's parameters (types: theirs).  0, or -1 when a key is not usable. */
static int model_locks(const lw_annot *as, int na, const CXType *types,
                       const CXType *self, lw_func *f)
{
    int rc = 0;
    f->locks = xmalloc(sizeof *f->locks * (size_t)na);
    memset(f->locks, 0, sizeof *f->locks * (size_t)na);
    for (int i = 0; i < na; i++, f->nlocks++) {
        lw_lockspec *l = &f->locks[i];
        l->annot = xstrdup(as[i].text);
        site_set(l, &as[i]);
        l->expire_ms = as[i].expire_ms;
        l->wait_ms = as[i].wait_ms;
        l->opts = as[i].opts;
        if (!as[i].key || keytmpl_compile(&as[i], f->name, f->params, types,
                                          f->nparams, self, &l->key) != 0)
            rc = -1;
    }
    return rc;
}

/* f's C expression options, each from the annotation of as[0..na) that
 * gives it, giver[k] for option k of lw_options (NULL: none does). */
static void model_exprs(const lw_annot *as, int na, lw_func *f,
                        const lw_annot **giver)
{
    for (int k = 0; lw_options[k].name; k++) {
        giver[k] = lw_options[k].kind == LW_OPT_EXPR
                       ? expr_giver(as, na, k, f->name)
                       : NULL;
        if (giver[k])
            expr_set(expr_field(f, &lw_options[k]), giver[k], k);
    }
    for (int k = 0; lw_options[k].name; k++)
        if (giver[k])
            check_expr_names(giver[k], k);
}

/* Whether one of as[0..na) gives loop: the call only asks for the lock,
 * and the body runs later. */
static int gives_loop(const lw_annot *as, int na)
{
    int loop = 0;
    for (int k = 0; lw_options[k].name; k++)
        for (int i = 0; i < na; i++)
            loop |= lw_options[k].kind == LW_OPT_EXPR &&
                    lw_options[k].field == offsetof(lw_func, loop) &&
                    as[i].expr[k] != NULL;
    return loop;
}

/* The options of giver (as model_exprs() found them) that the return type
 * of f (of type fn) refuses: a value in place of the result, for a
 * function returning void, except that with a loop on_fail is no value
 * but what runs in place of the body; an option only a function returning
 * void may have, for any other. */
static void check_void(CXType fn, const lw_func *f,
                       const lw_annot *const *giver)
{
    for (int k = 0; lw_options[k].name; k++) {
        const lw_option *o = &lw_options[k];
        if (!giver[k])
            continue;
        if (f->ret == LW_RET_VOID && o->needs_result && !f->loop.text)
            diag(LW_DIAG_ERROR, giver[k]->src, giver[k]->at,
                 "%s given, but '%s' returns void", o->name, f->name);
        lw_buf rt = {0};
        if (f->ret != LW_RET_VOID && o->void_only) {
            if (decl_print(&rt, clang_getResultType(fn), "") != 0) {
                rt.len = 0;
                buf_puts(&rt, "a value");
            }
            diag(LW_DIAG_ERROR, giver[k]->src, annot_option_off(giver[k], k),
                 "%s given, but '%s' returns '%s': %s, so it must return "
                 "void",
                 o->name, f->name, rt.p, o->void_only);
        }
        buf_free(&rt);
    }
}

static enum CXChildVisitResult vis_visit(CXCursor c, CXCursor parent,
                                         CXClientData d)
{
    (void)parent;
    if (clang_getCursorKind(c) == CXCursor_VisibilityAttr)
        *(int *)d = 1;
    return CXChildVisit_Continue;
}

/* Linkage, inline-ness and visibility, as the definition def has them: an
 * explicit visibility only, the default one is no attribute. */
static void model_linkage(CXCursor def, lw_func *f)
{
    f->internal = clang_getCursorLinkage(def) == CXLinkage_Internal;
    f->is_inline = clang_Cursor_isFunctionInlined(def);
    f->is_extern = clang_Cursor_getStorageClass(def) == CX_SC_Extern;
    int has_vis = 0;
    clang_visitChildren(def, vis_visit, &has_vis);
    if (!has_vis || f->internal)
        return;
    switch (clang_getCursorVisibility(def)) {
    case CXVisibility_Hidden:
        f->visibility = "hidden";
        break;
    case CXVisibility_Protected:
        f->visibility = "protected";
        break;
    case CXVisibility_Default:
        f->visibility = "default";
        break;
    default:
        break;
    }
}

/* The signature of f, of type fn, as text: what cannot be written back
 * fails here, not in the emitter.  0, or -1 after reporting it. */
static int model_signature(walk *w, CXType fn, lw_func *f)
{
    CXType ret = clang_getResultType(fn);
    const char **pnames = xmalloc(sizeof *pnames * (size_t)(f->nparams + 1));
    lw_buf ret_type = {0};
    int rc = 0;
    for (int i = 0; i < f->nparams; i++)
        pnames[i] = f->params[i].use;
    int params_ok = 1;
    for (int i = 0; f->loop.text && i < f->nparams; i++)
        params_ok &= decl_split_param(&f->params[i].decl,
                                      clang_getArgType(fn, (unsigned)i)) == 0;
    if (!params_ok || decl_split(&f->type, fn, NULL) != 0 ||
        decl_split(&f->def, fn, pnames) != 0 ||
        (f->ret != LW_RET_VOID && decl_split(&f->ret_decl, ret, NULL) != 0) ||
        (f->ret == LW_RET_RECORD && !f->on_fail.text &&
         decl_print(&ret_type, ret, "") != 0)) {
        diag(LW_DIAG_ERROR, &w->s->main, f->name_off,
             "the signature of '%s' uses a type that cannot be written again "
             "(an unnamed struct or a variable-length array); use a typedef",
             f->name);
        rc = -1;
    } else if (ret_type.p)
        f->ret_type = buf_take(&ret_type);
    buf_free(&ret_type);
    free(pnames);
    return rc;
}

/* Where the value of option k is written in a's source: after "name =",
 * when the annotation writes it so, else where the argument is. */
static size_t option_value_off(const lw_annot *a, int k)
{
    size_t off = annot_option_off(a, k), n = strlen(lw_options[k].name);
    const lw_src *src = a->src;
    if (!src || !src->text || off + n > src->len ||
        memcmp(src->text + off, lw_options[k].name, n) != 0)
        return off;
    size_t v = off + n;
    while (v < src->len && (src->text[v] == ' ' || src->text[v] == '\t'))
        v++;
    if (v >= src->len || src->text[v] != '=')
        return off;
    for (v++; v < src->len && (src->text[v] == ' ' || src->text[v] == '\t' ||
                               src->text[v] == '\n' || src->text[v] == '\r');
         v++)
        ;
    return v < src->len ? v : off;
}

/* Queue the check of what f's wrapper does with option k, given by a (see
 * ret_check).  A qualified return type (const int) cannot be assigned to
 * and means nothing on a return: not checked. */
static void add_ret_check(walk *w, CXType fn, const lw_func *f,
                          const lw_annot *a, int k, enum check_kind kind)
{
    CXType ret = clang_getResultType(fn);
    const lw_option *o = &lw_options[k];
    const lw_expr *e = expr_field((lw_func *)f, o);
    lw_buf *b = &w->checks, rtype = {0};
    ret_check c = {0};
    if (kind == CHECK_RETURN &&
        (f->ret == LW_RET_VOID || clang_isConstQualifiedType(ret) ||
         clang_isVolatileQualifiedType(ret) ||
         decl_print(&rtype, ret, "") != 0))
        goto cleanup;
    if (kind == CHECK_TYPE)
        buf_puts(&rtype, o->type);
    c.kind = kind;
    c.start = b->len;
    buf_printf(b, "\nvoid " LW_RESERVED "ret_check_%d(", w->nrchecks);
    for (int i = 0; i < f->nparams; i++)
        if (decl_print(b, clang_getArgType(fn, (unsigned)i),
                       f->params[i].use) != 0) {
            b->len = c.start;
            goto cleanup;
        } else
            buf_puts(b, ", ");
    if (kind == CHECK_VOID) {
        buf_puts(b, "__typeof__(\n");
        c.expr = b->len;
        buf_printf(b, "(%s)\n", e->text);
        c.expr_end = b->len;
        buf_puts(b, ") *" LW_RESERVED "t);\n");
    } else {
        if (kind == CHECK_RETURN)
            buf_printf(b, "%s(*" LW_RESERVED "r)%s", f->ret_decl.head,
                       f->ret_decl.tail);
        else
            buf_printf(b, "%s(*" LW_RESERVED "r)", o->type);
        buf_puts(b, ", char (*" LW_RESERVED "c)[sizeof(*" LW_RESERVED "r =\n");
        c.expr = b->len;
        buf_printf(b, "(%s)\n", e->text);
        c.expr_end = b->len;
        buf_puts(b, ")]);\n");
    }
    c.end = b->len;
    c.src = a->src;
    c.off = option_value_off(a, k);
    c.option = xstrdup(lw_options[k].name);
    c.func = xstrdup(f->name);
    c.rtype = buf_take(&rtype);
    w->rchecks =
        xrealloc(w->rchecks, sizeof *w->rchecks * (size_t)(w->nrchecks + 1));
    w->rchecks[w->nrchecks++] = c;
cleanup:
    buf_free(&rtype);
}

/* The warnings that mean a value cannot be assigned to (so returned as) an
 * object of the type: what C calls a constraint violation, and compilers
 * let pass with a warning. */
static int assignment_warning(const char *option)
{
    static const char *const v[] = {
        "-Wint-conversion",
        "-Wincompatible-pointer-types",
        "-Wincompatible-pointer-types-discards-qualifiers",
        "-Wincompatible-function-pointer-types",
        "-Wpointer-sign",
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (strcmp(option, v[i]) == 0)
            return 1;
    return 0;
}

/* The error for check c: what the compiler said about it (why). */
static void report_check(const ret_check *c, const char *why)
{
    switch (c->kind) {
    case CHECK_RETURN:
        diag(LW_DIAG_ERROR, c->src, c->off,
             "%s cannot be returned from '%s', which returns '%s': %s",
             c->option, c->func, c->rtype, why);
        break;
    case CHECK_TYPE:
        diag(LW_DIAG_ERROR, c->src, c->off,
             "%s of '%s' must convert to '%s': %s", c->option, c->func,
             c->rtype, why);
        break;
    case CHECK_VOID:
        diag(LW_DIAG_ERROR, c->src, c->off,
             "%s of '%s' runs in place of its body and gives nothing back: "
             "it must be a void expression, not one of type '%s' (cast it "
             "to void to drop the value)",
             c->option, c->func, why);
        break;
    }
}

/* What the parse of the checks found of each (see check_returns). */
enum { CHECK_PENDING, CHECK_REPORTED, CHECK_EXPR_BAD };

typedef struct void_search {
    const walk *w;
    int *state;
} void_search;

/* A CHECK_VOID's declaration: the type its expression has, read from its
 * last parameter (__typeof__(expr) *), must be void. */
static enum CXChildVisitResult void_visit(CXCursor c, CXCursor parent,
                                          CXClientData d)
{
    (void)parent;
    void_search *vs = d;
    static const char prefix[] = LW_RESERVED "ret_check_";
    if (clang_getCursorKind(c) != CXCursor_FunctionDecl)
        return CXChildVisit_Continue;
    char *name = spelling(c);
    int k = -1, n = clang_Cursor_getNumArguments(c);
    if (strncmp(name, prefix, sizeof prefix - 1) == 0)
        k = atoi(name + sizeof prefix - 1);
    free(name);
    if (k < 0 || k >= vs->w->nrchecks || n < 1 ||
        vs->w->rchecks[k].kind != CHECK_VOID || vs->state[k] != CHECK_PENDING)
        return CXChildVisit_Continue;
    CXType t =
        clang_getCursorType(clang_Cursor_getArgument(c, (unsigned)n - 1));
    t = clang_getCanonicalType(clang_getPointeeType(clang_getCanonicalType(t)));
    if (t.kind != CXType_Void && t.kind != CXType_Invalid) {
        char *tn = type_name(t);
        report_check(&vs->w->rchecks[k], tn);
        free(tn);
        vs->state[k] = CHECK_REPORTED;
    }
    return CXChildVisit_Continue;
}

/* Parse the file again with the ret_check declarations appended, and report
 * each value that cannot be returned (or kept), at the value, once, and
 * each value that a void expression must not have.  An error in the
 * expression itself is the compiler's to report, at the annotation. */
static void check_returns(walk *w)
{
    lw_scan *s = w->s;
    lw_buf text = {0};
    CXTranslationUnit tu = NULL;
    if (w->nrchecks == 0)
        return;
    buf_put(&text, s->main.text, s->main.len);
    size_t base = text.len;
    buf_put(&text, w->checks.p, w->checks.len);
    struct CXUnsavedFile uf = {s->input, text.p, (unsigned long)text.len};
    if (clang_parseTranslationUnit2(w->idx, s->input, w->args, w->nargs, &uf, 1,
                                    CXTranslationUnit_SkipFunctionBodies |
                                        CXTranslationUnit_KeepGoing,
                                    &tu) != CXError_Success)
        goto cleanup; /* the compiler still sees the return */
    CXFile main_file = clang_getFile(tu, s->input);
    int *state = xmalloc(sizeof *state * (size_t)w->nrchecks);
    for (int k = 0; k < w->nrchecks; k++)
        state[k] = CHECK_PENDING;
    unsigned nd = clang_getNumDiagnostics(tu);
    for (unsigned i = 0; i < nd; i++) {
        CXDiagnostic d = clang_getDiagnostic(tu, i);
        CXFile f;
        unsigned off;
        clang_getExpansionLocation(clang_getDiagnosticLocation(d), &f, NULL,
                                   NULL, &off);
        CXString opt = clang_getDiagnosticOption(d, NULL);
        /* A call of an undeclared function is a mistake in the expression
         * (its int result is C90's guess), which the compiler reports. */
        int error = clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error ||
                    strcmp(clang_getCString(opt),
                           "-Wimplicit-function-declaration") == 0;
        int bad = error || assignment_warning(clang_getCString(opt));
        clang_disposeString(opt);
        for (int k = 0; bad && f && clang_File_isEqual(f, main_file) &&
                        off >= base && k < w->nrchecks;
             k++) {
            const ret_check *c = &w->rchecks[k];
            size_t at = off - base;
            if (at < c->start || at >= c->end || state[k] != CHECK_PENDING)
                continue;
            if (at >= c->expr && at < c->expr_end) {
                if (error)
                    state[k] = CHECK_EXPR_BAD;
                continue;
            }
            CXString msg = clang_getDiagnosticSpelling(d);
            report_check(c, clang_getCString(msg));
            clang_disposeString(msg);
            state[k] = CHECK_REPORTED;
        }
        clang_disposeDiagnostic(d);
    }
    void_search vs = {w, state};
    clang_visitChildren(clang_getTranslationUnitCursor(tu), void_visit, &vs);
    free(state);
    clang_disposeTranslationUnit(tu);
cleanup:
    buf_free(&text);
}

/* The rest of f, whose name and place handle_function() has set: the
 * definition def, annotated with as[0..na); ad: the declaration they are
 * written on, when not on def.  0, or -1 after reporting errors (f then
 * holds what was filled in). */
/* How REDIS_ONCE stores a result of canonical type kind rk: integers up
 * to 64 bits, enums and bool exactly as integers, float and double as
 * doubles; anything else (a struct, a pointer, long double) not at all. */
static enum lw_store store_of(enum CXTypeKind rk)
{
    switch (rk) {
    case CXType_Bool:
    case CXType_Char_U:
    case CXType_UChar:
    case CXType_UShort:
    case CXType_UInt:
    case CXType_ULong:
    case CXType_ULongLong:
        return LW_STORE_U64;
    case CXType_Char_S:
    case CXType_SChar:
    case CXType_Short:
    case CXType_Int:
    case CXType_Long:
    case CXType_LongLong:
    case CXType_Enum:
        return LW_STORE_I64;
    case CXType_Float:
    case CXType_Double:
        return LW_STORE_DOUBLE;
    default:
        return LW_STORE_NONE;
    }
}

/* REDIS_ONCE's rules (docs/weaving.md): alone on its function, and a
 * result it cannot store needs on_fail, or the window's later callers
 * would get a zero value that looks like a result.  0 or -1. */
static int model_once(CXType fn, const lw_annot *as, int na, lw_func *f)
{
    int once = -1;
    for (int i = 0; i < na; i++)
        if (as[i].once)
            once = i;
    if (once < 0)
        return 0;
    if (na > 1) {
        const lw_annot *other = &as[once == 0 ? 1 : 0];
        diag(LW_DIAG_ERROR, other->src, other->at,
             "'%s' has REDIS_ONCE and another annotation: REDIS_ONCE stands "
             "alone; put the lock on a function the body calls",
             f->name);
        return -1;
    }
    f->once_window_ms = as[once].window_ms;
    f->store = store_of(clang_getCanonicalType(clang_getResultType(fn)).kind);
    if (f->ret != LW_RET_VOID && f->store == LW_STORE_NONE &&
        !f->on_fail.text) {
        lw_buf rt = {0};
        if (decl_print(&rt, clang_getResultType(fn), "") != 0) {
            rt.len = 0;
            buf_puts(&rt, "its type");
        }
        diag(LW_DIAG_ERROR, as[once].src, as[once].at,
             "REDIS_ONCE on '%s', which returns '%s': only integers, enums, "
             "bool, float and double are stored for the window's later "
             "callers; give on_fail = what they get",
             f->name, rt.p);
        buf_free(&rt);
        return -1;
    }
    return 0;
}

/* What C++ does not take yet, and the rule of its early return: without
 * on_fail, a function returns the zero value of a scalar (an integer,
 * floating, enum or pointer type: the value-initialized `{}`), while a
 * class or a reference has none that could not be taken for a result. */
static void cxx_options(CXType fn, const lw_annot *as, int na, const lw_func *f)
{
    for (int i = 0; i < na; i++) {
        if (as[i].once)
            diag(LW_DIAG_ERROR, as[i].src, as[i].at,
                 "REDIS_ONCE on '%s': not in C++ yet; define the function "
                 "in a .c file and declare it extern \"C\"",
                 f->name);
        for (int k = 0; lw_options[k].name; k++)
            if (lw_options[k].kind == LW_OPT_EXPR &&
                lw_options[k].field == offsetof(lw_func, loop) &&
                as[i].expr[k] != NULL)
                diag(LW_DIAG_ERROR, as[i].src, annot_option_off(&as[i], k),
                     "loop = on '%s': not in C++ yet; define the function "
                     "in a .c file and declare it extern \"C\", or take "
                     "the lock with lw::acquire_async() (<lockweave.hpp>)",
                     f->name);
    }
    enum CXTypeKind rk = clang_getCanonicalType(clang_getResultType(fn)).kind;
    if (f->ret == LW_RET_VOID || f->on_fail.text ||
        (rk != CXType_Record && rk != CXType_LValueReference &&
         rk != CXType_RValueReference))
        return;
    char *rt = type_name(clang_getResultType(fn));
    diag(LW_DIAG_ERROR, as[0].src, as[0].at,
         "'%s' returns '%s': give on_fail = the value its callers get when "
         "the lock is not had (in C++ only a scalar return type defaults to "
         "zero)",
         f->name, rt);
    free(rt);
}

static int model_func(walk *w, CXCursor def, const lw_annot *as, int na,
                      const annotated_decl *ad, lw_func *f)
{
    CXType fn = function_type(def);
    if (refuse_signature(w, def, fn, f, gives_loop(as, na)) != 0)
        return -1;
    enum CXTypeKind rk = clang_getCanonicalType(clang_getResultType(fn)).kind;
    f->ret = rk == CXType_Void     ? LW_RET_VOID
             : rk == CXType_Record ? LW_RET_RECORD
                                   : LW_RET_SCALAR;
    int errs = diag_errors();
    const lw_annot *giver[LW_OPTIONS_MAX];
    CXType *types = model_params(def, ad, f->cxx, f);
    CXType self = this_type(def);
    int rc = model_locks(as, na, types, f->cxx ? &self : NULL, f);
    free(types);
    model_exprs(as, na, f, giver);
    check_param_names(w, def, fn, ad, f);
    check_void(fn, f, giver);
    if (f->cxx)
        cxx_options(fn, as, na, f);
    else if (rc == 0 && diag_errors() == errs)
        rc = model_once(fn, as, na, f);
    /* A bad key or option stops here, after all of them are reported. */
    if (rc != 0 || diag_errors() != errs)
        return -1;
    /* The C++ lock is woven into the definition, which keeps its
     * signature: on_fail is checked by the compiler, at the annotation. */
    if (f->cxx)
        return 0;
    model_linkage(def, f);
    if (model_signature(w, fn, f) != 0)
        return -1;
    for (int k = 0; lw_options[k].name; k++)
        if (giver[k] && lw_options[k].type)
            add_ret_check(w, fn, f, giver[k], k, CHECK_TYPE);
        else if (giver[k] && lw_options[k].needs_result && !lw_options[k].cond)
            add_ret_check(w, fn, f, giver[k], k,
                          f->loop.text ? CHECK_VOID : CHECK_RETURN);
    return 0;
}

/* What declares the function of the definition def before it (lw_func's
 * declared): its first declaration (clang's canonical one), when that is
 * another.  A block-scope declaration does not count, and with bodies
 * skipped none is seen. */
static int declared_before(CXCursor def)
{
    CXCursor first = clang_getCanonicalCursor(def);
    if (clang_equalCursors(first, def))
        return 0;
    return function_type(first).kind == CXType_FunctionProto ? 1 : -1;
}

/* Whether a declaration is in a file included before the main file's first
 * line (-include). */
static int in_forced_file(CXCursor decl, CXFile file, unsigned off, void *ud)
{
    const walk *w = ud;
    (void)decl;
    (void)off;
    for (int i = 0; file && i < w->nforced; i++)
        if (clang_File_isEqual(file, w->forced[i]))
            return 1;
    return 0;
}

/* Is c's function declared in a forced include, where the woven file's
 * #define cannot reach? */
static int declared_early(walk *w, CXCursor c)
{
    return w->nforced > 0 && each_declaration(w->tu, c, in_forced_file, w);
}

/* Remember a declaration c whose own REDIS_LOCK attr is at (src, off): its
 * text, for the definition to compare its own with, and its parameter
 * names, which the lock's key uses. */
static void note_annotated_decl(walk *w, CXCursor c, CXCursor attr,
                                const lw_src *src, size_t off)
{
    for (int i = 0; i < w->ndecls; i++)
        if (w->decls[i].src == src && w->decls[i].off == off)
            return;
    int n = clang_Cursor_getNumArguments(c);
    annotated_decl d = {src,
                        off,
                        spelling(c),
                        spelling(attr),
                        xmalloc(sizeof(char *) * (size_t)(n + 1)),
                        n < 0 ? 0 : n,
                        xmalloc(sizeof(lw_src *) * (size_t)(n + 1)),
                        xmalloc(sizeof(size_t) * (size_t)(n + 1)),
                        NULL};
    CXString usr = clang_getCursorUSR(c);
    d.usr = xstrdup(clang_getCString(usr));
    clang_disposeString(usr);
    for (int i = 0; i < d.n; i++) {
        CXCursor p = clang_Cursor_getArgument(c, (unsigned)i);
        d.names[i] = spelling(p);
        d.psrc[i] = where(w, clang_getCursorLocation(p), &d.poff[i]);
    }
    w->decls = xrealloc(w->decls, sizeof *w->decls * (size_t)(w->ndecls + 1));
    w->decls[w->ndecls++] = d;
}

static const annotated_decl *find_annotated_decl(const walk *w,
                                                 const lw_src *src, size_t off)
{
    for (int i = 0; i < w->ndecls; i++)
        if (w->decls[i].src == src && w->decls[i].off == off)
            return &w->decls[i];
    return NULL;
}

/* The identifier at off of src (a macro's name where a macro wrote the
 * definition), in a static buffer. */
static const char *word_at(const lw_src *src, size_t off)
{
    static char w[128];
    size_t n = 0;
    while (src && src->text && off + n < src->len && n + 1 < sizeof w) {
        char c = src->text[off + n];
        if (!ident_char(c))
            break;
        w[n++] = c;
    }
    w[n] = 0;
    return w;
}

/* A REDIS_LOCK at (src, off) of the definition of name that its
 * declaration ad does not carry, or the reverse; returns 1. */
static int report_conflict(const lw_src *src, size_t off,
                           const annotated_decl *ad, const char *name)
{
    diag(LW_DIAG_ERROR, src, off,
         "conflicting REDIS_LOCK annotations on '%s': its declaration and "
         "definition must carry the same locks",
         name);
    diag(LW_DIAG_NOTE, ad->src, ad->off, "previous REDIS_LOCK is here");
    return 1;
}

/* Where a function declaration is written: its name, and its extent
 * (macro expansions: where invoked). */
typedef struct fn_place {
    const lw_src *nsrc, *ssrc, *esrc;
    size_t name_off, start_off, end_off;
} fn_place;

static fn_place place_of(walk *w, CXCursor c)
{
    fn_place p;
    CXSourceRange ext = clang_getCursorExtent(c);
    p.nsrc = where(w, clang_getCursorLocation(c), &p.name_off);
    p.ssrc = where(w, clang_getRangeStart(ext), &p.start_off);
    p.esrc = where(w, clang_getRangeEnd(ext), &p.end_off);
    return p;
}

/* Whether REDIS_LOCK i of fa is written within the declaration at p. */
static int written_within(const fn_attrs *fa, int i, const fn_place *p)
{
    return fa->src[i] == p->ssrc && fa->off[i] >= p->start_off &&
           fa->off[i] <= p->end_off;
}

/* A K&R definition declares its parameters after the declarator: clang
 * gives it a prototype type, but the parameters sit past the end of the
 * function's declarator. */
static int is_kr(walk *w, CXCursor c, const fn_place *p)
{
    int n = clang_Cursor_getNumArguments(c);
    if (function_type(c).kind == CXType_FunctionNoProto && n > 0)
        return 1;
    for (int i = 0; i < n; i++) {
        size_t poff;
        const lw_src *psrc = where(
            w,
            clang_getCursorLocation(clang_Cursor_getArgument(c, (unsigned)i)),
            &poff);
        if (psrc == p->esrc && poff > p->end_off)
            return 1;
    }
    return 0;
}

/* A declaration's annotations reach the definition (clang copies them
 * there), naming parameters as this declaration does.  One written after
 * the definition never reaches it; clang warns and pass_diag() turns that
 * into an error. */
static void note_declaration(walk *w, CXCursor c, const fn_attrs *fa,
                             const fn_place *p)
{
    for (int i = 0; i < fa->n; i++)
        if (p->ssrc == p->esrc && written_within(fa, i, p))
            note_annotated_decl(w, c, fa->attr[i], fa->src[i], fa->off[i]);
}

/* The definition of name, whose name comes from a macro. */
static void report_macro_name(const fn_place *p, const char *name)
{
    if (p->esrc && next_char(p->esrc, p->end_off) == '{')
        diag(LW_DIAG_ERROR, p->nsrc, p->name_off,
             "the name of '%s' comes from the macro '%s', where lockweave "
             "cannot rename it; write the name itself in the definition",
             name, word_at(p->nsrc, p->name_off));
    else
        diag(LW_DIAG_ERROR, p->nsrc, p->name_off,
             "'%s' is defined by the macro '%s', where lockweave cannot "
             "rename it; let the macro define a function without "
             "REDIS_LOCK and annotate a plain function that calls it",
             name, word_at(p->nsrc, p->name_off));
}

/* The definition of name, in a file the compile includes. */
static void report_included(const fn_place *p, const char *name, int cxx)
{
    const char *file = p->nsrc && p->nsrc->name ? p->nsrc->name : "a header";
    size_t fl = strlen(file);
    if (cxx && !is_cxx_source(file))
        diag(LW_DIAG_ERROR, p->nsrc, p->name_off,
             "REDIS_LOCK on '%s', which is defined in a header: lockweave "
             "weaves definitions in the source file being compiled only; "
             "declare it in the header (in the class, for a member: "
             "REDIS_LOCK may stay there) and define it in one .cpp file",
             name);
    else if (fl > 2 && (strcmp(file + fl - 2, ".c") == 0 || cxx))
        diag(LW_DIAG_ERROR, p->nsrc, p->name_off,
             "REDIS_LOCK on '%s', defined in a .c file that the file "
             "being compiled #includes (a unity build?): lockweave weaves "
             "definitions of the compiled file only; compile this file "
             "on its own (SKIP_UNITY_BUILD_INCLUSION)",
             name);
    else
        diag(LW_DIAG_ERROR, p->nsrc, p->name_off,
             "REDIS_LOCK on '%s', which is defined in a header: lockweave "
             "weaves definitions in the .c file being compiled only; "
             "declare it in the header (REDIS_LOCK may stay there) and "
             "define it, without 'static inline', in one .c file",
             name);
}

/* ---- C++ -------------------------------------------------------------- */

static int token_is(CXTranslationUnit tu, CXToken t, const char *text);

/* The kinds of C++ function lockweave cannot weave, whatever they are
 * declared or defined as: an annotation on one is an error where it is
 * written (a declaration included), with what to write instead. */
static int cxx_unweavable(CXCursor c, const fn_attrs *fa, const fn_place *p,
                          const char *name)
{
    enum CXCursorKind k = clang_getCursorKind(c);
    CXCursor parent = clang_getCursorSemanticParent(c);
    enum CXCursorKind pk = clang_getCursorKind(parent);
    int tmpl = k == CXCursor_FunctionTemplate ||
               clang_Cursor_getNumTemplateArguments(c) > 0;
    int member_tmpl = pk == CXCursor_ClassTemplate ||
                      pk == CXCursor_ClassTemplatePartialSpecialization;
    if (!tmpl && !member_tmpl && k != CXCursor_Constructor &&
        k != CXCursor_Destructor && k != CXCursor_ConversionFunction)
        return 0;
    /* Reported where the annotation is written: a later declaration
     * inherits it. */
    int own = 0;
    for (int i = 0; i < fa->n; i++)
        own |= written_within(fa, i, p);
    if (!own)
        return 1;
    char *cls = spelling(parent);
    const lw_src *src = fa->src[0];
    size_t off = fa->off[0];
    if (tmpl)
        diag(LW_DIAG_ERROR, src, off,
             "REDIS_LOCK on '%s', a function template: lockweave weaves "
             "one definition per function, not one per instantiation; move "
             "the body into a non-template function and annotate that",
             name);
    else if (member_tmpl)
        diag(LW_DIAG_ERROR, src, off,
             "REDIS_LOCK on '%s', a member of the class template '%s': "
             "lockweave weaves one definition per function, not one per "
             "instantiation; move the body into a non-template function "
             "and annotate that",
             name, cls);
    else if (k == CXCursor_Constructor)
        diag(LW_DIAG_ERROR, src, off,
             "REDIS_LOCK on a constructor of '%s': its lock could not "
             "cover the member initializers; annotate a member function "
             "and call it from the constructor's body",
             cls);
    else if (k == CXCursor_Destructor)
        diag(LW_DIAG_ERROR, src, off,
             "REDIS_LOCK on the destructor of '%s': annotate a member "
             "function and call it from the destructor's body",
             cls);
    else
        diag(LW_DIAG_ERROR, src, off,
             "REDIS_LOCK on '%s', a conversion function: annotate a named "
             "member function and call it from the conversion",
             name);
    free(cls);
    return 1;
}

typedef struct body_find {
    CXCursor body;
    enum CXCursorKind kind; /* CompoundStmt, CXXTryStmt, or 0: none */
} body_find;

static enum CXChildVisitResult body_visit(CXCursor c, CXCursor parent,
                                          CXClientData d)
{
    (void)parent;
    body_find *b = d;
    enum CXCursorKind k = clang_getCursorKind(c);
    if (clang_isStatement(k)) {
        b->body = c;
        b->kind = k;
        return CXChildVisit_Break;
    }
    return CXChildVisit_Continue;
}

/* The first of the words in the tokens of the main file from offset from
 * to offset to, or -1; *off: where. */
static int find_word(walk *w, size_t from, size_t to, const char *const *words,
                     size_t *off)
{
    CXSourceRange r = clang_getRange(
        clang_getLocationForOffset(w->tu, w->main_file, (unsigned)from),
        clang_getLocationForOffset(w->tu, w->main_file, (unsigned)to));
    CXToken *t = NULL;
    unsigned n = 0;
    int found = -1;
    clang_tokenize(w->tu, r, &t, &n);
    for (unsigned i = 0; i < n && found < 0; i++) {
        if (clang_getTokenKind(t[i]) == CXToken_Comment ||
            clang_getTokenKind(t[i]) == CXToken_Literal)
            continue;
        for (int k = 0; words[k] && found < 0; k++)
            if (token_is(w->tu, t[i], words[k])) {
                found = k;
                where(w, clang_getTokenLocation(w->tu, t[i]), off);
            }
    }
    clang_disposeTokens(w->tu, t, n);
    return found;
}

/* A C++ definition c of name (at p) that can be woven: the body's '{' is
 * written in the main file (*body_off: just after it).  Else reported,
 * with what to write instead, and -1.  The lock is woven into the body
 * itself, so what matters is what a body may hold: not a coroutine (a
 * guard cannot outlive a suspension), nor a function-try-block (its
 * handler would run after the lock's release), and a return type the
 * wrapper's early return can name (not deduced). */
static int cxx_definition(walk *w, CXCursor c, const fn_place *p,
                          const char *name, size_t *body_off)
{
    static const char *const co[] = {"co_await", "co_yield", "co_return", NULL};
    static const char *const cexpr[] = {"constexpr", "consteval", NULL};
    static const char *const deduced[] = {"auto", NULL};
    static const char *const arrow[] = {"->", NULL};
    body_find b = {clang_getNullCursor(), (enum CXCursorKind)0};
    size_t off, at, end;
    int i;
    clang_visitChildren(c, body_visit, &b);
    /* A coroutine's body is clang's CoroutineBodyStmt around the
     * braces. */
    if (b.kind && p->esrc == &w->s->main &&
        (i = find_word(w, p->name_off, p->end_off, co, &at)) >= 0) {
        diag(LW_DIAG_ERROR, &w->s->main, at,
             "'%s' is a coroutine (%s): a lock cannot be held across its "
             "suspensions; annotate a plain function that does the locked "
             "work, and call it from the coroutine",
             name, co[i]);
        return -1;
    }
    if (b.kind == CXCursor_CXXTryStmt) {
        where(w, clang_getCursorLocation(b.body), &off);
        diag(LW_DIAG_ERROR, &w->s->main, off,
             "'%s' is defined with a function-try-block, whose handler "
             "would run after the lock is released; put the try block "
             "inside the body",
             name);
        return -1;
    }
    if (b.kind != CXCursor_CompoundStmt) {
        diag(LW_DIAG_ERROR, p->nsrc, p->name_off,
             "REDIS_LOCK on '%s', which is defaulted or deleted: there is "
             "no body to lock; write the body",
             name);
        return -1;
    }
    CXSourceRange ext = clang_getCursorExtent(b.body);
    const lw_src *bsrc = where(w, clang_getRangeStart(ext), &off);
    where(w, clang_getRangeEnd(ext), &end);
    if (bsrc != &w->s->main || off >= bsrc->len || bsrc->text[off] != '{') {
        diag(LW_DIAG_ERROR, p->nsrc, p->name_off,
             "the body of '%s' comes from a macro, where lockweave cannot "
             "weave the lock in; write the body itself in the definition",
             name);
        return -1;
    }
    *body_off = off + 1;
    /* The declaration before the name: the annotation's own tokens (in
     * the main file, or a header's declaration) hold neither word. */
    size_t head = p->ssrc == &w->s->main ? p->start_off : p->name_off;
    if ((i = find_word(w, head, p->name_off, cexpr, &at)) >= 0) {
        diag(LW_DIAG_ERROR, &w->s->main, at,
             "REDIS_LOCK on '%s', which is %s: a lock cannot be taken in a "
             "constant expression; drop %s, or annotate a function it calls",
             name, cexpr[i], cexpr[i]);
        return -1;
    }
    if (find_word(w, head, p->name_off, deduced, &at) >= 0 &&
        find_word(w, p->name_off, off, arrow, &end) < 0) {
        diag(LW_DIAG_ERROR, &w->s->main, at,
             "'%s' has a deduced return type: the lock returns early when it "
             "is not had, and must name the type; write it out",
             name);
        return -1;
    }
    return 0;
}

/* The name of c with its enclosing classes and namespaces
 * (bank::Account::withdraw), the label of its metrics site. */
static char *qualified_name(CXCursor c)
{
    lw_buf b = {0};
    char *n = spelling(c);
    buf_puts(&b, n);
    free(n);
    for (CXCursor p = clang_getCursorSemanticParent(c);
         !clang_Cursor_isNull(p) &&
         clang_getCursorKind(p) != CXCursor_TranslationUnit;
         p = clang_getCursorSemanticParent(p)) {
        enum CXCursorKind k = clang_getCursorKind(p);
        if (k != CXCursor_Namespace && k != CXCursor_ClassDecl &&
            k != CXCursor_StructDecl && k != CXCursor_UnionDecl &&
            k != CXCursor_FunctionDecl && k != CXCursor_CXXMethod)
            continue; /* extern "C" { } names nothing */
        char *pn = spelling(p);
        if (!*pn) {
            free(pn);
            pn = xstrdup(k == CXCursor_Namespace ? "(anonymous namespace)"
                                                 : "(anonymous)");
        }
        lw_buf q = {0};
        buf_printf(&q, "%s::%s", pn, b.p);
        free(pn);
        buf_free(&b);
        b = q;
    }
    return buf_take(&b);
}

/* Whether the definition of name at p is one lockweave cannot weave
 * where it stands (reported). */
static int refused(const walk *w, const fn_place *p, const char *name)
{
    /* The definition's name must be written as such, or the weave would
     * have to rename it inside a macro. */
    if (!written_at(p->nsrc, p->name_off, name) &&
        !(w->s->cxx && strncmp(name, "operator", 8) == 0))
        report_macro_name(p, name);
    else if (p->nsrc != &w->s->main)
        report_included(p, name, w->s->cxx);
    else
        return 0;
    return 1;
}

/* Whether ad declares the function name (usr): the name says so in C, in
 * C++ the USR, which tells overloads and members of other classes
 * apart. */
static int decl_of(const walk *w, const annotated_decl *ad, const char *name,
                   const char *usr)
{
    return w->s->cxx ? strcmp(ad->usr, usr) == 0 : strcmp(ad->func, name) == 0;
}

/* Whether the annotations of the definition of name (fa) and of its
 * annotated declarations differ (reported).  Clang gives the definition
 * only those a declaration does not repeat, so, given on both, the two
 * sets of texts must be the same.  A lock only the definition has is
 * reported where it is written; one only a declaration has, at the
 * definition's first. */
static int conflicting(const walk *w, const fn_attrs *fa, const char *name,
                       const char *usr)
{
    for (int i = 0; i < fa->n; i++) {
        const annotated_decl *any = NULL;
        int same = !fa->own[i];
        for (int d = 0; d < w->ndecls && !same; d++)
            if (decl_of(w, &w->decls[d], name, usr)) {
                any = any ? any : &w->decls[d];
                same = strcmp(w->decls[d].text, fa->text[i]) == 0;
            }
        if (!same && any)
            return report_conflict(fa->src[i], fa->off[i], any, name);
    }
    for (int d = 0; fa->first_own >= 0 && d < w->ndecls; d++) {
        const annotated_decl *ad = &w->decls[d];
        int same = 0;
        if (!decl_of(w, ad, name, usr))
            continue;
        for (int i = 0; i < fa->n; i++)
            same |= fa->own[i] && strcmp(fa->text[i], ad->text) == 0;
        if (!same)
            return report_conflict(fa->src[fa->first_own],
                                   fa->off[fa->first_own], ad, name);
    }
    return 0;
}

/* The locks of a definition (fa): its own, or else those it inherits;
 * each text once, parsed into as.  Returns how many; *ok: all usable. */
static int parse_locks(const fn_attrs *fa, lw_annot *as, int *ok)
{
    int na = 0;
    for (int i = 0; i < fa->n; i++) {
        int dup = fa->first_own >= 0 && !fa->own[i];
        for (int k = 0; k < i && !dup; k++)
            dup = fa->own[k] == fa->own[i] &&
                  strcmp(fa->text[k], fa->text[i]) == 0;
        if (dup)
            continue;
        memset(&as[na], 0, sizeof as[na]);
        _Static_assert(sizeof LW_ANNOT_PREFIX == sizeof LW_ONCE_PREFIX,
                       "the arguments start at one place");
        as[na].once = strncmp(fa->text[i], LW_ONCE_PREFIX,
                              sizeof LW_ONCE_PREFIX - 1) == 0;
        as[na].text = xstrdup(fa->text[i] + sizeof LW_ANNOT_PREFIX - 1);
        as[na].src = fa->src[i];
        as[na].at = fa->off[i];
        *ok &= annot_parse(&as[na]) == 0;
        na++;
    }
    return na;
}

/* Model the definition c of name at p with its locks as[0..na) and, when
 * ok (they are usable, without conflict), add it to the functions to
 * weave. */
static void add_func(walk *w, CXCursor c, const fn_place *p, const char *name,
                     const lw_annot *as, int na, int ok, size_t body_off)
{
    int anykey = 0;
    for (int i = 0; i < na; i++)
        anykey |= as[i].key != NULL;
    const annotated_decl *ad = find_annotated_decl(w, as[0].src, as[0].at);
    lw_func f = {0};
    f.name = xstrdup(name);
    f.name_off = p->name_off;
    f.insert_off = p->ssrc == p->nsrc ? p->start_off : p->name_off;
    if (w->s->cxx) {
        f.cxx = 1;
        f.body_off = body_off;
        f.top_off = w->top_start >= 0 ? (size_t)w->top_start : f.insert_off;
        f.qual_name = qualified_name(c);
        f.index = w->s->nfuncs;
    } else {
        f.rename_in_place = declared_early(w, c);
        f.declared = declared_before(c);
    }
    /* A bad annotation's key is still checked, so one run reports
     * everything. */
    if ((ok || anykey) && model_func(w, c, as, na, ad, &f) == 0 && ok) {
        lw_scan *s = w->s;
        s->funcs =
            xrealloc(s->funcs, sizeof *s->funcs * (size_t)(s->nfuncs + 1));
        s->funcs[s->nfuncs++] = f;
    } else
        func_free(&f);
}

/* The annotated definition c of name, at p, with the annotations fa. */
static void handle_definition(walk *w, CXCursor c, fn_attrs *fa,
                              const fn_place *p, const char *name,
                              size_t body_off)
{
    lw_annot as[LW_ATTRS_MAX];
    fa->first_own = -1;
    for (int i = 0; i < fa->n; i++) {
        fa->text[i] = spelling(fa->attr[i]);
        fa->own[i] = written_within(fa, i, p);
        if (fa->own[i] && fa->first_own < 0)
            fa->first_own = i;
    }
    CXString usr = clang_getCursorUSR(c);
    int ok = !conflicting(w, fa, name, clang_getCString(usr));
    clang_disposeString(usr);
    int na = parse_locks(fa, as, &ok);
    add_func(w, c, p, name, as, na, ok, body_off);
    for (int i = 0; i < na; i++)
        annot_free(&as[i]);
    for (int i = 0; i < fa->n; i++)
        free(fa->text[i]);
}

static void handle_function(walk *w, CXCursor c)
{
    fn_attrs fa = {.w = w};
    clang_visitChildren(c, attrs_visit, &fa);
    if (fa.n == 0)
        return;
    fn_place p = place_of(w, c);
    char *name = spelling(c);
    size_t body_off = 0;
    if (w->s->cxx && cxx_unweavable(c, &fa, &p, name)) {
        free(name); /* reported where the annotation is written */
        return;
    }
    if (is_kr(w, c, &p))
        report_kr(p.nsrc, p.name_off, c, name);
    else if (w->s->cxx && clang_CXXMethod_isDefaulted(c))
        diag(LW_DIAG_ERROR, p.nsrc, p.name_off,
             "REDIS_LOCK on '%s', which is defaulted: there is no body to "
             "lock; write the body",
             name);
    else if (!is_definition(w, c, name))
        note_declaration(w, c, &fa, &p);
    else if (!refused(w, &p, name) &&
             (!w->s->cxx || cxx_definition(w, c, &p, name, &body_off) == 0))
        handle_definition(w, c, &fa, &p, name, body_off);
    free(name);
}

/* ---- annotations clang drops ------------------------------------------ */

/* An annotation clang drops never reaches the AST.  Most of the time clang
 * warns at it, and pass_diag() turns the warning into an error; before an
 * empty declaration (REDIS_LOCK(...);) clang 16 and later drop it without a
 * word, and the walk finds it in the tokens before the lone ';'. */
static void note_dropped(walk *w, const lw_src *src, size_t off)
{
    int n = w->ndropped;
    w->dropped_src =
        xrealloc(w->dropped_src, (size_t)(n + 1) * sizeof *w->dropped_src);
    w->dropped_off =
        xrealloc(w->dropped_off, (size_t)(n + 1) * sizeof *w->dropped_off);
    w->dropped_src[n] = src;
    w->dropped_off[n] = off;
    w->ndropped = n + 1;
}

static int was_dropped(const walk *w, const lw_src *src, size_t off)
{
    for (int i = 0; i < w->ndropped; i++)
        if (w->dropped_src[i] == src && w->dropped_off[i] == off)
            return 1;
    return 0;
}

/* The same words whichever way the annotation was found. */
static void report_declares_nothing(const lw_src *src, size_t off)
{
    diag(LW_DIAG_ERROR, src, off,
         "REDIS_LOCK must stand before a function declaration or definition, "
         "not a declaration that declares nothing");
}

static int token_is(CXTranslationUnit tu, CXToken t, const char *text)
{
    CXString s = clang_getTokenSpelling(tu, t);
    int r = strcmp(clang_getCString(s), text) == 0;
    clang_disposeString(s);
    return r;
}

static unsigned token_off(CXTranslationUnit tu, CXToken t)
{
    unsigned o;
    clang_getExpansionLocation(clang_getTokenLocation(tu, t), NULL, NULL, NULL,
                               &o);
    return o;
}

/* The last token at or before t[i] that is no comment and starts before
 * end; -1 if none. */
static long prev_token(CXTranslationUnit tu, const CXToken *t, long i,
                       unsigned end)
{
    while (i >= 0 && (clang_getTokenKind(t[i]) == CXToken_Comment ||
                      token_off(tu, t[i]) >= end))
        i--;
    return i;
}

/* c is an empty declaration (a lone ';' at file scope): an annotation
 * written right before it is REDIS_LOCK ( ... ) among the tokens between
 * the previous file-scope declaration and the ';'. */
static void check_empty_decl(walk *w, CXCursor c)
{
    CXFile f;
    unsigned semi;
    clang_getExpansionLocation(clang_getCursorLocation(c), &f, NULL, NULL,
                               &semi);
    const lw_src *src = src_of(w, f);
    if (!src || !src->text || semi >= src->len || src->text[semi] != ';')
        return;
    unsigned from = 0;
    if (w->top_file && clang_File_isEqual(w->top_file, f) && w->top_end <= semi)
        from = w->top_end;
    CXSourceRange r =
        clang_getRange(clang_getLocationForOffset(w->tu, f, from),
                       clang_getLocationForOffset(w->tu, f, semi));
    CXToken *t = NULL;
    unsigned n = 0;
    clang_tokenize(w->tu, r, &t, &n);
    /* From the end: ')', its '(' and the name before it; comments are
     * tokens too, and the range may end with the ';' itself. */
    long i = prev_token(w->tu, t, (long)n - 1, semi);
    if (i >= 0 && token_is(w->tu, t[i], ")")) {
        for (int depth = 0; i >= 0; i--) {
            if (token_is(w->tu, t[i], ")"))
                depth++;
            else if (token_is(w->tu, t[i], "(") && --depth == 0)
                break;
        }
        i = prev_token(w->tu, t, i - 1, semi);
        if (i >= 0 && clang_getTokenKind(t[i]) == CXToken_Identifier &&
            token_is(w->tu, t[i], "REDIS_LOCK")) {
            unsigned o = token_off(w->tu, t[i]);
            if (!was_dropped(w, src, o)) {
                note_dropped(w, src, o);
                report_declares_nothing(src, o);
            }
        }
    }
    clang_disposeTokens(w->tu, t, n);
}

static enum CXChildVisitResult walk_visit(CXCursor c, CXCursor parent,
                                          CXClientData d)
{
    walk *w = d;
    enum CXCursorKind k = clang_getCursorKind(c);
    enum CXCursorKind pk = clang_getCursorKind(parent);
    if (pk == CXCursor_TranslationUnit || pk == CXCursor_LinkageSpec) {
        if (k == CXCursor_UnexposedDecl)
            check_empty_decl(w, c);
        clang_getExpansionLocation(clang_getRangeEnd(clang_getCursorExtent(c)),
                                   &w->top_file, NULL, NULL, &w->top_end);
    }
    if (pk == CXCursor_TranslationUnit) {
        CXFile f;
        unsigned off;
        clang_getExpansionLocation(
            clang_getRangeStart(clang_getCursorExtent(c)), &f, NULL, NULL,
            &off);
        w->top_start =
            f && clang_File_isEqual(f, w->main_file) ? (long)off : -1;
    }
    if (k == CXCursor_FunctionDecl) {
        handle_function(w, c);
        /* C++: a local class's member functions are in a body. */
        return w->s->cxx ? CXChildVisit_Recurse : CXChildVisit_Continue;
    }
    if (w->s->cxx &&
        (k == CXCursor_CXXMethod || k == CXCursor_Constructor ||
         k == CXCursor_Destructor || k == CXCursor_ConversionFunction ||
         k == CXCursor_FunctionTemplate)) {
        handle_function(w, c);
        return CXChildVisit_Recurse;
    }
    if (k == CXCursor_AnnotateAttr) {
        /* A function's own, which handle_function() has read (C++ walks
         * the bodies too), and a parameter's, which it has reported. */
        if (w->s->cxx &&
            (pk == CXCursor_FunctionDecl || pk == CXCursor_CXXMethod ||
             pk == CXCursor_Constructor || pk == CXCursor_Destructor ||
             pk == CXCursor_ConversionFunction ||
             pk == CXCursor_FunctionTemplate || pk == CXCursor_ParmDecl))
            return CXChildVisit_Continue;
        if (is_lockweave_attr(c)) {
            size_t off;
            const lw_src *src = where(w, clang_getCursorLocation(c), &off);
            const char *what;
            switch (clang_getCursorKind(parent)) {
            case CXCursor_VarDecl:
                what = "a variable";
                break;
            case CXCursor_FieldDecl:
                what = "a struct field";
                break;
            case CXCursor_TypedefDecl:
                what = "a typedef";
                break;
            case CXCursor_StructDecl:
                what = "a struct";
                break;
            case CXCursor_UnionDecl:
                what = "a union";
                break;
            case CXCursor_EnumDecl:
                what = "an enum";
                break;
            case CXCursor_EnumConstantDecl:
                what = "an enumerator";
                break;
            default:
                what = "this declaration";
                break;
            }
            diag(LW_DIAG_ERROR, src, off,
                 "REDIS_LOCK must stand before a function declaration or "
                 "definition, not %s",
                 what);
        }
        return CXChildVisit_Continue;
    }
    /* Only declarations can carry attributes; expressions and type
     * references below them cannot. */
    if (clang_isDeclaration(k) || k == CXCursor_TranslationUnit ||
        k == CXCursor_LinkageSpec)
        return CXChildVisit_Recurse;
    /* C++ parses the bodies (see scan_file()): an annotation on a
     * declaration inside one (a local class's member function) is found
     * there too, not left to compile unguarded. */
    if (w->s->cxx && (clang_isStatement(k) || clang_isExpression(k)))
        return CXChildVisit_Recurse;
    return CXChildVisit_Continue;
}

/* ---- clang's own diagnostics ------------------------------------------ */

/* The offset of "REDIS_LOCK" on the line of src holding off, or -1. */
static long kw_on_line(const lw_src *src, size_t off)
{
    static const char kw[] = "REDIS_LOCK";
    if (!src || !src->text || off > src->len)
        return -1;
    size_t bol = off, eol = off;
    while (bol > 0 && src->text[bol - 1] != '\n')
        bol--;
    while (eol < src->len && src->text[eol] != '\n')
        eol++;
    for (size_t i = bol; i + sizeof kw - 1 <= eol; i++)
        if (memcmp(src->text + i, kw, sizeof kw - 1) == 0)
            return (long)i;
    return -1;
}

static void pass_diag(walk *w, CXDiagnostic d, int as_note)
{
    enum CXDiagnosticSeverity sev = clang_getDiagnosticSeverity(d);
    size_t off;
    const lw_src *src = where(w, clang_getDiagnosticLocation(d), &off);
    CXString msg = clang_getDiagnosticSpelling(d);
    long at;
    if (w->reported_missing_header)
        goto done;
    /* A GCC option clang does not know: the driver drops it, and so does
     * the scan (the compiler that builds the file knows it). */
    if (!src && strncmp(clang_getCString(msg), "unknown argument", 16) == 0)
        goto done;
    /* Without <lockweave.h> before it, REDIS_LOCK is a plain identifier and
     * clang's errors about it say nothing useful: say what is missing,
     * once, and nothing more. */
    if (!as_note && (at = kw_on_line(src, off)) >= 0 &&
        (w->lockweave_h_at < 0 ||
         (src == &w->s->main && w->lockweave_h_at > at))) {
        diag(LW_DIAG_ERROR, src, (size_t)at,
             "REDIS_LOCK is used here without <lockweave.h>: add #include "
             "<lockweave.h> above it");
        w->reported_missing_header = 1;
        goto done;
    }
    if (!as_note && sev < CXDiagnostic_Error) {
        /* Warnings are the compiler's business, except those that point at
         * a REDIS_LOCK: each means clang dropped the attribute (after the
         * definition, before a bare struct, on an empty declaration), so it
         * never reaches the AST and would silently guard nothing. */
        static const char kw[] = "REDIS_LOCK";
        if (src && src->text && off + sizeof kw - 1 <= src->len &&
            memcmp(src->text + off, kw, sizeof kw - 1) == 0) {
            note_dropped(w, src, off);
            if (strstr(clang_getCString(msg), "must precede definition"))
                diag(LW_DIAG_ERROR, src, off,
                     "REDIS_LOCK on a declaration after the function's "
                     "definition; annotate the definition or an earlier "
                     "declaration");
            else if (strcmp(clang_getCString(msg),
                            "declaration does not declare anything") == 0)
                report_declares_nothing(src, off);
            else
                diag(LW_DIAG_ERROR, src, off,
                     "REDIS_LOCK must stand before a function declaration or "
                     "definition (clang ignores it here: %s)",
                     clang_getCString(msg));
            CXDiagnosticSet kids = clang_getChildDiagnostics(d);
            for (unsigned i = 0; i < clang_getNumDiagnosticsInSet(kids); i++) {
                CXDiagnostic k = clang_getDiagnosticInSet(kids, i);
                CXString km = clang_getDiagnosticSpelling(k);
                /* "expanded from macro 'REDIS_LOCK'" (libclang 13: "expanded
                 * from here") says nothing here */
                if (!strstr(clang_getCString(km), "expanded from"))
                    pass_diag(w, k, 1);
                clang_disposeString(km);
                clang_disposeDiagnostic(k);
            }
        }
        goto done;
    }
    /* C++: REDIS_LOCK where the grammar takes no attribute, in front of
     * a lambda above all. */
    static const char kw_lock[] = "REDIS_LOCK";
    if (!as_note && sev >= CXDiagnostic_Error && w->s->cxx && src &&
        src->text && off + sizeof kw_lock - 1 <= src->len &&
        memcmp(src->text + off, kw_lock, sizeof kw_lock - 1) == 0) {
        diag(LW_DIAG_ERROR, src, off,
             "REDIS_LOCK must stand before a function declaration or "
             "definition (%s); a lambda cannot carry it: annotate a named "
             "function and call it from the lambda",
             clang_getCString(msg));
        goto done;
    }
    int kind = as_note || sev == CXDiagnostic_Note ? LW_DIAG_NOTE
               : sev >= CXDiagnostic_Error         ? LW_DIAG_ERROR
                                                   : LW_DIAG_WARNING;
    diag(kind, src, off, "%s", clang_getCString(msg));
    CXDiagnosticSet kids = clang_getChildDiagnostics(d);
    for (unsigned i = 0; i < clang_getNumDiagnosticsInSet(kids); i++) {
        CXDiagnostic k = clang_getDiagnosticInSet(kids, i);
        pass_diag(w, k, 1);
        clang_disposeDiagnostic(k);
    }
done:
    clang_disposeString(msg);
}

/* ---- dependencies ----------------------------------------------------- */

/* Every file read (the depfile), the files included before the main
 * file's first line (their outermost #include is not in the main file),
 * and where <lockweave.h> comes in. */
static void incl_visit(CXFile f, CXSourceLocation *stack, unsigned n,
                       CXClientData d)
{
    walk *w = d;
    lw_scan *s = w->s;
    CXString name = clang_getFileName(f);
    const char *p = clang_getCString(name);
    if (p) {
        s->deps = xrealloc(s->deps, sizeof *s->deps * (size_t)(s->ndeps + 1));
        s->deps[s->ndeps++] = path_absolute(p);
    }
    if (n > 0) {
        CXFile outer;
        unsigned off;
        clang_getExpansionLocation(stack[n - 1], &outer, NULL, NULL, &off);
        int forced = !outer || !clang_File_isEqual(outer, w->main_file);
        if (forced && w->nforced < (int)(sizeof w->forced / sizeof *w->forced))
            w->forced[w->nforced++] = f;
        const char *base = p ? strrchr(p, '/') : NULL;
        base = base ? base + 1 : p;
        if (base && strcmp(base, "lockweave.h") == 0 &&
            (w->lockweave_h_at < 0 || forced || off < w->lockweave_h_at))
            w->lockweave_h_at = forced ? 0 : (long)off;
    }
    clang_disposeString(name);
}

int scan_file(lw_scan *s, const char *const *args, int nargs)
{
    int rc = -1;
    CXIndex idx = clang_createIndex(0, 0);
    CXTranslationUnit tu = NULL;
    walk w = {.s = s,
              .idx = idx,
              .args = args,
              .nargs = nargs,
              .lockweave_h_at = -1,
              .top_start = -1};

    /* Bodies are skipped: annotations live on declarations, and the
     * compiler checks the bodies anyway when it builds the woven file.
     * Not in C++, where the lock is woven into the body, whose extent the
     * weave needs, and where member functions of local classes are
     * declarations inside bodies. */
    enum CXErrorCode ec = clang_parseTranslationUnit2(
        idx, s->line_name, args, nargs, NULL, 0,
        (s->cxx ? 0 : CXTranslationUnit_SkipFunctionBodies) |
            CXTranslationUnit_KeepGoing,
        &tu);
    if (ec != CXError_Success || !tu) {
        diag(LW_DIAG_ERROR, NULL, 0, "libclang could not parse %s (error %d)",
             s->input, (int)ec);
        goto cleanup;
    }
    w.tu = tu;
    w.main_file = clang_getFile(tu, s->line_name);
    clang_getInclusions(tu, incl_visit, &w);

    unsigned nd = clang_getNumDiagnostics(tu);
    for (unsigned i = 0; i < nd; i++) {
        CXDiagnostic d = clang_getDiagnostic(tu, i);
        pass_diag(&w, d, 0);
        clang_disposeDiagnostic(d);
    }
    if (!w.reported_missing_header) {
        clang_visitChildren(clang_getTranslationUnitCursor(tu), walk_visit, &w);
        check_returns(&w);
    }
    rc = diag_errors() ? -1 : 0;
cleanup:
    for (int i = 0; i < w.nfiles; i++)
        free((char *)w.files[i].src.name);
    for (int i = 0; i < w.ndecls; i++) {
        for (int k = 0; k < w.decls[i].n; k++)
            free(w.decls[i].names[k]);
        free(w.decls[i].names);
        free(w.decls[i].psrc);
        free(w.decls[i].poff);
        free(w.decls[i].func);
        free(w.decls[i].text);
        free(w.decls[i].usr);
    }
    free(w.decls);
    free(w.dropped_src);
    free(w.dropped_off);
    for (int i = 0; i < w.nrchecks; i++) {
        free(w.rchecks[i].option);
        free(w.rchecks[i].func);
        free(w.rchecks[i].rtype);
    }
    free(w.rchecks);
    buf_free(&w.checks);
    if (w.full)
        clang_disposeTranslationUnit(w.full);
    if (tu)
        clang_disposeTranslationUnit(tu);
    clang_disposeIndex(idx);
    return rc;
}

void scan_free(lw_scan *s)
{
    for (int i = 0; i < s->nfuncs; i++)
        func_free(&s->funcs[i]);
    free(s->funcs);
    for (int i = 0; i < s->ndeps; i++)
        free(s->deps[i]);
    free(s->deps);
    s->funcs = NULL;
    s->deps = NULL;
    s->nfuncs = s->ndeps = 0;
}
