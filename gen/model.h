/*
 * The model of an annotated function: what scan.c learns from libclang and
 * the annotation, and all that emit.c and weave.c need to write the woven
 * file.  Plain text and numbers only: no libclang type outlives the parse.
 */
#ifndef LW_MODEL_H
#define LW_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* A C declarator with the declared name left out: a declaration of NAME
 * reads head, NAME, tail, as in "int (*" "get" "(int a))(void)". */
typedef struct lw_decl {
    char *head, *tail;
} lw_decl;

/* A parameter of the annotated function. */
typedef struct lw_param {
    char *name; /* as written; NULL when unnamed */
    char *use;  /* the name the wrapper gives it: written, or lw__pN */
    /* Its type as an object that holds its value (an array or function
     * parameter as the pointer it is): a `loop =` function's only, whose
     * arguments are kept for a body that runs later. */
    lw_decl decl;
} lw_param;

/* One piece of a lock key, in key order. */
enum lw_keykind {
    LW_KEY_BYTES, /* text[0..len): literal bytes, any of them */
    LW_KEY_I64,   /* text: an expression of a signed integer type */
    LW_KEY_U64,   /* text: an expression of an unsigned integer type */
    LW_KEY_STR,   /* text: a char pointer or array, NUL-terminated */
    LW_KEY_DATA   /* text: a C++ std::string or std::string_view: its
                   * data() and size(), any bytes */
};

typedef struct lw_keypart {
    enum lw_keykind kind;
    char *text;
    size_t len;
} lw_keypart;

typedef struct lw_key {
    lw_keypart *v;
    int n;
} lw_key;

/* A C expression written in the annotation (on_fail, skip_if, loop), and
 * where: the wrapper puts it under a #line of its own, so a compiler error
 * in it points at the annotation. */
typedef struct lw_expr {
    char *text; /* NULL: not given */
    char *file;
    unsigned line;
} lw_expr;

/* What the function returns, which decides what the wrapper returns when
 * the body does not run (without on_fail: 0, or (T){0} for a struct). */
enum lw_ret { LW_RET_VOID, LW_RET_SCALAR, LW_RET_RECORD };

/* How REDIS_ONCE stores a result for the window's later callers: exactly,
 * as lw_once_done_i64(), _u64(), _double(); or not at all (they get
 * on_fail). */
enum lw_store { LW_STORE_NONE, LW_STORE_I64, LW_STORE_U64, LW_STORE_DOUBLE };

/* The options of one REDIS_LOCK that its lw_lock_opts carries: a field
 * for each of those entries of the option table (lw_options, in annot.c),
 * which says how the option is written, checked and woven.  One type for
 * all, so the table can reach each field by its offset. */
typedef struct lw_lockopts {
    int64_t max_renew; /* < 0: unlimited */
    int64_t hold_ms;   /* hold_at_least; 0: none */
    int64_t permits;   /* a semaphore's; 0: a mutex */
    int64_t read;      /* mode = read */
    /* REDIS_ONCE's expire and wait (0: their defaults), which become the
     * lockspec's expire_ms and wait_ms. */
    int64_t once_expire, once_wait;
} lw_lockopts;

/* One REDIS_LOCK of the function: a key and its options. */
typedef struct lw_lockspec {
    char *annot; /* its arguments, expanded: the wrapper's comment */
    lw_key key;
    /* Its metrics site: the key template (decoded, tmpl_len bytes), and
     * the annotation's file (its name, without directories) and line. */
    char *tmpl;
    size_t tmpl_len;
    char *file;
    unsigned line;
    uint32_t expire_ms, wait_ms;
    lw_lockopts opts;
} lw_lockspec;

/* One annotated definition of the file being woven. */
typedef struct lw_func {
    /* Where it is, in the main file. */
    char *name;
    size_t name_off;   /* the definition's name token */
    size_t insert_off; /* where the definition starts (its annotation) */
    /* The name was declared before the file's first line (a forced
     * include), where the woven file's #define cannot reach it. */
    int rename_in_place;
    /* What declares the function before the definition: 1, a declaration
     * with a prototype (a header's), so the wrapper needs none of its
     * own there; -1, only one without (int f();); 0, nothing. */
    int declared;

    /* Linkage, inline-ness and visibility exactly as the definition has
     * them. */
    int internal;           /* static */
    int is_inline;          /* inline */
    int is_extern;          /* declared extern (extern inline) */
    const char *visibility; /* an explicit visibility("..."), or NULL;
                             * a string constant */

    /* The signature. */
    lw_decl type; /* the function's declarator, parameters unnamed */
    lw_decl def;  /* the same with the parameters named params[].use */
    lw_param *params;
    int nparams;
    enum lw_ret ret;
    lw_decl ret_decl; /* the return type's declarator (not LW_RET_VOID) */
    char *ret_type;   /* the return type as a type name, for the (T){0} of
                       * LW_RET_RECORD without on_fail; else NULL */

    /* The annotations: one lock each (several: all held, taken in the
     * order of their keys at run time), and the function's C expression
     * options, from whichever annotation gives each: a field for each
     * LW_OPT_EXPR entry of the option table. */
    lw_lockspec *locks;
    int nlocks;
    lw_expr on_fail, skip_if;
    /* REDIS_ONCE (its one annotation is locks[0]): its window, 0 for
     * REDIS_LOCK; how the result is stored; failed_if. */
    uint32_t once_window_ms;
    enum lw_store store;
    lw_expr failed_if;
    /* The event loop the body runs on (loop = EXPR): the call only asks
     * for the lock, and the body runs later, on that loop, with the
     * arguments kept; on_fail is then what runs in its place. */
    lw_expr loop;

    /* C++ (docs/cxx.md): the lock is woven into the definition itself,
     * which keeps its name, symbol, overloads and access: the guards and
     * the acquisition go right after the body's '{' (body_off), the
     * metrics sites at namespace scope in front of the outermost
     * declaration that holds the definition (top_off), and the guards
     * are left by a destructor, however the body ends.  C++ code spells
     * what it needs without C's conveniences (static_cast, no designated
     * initializers).  qual_name: the metrics label (Account::withdraw);
     * index: the function's place among the file's, for unique names. */
    int cxx;
    size_t body_off, top_off;
    char *qual_name;
    int index;
} lw_func;

#endif /* LW_MODEL_H */
