/*
 * The model of an annotated function: what scan.c learns from libclang and
 * the annotation, and all that emit.c and weave.c need to write the woven
 * file.  Plain text and numbers only: no libclang type outlives the parse.
 */
#ifndef LW_MODEL_H
#define LW_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* A parameter of the annotated function. */
typedef struct lw_param {
    char *name; /* as written; NULL when unnamed */
    char *use;  /* the name the wrapper gives it: written, or lw__pN */
} lw_param;

/* One piece of a lock key, in key order. */
enum lw_keykind {
    LW_KEY_BYTES, /* text[0..len): literal bytes, any of them */
    LW_KEY_I64,   /* text: an expression of a signed integer type */
    LW_KEY_U64,   /* text: an expression of an unsigned integer type */
    LW_KEY_STR    /* text: a char pointer or array, NUL-terminated */
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

#endif /* LW_MODEL_H */
