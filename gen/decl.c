/*
 * Writes declarations back as C source from libclang types.  The wrapper
 * needs the function's signature spelled out again, with its own parameter
 * names; C declarators nest inside-out (int (*fp)(int)), so this builds the
 * declarator from the name outwards.
 */
#include "lwgen.h"

#include <stdlib.h>
#include <string.h>

/* Qualifiers of a pointer, written right after its '*' ("*const p"). */
static void put_quals(lw_buf *b, CXType t)
{
    const char *sep = "";
    if (clang_isConstQualifiedType(t)) {
        buf_puts(b, "const");
        sep = " ";
    }
    if (clang_isVolatileQualifiedType(t)) {
        buf_printf(b, "%svolatile", sep);
        sep = " ";
    }
    if (clang_isRestrictQualifiedType(t))
        buf_printf(b, "%srestrict", sep);
}

static int is_declarator_type(enum CXTypeKind k)
{
    return k == CXType_FunctionProto || k == CXType_FunctionNoProto ||
           k == CXType_ConstantArray || k == CXType_IncompleteArray ||
           k == CXType_VariableArray;
}

/* inner: the declarator built so far (owned, consumed).  noquals: drop the
 * pointer's own qualifiers (a function's return type: they mean nothing
 * there, and compilers warn about them). */
static int decl_rec2(lw_buf *out, CXType t, char *inner, int noquals);

static int decl_rec(lw_buf *out, CXType t, char *inner)
{
    return decl_rec2(out, t, inner, 0);
}

static int decl_rec2(lw_buf *out, CXType t, char *inner, int noquals)
{
    lw_buf s = {0};
    int rc = -1;
    switch (t.kind) {
    case CXType_Pointer: {
        CXType pointee = clang_getPointeeType(t);
        int paren = is_declarator_type(pointee.kind);
        if (paren)
            buf_putc(&s, '(');
        buf_putc(&s, '*');
        if (!noquals)
            put_quals(&s, t);
        if (*inner) {
            if (s.p[s.len - 1] != '*')
                buf_putc(&s, ' ');
            buf_puts(&s, inner);
        }
        if (paren)
            buf_putc(&s, ')');
        free(inner);
        return decl_rec(out, pointee, buf_take(&s));
    }
    case CXType_ConstantArray:
        buf_printf(&s, "%s[%lld]", inner, clang_getArraySize(t));
        free(inner);
        return decl_rec(out, clang_getArrayElementType(t), buf_take(&s));
    case CXType_IncompleteArray:
        buf_printf(&s, "%s[]", inner);
        free(inner);
        return decl_rec(out, clang_getArrayElementType(t), buf_take(&s));
    case CXType_VariableArray:
        /* The size expression is not in the type: cannot be rewritten. */
        goto cleanup;
    case CXType_FunctionNoProto:
        buf_printf(&s, "%s()", inner);
        free(inner);
        return decl_rec2(out, clang_getResultType(t), buf_take(&s), 1);
    case CXType_FunctionProto: {
        int n = clang_getNumArgTypes(t);
        buf_printf(&s, "%s(", inner);
        free(inner);
        inner = NULL;
        if (n == 0 && !clang_isFunctionTypeVariadic(t))
            buf_puts(&s, "void");
        for (int i = 0; i < n; i++) {
            if (i)
                buf_puts(&s, ", ");
            if (decl_rec(&s, clang_getArgType(t, (unsigned)i), xstrdup("")) !=
                0)
                goto cleanup;
        }
        if (clang_isFunctionTypeVariadic(t))
            buf_puts(&s, n ? ", ..." : "...");
        buf_putc(&s, ')');
        return decl_rec2(out, clang_getResultType(t), buf_take(&s), 1);
    }
    case CXType_Unexposed: {
        /* Sugar libclang does not expose (a decayed array parameter, a
         * typeof): the canonical type is the same type, only less pretty. */
        CXType c = clang_getCanonicalType(t);
        if (c.kind == CXType_Unexposed)
            break;
        return decl_rec2(out, c, inner, noquals);
    }
    default:
        break;
    }
    /* A leaf: builtin, typedef name, struct/union/enum, _Atomic(...).  Its
     * spelling carries its own qualifiers ("const size_t"). */
    {
        CXString sp = clang_getTypeSpelling(t);
        const char *str = clang_getCString(sp);
        int ok = str && *str && !strstr(str, "(unnamed") &&
                 !strstr(str, "(anonymous");
        if (ok) {
            buf_puts(out, str);
            if (inner && *inner) {
                buf_putc(out, ' ');
                buf_puts(out, inner);
            }
            rc = 0;
        }
        clang_disposeString(sp);
    }
cleanup:
    free(inner);
    buf_free(&s);
    return rc;
}

int decl_print(lw_buf *b, CXType t, const char *name)
{
    return decl_rec(b, t, xstrdup(name ? name : ""));
}

int decl_print_fn(lw_buf *b, CXType fn, const char *name,
                  const char *const *pnames)
{
    lw_buf s = {0};
    if (fn.kind != CXType_FunctionProto && fn.kind != CXType_FunctionNoProto)
        fn = clang_getCanonicalType(fn);
    if (fn.kind != CXType_FunctionProto && fn.kind != CXType_FunctionNoProto)
        return -1;
    int n = fn.kind == CXType_FunctionProto ? clang_getNumArgTypes(fn) : 0;
    buf_printf(&s, "%s(", name);
    if (n == 0)
        buf_puts(&s, "void");
    for (int i = 0; i < n; i++) {
        if (i)
            buf_puts(&s, ", ");
        if (decl_print(&s, clang_getArgType(fn, (unsigned)i), pnames[i]) != 0) {
            buf_free(&s);
            return -1;
        }
    }
    buf_putc(&s, ')');
    return decl_rec2(b, clang_getResultType(fn), buf_take(&s), 1);
}

/* Printed with a name no type spelling holds, then cut there: a
 * declarator's shape does not depend on the name it declares. */
static const char hole[] = "\x01";

/* b, printed with hole for the name (rc: how that went), as d.  Frees b. */
static int split_at_hole(lw_decl *d, lw_buf *b, int rc)
{
    const char *at = rc == 0 ? strstr(b->p, hole) : NULL;
    if (at) {
        d->head = xstrndup(b->p, (size_t)(at - b->p));
        d->tail = xstrdup(at + sizeof hole - 1);
    }
    buf_free(b);
    return at ? 0 : -1;
}

int decl_split(lw_decl *d, CXType t, const char *const *pnames)
{
    lw_buf b = {0};
    int rc =
        pnames ? decl_print_fn(&b, t, hole, pnames) : decl_print(&b, t, hole);
    return split_at_hole(d, &b, rc);
}

/* As decl_print(), for a parameter declared as t: the object that holds
 * its value is a pointer where the parameter is an array or a function,
 * written or through a typedef. */
static int decl_print_param(lw_buf *b, CXType t, const char *name)
{
    CXType c = clang_getCanonicalType(t);
    lw_buf inner = {0};
    int rc;
    switch (c.kind) {
    case CXType_ConstantArray:
    case CXType_IncompleteArray:
    case CXType_VariableArray: {
        CXType elem =
            clang_getArrayElementType(is_declarator_type(t.kind) ? t : c);
        buf_printf(&inner, is_declarator_type(elem.kind) ? "(*%s)" : "*%s",
                   name);
        rc = decl_rec(b, elem, buf_take(&inner));
        break;
    }
    case CXType_FunctionProto:
    case CXType_FunctionNoProto:
        buf_printf(&inner, "(*%s)", name);
        rc = decl_rec(b, is_declarator_type(t.kind) ? t : c, buf_take(&inner));
        break;
    default:
        rc = decl_print(b, t, name);
    }
    return rc;
}

int decl_split_param(lw_decl *d, CXType t)
{
    lw_buf b = {0};
    int rc = decl_print_param(&b, t, hole);
    return split_at_hole(d, &b, rc);
}

void decl_free(lw_decl *d)
{
    free(d->head);
    free(d->tail);
    d->head = d->tail = NULL;
}
