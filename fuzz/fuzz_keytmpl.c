/*
 * Fuzz the key-template compiler (gen/keytmpl.c) and the guard calls the
 * emitter writes for the key it compiles (emit_key() in gen/emit.c).
 *
 * keytmpl_compile() checks each {placeholder} against libclang types, so the
 * seam is not a pure function.  Rather than split keytmpl.c into a parser and
 * a type checker (two halves that only make sense together), the target
 * parses one fixed translation unit with libclang at start-up — a function
 * whose parameters cover every type class the compiler decides on: integers,
 * enums, bool, char pointers and arrays, structs, pointers to structs,
 * nested fields, floating point, function pointers, an unnamed parameter —
 * and compiles every input against those real CXTypes.  Parsing once keeps
 * an execution at a few microseconds; libclang itself is not what we fuzz.
 *
 * The input is the key's bytes (a NUL included).  It goes in as the
 * scanner's would: written as a string literal in REDIS_LOCK("...", 1s, 0)
 * and decoded by annot_parse(), so diagnostic positions come from the real
 * key map.  Checked besides the sanitizers: a key that compiles is written
 * as guard calls only, one per line.
 */
#include "lwgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char tu_text[] =
    "enum color { RED, GREEN };\n"
    "struct inner { int n; const char *s; double d; unsigned char u; };\n"
    "struct order {\n"
    "  long long id; const char *sku; char name[16]; struct inner in;\n"
    "  struct inner *pin; struct order *next; float f; int arr[4];\n"
    "  enum color c; _Bool ok; union { int a; } un; int (*cb)(void);\n"
    "};\n"
    "typedef struct order order_t;\n"
    "typedef const char *str_t;\n"
    "void f(long long id, const char *name, struct order *o, struct order v,\n"
    "       double price, enum color c, _Bool b, char buf[8], int *p,\n"
    "       unsigned long u, int, signed char sc, order_t *t, str_t s,\n"
    "       struct order **pp, int (*fp)(void), long double ld, short sh);\n";

static CXIndex idx;
static CXTranslationUnit tu;
static lw_param params[32];
static CXType types[32];
static int nparams;

static enum CXChildVisitResult find_f(CXCursor c, CXCursor parent,
                                      CXClientData d)
{
    (void)parent;
    CXCursor *out = d;
    if (clang_getCursorKind(c) == CXCursor_FunctionDecl) {
        *out = c;
        return CXChildVisit_Break;
    }
    return CXChildVisit_Continue;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct CXUnsavedFile file = {"fuzz_keytmpl_tu.c", tu_text,
                                 sizeof tu_text - 1};
    const char *args[] = {"-std=c11", "-xc"};
    CXCursor fn = clang_getNullCursor();

    idx = clang_createIndex(0, 0);
    tu = clang_parseTranslationUnit(idx, file.Filename, args, 2, &file, 1,
                                    CXTranslationUnit_None);
    if (tu == NULL) {
        fprintf(stderr, "fuzz_keytmpl: libclang could not parse the TU\n");
        abort();
    }
    clang_visitChildren(clang_getTranslationUnitCursor(tu), find_f, &fn);
    nparams = clang_Cursor_getNumArguments(fn);
    if (nparams <= 0 || nparams > 32)
        abort();
    for (int i = 0; i < nparams; i++) {
        CXCursor p = clang_Cursor_getArgument(fn, (unsigned)i);
        CXString s = clang_getCursorSpelling(p);
        const char *n = clang_getCString(s);
        types[i] = clang_getCursorType(p);
        if (n && *n) {
            params[i].name = xstrdup(n);
            params[i].use = xstrdup(n);
        } else {
            char use[16];
            snprintf(use, sizeof use, "lw__p%d", i);
            params[i].name = NULL;
            params[i].use = xstrdup(use);
        }
        clang_disposeString(s);
    }
    return 0;
}

/* Every line a guard call: "    lw_guard_key_*(&lw__g, ...);". */
static int only_guard_calls(const char *p, size_t n)
{
    static const char start[] = "    lw_guard_key_";
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(p + i, '\n', n - i);
        if (nl == NULL)
            return 0;
        size_t len = (size_t)(nl - (p + i));
        if (len < sizeof start + 2 ||
            memcmp(p + i, start, sizeof start - 1) != 0 ||
            memcmp(nl - 2, ");", 2) != 0)
            return 0;
        i += len + 1;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lw_buf args = {0}, file = {0}, out = {0};
    lw_src src = {"fuzz.c", NULL, 0};
    lw_annot a;
    lw_key key = {0};

    if (size > 4096)
        return 0;
    /* Printable bytes as they are, the rest as three-digit octal escapes
     * (no following digit can extend them). */
    buf_putc(&args, '"');
    for (size_t i = 0; i < size; i++) {
        unsigned char c = data[i];
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f)
            buf_printf(&args, "\\%03o", c);
        else
            buf_putc(&args, (char)c);
    }
    buf_puts(&args, "\", 1s, 0");
    buf_printf(&file, "REDIS_LOCK(%s)\n", args.p);
    src.text = file.p;
    src.len = file.len;

    memset(&a, 0, sizeof a);
    a.text = buf_take(&args);
    a.src = &src;
    if (annot_parse(&a) != 0 || a.keylen != size ||
        memcmp(a.key, data, size) != 0)
        abort(); /* the literal above always parses back to the input */
    if (keytmpl_compile(&a, "f", params, types, nparams, NULL, &key) == 0) {
        emit_key(&out, &key, "lw__g", "    ");
        if (!only_guard_calls(out.p ? out.p : "", out.len))
            abort();
    }
    key_free(&key);
    buf_free(&out);
    annot_free(&a);
    buf_free(&file);
    return 0;
}
