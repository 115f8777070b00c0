/*
 * Key templates: "stock:{id}:{o->sku}" becomes the parts of the key,
 *   LW_KEY_BYTES "stock:", LW_KEY_I64 id, LW_KEY_BYTES ":", LW_KEY_STR o->sku
 * which emit.c writes as straight-line guard calls, so nothing parses a
 * format at run time.  Each {path} is checked here against the parameter's
 * type: what cannot be printed is a build error.
 */
#include "lwgen.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static void key_push(lw_key *k, enum lw_keykind kind, const char *text,
                     size_t len)
{
    k->v = xrealloc(k->v, sizeof *k->v * (size_t)(k->n + 1));
    k->v[k->n++] = (lw_keypart){kind, xstrndup(text, len), len};
}

void key_free(lw_key *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->v[i].text);
    free(k->v);
    k->v = NULL;
    k->n = 0;
}

typedef struct field_find {
    const char *name;
    size_t len;
    CXType type;
    int found;
} field_find;

static enum CXVisitorResult field_visit(CXCursor c, CXClientData d)
{
    field_find *f = d;
    CXString s = clang_getCursorSpelling(c);
    const char *n = clang_getCString(s);
    if (n && strlen(n) == f->len && memcmp(n, f->name, f->len) == 0) {
        f->type = clang_getCursorType(c);
        f->found = 1;
    }
    clang_disposeString(s);
    return f->found ? CXVisit_Break : CXVisit_Continue;
}

char *type_name(CXType t)
{
    CXString s = clang_getTypeSpelling(t);
    char *r = xstrdup(clang_getCString(s));
    clang_disposeString(s);
    /* No space before an array's brackets. */
    char *to = r;
    for (const char *p = r; *p; p++)
        if (!(p[0] == ' ' && p[1] == '['))
            *to++ = *p;
    *to = '\0';
    return r;
}

static int is_plain_char(enum CXTypeKind k)
{
    return k == CXType_Char_S || k == CXType_Char_U;
}

static int is_array(enum CXTypeKind k)
{
    return k == CXType_ConstantArray || k == CXType_IncompleteArray;
}

/* The integer types, and how a key prints each: as the signed or the
 * unsigned 64-bit value. */
static const struct {
    enum CXTypeKind type;
    enum lw_keykind part;
} integers[] = {
    {CXType_Bool, LW_KEY_I64},     {CXType_Char_S, LW_KEY_I64},
    {CXType_SChar, LW_KEY_I64},    {CXType_Short, LW_KEY_I64},
    {CXType_Int, LW_KEY_I64},      {CXType_Long, LW_KEY_I64},
    {CXType_LongLong, LW_KEY_I64}, {CXType_Enum, LW_KEY_I64},
    {CXType_Char_U, LW_KEY_U64},   {CXType_UChar, LW_KEY_U64},
    {CXType_UShort, LW_KEY_U64},   {CXType_UInt, LW_KEY_U64},
    {CXType_ULong, LW_KEY_U64},    {CXType_ULongLong, LW_KEY_U64},
};

/* Whether canonical type c is std::string or std::string_view (of char),
 * whose bytes a C++ key takes as they are. */
static int is_std_string(CXType c)
{
    if (c.kind != CXType_Record || clang_Type_getNumTemplateArguments(c) < 1 ||
        !is_plain_char(
            clang_getCanonicalType(clang_Type_getTemplateArgumentAsType(c, 0))
                .kind))
        return 0;
    CXCursor d = clang_getTypeDeclaration(c);
    CXString n = clang_getCursorSpelling(d);
    int r = strcmp(clang_getCString(n), "basic_string") == 0 ||
            strcmp(clang_getCString(n), "basic_string_view") == 0;
    clang_disposeString(n);
    /* In namespace std, maybe through an inline one (std::__cxx11). */
    CXCursor p = clang_getCursorSemanticParent(d);
    while (r && clang_getCursorKind(p) == CXCursor_Namespace) {
        CXString pn = clang_getCursorSpelling(p);
        int is_std = strcmp(clang_getCString(pn), "std") == 0;
        clang_disposeString(pn);
        if (is_std)
            return 1;
        p = clang_getCursorSemanticParent(p);
    }
    return 0;
}

/* The part a value of canonical type c makes in a key, or -1: none. */
static int key_kind(CXType c)
{
    if (is_std_string(c))
        return LW_KEY_DATA;
    for (size_t i = 0; i < sizeof integers / sizeof *integers; i++)
        if (integers[i].type == c.kind)
            return integers[i].part;
    CXType e;
    if (c.kind == CXType_Pointer)
        e = clang_getPointeeType(c);
    else if (is_array(c.kind))
        e = clang_getArrayElementType(c);
    else
        return -1;
    /* A char pointer or array: the string. */
    return is_plain_char(clang_getCanonicalType(e).kind) ? LW_KEY_STR : -1;
}

static int is_floating(enum CXTypeKind k)
{
    return k == CXType_Float || k == CXType_Double || k == CXType_LongDouble ||
           k == CXType_Float128 || k == CXType_Half || k == CXType_Float16;
}

/* Why '{path}', of type t, cannot be printed in a key: reported at off. */
static void report_unprintable(const lw_annot *a, size_t off, const char *path,
                               CXType t)
{
    CXType c = clang_getCanonicalType(t);
    char *tn = type_name(t);
    if (c.kind == CXType_Pointer &&
        clang_getCanonicalType(clang_getPointeeType(c)).kind == CXType_Record)
        diag(LW_DIAG_ERROR, a->src, off,
             "'{%s}' is a pointer to a struct ('%s'): name a field, as in "
             "'{%s->field}'",
             path, tn, path);
    else if (is_array(c.kind))
        diag(LW_DIAG_ERROR, a->src, off,
             "'{%s}' is an array of type '%s': only char arrays can be "
             "printed in a lock key",
             path, tn);
    else if (is_floating(c.kind))
        diag(LW_DIAG_ERROR, a->src, off,
             "'{%s}' is floating point ('%s'): its text is not a stable lock "
             "key; convert it to an integer parameter",
             path, tn);
    else if (c.kind == CXType_Record)
        diag(LW_DIAG_ERROR, a->src, off,
             "'{%s}' is a struct or union ('%s') and cannot be printed: name "
             "a field, as in '{%s.field}'",
             path, tn, path);
    else
        diag(LW_DIAG_ERROR, a->src, off,
             "'{%s}' has type '%s', which cannot be printed in a lock key "
             "(integers, enums, bool and char strings can)",
             path, tn);
    free(tn);
}

/* t, or what it refers to when it is a C++ reference. */
static CXType deref(CXType t)
{
    CXType c = clang_getCanonicalType(t);
    if (c.kind == CXType_LValueReference || c.kind == CXType_RValueReference)
        return clang_getPointeeType(c);
    return t;
}

/* The part for one placeholder: expression `expr` of type t. */
static int add_value(const lw_annot *a, size_t off, const char *path,
                     const char *expr, CXType t, lw_key *out)
{
    t = deref(t);
    int kind = key_kind(clang_getCanonicalType(t));
    if (kind < 0) {
        report_unprintable(a, off, path, t);
        return -1;
    }
    key_push(out, (enum lw_keykind)kind, expr, strlen(expr));
    return 0;
}

/* One placeholder body p[0..n): name(.field|->field)*. */
static int compile_field(const lw_annot *a, size_t at, const char *fname,
                         const lw_param *params, const CXType *types,
                         int nparams, const CXType *self, const char *p,
                         size_t n, lw_key *out)
{
    size_t off = annot_key_off(a, at);
    size_t i = 0;
    char *path = xstrndup(p, n);
    lw_buf expr = {0};
    int rc = -1;

    while (i < n && (isalnum((unsigned char)p[i]) || p[i] == '_'))
        i++;
    if (i == 0 || isdigit((unsigned char)p[0])) {
        diag(LW_DIAG_ERROR, a->src, off,
             "'{%s}' in the key is not a parameter name (write '{{' for a "
             "literal brace)",
             path);
        goto cleanup;
    }
    int prm = -1, unnamed = 0, is_this = 0;
    CXType t;
    /* In a C++ member function, {this->field}: the object's own field. */
    if (self && i == 4 && memcmp(p, "this", 4) == 0) {
        if (self->kind == CXType_Invalid) {
            diag(LW_DIAG_ERROR, a->src, off,
                 "'{%s}' in the key of '%s', which is not a non-static "
                 "member function: there is no 'this'",
                 path, fname);
            goto cleanup;
        }
        if (i >= n || p[i] != '-') {
            diag(LW_DIAG_ERROR, a->src, off,
                 "'{%s}': name a field of the object, as in '{this->field}'",
                 path);
            goto cleanup;
        }
        buf_puts(&expr, "this");
        t = *self; /* the object: 'this->' reaches its fields */
        is_this = 1;
        prm = 0;
    }
    for (int k = 0; k < nparams && !is_this; k++) {
        if (!params[k].name)
            unnamed++;
        else if (strlen(params[k].name) == i &&
                 memcmp(params[k].name, p, i) == 0)
            prm = k;
    }
    if (prm < 0) {
        diag(LW_DIAG_ERROR, a->src, off,
             "'%.*s' in the key is not a parameter of '%s'%s", (int)i, p, fname,
             unnamed ? " (unnamed parameters cannot be used in the key)" : "");
        goto cleanup;
    }
    if (!is_this && !*params[prm].use) {
        diag(LW_DIAG_ERROR, a->src, off,
             "'%.*s' in the key is unnamed in the definition of '%s': name "
             "it there, where the lock is woven in",
             (int)i, p, fname);
        goto cleanup;
    }
    if (!is_this) {
        buf_puts(&expr, params[prm].use);
        t = types[prm];
    }
    while (i < n) {
        int arrow = 0;
        if (p[i] == '.')
            i++;
        else if (p[i] == '-' && i + 1 < n && p[i + 1] == '>') {
            arrow = 1;
            i += 2;
        } else {
            diag(
                LW_DIAG_ERROR, a->src, annot_key_off(a, at + 1 + i),
                "unexpected '%c' in '{%s}': a placeholder is a parameter name, "
                "optionally followed by .field or ->field",
                p[i], path);
            goto cleanup;
        }
        size_t fb = i;
        while (i < n && (isalnum((unsigned char)p[i]) || p[i] == '_'))
            i++;
        if (i == fb) {
            diag(LW_DIAG_ERROR, a->src, annot_key_off(a, at + 1 + fb),
                 "expected a field name in '{%s}'", path);
            goto cleanup;
        }
        CXType c = clang_getCanonicalType(deref(t));
        if (arrow && is_this)
            is_this = 0;
        else if (arrow) {
            if (c.kind != CXType_Pointer ||
                clang_getCanonicalType(clang_getPointeeType(c)).kind !=
                    CXType_Record) {
                char *tn = type_name(t);
                diag(LW_DIAG_ERROR, a->src, annot_key_off(a, at + 1 + fb - 2),
                     "'->' in '{%s}' needs a pointer to a struct, but '%.*s' "
                     "has type '%s'%s",
                     path, (int)(fb - 2), p, tn,
                     c.kind == CXType_Record ? " (use '.')" : "");
                free(tn);
                goto cleanup;
            }
            c = clang_getCanonicalType(clang_getPointeeType(c));
        } else if (c.kind != CXType_Record) {
            char *tn = type_name(t);
            diag(LW_DIAG_ERROR, a->src, annot_key_off(a, at + 1 + fb - 1),
                 "'.' in '{%s}' needs a struct, but '%.*s' has type '%s'%s",
                 path, (int)(fb - 1), p, tn,
                 c.kind == CXType_Pointer ? " (use '->')" : "");
            free(tn);
            goto cleanup;
        }
        field_find ff = {p + fb, i - fb, {0}, 0};
        clang_Type_visitFields(c, field_visit, &ff);
        if (!ff.found) {
            char *tn = type_name(c);
            diag(LW_DIAG_ERROR, a->src, annot_key_off(a, at + 1 + fb),
                 "'%s' has no field named '%.*s'", tn, (int)(i - fb), p + fb);
            free(tn);
            goto cleanup;
        }
        buf_puts(&expr, arrow ? "->" : ".");
        buf_put(&expr, p + fb, i - fb);
        t = ff.type;
    }
    rc = add_value(a, off, path, expr.p, t, out);
cleanup:
    free(path);
    buf_free(&expr);
    return rc;
}

int keytmpl_compile(const lw_annot *a, const char *fname,
                    const lw_param *params, const CXType *types, int nparams,
                    const CXType *self, lw_key *out)
{
    const char *k = a->key;
    size_t n = a->keylen, i = 0;
    lw_buf lit = {0};
    int rc = 0;

    if (n == 0) {
        diag(LW_DIAG_ERROR, a->src, annot_arg_off(a, 0),
             "the lock key is empty");
        return -1;
    }
    while (i < n) {
        if (k[i] == '{' && i + 1 < n && k[i + 1] == '{') {
            buf_putc(&lit, '{');
            i += 2;
        } else if (k[i] == '}' && i + 1 < n && k[i + 1] == '}') {
            buf_putc(&lit, '}');
            i += 2;
        } else if (k[i] == '}') {
            diag(LW_DIAG_ERROR, a->src, annot_key_off(a, i),
                 "unmatched '}' in the key (write '}}' for a literal brace)");
            rc = -1;
            i++;
        } else if (k[i] == '{') {
            size_t e = i + 1;
            while (e < n && k[e] != '}' && k[e] != '{')
                e++;
            if (e >= n || k[e] != '}') {
                diag(LW_DIAG_ERROR, a->src, annot_key_off(a, i),
                     "unterminated '{' in the key (write '{{' for a literal "
                     "brace)");
                rc = -1;
                i = e;
                continue;
            }
            if (lit.len) {
                key_push(out, LW_KEY_BYTES, lit.p, lit.len);
                lit.len = 0;
            }
            if (e == i + 1) {
                diag(LW_DIAG_ERROR, a->src, annot_key_off(a, i),
                     "empty '{}' in the key (write '{{}}' for literal braces)");
                rc = -1;
            } else if (compile_field(a, i, fname, params, types, nparams, self,
                                     k + i + 1, e - i - 1, out) != 0)
                rc = -1;
            i = e + 1;
        } else
            buf_putc(&lit, k[i++]);
    }
    if (lit.len)
        key_push(out, LW_KEY_BYTES, lit.p, lit.len);
    buf_free(&lit);
    return rc;
}
