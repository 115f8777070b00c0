/*
 * lockweave-gen internals, one section per file (model.h, args.h, cli.h and
 * json.h hold the rest):
 *
 *   buf.c         growable byte buffer, file read / write-if-changed
 *   diag.c        compiler-style diagnostics with source line and caret
 *   annot.c       the REDIS_LOCK argument grammar (key, durations), and the
 *                 option table: each option's grammar, checks and weaving
 *   decl.c        C declarators from libclang types
 *   keytmpl.c     key template -> key parts, checked against parameter types
 *   scan.c        the libclang parse and AST walk: every check, one lw_func
 *                 (model.h) per annotated definition
 *   emit.c        an lw_func -> its declarations and wrapper, as text
 *   weave.c       the woven file: the original, spliced, and the wrappers
 *   passthrough.c the output for a file with nothing to weave
 *   depfile.c     make-style dependency file
 */
#ifndef LWGEN_H
#define LWGEN_H

#include "model.h"

#include <clang-c/Index.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- buf.c ------------------------------------------------------------ */

typedef struct lw_buf {
    char *p; /* NUL-terminated when len > 0 or after any append */
    size_t len, cap;
} lw_buf;

void buf_put(lw_buf *b, const void *p, size_t n);
void buf_puts(lw_buf *b, const char *s);
void buf_putc(lw_buf *b, char c);
void buf_printf(lw_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void buf_free(lw_buf *b);
/* Take ownership of the bytes (never NULL). */
char *buf_take(lw_buf *b);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);

/* Whole file into *out (NUL-terminated).  0 or -1 with errno. */
int file_read(const char *path, lw_buf *out);
/* Replace path with data unless it already holds exactly that; touch: update
 * the modification time even when unchanged.  0 or -1 with errno. */
int file_write_if_changed(const char *path, const char *data, size_t n,
                          int touch);
/* Absolute form of path (no symlink resolution needed, just cwd-joined and
 * with "." / ".." segments folded).  Caller frees. */
char *path_absolute(const char *path);

/* ---- diag.c ----------------------------------------------------------- */

/* A file's text as diagnostics see it. */
typedef struct lw_src {
    const char *name;
    const char *text;
    size_t len;
} lw_src;

enum { LW_DIAG_ERROR, LW_DIAG_WARNING, LW_DIAG_NOTE };

/* Print "name:line:col: error: msg", the source line and a caret at byte
 * offset off of src (src NULL: just "lockweave-gen: error: msg"). */
void diag(int kind, const lw_src *src, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void vdiag(int kind, const lw_src *src, size_t off, const char *fmt,
           va_list ap);
/* Errors reported so far. */
int diag_errors(void);
/* 1-based line of byte off in src. */
unsigned src_line(const lw_src *src, size_t off);

/* ---- annot.c ---------------------------------------------------------- */

#define LW_ANNOT_PREFIX "lockweave:REDIS_LOCK:"
/* REDIS_ONCE's: as long, so that the arguments start at the same place. */
#define LW_ONCE_PREFIX "lockweave:REDIS_ONCE:"

/* The most options lw_options (below) may list: lw_annot has a slot for
 * each. */
#define LW_OPTIONS_MAX 16

typedef struct lw_annot {
    char *text;        /* the expanded argument text */
    const lw_src *src; /* file holding the REDIS_LOCK token */
    size_t at;         /* its offset */
    int once;          /* a REDIS_ONCE, not a REDIS_LOCK */

    /* Raw source positions of the written arguments, used when the written
     * and expanded argument counts agree (no argument macro produced a
     * comma); otherwise every position falls back to `at`. */
    size_t raw_off[32];
    int nraw;
    int raw_ok;
    /* For each decoded key byte, its offset in src (NULL when the key was
     * not written as a plain string literal, e.g. it came from a macro). */
    size_t *keymap;

    /* Parsed values. */
    char *key;
    size_t keylen;
    uint32_t expire_ms, wait_ms;
    uint32_t window_ms; /* REDIS_ONCE's window */
    lw_lockopts opts;   /* the lock options: as given, else their defaults */
    /* By index in lw_options: the argument giving each option (-1: not
     * given), and the text of an LW_OPT_EXPR's (NULL: not given). */
    int given[LW_OPTIONS_MAX];
    char *expr[LW_OPTIONS_MAX];
} lw_annot;

/* How an option's value is written, and what it sets. */
enum lw_optkind {
    LW_OPT_DURATION, /* as expire: 500ms, 10s, 2m, 1h; a lock option, in ms */
    LW_OPT_INT,      /* a whole number from min to max: a lock option */
    LW_OPT_WORD,     /* one of words: a lock option, that word's value */
    LW_OPT_EXPR      /* a C expression, parameters in scope: the function's,
                      * and what the wrapper does with it is emit.c's */
};

/* A word an LW_OPT_WORD option may be. */
typedef struct lw_optword {
    const char *word;
    int64_t value; /* what the lw_lockopts field holds for it */
    const char *c; /* that value in lw_lock_opts, as C (NULL: its zero) */
} lw_optword;

/* One REDIS_LOCK option, all the generator knows of it: adding one is an
 * entry in lw_options (annot.c) and its field, in lw_lockopts for a lock
 * option or an lw_expr in lw_func for a C expression. */
typedef struct lw_option {
    const char *name;
    enum lw_optkind kind;
    size_t field; /* its offset in lw_lockopts, or in lw_func (LW_OPT_EXPR) */
    int64_t def;  /* a lock option's value when not given */
    /* The bounds of its grammar.  LW_OPT_INT: from min to max, where a max
     * of INT32_MAX (the limit of lw_lock_opts's int32_t) reads as no bound.
     * LW_OPT_DURATION: min 1 refuses 0. */
    struct {
        int64_t min, max;
    } range;
    const lw_optword *words; /* LW_OPT_WORD: ended by a NULL word */
    /* A check that needs every argument read (a combination with another
     * option, or with the expire time), run when the option is given;
     * off: where it is written. */
    void (*check)(const lw_annot *a, size_t off);
    int needs_result; /* LW_OPT_EXPR: refused on a function returning void
                       * (unless it has a loop, where on_fail is run, not
                       * returned) */
    /* Refused on a function returning anything but void, for this reason
     * (NULL: any function may have it). */
    const char *void_only;
    /* LW_OPT_EXPR: the type of the object the wrapper keeps its value in
     * (NULL: none), which it must be assignable to, as on_fail must be to
     * the return type: the scan checks both the same way. */
    const char *type;
    /* LW_OPT_EXPR: it may be given on several annotations of one function,
     * when all give the same text (one per function otherwise). */
    int agree;
    /* Which annotation takes it: LW_ONLY_LOCK, LW_ONLY_ONCE, 0 both. */
    int only;
    /* LW_OPT_EXPR: a condition the wrapper tests (failed_if), which the
     * compiler checks there, under the annotation's #line: no ret_check. */
    int cond;
    /* How a lock option is woven into the wrapper's lw_lock_opts
     * initializer: ", .<field> = <value>", a number followed by suffix
     * ("u" for an unsigned field; NULL: none).  It is left out while it
     * holds 0 and 0 is its default: the initializer gives 0 anyway. */
    struct {
        const char *field, *suffix;
    } woven;
} lw_option;

enum { LW_ONLY_LOCK = 1, LW_ONLY_ONCE = 2 };

/* The options, ended by an entry with a NULL name, in the order messages
 * list them and the wrapper's lw_lock_opts initializers write them. */
extern const lw_option lw_options[];

/* The value of lock option o in v. */
static inline int64_t lockopt_get(const lw_lockopts *v, const lw_option *o)
{
    return *(const int64_t *)((const char *)v + o->field);
}

/* Parse a->text (set text/src/at first).  Reports problems through diag();
 * returns 0 when the annotation is usable. */
int annot_parse(lw_annot *a);
/* Offset in a->src for expanded argument i (fallback: a->at). */
size_t annot_arg_off(const lw_annot *a, int i);
/* Offset in a->src for option k of lw_options (fallback: a->at). */
size_t annot_option_off(const lw_annot *a, int k);
/* Offset in a->src for key byte i (fallback: the key argument). */
size_t annot_key_off(const lw_annot *a, size_t i);
void annot_free(lw_annot *a);

/* ---- decl.c ----------------------------------------------------------- */

/* Append a C declaration of `name` ("" for an abstract declarator, as in a
 * cast) with type t.  Returns 0, or -1 for a type that cannot be written
 * back as source (anonymous struct, variable-length array). */
int decl_print(lw_buf *b, CXType t, const char *name);
/* The declarator of function type fn named `name` with parameter names
 * pnames (one per parameter), e.g. "int (*name(int a))(void)". */
int decl_print_fn(lw_buf *b, CXType fn, const char *name,
                  const char *const *pnames);
/* Type t as an lw_decl: as decl_print(), or as decl_print_fn() when pnames
 * is not NULL.  0 or -1, as they return. */
int decl_split(lw_decl *d, CXType t, const char *const *pnames);
/* The type of a parameter declared as t, as an lw_decl: an array as a
 * pointer to its element, a function as a pointer to it (C11 6.7.6.3p7-8),
 * for an object that holds the parameter's value.  0 or -1. */
int decl_split_param(lw_decl *d, CXType t);
void decl_free(lw_decl *d);

/* ---- keytmpl.c -------------------------------------------------------- */

/* Compile a->key against the parameters of fname (types: theirs, one per
 * parameter) into the parts of the key, appended to out.  Reports errors
 * through diag(); returns 0 when the key compiled. */
int keytmpl_compile(const lw_annot *a, const char *fname,
                    const lw_param *params, const CXType *types, int nparams,
                    const CXType *self, lw_key *out);
void key_free(lw_key *k);
/* t as messages name it (malloc'd): clang's spelling, written the same
 * whichever libclang spells it (13 writes 'int [2]', 14 and later 'int[2]'). */
char *type_name(CXType t);

/* ---- scan.c ----------------------------------------------------------- */

typedef struct lw_scan {
    const char *input;     /* absolute path of the input */
    const char *line_name; /* as the compiler got it: #line, messages, parse */
    int cxx;               /* parsed as C++: woven into the definitions */
    lw_src main;           /* its text */
    lw_func *funcs;        /* the annotated definitions, checked */
    int nfuncs;
    char **deps; /* files the parse read (for the depfile) */
    int ndeps;
} lw_scan;

/* Parse and collect.  args: compiler flags.  Returns 0, or -1 after
 * reporting errors. */
int scan_file(lw_scan *s, const char *const *args, int nargs);
void scan_free(lw_scan *s);

/* ---- emit.c ----------------------------------------------------------- */

/* The text one annotated definition adds to the woven file.
 *
 * The body keeps its name, so compiler messages, __func__ and debuggers
 * call it what the user did: every other mention of the name in the file
 * becomes the wrapper, lw__lock_<name>, through a #define the woven file
 * starts with (#undef'd just around the definition's name), and
 * #pragma redefine_extname gives the wrapper the function's symbol.  When
 * the name was declared before the file's first line (a forced include),
 * that #define cannot reach the declaration: the definition's name is
 * then renamed in place instead (rename_in_place). */
typedef struct lw_woven {
    char *wrapper_name; /* lw__lock_<name>: the wrapper's C name */
    char *body_name;    /* lw__<name>_body: the body's symbol */
    /* The wrapper's declaration (unless one comes earlier) and the body's,
     * to go in front of the definition: whole lines, from an
     * LW_LINE_RESUME, or text for the definition's own line
     * (rename_in_place). */
    char *protos;
    char *wrapper; /* the full wrapper definition, several lines */
} lw_woven;

/* What every name the woven code declares begins with: the wrapper's
 * locals (lw__g, lw__r, ...), its names for unnamed parameters (lw__pN),
 * and the wrapper's and the body's C names.  <lockweave.h> keeps it for
 * lockweave's internals, and the scan refuses it in any name a wrapper
 * declares or evaluates for the user (parameters, on_fail, skip_if). */
#define LW_RESERVED "lw__"

void emit_func(const lw_func *f, lw_woven *out);
/* Where name comes from ("<lockweave.h>", "<stdint.h>") when the code of
 * every wrapper refers to it, or that of a `loop =` function's (loop
 * nonzero), or NULL. */
const char *emit_uses(const char *name, int loop);
/* The headers the wrappers of s's functions need beyond <lockweave.h>:
 * #include lines, or "". */
const char *emit_includes(const lw_func *funcs, int nfuncs);
void emit_free(lw_woven *w);
/* The guard calls that build key k in the guard named g, one statement per
 * line, each prefixed by indent. */
void emit_key(lw_buf *b, const lw_key *k, const char *g, const char *indent);
/* What follows each user expression in a wrapper: weave() turns it back
 * into the generated file's own line. */
#define LW_LINE_RESUME "#line @resume@"

/* ---- weave.c, passthrough.c ------------------------------------------- */

/* Build the woven text of s into out. */
void weave(const lw_scan *s, const char *output_abs, lw_buf *out);
/* What REDIS_LOCK expands to (LW__MODE in <lockweave.h>): in lockweave-gen's
 * parse; in a file it wove or found only annotated declarations in; in a
 * file it compiled without parsing, having found no REDIS_LOCK. */
#define LW_MODE_SCAN     "LW__MODE_SCAN"
#define LW_MODE_WOVEN    "LW__MODE_WOVEN"
#define LW_MODE_UNPARSED "LW__MODE_UNPARSED"

/* The whole output for a file with no annotated definition: the original,
 * included as it is, under mode (LW_MODE_WOVEN or LW_MODE_UNPARSED). */
void weave_passthrough(const char *input_abs, const char *mode, lw_buf *out);
/* The "generated by" comment, and a path as a C string literal. */
void put_banner(lw_buf *b, const char *input, const char *what);
void put_line_path(lw_buf *b, const char *path);

/* ---- small helpers for several files ---------------------------------- */

/* Whether c can be part of a C identifier. */
static inline int ident_char(char c)
{
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

/* The character a one-letter backslash escape stands for (n t r b f a v:
 * shared by C literals and JSON strings), or -1. */
static inline int escape_char(char x)
{
    static const char from[] = "ntrbfav", to[] = "\n\t\r\b\f\a\v";
    for (int i = 0; from[i]; i++)
        if (from[i] == x)
            return (unsigned char)to[i];
    return -1;
}

/* ---- depfile.c -------------------------------------------------------- */

int depfile_write(const char *path, const char *target, const char *const *deps,
                  int ndeps);
/* Add deps to the first rule of an existing depfile (the compiler's), and
 * name to instead of from (NULL: no renaming) wherever it is named.  0 or
 * -1. */
int depfile_add(const char *path, const char *from, const char *to,
                const char *const *deps, int ndeps);

/* Version of this generator (the project version). */
#ifndef LW_GEN_VERSION
#define LW_GEN_VERSION "0.0.0"
#endif
#ifndef LW_GEN_VERSION_NUM
#define LW_GEN_VERSION_NUM 0
#endif

#endif /* LWGEN_H */
