/*
 * The libclang side: parse the file as the compiler would (plus LW__SCAN, so
 * REDIS_LOCK becomes an annotate attribute), walk the declarations, check
 * every annotation and turn each annotated definition into an lw_func.
 */
#include "lwgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Files whose text diagnostics quote; the main file is s->main. */
typedef struct src_cache {
    CXFile file;
    lw_src src;
} src_cache;

typedef struct walk {
    lw_scan *s;
    CXTranslationUnit tu;
    CXFile main_file;
    src_cache files[64];
    int nfiles;
} walk;

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
                    sizeof LW_ANNOT_PREFIX - 1) == 0;
    clang_disposeString(s);
    return r;
}

/* ---- the annotations of one function declaration ---------------------- */

typedef struct fn_attrs {
    walk *w;
    CXCursor attr[8]; /* distinct by location */
    size_t off[8];
    const lw_src *src[8];
    int n;
    int bad_param; /* REDIS_LOCK on a parameter was reported */
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
    if (fa->n < 8) {
        fa->attr[fa->n] = c;
        fa->off[fa->n] = off;
        fa->src[fa->n] = src;
        fa->n++;
    }
    return CXChildVisit_Continue;
}

/* ---- one annotated definition ----------------------------------------- */

static int next_is_brace(const lw_src *src, size_t off)
{
    /* With function bodies skipped, a definition ends where its body would
     * start; only a definition is followed by '{'. */
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
            return c == '{';
    }
    return 0;
}

static int is_definition(walk *w, CXCursor c)
{
    if (clang_isCursorDefinition(c))
        return 1;
    size_t off;
    CXSourceRange r = clang_getCursorExtent(c);
    const lw_src *src = where(w, clang_getRangeEnd(r), &off);
    return src && src->text && next_is_brace(src, off);
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

static enum CXChildVisitResult vis_visit(CXCursor c, CXCursor parent,
                                         CXClientData d)
{
    (void)parent;
    if (clang_getCursorKind(c) == CXCursor_VisibilityAttr)
        *(int *)d = 1;
    return CXChildVisit_Continue;
}

/* The wrapper's skip_if test: before the lock (nothing to leave), and again
 * under it (leave first).  note goes after "if (", leave before the return. */
static void put_skip_if(lw_buf *wr, const lw_annot *a, const char *note,
                        const char *leave, const char *retstmt)
{
    buf_printf(wr, "    if (%s", note);
    put_user_expr(wr, a->src, a->skip_if_off, a->skip_if);
    buf_printf(wr,
               "    ) {\n"
               "%s"
               "        lw_set_last_error(LW_OK);\n"
               "        %s\n"
               "    }\n",
               leave, retstmt);
}

static int build_func(walk *w, CXCursor def, lw_annot *a, const char *name,
                      size_t name_off, lw_func *out)
{
    int rc = -1;
    lw_param *params = NULL;
    const char **pnames = NULL;
    lw_buf protos = {0}, wr = {0}, keycode = {0}, args = {0}, zero = {0};
    lw_buf fullspec = {0}; /* spec with the visibility, when any */
    const lw_src *msrc = &w->s->main;
    CXType fn = clang_getCursorType(def);
    if (fn.kind != CXType_FunctionProto && fn.kind != CXType_FunctionNoProto)
        fn = clang_getCanonicalType(fn);
    int nparams = clang_Cursor_getNumArguments(def);
    if (nparams < 0)
        nparams = 0;

    if (fn.kind == CXType_FunctionNoProto && nparams > 0) {
        diag(LW_DIAG_ERROR, msrc, name_off,
             "'%s' is an old-style (K&R) definition: REDIS_LOCK needs a "
             "prototype, as in '%s(int a)'",
             name, name);
        goto cleanup;
    }
    if (fn.kind == CXType_FunctionProto && clang_isFunctionTypeVariadic(fn)) {
        diag(LW_DIAG_ERROR, msrc, name_off,
             "'%s' is variadic: its arguments cannot be passed on to the "
             "locked body (write a wrapper taking a va_list)",
             name);
        goto cleanup;
    }

    params = xmalloc(sizeof *params * (size_t)(nparams + 1));
    pnames = xmalloc(sizeof *pnames * (size_t)(nparams + 1));
    for (int i = 0; i < nparams; i++) {
        CXCursor p = clang_Cursor_getArgument(def, (unsigned)i);
        char *n = spelling(p);
        params[i].type = clang_getCursorType(p);
        if (*n) {
            params[i].name = n;
            params[i].use = xstrdup(n);
        } else {
            free(n);
            params[i].name = NULL;
            lw_buf t = {0};
            buf_printf(&t, "lw__p%d", i);
            params[i].use = buf_take(&t);
        }
        pnames[i] = params[i].use;
        buf_printf(&args, "%s%s", i ? ", " : "", params[i].use);
    }

    int keyok = a->key ? keytmpl_compile(a, name, params, nparams, "lw__g",
                                         "    ", &keycode)
                       : -1;

    CXType ret = clang_getResultType(fn);
    int is_void = clang_getCanonicalType(ret).kind == CXType_Void;
    if (is_void && a->has_on_fail) {
        diag(LW_DIAG_ERROR, a->src, a->at,
             "on_fail given, but '%s' returns void", name);
        keyok = -1;
    }
    if (keyok != 0)
        goto cleanup;

    /* Linkage and inline-ness exactly as the definition has them. */
    int internal = clang_getCursorLinkage(def) == CXLinkage_Internal;
    int inl = clang_Cursor_isFunctionInlined(def);
    int ext = clang_Cursor_getStorageClass(def) == CX_SC_Extern;
    const char *spec = internal ? (inl ? "static inline " : "static ")
                       : inl    ? (ext ? "extern inline " : "inline ")
                                : "";
    /* An explicit visibility on the definition (an exported function of a
     * library built with -fvisibility=hidden) belongs to the wrapper now:
     * the wrapper is what carries the name. */
    int has_vis = 0;
    clang_visitChildren(def, vis_visit, &has_vis);
    const char *vis = NULL;
    if (has_vis && !internal) {
        switch (clang_getCursorVisibility(def)) {
        case CXVisibility_Hidden:
            vis = "hidden";
            break;
        case CXVisibility_Protected:
            vis = "protected";
            break;
        case CXVisibility_Default:
            vis = "default";
            break;
        default:
            break;
        }
    }
    if (vis)
        buf_printf(&fullspec, "__attribute__((visibility(\"%s\"))) ", vis);
    buf_puts(&fullspec, spec);
    spec = fullspec.p;

    /* The renamed body is static, so it can never be called around the
     * wrapper.  Except under a plain external `inline` wrapper: C forbids an
     * inline definition with external linkage to refer to an internal
     * name, so there the body gets external linkage; its declaration without
     * `inline` makes its definition the one external definition. */
    const char *bspec = (!internal && inl && !ext) ? "" : "static ";

    lw_buf body = {0};
    buf_printf(&body, "lw__%s_body", name);
    out->body_name = buf_take(&body);

    /* Prototypes go in front of the definition, on its own line so no line
     * number moves: the wrapper's (so a recursive call in the body goes
     * through the lock) and the body's (so the definition gets its
     * linkage). */
    buf_puts(&protos, spec);
    if (decl_print(&protos, fn, name) != 0)
        goto badtype;
    buf_printf(&protos, "; %s", bspec);
    if (decl_print(&protos, fn, out->body_name) != 0)
        goto badtype;
    buf_puts(&protos, "; ");

    /* The wrapper. */
    buf_puts(&wr, "\n/* ");
    buf_printf(&wr, "%s(): REDIS_LOCK(", name);
    put_comment_text(&wr, a->text);
    buf_puts(&wr, ") */\n");
    buf_puts(&wr, spec);
    if (decl_print_fn(&wr, fn, name, pnames) != 0)
        goto badtype;
    buf_puts(&wr, "\n{\n");

    /* What the wrapper returns when the body does not run. */
    if (a->has_on_fail) {
        buf_putc(&zero, '(');
        put_user_expr(&zero, a->src, a->on_fail_off, a->on_fail);
        buf_putc(&zero, ')');
    } else if (!is_void) {
        if (clang_getCanonicalType(ret).kind == CXType_Record) {
            buf_putc(&zero, '(');
            if (decl_print(&zero, ret, "") != 0)
                goto badtype;
            buf_puts(&zero, "){0}");
        } else
            buf_puts(&zero, "0");
    }
    const char *rv = is_void ? "return;" : NULL;
    lw_buf retstmt = {0};
    if (rv)
        buf_puts(&retstmt, rv);
    else
        buf_printf(&retstmt, "return %s;", zero.p);

    /* Constant options: static, except in an external inline function,
     * where a static object would be a separate one per file. */
    buf_printf(&wr, "    %sconst lw_lock_opts lw__o = {%uu, %uu, %d, 0u};\n",
               (!internal && inl) ? "" : "static ", a->expire_ms, a->wait_ms,
               (int)a->max_renew);
    buf_puts(&wr, "    lw_guard lw__g;\n");
    if (a->skip_if)
        put_skip_if(&wr, a, "", "", retstmt.p);
    buf_puts(&wr, "    lw_guard_init(&lw__g, &lw__o);\n");
    buf_put(&wr, keycode.p ? keycode.p : "", keycode.len);
    buf_printf(&wr, "    if (lw_guard_enter(&lw__g) != LW_OK)\n        %s\n",
               retstmt.p);
    if (a->skip_if)
        put_skip_if(&wr, a, " /* checked again under the lock */",
                    "        lw_guard_leave(&lw__g);\n", retstmt.p);
    if (is_void)
        buf_printf(&wr, "    %s(%s);\n    lw_guard_leave(&lw__g);\n}\n",
                   out->body_name, args.p ? args.p : "");
    else {
        buf_puts(&wr, "    ");
        if (decl_print(&wr, ret, "lw__r") != 0) {
            buf_free(&retstmt);
            goto badtype;
        }
        buf_printf(
            &wr,
            " = %s(%s);\n    lw_guard_leave(&lw__g);\n    return lw__r;\n}\n",
            out->body_name, args.p ? args.p : "");
    }
    buf_free(&retstmt);

    out->name = xstrdup(name);
    out->name_off = name_off;
    out->protos = buf_take(&protos);
    out->wrapper = buf_take(&wr);
    rc = 0;
    goto cleanup;
badtype:
    diag(LW_DIAG_ERROR, msrc, name_off,
         "the signature of '%s' uses a type that cannot be written again "
         "(an unnamed struct or a variable-length array); use a typedef",
         name);
cleanup:
    if (rc != 0) {
        free(out->body_name);
        out->body_name = NULL;
    }
    for (int i = 0; params && i < nparams; i++) {
        free(params[i].name);
        free(params[i].use);
    }
    free(params);
    free(pnames);
    buf_free(&protos);
    buf_free(&wr);
    buf_free(&keycode);
    buf_free(&args);
    buf_free(&zero);
    buf_free(&fullspec);
    return rc;
}

static void handle_function(walk *w, CXCursor c)
{
    fn_attrs fa = {.w = w};
    clang_visitChildren(c, attrs_visit, &fa);
    int def = is_definition(w, c);
    size_t name_off;
    const lw_src *nsrc = where(w, clang_getCursorLocation(c), &name_off);
    int in_main = nsrc == &w->s->main;
    if (fa.n == 0)
        return;

    char *name = spelling(c);
    CXType ft = clang_getCursorType(c);
    if (ft.kind != CXType_FunctionProto && ft.kind != CXType_FunctionNoProto)
        ft = clang_getCanonicalType(ft);
    /* A K&R definition declares its parameters after the declarator:
     * clang gives it a prototype type, but the parameters sit past the end
     * of the function's declarator. */
    int kr = ft.kind == CXType_FunctionNoProto &&
             clang_Cursor_getNumArguments(c) > 0;
    size_t decl_end;
    const lw_src *esrc =
        where(w, clang_getRangeEnd(clang_getCursorExtent(c)), &decl_end);
    for (int i = 0; !kr && i < clang_Cursor_getNumArguments(c); i++) {
        size_t poff;
        const lw_src *psrc = where(
            w,
            clang_getCursorLocation(clang_Cursor_getArgument(c, (unsigned)i)),
            &poff);
        kr = psrc == esrc && poff > decl_end;
    }
    if (kr) {
        diag(LW_DIAG_ERROR, nsrc, name_off,
             "'%s' is an old-style (K&R) definition: REDIS_LOCK needs a "
             "prototype, as in '%s(int a)'",
             name, name);
        goto cleanup;
    }
    /* A declaration: its annotation reaches the definition (clang copies
     * it there).  One written after the definition never reaches it; clang
     * warns and pass_diag() turns that into an error. */
    if (!def)
        goto cleanup;
    if (!in_main) {
        diag(LW_DIAG_ERROR, nsrc, name_off,
             "REDIS_LOCK on '%s', which is defined in a header: lockweave can "
             "only weave definitions in the .c file being compiled",
             name);
        goto cleanup;
    }

    /* Every annotation reaching this definition must say the same thing. */
    char *first = spelling(fa.attr[0]);
    int conflict = 0;
    for (int i = 1; i < fa.n; i++) {
        char *t = spelling(fa.attr[i]);
        if (strcmp(t, first) != 0) {
            diag(LW_DIAG_ERROR, fa.src[i], fa.off[i],
                 "conflicting REDIS_LOCK annotations on '%s'", name);
            diag(LW_DIAG_NOTE, fa.src[0], fa.off[0],
                 "previous REDIS_LOCK is here");
            conflict = 1;
        }
        free(t);
    }
    /* The definition's name must be written as such in this file, or the
     * rename would land in a macro. */
    size_t nlen = strlen(name);
    const lw_src *m = &w->s->main;
    int literal_name = name_off + nlen <= m->len &&
                       memcmp(m->text + name_off, name, nlen) == 0;
    if (literal_name) {
        char after = name_off + nlen < m->len ? m->text[name_off + nlen] : 0;
        if (after == '_' || (after >= '0' && after <= '9') ||
            (after >= 'a' && after <= 'z') || (after >= 'A' && after <= 'Z'))
            literal_name = 0;
    }
    if (!literal_name) {
        diag(LW_DIAG_ERROR, m, name_off,
             "the name of '%s' comes from a macro expansion and cannot be "
             "renamed safely; write the function name directly",
             name);
        conflict = 1;
    }

    lw_annot a = {0};
    a.text = xstrdup(first + sizeof LW_ANNOT_PREFIX - 1);
    a.src = fa.src[0];
    a.at = fa.off[0];
    free(first);
    if (annot_parse(&a) == 0 && !conflict) {
        lw_func f = {0};
        size_t ins;
        where(w, clang_getRangeStart(clang_getCursorExtent(c)), &ins);
        if (build_func(w, c, &a, name, name_off, &f) == 0) {
            f.insert_off = ins;
            lw_scan *s = w->s;
            s->funcs =
                xrealloc(s->funcs, sizeof *s->funcs * (size_t)(s->nfuncs + 1));
            s->funcs[s->nfuncs++] = f;
        }
    } else if (a.key) {
        /* Still check the key, so one run reports everything. */
        lw_func f = {0};
        if (build_func(w, c, &a, name, name_off, &f) == 0) {
            free(f.name);
            free(f.protos);
            free(f.wrapper);
            free(f.body_name);
        }
    }
    annot_free(&a);
cleanup:
    free(name);
}

static enum CXChildVisitResult walk_visit(CXCursor c, CXCursor parent,
                                          CXClientData d)
{
    walk *w = d;
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_FunctionDecl) {
        handle_function(w, c);
        return CXChildVisit_Continue;
    }
    if (k == CXCursor_AnnotateAttr) {
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
    return CXChildVisit_Continue;
}

/* ---- clang's own diagnostics ------------------------------------------ */

static void pass_diag(walk *w, CXDiagnostic d, int as_note)
{
    enum CXDiagnosticSeverity sev = clang_getDiagnosticSeverity(d);
    size_t off;
    const lw_src *src = where(w, clang_getDiagnosticLocation(d), &off);
    CXString msg = clang_getDiagnosticSpelling(d);
    if (!as_note && sev < CXDiagnostic_Error) {
        /* Warnings are the compiler's business, except those that point at
         * a REDIS_LOCK: each means clang dropped the attribute (after the
         * definition, before a bare struct, on an empty declaration), so it
         * never reaches the AST and would silently guard nothing. */
        static const char kw[] = "REDIS_LOCK";
        if (src && src->text && off + sizeof kw - 1 <= src->len &&
            memcmp(src->text + off, kw, sizeof kw - 1) == 0) {
            if (strstr(clang_getCString(msg), "must precede definition"))
                diag(LW_DIAG_ERROR, src, off,
                     "REDIS_LOCK on a declaration after the function's "
                     "definition; annotate the definition or an earlier "
                     "declaration");
            else
                diag(LW_DIAG_ERROR, src, off,
                     "REDIS_LOCK must stand before a function declaration or "
                     "definition (clang ignores it here: %s)",
                     clang_getCString(msg));
            CXDiagnosticSet kids = clang_getChildDiagnostics(d);
            for (unsigned i = 0; i < clang_getNumDiagnosticsInSet(kids); i++) {
                CXDiagnostic k = clang_getDiagnosticInSet(kids, i);
                CXString km = clang_getDiagnosticSpelling(k);
                /* "expanded from macro 'REDIS_LOCK'" says nothing here */
                if (!strstr(clang_getCString(km), "expanded from macro"))
                    pass_diag(w, k, 1);
                clang_disposeString(km);
                clang_disposeDiagnostic(k);
            }
        }
        clang_disposeString(msg);
        return;
    }
    int kind = as_note || sev == CXDiagnostic_Note ? LW_DIAG_NOTE
               : sev >= CXDiagnostic_Error         ? LW_DIAG_ERROR
                                                   : LW_DIAG_WARNING;
    diag(kind, src, off, "%s", clang_getCString(msg));
    clang_disposeString(msg);
    CXDiagnosticSet kids = clang_getChildDiagnostics(d);
    for (unsigned i = 0; i < clang_getNumDiagnosticsInSet(kids); i++) {
        CXDiagnostic k = clang_getDiagnosticInSet(kids, i);
        pass_diag(w, k, 1);
        clang_disposeDiagnostic(k);
    }
}

/* ---- dependencies ----------------------------------------------------- */

static void incl_visit(CXFile f, CXSourceLocation *stack, unsigned n,
                       CXClientData d)
{
    (void)stack;
    (void)n;
    lw_scan *s = d;
    CXString name = clang_getFileName(f);
    const char *p = clang_getCString(name);
    if (p) {
        s->deps = xrealloc(s->deps, sizeof *s->deps * (size_t)(s->ndeps + 1));
        s->deps[s->ndeps++] = path_absolute(p);
    }
    clang_disposeString(name);
}

int scan_file(lw_scan *s, const char *const *args, int nargs)
{
    int rc = -1;
    CXIndex idx = clang_createIndex(0, 0);
    CXTranslationUnit tu = NULL;
    walk w = {.s = s};

    /* Bodies are skipped: annotations live on declarations, and the
     * compiler checks the bodies anyway when it builds the woven file. */
    enum CXErrorCode ec = clang_parseTranslationUnit2(
        idx, s->input, args, nargs, NULL, 0,
        CXTranslationUnit_SkipFunctionBodies | CXTranslationUnit_KeepGoing,
        &tu);
    if (ec != CXError_Success || !tu) {
        diag(LW_DIAG_ERROR, NULL, 0, "libclang could not parse %s (error %d)",
             s->input, (int)ec);
        goto cleanup;
    }
    w.tu = tu;
    w.main_file = clang_getFile(tu, s->input);

    unsigned nd = clang_getNumDiagnostics(tu);
    for (unsigned i = 0; i < nd; i++) {
        CXDiagnostic d = clang_getDiagnostic(tu, i);
        pass_diag(&w, d, 0);
        clang_disposeDiagnostic(d);
    }
    clang_visitChildren(clang_getTranslationUnitCursor(tu), walk_visit, &w);
    clang_getInclusions(tu, incl_visit, s);
    rc = diag_errors() ? -1 : 0;
cleanup:
    for (int i = 0; i < w.nfiles; i++)
        free((char *)w.files[i].src.name);
    if (tu)
        clang_disposeTranslationUnit(tu);
    clang_disposeIndex(idx);
    return rc;
}

void scan_free(lw_scan *s)
{
    for (int i = 0; i < s->nfuncs; i++) {
        free(s->funcs[i].name);
        free(s->funcs[i].protos);
        free(s->funcs[i].wrapper);
        free(s->funcs[i].body_name);
    }
    free(s->funcs);
    for (int i = 0; i < s->ndeps; i++)
        free(s->deps[i]);
    free(s->deps);
    s->funcs = NULL;
    s->deps = NULL;
    s->nfuncs = s->ndeps = 0;
}
